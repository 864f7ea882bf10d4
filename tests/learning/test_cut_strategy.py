"""Cut strategies: headgap-v1 (the previous default, kept as the evaluation's reference) branch by branch,
maxgap unchanged, the fixed baseline; the current headgap is tested in test_cut_generalisation.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from learning_helpers import at_distance, make_record, retrieve_kw, unit

from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.threshold.baselines import FixedCut
from kodiai.learning.threshold.head_gap import (
    HeadGapCut,
    LegacyHeadGapCut,
    LegacyHeadGapParams,
    legacy_head_gap_select,
    legacy_head_gap_threshold,
)
from kodiai.learning.threshold.max_gap import MaxGapCut, compute_adaptive_threshold, max_gap_cut
from kodiai.learning.threshold.types import CutContext
from kodiai.learning.types import RerankedResult

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def results(
    distances: list[float], ages_days: list[float] | None = None, severity: str = "minor"
) -> list[RerankedResult]:
    ages = ages_days or [0.0] * len(distances)
    out = []
    for i, (d, age) in enumerate(zip(distances, ages, strict=True), start=1):
        created = (NOW - timedelta(days=age)).strftime("%Y-%m-%d %H:%M:%S")
        record = make_record(finding_id=i, severity=severity, created_at=created)
        out.append(
            RerankedResult(
                memory_id=i,
                distance=d,
                record=record,
                source_repo="acme/api",
                adjusted_distance=d,
                language_match=True,
            )
        )
    return sorted(out, key=lambda r: r.adjusted_distance)


def ctx(top_k: int = 5, recency: bool = False) -> CutContext:
    return CutContext(top_k=top_k, distance_threshold=0.3, adaptive=True, now=NOW, recency=recency)


# ---- headgap-v1 (legacy_head_gap_threshold): every branch ------------------------------------------------------------


def test_headgap_empty_pool() -> None:
    decision = legacy_head_gap_threshold([], 5, LegacyHeadGapParams())
    assert decision.method == "headgap:empty"
    assert decision.candidate_count == 0


def test_headgap_abstains_when_best_is_above_the_ceiling() -> None:
    decision = legacy_head_gap_threshold([0.9, 0.91, 0.95], 5, LegacyHeadGapParams(ceiling=0.85))
    assert decision.method == "headgap:abstain"
    assert (
        LegacyHeadGapCut(LegacyHeadGapParams(ceiling=0.85))(results([0.9, 0.91, 0.95]), ctx()).results == []
    )


def test_headgap_ceiling_gates_only_the_best_result() -> None:
    """The ceiling decides abstention; results past it may follow a best one under it (relative rules)."""
    kept = LegacyHeadGapCut(LegacyHeadGapParams(ceiling=0.85, band=0.1, min_relative_gap=0.5))(
        results([0.80, 0.86, 0.87]), ctx()
    )
    assert [r.adjusted_distance for r in kept.results] == [0.80, 0.86, 0.87]
    assert kept.threshold.method == "headgap:band"


def test_headgap_abstains_without_prominence() -> None:
    """d1 = 0.95 vs median 1.0: only 5% below the pool's median, 10% is required."""
    decision = legacy_head_gap_threshold(
        [0.95, 0.98, 1.0, 1.01, 1.02], 5, LegacyHeadGapParams(min_prominence=0.10)
    )
    assert decision.method == "headgap:abstain"
    prominent = legacy_head_gap_threshold(
        [0.80, 0.98, 1.0, 1.01, 1.02], 5, LegacyHeadGapParams(min_prominence=0.10)
    )
    assert prominent.method != "headgap:abstain"


def test_headgap_cuts_at_the_largest_relative_gap_in_the_head() -> None:
    # gaps: 0.70→0.72 (2.9%), 0.72→0.90 (25%): cut after the second result.
    decision = legacy_head_gap_threshold(
        [0.70, 0.72, 0.90, 0.91, 0.92], 5, LegacyHeadGapParams(min_relative_gap=0.1)
    )
    assert decision.method == "headgap:gap"
    assert decision.threshold == 0.72
    assert decision.gap_index == 2
    assert decision.gap_size == pytest.approx(0.18 / 0.72)


