"""Suppression-matching benchmark: ``regex:``/``glob:``/plain ``match_pattern`` vs Python ``re`` in the same run.

A review evaluates every ``review.suppressions`` entry against every finding title. This prints, for a
realistic batch (titles × patterns), the cost of:

- the first JS-regex translation of each pattern (uncached: parse + ``/i`` canonical class building);
- cached ``match_pattern`` calls (the steady state inside a review) for each pattern kind;
- the baseline: the same regexes compiled once with Python ``re`` (``re.IGNORECASE``) and searched directly.

    .venv/bin/python benchmarks/suppressions.py --titles 2000 --rounds 5
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time

from kodiai.compat.jsregex import compile_js_regex
from kodiai.review.confidence import match_pattern

REGEXES = [
    r"missing.*handling",
    r"\bsql\b",
    r"null\s+(check|pointer)",
    r"^unused",
    r"(?<=a+)b",
    r"[\w-]+$",
    r"\d+ issues?",
    r"(foo|bar)baz",
]
GLOBS = ["*unused*", "missing*", "*(x)*", "!*style*", "sql?injection*"]
PLAIN = ["error handling", "race condition", "null pointer", "tab"]
WORDS = [
    "missing",
    "error",
    "handling",
    "null",
    "pointer",
    "dereference",
    "sql",
    "injection",
    "unused",
    "variable",
    "race",
    "condition",
    "trailing",
    "whitespace",
    "import",
    "order",
    "buffer",
    "overflow",
    "unwrap",
    "panic",
    "timeout",
    "cache",
    "session",
    "token",
    "café",
]


def titles(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8))).capitalize() for _ in range(n)]


def per_call_us(fn, items: list[str], rounds: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for item in items:
            fn(item)
        samples.append((time.perf_counter() - start) / len(items) * 1e6)
    return statistics.median(samples), max(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--titles", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    batch = titles(args.titles)

    compile_js_regex.cache_clear()
    start = time.perf_counter()
    for source in REGEXES:
        compile_js_regex(source, "i")
    first = (time.perf_counter() - start) / len(REGEXES) * 1e3
    start = time.perf_counter()
    for source in REGEXES:
        re.compile(source, re.IGNORECASE) if "(?<=a+)" not in source else None
    baseline_compile = (time.perf_counter() - start) / len(REGEXES) * 1e3
    print(
        f"first translation+compile per regex: {first:.3f} ms   (Python re.compile baseline {baseline_compile:.3f} ms)"
    )

    print(f"{'kind':<8}{'pattern':<22}{'median µs/call':>16}{'max µs/call':>14}{'re baseline µs':>16}")
    for source in REGEXES:
        med, worst = per_call_us(lambda t, s=source: match_pattern("regex:" + s, t), batch, args.rounds)
        if "(?<=a+)" in source:
            base = "n/a (re rejects)"
        else:
            compiled = re.compile(source, re.IGNORECASE)
            base = f"{per_call_us(compiled.search, batch, args.rounds)[0]:.2f}"
        print(f"{'regex':<8}{source:<22}{med:>16.2f}{worst:>14.2f}{base:>16}")
    for glob in GLOBS:
        med, worst = per_call_us(lambda t, g=glob: match_pattern("glob:" + g, t), batch, args.rounds)
        print(f"{'glob':<8}{glob:<22}{med:>16.2f}{worst:>14.2f}{'':>16}")
    for plain in PLAIN:
        med, worst = per_call_us(lambda t, p=plain: match_pattern(p, t), batch, args.rounds)
        base = f"{per_call_us(lambda t, p=plain: p in t.lower(), batch, args.rounds)[0]:.2f}"
        print(f"{'plain':<8}{plain:<22}{med:>16.2f}{worst:>14.2f}{base:>16}")


if __name__ == "__main__":
    main()
