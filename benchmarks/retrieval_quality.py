"""Retrieval quality against the issue-7 targets: every track × recency on/off, baseline = the original's cut.

    .venv/bin/python benchmarks/retrieval_quality.py [--data ../shared/eval-dev] [--cache .eval-cache]

Prints, per track and recency setting, F0.5 / empty / abstain of the default strategy next to the
original's ``maxgap`` and the best fixed threshold in hindsight (all measured in the same run), then
each target with met / not met. Embeddings come from the on-disk cache (first run embeds everything).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kodiai.learning.embeddings import LocalEmbeddingProvider
from kodiai.learning.evaluation.data import load_dataset
from kodiai.learning.evaluation.evaluate import evaluate
from kodiai.learning.evaluation.runner import ChainOptions

TARGETS = {
    "rereview": {"f0_5": 0.72, "empty": 0.10, "abstain": 0.70},
    "past-fixes": {"f0_5": 0.42, "empty": 0.10},
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval-dev"))
    parser.add_argument("--cache", default=".eval-cache")
    args = parser.parse_args()
    provider = LocalEmbeddingProvider()
    print(f"{'track':11} {'recency':7} {'strategy':22} {'F0.5':>6} {'empty':>6} {'abstain':>7}")
    f05: dict[tuple[str, bool], float] = {}
    verdicts: list[str] = []
    for rereview in (False, True):
        dataset = load_dataset(args.data, rereview=rereview)
        for recency in (True, False):
            result, _ = evaluate(dataset, provider, args.cache, options=ChainOptions(recency=recency))
            rows = {"maxgap (original)": "maxgap", f"{result.default} (default)": result.default}
            if result.best_fixed:
                rows[f"{result.best_fixed} (hindsight)"] = result.best_fixed
            for label, name in rows.items():
                m = result.strategies[name]
                abstain = "—" if m.abstain is None else f"{m.abstain:.0%}"
                print(
                    f"{dataset.name:11} {'on' if recency else 'off':7} {label:22} "
                    f"{m.f0_5:6.3f} {m.empty or 0:6.0%} {abstain:>7}"
                )
            m = result.strategies[result.default]
            f05[(dataset.name, recency)] = m.f0_5
            if recency:
                goal = TARGETS[dataset.name]
                verdicts.append(
                    f"{dataset.name} F0.5 {m.f0_5:.3f} >= {goal['f0_5']}: {m.f0_5 >= goal['f0_5']}"
                )
                verdicts.append(
                    f"{dataset.name} empty {m.empty or 0:.0%} <= {goal['empty']:.0%}: {(m.empty or 0) <= goal['empty']}"
                )
                if "abstain" in goal:
                    ok = m.abstain is not None and m.abstain >= goal["abstain"]
                    verdicts.append(
                        f"{dataset.name} abstain {m.abstain or 0:.0%} >= {goal['abstain']:.0%}: {ok}"
                    )
    for name in TARGETS:
        on, off = f05[(name, True)], f05[(name, False)]
        verdicts.append(
            f"{name} recency on {on:.3f} vs off {off:.3f} (not worse by > 5%): {on >= off * 0.95}"
        )
    print("\n" + "\n".join(verdicts))


if __name__ == "__main__":
    main()