def test_headgap_searches_only_the_head() -> None:
    """A big gap after position ``head`` is not seen: with no gap in the head, the band decides."""
    distances = [0.70, 0.71, 0.72, 0.73, 1.2, 1.3]
    decision = legacy_head_gap_threshold(
        distances, 5, LegacyHeadGapParams(head=3, min_relative_gap=0.1, band=0.02)
    )
    assert decision.method == "headgap:band"
    assert decision.threshold == pytest.approx(0.70 * 1.02)
    wide = legacy_head_gap_threshold(distances, 5, LegacyHeadGapParams(head=5, min_relative_gap=0.1))
    assert wide.method == "headgap:gap" and wide.threshold == 0.73


def test_headgap_band_keeps_the_top_results_when_no_gap_is_clear() -> None:
    """No clear gap → keep what lies within band of the best (not the fallback threshold, not nothing)."""
    cut = LegacyHeadGapCut(LegacyHeadGapParams(min_relative_gap=0.2, band=0.03))
    out = cut(results([1.00, 1.01, 1.02, 1.04, 1.05, 1.06]), ctx())
    assert out.threshold.method == "headgap:band"
    assert [r.adjusted_distance for r in out.results] == [1.00, 1.01, 1.02]


def test_headgap_floor_always_keeps_very_close_results() -> None:
    decision = legacy_head_gap_threshold(
        [0.05, 0.30, 0.31], 5, LegacyHeadGapParams(floor=0.31, min_relative_gap=0.5)
    )
    assert decision.method == "headgap:gap"
    assert decision.threshold == 0.31


def test_headgap_respects_top_k() -> None:
    out = LegacyHeadGapCut(LegacyHeadGapParams(band=1.0))(
        results([0.5 + i * 0.001 for i in range(10)]), ctx(top_k=3)
    )
    assert len(out.results) == 3


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(0.05, 1.5), min_size=1, max_size=20),
    st.floats(0.2, 5.0),
)
def test_headgap_is_scale_free(distances: list[float], scale: float) -> None:
    """Without an absolute ceiling/floor, scaling every distance keeps the same results and branch."""
    params = LegacyHeadGapParams(head=5, min_relative_gap=0.07, band=0.05, min_prominence=0.05)
    plain = sorted(enumerate(distances), key=lambda x: x[1])
    scaled = [(i, d * scale) for i, d in plain]
    kept_a, a = legacy_head_gap_select(plain, None, 5, params)
    kept_b, b = legacy_head_gap_select(scaled, None, 5, params)
    if any(abs(x - y) / max(x, 1e-9) < 1e-6 for x in distances for y in distances if x != y):
        return  # float ties at the rule's edge are not meaningful
    assert a.method == b.method
    assert kept_a == kept_b


# ---- maxgap: the original's cut, unchanged ---------------------------------------------------------


def test_maxgap_with_default_constants_is_the_original_cut() -> None:
    pool = results([0.1, 0.12, 0.14, 0.3, 0.32, 0.34, 0.36, 0.38, 0.5])
    ours = MaxGapCut()(pool, ctx())
    original = max_gap_cut(pool, ctx())
    assert ours == original
    assert ours.threshold == compute_adaptive_threshold([r.adjusted_distance for r in pool], 0.3)
    assert ours.threshold.method == "adaptive"


@pytest.mark.parametrize(
    ("distances", "method"),
    [([0.2, 0.25, 0.4], "percentile"), ([0.2 + 0.01 * i for i in range(10)], "configured")],
)
def test_maxgap_method_strings_stay_the_originals(distances: list[float], method: str) -> None:
    """Telemetry GROUP BY threshold_method keeps working: maxgap writes the original's names."""
    assert MaxGapCut()(results(distances), ctx()).threshold.method == method


def test_maxgap_fallback_replaces_the_configured_threshold() -> None:
    pool = results([0.2 + 0.01 * i for i in range(10)])
    assert MaxGapCut(fallback=0.25)(pool, ctx()).threshold.threshold == 0.25
    assert MaxGapCut()(pool, ctx()).threshold.threshold == 0.3


def test_fixed_cut_keeps_under_threshold() -> None:
    out = FixedCut(0.5)(results([0.3, 0.5, 0.6]), ctx())
    assert [r.adjusted_distance for r in out.results] == [0.3, 0.5]
    assert out.threshold.method == "fixed"


def test_fixed_cut_scales_cut_before_or_after_recency() -> None:
    """``fixed:T`` cuts on the adjusted distance (before recency), ``fixed@recency:T`` after it; both
    order what they keep by recency-adjusted distance."""
    pool = results([0.40, 0.45], ages_days=[400, 0])  # the old one: 0.40 × 1.85 = 0.74 after recency
    adjusted = FixedCut(0.5)(pool, ctx(recency=True))
    assert [r.memory_id for r in adjusted.results] == [2, 1]
    weighted = FixedCut(0.5, scale="recency")(pool, ctx(recency=True))
    assert [r.memory_id for r in weighted.results] == [2]
    assert FixedCut(0.5).name == "fixed:0.5"
    assert FixedCut(0.5, scale="recency").name == "fixed@recency:0.5"


