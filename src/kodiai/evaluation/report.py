"""Rendering of an evaluation as rich tables (JSON comes from ``EvalResult.to_json`` / ``loo_json``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from kodiai.evaluation.evaluate import EvalResult
from kodiai.evaluation.loo import LooResult
from kodiai.evaluation.metrics import StrategyMetrics
from kodiai.evaluation.targets import TargetCheck


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _ci(m: StrategyMetrics, key: str, pct: bool = False) -> str:
    value = getattr(m, key)
    fmt = _pct if pct else _num
    if value is None:
        return "—"
    if m.ci is None or key not in m.ci:
        return fmt(value)
    lo, hi = m.ci[key]
    return f"{fmt(value)} [{fmt(lo)}–{fmt(hi)}]"


def _methods(shares: dict[str, float]) -> str:
    return ", ".join(f"{m} {s * 100:.0f}%" for m, s in sorted(shares.items(), key=lambda kv: -kv[1]))


def shown_strategies(result: EvalResult, all_fixed: bool = False) -> list[str]:
    """The rows of the main table: the default, the references, the no-cut rows, the best fixed of each
    scale (every fixed threshold with ``all_fixed``)."""
    names = [n for n in result.strategies if not n.startswith("fixed")]
    fixed = [n for n in result.strategies if n.startswith("fixed")]
    if all_fixed:
        return names + fixed
    return names + [n for n in (result.best_fixed, result.best_fixed_recency) if n is not None]


def _label(result: EvalResult, name: str) -> str:
    label = name
    if name == result.default:
        label += " (default)"
    if name in (result.best_fixed, result.best_fixed_recency):
        label += " (best in hindsight)"
    if name == "maxgap":
        label += " (original)"
    if name == "headgap-v1":
        label += " (previous default)"
    return label


def result_table(result: EvalResult, all_fixed: bool = False) -> Table:
    """One row per strategy with 95 % bootstrap intervals."""
    first = next(iter(result.strategies.values()))
    grid = ", ".join(f"{k} {v[0]:g}…{v[1]:g} (largest distance {v[2]:.2f})" for k, v in result.grid.items())
    table = Table(
        title=(
            f"Retrieval quality — track {result.track}, {result.model}, {first.queries} queries "
            f"({first.with_relevant} with relevant history), top_k {result.options.top_k}, "
            f"rerank {'on' if result.options.language_rerank else 'off'}, "
            f"recency {'on' if result.options.recency else 'off'}, "
            f"lexical channel {'on' if result.options.lexical else 'off'}; fixed grids: {grid}"
        ),
        caption="P, R@5, F0.5 over the queries with relevant history (an empty answer scores 0); "
        "[95% bootstrap interval]",
    )
    for column in ("strategy", "F0.5", "P", "R@5", "nDCG@5", "kept/q", "empty", "abstain", "methods"):
        table.add_column(column, justify="left" if column in ("strategy", "methods") else "right")
    for name in shown_strategies(result, all_fixed):
        m = result.strategies[name]
        table.add_row(
            _label(result, name),
            _ci(m, "f0_5"),
            _ci(m, "precision"),
            _ci(m, "recall_at_5"),
            _num(m.ndcg_at_5),
            f"{m.kept_per_query:.2f}",
            _ci(m, "empty", pct=True),
            _ci(m, "abstain", pct=True),
            _methods(m.methods),
        )
    return table


def per_repo_table(result: EvalResult) -> Table:
    """F0.5 per repository of the main strategies, plus each repository's best fixed in hindsight."""
    top = f"top{result.options.top_k}"
    columns = [
        n
        for n in (
            result.default,
            "headgap",
            "headgap:vector",
            "headgap-v1",
            top,
            f"{top}+lexical",
            result.best_fixed,
        )
        if n is not None and n in result.strategies
    ]
    table = Table(title=f"F0.5 per repository — track {result.track} (dev) [95% bootstrap interval]")
    table.add_column("repository")
    table.add_column("queries (+/−)", justify="right")
    for name in dict.fromkeys(columns):
        table.add_column(_label(result, name), justify="right")
    table.add_column("best fixed for this repo (hindsight)", justify="right")
    for repo, by_strategy in result.per_repo.items():
        any_m = next(iter(by_strategy.values()))
        fixed = [n for n in by_strategy if n.startswith("fixed:")]
        own = max(fixed, key=lambda n: by_strategy[n].f0_5) if fixed else None
        table.add_row(
            repo,
            f"{any_m.with_relevant}/{any_m.without_relevant}",
            *[_ci(by_strategy[n], "f0_5") for n in dict.fromkeys(columns)],
            f"{own} {by_strategy[own].f0_5:.3f}" if own else "—",
        )
    return table


