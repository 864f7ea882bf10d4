"""Retrieval quality against the issue-16 targets, on the dev split and leave-one-repository-out.

    .venv/bin/python benchmarks/retrieval_quality.py [--data ../shared/eval-dev] [--cache .eval-cache]
        [--bootstrap 1000] [--no-lexical] [--min-abstain 0.0]

Runs the real chain over both tracks (all-MiniLM-L6-v2, embeddings from the on-disk cache; the first run
embeds everything), then leave-one-repository-out, and prints per track and split the default next to
"top 5, no cut", the best fixed threshold on the default's scale (dev: in hindsight; leave-one-out:
fitted on the other repositories), the recency-scale fixed threshold, the vector-only variant and the
previous default, each with 95 % bootstrap intervals; on the re-review track the default is the
re-review scope ``same-pr`` (every query there is a re-review) and its variants are shown next to the
plain cut; then F0.5 per repository and every target with met / not met. The same figures, in full, come from ``kodiai eval retrieval --data DIR --loo``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kodiai.evaluation.data import load_dataset
from kodiai.evaluation.evaluate import EvalResult, evaluate
from kodiai.evaluation.loo import evaluation_loo
from kodiai.evaluation.metrics import StrategyMetrics
from kodiai.evaluation.runner import ChainOptions
from kodiai.evaluation.targets import check_targets
from kodiai.learning.embeddings import LocalEmbeddingProvider


def _cell(m: StrategyMetrics, key: str, pct: bool = False) -> str:
    value = getattr(m, key)
    if value is None:
        return "—"
    fmt = (lambda v: f"{v:.0%}") if pct else (lambda v: f"{v:.3f}")
    if m.ci and key in m.ci:
        lo, hi = m.ci[key]
        return f"{fmt(value)} [{fmt(lo)}–{fmt(hi)}]"
    return fmt(value)


def _row(split: str, track: str, label: str, m: StrategyMetrics) -> str:
    return (
        f"| {split} | {track} | {label} | {_cell(m, 'f0_5')} | {_cell(m, 'precision')} | "
        f"{_cell(m, 'recall_at_5')} | {m.ndcg_at_5:.3f} | {_cell(m, 'empty', True)} | {_cell(m, 'abstain', True)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval-dev"))
    parser.add_argument("--cache", default=".eval-cache")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--no-lexical", action="store_true")
    parser.add_argument("--min-abstain", type=float, default=0.0)
    args = parser.parse_args()
    provider = LocalEmbeddingProvider()
    options = ChainOptions(lexical=not args.no_lexical)
    dev: dict[str, EvalResult] = {}
    pools = {}
    for rereview in (False, True):
        dataset = load_dataset(args.data, rereview=rereview)
        dev[dataset.name], pools[dataset.name] = evaluate(
            dataset, provider, args.cache, options=options, bootstrap_reps=args.bootstrap
        )
    loo = evaluation_loo(
        pools,
        model=provider.model,
        options=options,
        min_abstain=args.min_abstain,
        bootstrap_reps=args.bootstrap,
    )
    top = f"top{options.top_k}"
    print("| split | track | strategy | F0.5 | precision | recall@5 | nDCG@5 | empty | abstain |")
    print("|---|---|---|---|---|---|---|---|---|")
    for track, result in dev.items():
        rows = {
            f"**{result.default}** (default)": result.default,
            "same-pr-then-headgap (own memories, then headgap)": "same-pr-then-headgap",
            "same-pr-else-headgap (own memories, else headgap)": "same-pr-else-headgap",
            "headgap (the cut alone, no re-review scope)": "headgap" if result.default != "headgap" else "",
            "headgap:vector (vector channel only)": "headgap:vector",
            f"{top} (no cut)": top,
            f"{top}+lexical (no cut)": f"{top}+lexical",
            f"{result.best_fixed} (best fixed, same scale, hindsight)": result.best_fixed,
            f"{result.best_fixed_recency} (best fixed after recency, hindsight)": result.best_fixed_recency,
            "headgap-v1 (previous default)": "headgap-v1",
            "maxgap (original)": "maxgap",
        }
        for label, name in rows.items():
            if name and name in result.strategies:
                print(_row("dev", track, label, result.strategies[name]))
        held = loo.strategies[track]
        default = loo.defaults.get(track, result.default)
        fitted = "band fitted per fold" if default in loo.fitted else "nothing fitted"
        loo_rows = {
            f"**{default}** (default, {fitted})": default,
            "same-pr-then-headgap (headgap's band fitted per fold)": "same-pr-then-headgap",
            "same-pr-else-headgap (headgap's band fitted per fold)": "same-pr-else-headgap",
            "headgap (band fitted per fold, no re-review scope)": "headgap" if default != "headgap" else "",
            "headgap:vector (band fitted per fold)": "headgap:vector",
            f"{top} (no cut)": top,
            f"{top}+lexical (no cut)": f"{top}+lexical",
            "fixed (same scale, fitted per fold)": "fixed",
            "fixed@recency (fitted per fold)": "fixed@recency",
            "headgap-v1 (ceiling refitted per fold)": "headgap-v1",
        }
        for label, name in loo_rows.items():
            if name and name in held:
                print(_row("LOO", track, label, held[name]))
    print("\nF0.5 per repository (past-fixes): dev | leave-one-out")
    names = [dev["past-fixes"].default, top, "fixed", "headgap-v1"]
    print("| repository | " + " | ".join(f"{n} dev | {n} LOO" for n in names) + " |")
    print("|---|" + "---|" * (2 * len(names)))
    best_fixed = dev["past-fixes"].best_fixed
    for repo, by_strategy in dev["past-fixes"].per_repo.items():
        cells = []
        for n in names:
            dev_name = best_fixed if n == "fixed" else n
            dev_m = by_strategy.get(dev_name) if dev_name else None
            loo_m = loo.per_repo["past-fixes"].get(repo, {}).get(n)
            cells.append(f"{dev_m.f0_5:.3f}" if dev_m else "—")
            cells.append(f"{loo_m.f0_5:.3f}" if loo_m else "—")
        print(f"| {repo} | " + " | ".join(cells) + " |")
    print("\nFolds (constants fitted without the repository):")
    for fold in loo.folds:
        print(f"  {fold.repo}: " + "; ".join(f"{k} {v}" for k, v in fold.params.items()))
    print("\nTargets:")
    for check in check_targets(dev, loo):
        print(
            f"  [{'met' if check.met else 'NOT met'}] {check.split} {check.track}: {check.target} — {check.value}"
        )


if __name__ == "__main__":
    main()