# ---- recency: a re-ordering, never a removal ------------------------------------------------------


def test_headgap_v1_recency_reorders_but_keeps_the_protected_match() -> None:
    """v1: the old clear match (before an unweighted gap) stays even when newer results outrank it."""
    pool = results([0.50, 0.80, 0.81, 0.82], ages_days=[365, 1, 1, 1])
    out = LegacyHeadGapCut(LegacyHeadGapParams(min_relative_gap=0.2, band=0.05))(
        pool, ctx(top_k=2, recency=True)
    )
    kept = [r.memory_id for r in out.results]
    assert 1 in kept and len(kept) == 2


def _store_with(tmp_path: Path, specs: list[tuple[float, int, str]]) -> tuple[object, np.ndarray]:
    """A real LanceDB store with memories at exact distances from a query: (distance, age days, severity)."""
    rng = np.random.default_rng(7)
    query = unit(rng, 384)
    store = open_memory_store(str(tmp_path / "mem.lance"), dimensions=384)
    for i, (distance, age, severity) in enumerate(specs, start=1):
        created = (NOW - timedelta(days=age)).strftime("%Y-%m-%d %H:%M:%S")
        record = make_record(finding_id=i, severity=severity, created_at=created, model="m", dim=384)
        store.write_memory(record, at_distance(query, distance, rng))
    return store, query


def test_year_old_critical_only_relevant_finding_survives_recency(tmp_path: Path) -> None:
    """§ issue 7: a year-old critical finding, the only relevant one (far closer than the rest), is still
    shown with recency on; with the original order (recency before the cut) on this scale it is lost."""
    specs = [(0.62, 365, "critical")] + [(0.86 + 0.004 * i, 2, "minor") for i in range(12)]
    store, query = _store_with(tmp_path, specs)
    common = dict(
        repo="acme/api",
        owner="acme",
        sharing_enabled=False,
        pr_languages=["TypeScript"],
        top_k=5,
        distance_threshold=0.3,
        adaptive=True,
        now=NOW,
    )
    for cut in (
        HeadGapCut(),
        LegacyHeadGapCut(LegacyHeadGapParams(head=3, min_relative_gap=0.15, ceiling=0.829)),
    ):
        out = retrieve_kw(IsolationLayer(store), query, cut=cut, **common)
        assert 1 in [r.memory_id for r in out.results]
        assert out.quality.threshold_method.startswith("headgap:")
    original = retrieve_kw(IsolationLayer(store), query, cut=max_gap_cut, **common)
    assert 1 not in [r.memory_id for r in original.results]


def test_recency_off_in_the_chain_leaves_distances_alone(tmp_path: Path) -> None:
    store, query = _store_with(tmp_path, [(0.4, 400, "minor"), (0.5, 1, "minor")])
    common = dict(
        repo="acme/api",
        owner="acme",
        sharing_enabled=False,
        pr_languages=["TypeScript"],
        top_k=5,
        distance_threshold=0.3,
        adaptive=True,
        now=NOW,
    )
    off = retrieve_kw(IsolationLayer(store), query, recency=False, **common)
    on = retrieve_kw(IsolationLayer(store), query, **common)
    assert [round(r.adjusted_distance, 6) for r in off.reranked] == [0.34, 0.425]  # ×0.85 rerank only
    assert on.reranked[-1].memory_id == 1 and on.reranked[-1].adjusted_distance > 0.34


def test_headgap_with_adaptive_off_is_the_originals_non_adaptive_path() -> None:
    """`adaptive: false` opts out of any adaptive cut: recency order, first top_k, method `configured`."""
    pool = results([0.20, 0.21, 0.22, 0.60, 0.61, 0.62], ages_days=[400, 0, 10, 0, 0, 0])
    off = CutContext(top_k=3, distance_threshold=0.3, adaptive=False, now=NOW, recency=True)
    got = HeadGapCut()(pool, off)
    expected = max_gap_cut(apply_recency_weighting(pool, NOW), off)
    assert [r.memory_id for r in got.results] == [r.memory_id for r in expected.results] == [2, 3, 1]
    assert got.threshold.method == "configured" and got.threshold.threshold == 0.3
