"""How long `parse_repo_config` takes, against ruamel.yaml's own safe loader on the same text (baseline).

Run: `.venv/bin/python benchmarks/config_load.py`. Prints milliseconds per document for the example file
(every key) and for a small typical file, and the ratio to the baseline measured in the same run.
"""

from __future__ import annotations

import io
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from ruamel.yaml import YAML

from kodiai.config import parse_repo_config

ROOT = Path(__file__).resolve().parents[1]
SMALL = "review:\n  maxComments: 10\n  skipPaths: ['docs/']\nknowledge:\n  retrieval:\n    topK: 8\n"


def per_call_ms(fn: Callable[[], object], repeat: int = 7, number: int = 40) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1000)
    return statistics.median(samples)


def main() -> None:
    example = (ROOT / ".kodiai.yml.example").read_text(encoding="utf-8")
    for name, text in (("example (every key)", example), ("small file", SMALL)):
        baseline = per_call_ms(lambda t=text: YAML(typ="safe", pure=True).load(io.StringIO(t)))
        ours = per_call_ms(lambda t=text: parse_repo_config(t))
        print(
            f"{name:22s} parse_repo_config {ours:7.2f} ms | ruamel safe load {baseline:7.2f} ms | x{ours / baseline:.2f}"
        )


if __name__ == "__main__":
    main()
