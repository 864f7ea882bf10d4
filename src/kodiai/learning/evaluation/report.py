"""Rendering of an evaluation: a rich table per track (JSON comes from ``EvalResult.to_json``)."""

from __future__ import annotations

from rich.table import Table

from kodiai.learning.evaluation.evaluate import EvalResult


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _methods(shares: dict[str, float]) -> str:
    return ", ".join(f"{m} {s * 100:.0f}%" for m, s in sorted(shares.items(), key=lambda kv: -kv[1]))


def result_table(result: EvalResult) -> Table:
    """One row per strategy; the default and the best fixed threshold are marked."""
    first = next(iter(result.strategies.values()))
    table = Table(
        title=(
            f"Retrieval quality — track {result.track}, {result.model}, {first.queries} queries "
            f"({first.with_relevant} with relevant history), top_k {result.options.top_k}, "
            f"rerank {'on' if result.options.language_rerank else 'off'}, "
            f"recency {'on' if result.options.recency else 'off'}"
        )
    )
    for column in ("strategy", "P", "R@5", "F1", "F0.5", "nDCG@5", "kept/q", "empty", "abstain", "methods"):
        table.add_column(column, justify="left" if column in ("strategy", "methods") else "right")
    for name, m in result.strategies.items():
        label = name
        if name == result.default:
            label += " (default)"
        if name == result.best_fixed:
            label += " (best fixed)"
        table.add_row(
            label,
            _num(m.precision),
            _num(m.recall_at_5),
            _num(m.f1),
            _num(m.f0_5),
            _num(m.ndcg_at_5),
            f"{m.kept_per_query:.2f}",
            _pct(m.empty),
            _pct(m.abstain),
            _methods(m.methods),
        )
    return table