def loo_tables(loo: LooResult, default: str) -> list[Table]:
    """Per track: the pooled held-out figures; then the folds (constants fitted, held-out F0.5). The
    default marked per track is ``loo.defaults[track]`` (``default`` when the result names none)."""
    tables: list[Table] = []
    for track, strategies in loo.strategies.items():
        table = Table(
            title=f"Leave-one-repository-out — track {track}: each repository scored by constants fitted "
            "on the others [95% bootstrap interval]",
            caption="fitted: " + ", ".join(loo.fitted) + "; the others have no fitted constants. "
            "stability = F0.5 of each fold's fitted constants on the whole track (min–max over folds)",
        )
        for column in (
            "strategy",
            "F0.5",
            "P",
            "R@5",
            "nDCG@5",
            "empty",
            "abstain",
            "held-out F0.5 per fold",
            "stability",
        ):
            table.add_column(column, justify="left" if column == "strategy" else "right")
        track_default = loo.defaults.get(track, default)
        for name, m in strategies.items():
            held = loo.heldout_range(name, track)
            stab = loo.stability_range(name, track) if name in loo.fitted else None
            table.add_row(
                name + (" (default)" if name == track_default else ""),
                _ci(m, "f0_5"),
                _ci(m, "precision"),
                _ci(m, "recall_at_5"),
                _num(m.ndcg_at_5),
                _ci(m, "empty", pct=True),
                _ci(m, "abstain", pct=True),
                "—" if held is None else f"{held[0]:.3f}–{held[1]:.3f}",
                "—" if stab is None else f"{stab[0]:.3f}–{stab[1]:.3f} (Δ {stab[1] - stab[0]:.3f})",
            )
        tables.append(table)
    folds = Table(
        title="Leave-one-repository-out — folds: constants fitted without the repository, and its F0.5"
    )
    folds.add_column("held out")
    for name in loo.fitted:
        folds.add_column(name)
    tracks = list(loo.strategies)
    for fold in loo.folds:
        cells = []
        for name in loo.fitted:
            scores = [
                f"{t}: {loo.per_repo[t][fold.repo][name].f0_5:.3f}"
                for t in tracks
                if fold.repo in loo.per_repo[t] and name in loo.per_repo[t][fold.repo]
            ]
            cells.append(f"{fold.params[name]} → " + ", ".join(scores))
        folds.add_row(fold.repo, *cells)
    tables.append(folds)
    return tables


def targets_table(checks: Sequence[TargetCheck]) -> Table:
    table = Table(title="Targets (all-MiniLM-L6-v2)")
    for column in ("split", "track", "target", "value", "met"):
        table.add_column(column)
    for c in checks:
        table.add_row(c.split, c.track, c.target, c.value, "yes" if c.met else "NO")
    return table


def loo_json(loo: LooResult) -> dict[str, Any]:
    """The leave-one-out figures as plain JSON."""
    out: dict[str, Any] = loo.model_dump()
    out["stability"] = {
        track: {name: loo.stability_range(name, track) for name in loo.fitted} for track in loo.strategies
    }
    return out


def metrics_row(m: StrategyMetrics) -> Mapping[str, Any]:
    """The headline figures of one strategy (for benchmarks and docs)."""
    return {
        "f0_5": m.f0_5,
        "precision": m.precision,
        "recall_at_5": m.recall_at_5,
        "empty": m.empty,
        "abstain": m.abstain,
        "ci": m.ci,
    }


def stages_tables(result: Any) -> list[Table]:
    """``kodiai eval stages``: the held-out figures per variant, F0.5 per repository, the skip figures."""
    main = Table(
        title="Abstention and the second stage — past-fixes, leave-one-repository-out (each repository scored "
        "by the models fitted without it)",
        caption="P, R@5, F0.5, nDCG@5 over the queries with relevant history; empty over those, abstain over "
        "the others; spread = each fold's models scored on the whole track (max − min)",
    )
    for column in (
        "variant",
        "F0.5",
        "P",
        "R@5",
        "nDCG@5",
        "kept/q",
        "empty",
        "abstain",
        "spread",
        "weakest repo",
        "dev F0.5",
        "dev abstain",
    ):
        main.add_column(column, justify="left" if column == "variant" else "right")
    for name, m in result.strategies.items():
        lo, hi = result.stability[name]
        weakest = min(by[name] for by in result.per_repo.values() if name in by)
        main.add_row(
            name,
            _ci(m, "f0_5"),
            _ci(m, "precision"),
            _ci(m, "recall_at_5"),
            _num(m.ndcg_at_5),
            f"{m.kept_per_query:.2f}",
            _ci(m, "empty", pct=True),
            _ci(m, "abstain", pct=True),
            f"{hi - lo:.3f}",
            _num(weakest),
            _num(result.dev[name].f0_5) if name in result.dev else "—",
            _pct(result.dev[name].abstain) if name in result.dev else "—",
        )
    repos = Table(title="F0.5 per repository (held out)")
    repos.add_column("repository")
    for name in result.strategies:
        repos.add_column(name, justify="right")
    for repo, by in result.per_repo.items():
        repos.add_row(repo, *(_num(by.get(name)) for name in result.strategies))
    s = result.skips
    skips = Table(title="The second stage's skip rules (held out, rank)")
    skips.add_column("figure")
    skips.add_column("value", justify="right")
    skips.add_row("skip rate", _pct(s.skip_rate))
    for rule, share in s.by_rule.items():
        skips.add_row(f"  {rule}", _pct(share))
    skips.add_row(
        "lift when used: F0.5 first stage → ranker", f"{_num(s.used_f0_5_first)} → {_num(s.used_f0_5_ranked)}"
    )
    skips.add_row(
        "cost of skipping: F0.5 first stage → ranker had it run",
        f"{_num(s.skipped_f0_5_first)} → {_num(s.skipped_f0_5_forced)}",
    )
    skips.add_row(
        "cost of skipping: abstain first stage → ranker had it run",
        f"{_pct(s.skipped_abstain_first)} → {_pct(s.skipped_abstain_forced)}",
    )
    from kodiai.evaluation.stages import stage_targets

    targets = Table(
        title="Targets, held out (the :no-files rows are the controls without the label's own rule)"
    )
    targets.add_column("variant")
    targets.add_column("target")
    targets.add_column("value", justify="right")
    targets.add_column("met")
    for name in result.strategies:
        if name == "headgap":
            continue
        for target, value, met in stage_targets(result, name):
            targets.add_row(name, target, value, "met" if met else "MISSED")
    return [main, repos, skips, targets]
