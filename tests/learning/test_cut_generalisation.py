"""headgap: relative rules only, recency that re-orders and never removes a memory for its age alone, and
the fused score of two channels normalised within each (never rank-only)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from learning_helpers import make_record

from kodiai.learning.threshold.baselines import FixedCut, fixed_select
from kodiai.learning.threshold.head_gap import HeadGapCut, HeadGapParams, head_gap_decide
from kodiai.learning.threshold.types import Candidate, CutContext
from kodiai.learning.types import RerankedResult

NOW = datetime(2026, 6, 1, tzinfo=UTC)
VECTOR_ONLY = HeadGapParams(band=0.5, recency_margin=0.1)


def pool(
    distances: list[float], multipliers: list[float] | None = None, lexical: list[float] | None = None
) -> list[Candidate[int]]:
    ms = multipliers or [1.0] * len(distances)
    ls = lexical or [0.0] * len(distances)
    rows = [Candidate(i, d, m, s) for i, (d, m, s) in enumerate(zip(distances, ms, ls, strict=True))]
    return sorted(rows, key=lambda c: c.distance)


def reranked(distances: list[float], ages_days: list[float]) -> list[RerankedResult]:
    out = []
    for i, (d, age) in enumerate(zip(distances, ages_days, strict=True), start=1):
        created = (NOW - timedelta(days=age)).strftime("%Y-%m-%d %H:%M:%S")
        out.append(
            RerankedResult(
                memory_id=i,
                distance=d,
                record=make_record(finding_id=i, created_at=created),
                source_repo="acme/api",
                adjusted_distance=d,
                language_match=True,
            )
        )
    return sorted(out, key=lambda r: r.adjusted_distance)


def ctx(top_k: int = 5, lexical: dict[int, float] | None = None) -> CutContext:
    return CutContext(
        top_k=top_k, distance_threshold=0.3, adaptive=True, now=NOW, recency=True, lexical=lexical
    )


# ---- the branches --------------------------------------------------------------------------------------


def test_empty_pool() -> None:
    ids, decision = head_gap_decide([], 5, VECTOR_ONLY)
    assert ids == [] and decision.method == "headgap:empty" and decision.threshold == -1


def test_band_keeps_what_is_within_band_of_the_best_on_the_pools_own_scale() -> None:
    """Similarity is (d_max - d) / (d_max - d_min): 1.0, 0.9, 0.8, 0.0 → band 0.15 keeps two."""
    ids, decision = head_gap_decide(pool([0.50, 0.55, 0.60, 1.00]), 5, HeadGapParams(band=0.15))
    assert ids == [0, 1]
    assert decision.method == "headgap:band" and decision.threshold == 0.55


def test_no_absolute_number_unless_configured() -> None:
    """The same shape far away keeps the same answer: nothing in the default decides on distance alone."""
    near = head_gap_decide(pool([0.20, 0.22, 0.40, 0.45]), 5, VECTOR_ONLY)[0]
    far = head_gap_decide(pool([1.20, 1.22, 1.40, 1.45]), 5, VECTOR_ONLY)[0]
    assert near == far == [0, 1]
    gated = head_gap_decide(pool([1.20, 1.22, 1.40, 1.45]), 5, HeadGapParams(ceiling=1.0))
    assert gated[0] == [] and gated[1].method == "headgap:abstain"


def test_relative_gate_abstains_when_the_best_does_not_stand_out() -> None:
    flat = pool([0.95, 0.98, 1.0, 1.01, 1.02])
    assert head_gap_decide(flat, 5, HeadGapParams(min_prominence=0.1))[1].method == "headgap:abstain"
    prominent = pool([0.80, 0.98, 1.0, 1.01, 1.02])
    assert head_gap_decide(prominent, 5, HeadGapParams(min_prominence=0.1))[1].method == "headgap:band"


def test_gap_rule_on_the_normalised_score_when_on() -> None:
    """Scores 1.0, 0.95, 0.4, 0.35, 0.0: the largest gap (0.55) is after the second."""
    distances = [0.50, 0.525, 0.80, 0.825, 1.00]
    ids, decision = head_gap_decide(pool(distances), 5, HeadGapParams(band=1.0, min_gap=0.3))
    assert ids == [0, 1] and decision.method == "headgap:gap" and decision.gap_index == 2
    assert head_gap_decide(pool(distances), 5, HeadGapParams(band=1.0))[1].method == "headgap:band"


def test_floor_always_keeps_very_close_results() -> None:
    ids, _ = head_gap_decide(pool([0.05, 0.10, 0.90, 1.0]), 5, HeadGapParams(band=0.01, floor=0.12))
    assert ids == [0, 1]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(0.05, 1.5), min_size=1, max_size=25, unique=True),
    st.floats(0.2, 5.0),
    st.floats(-0.04, 0.5),
    st.floats(0.0, 1.0),
)
def test_decisions_survive_any_affine_change_of_the_distances(
    distances: list[float], scale: float, shift: float, band: float
) -> None:
    """Scale-free *and* shift-free: the decision reads the pool's own spread, so another embedder's
    scale, or a repository whose distances all sit higher, gives the same cut."""
    d = sorted(distances)
    assume(all(b - a > 1e-6 * max(1.0, abs(b)) for a, b in itertools.pairwise(d)))
    params = HeadGapParams(band=band, recency_margin=None)
    base = head_gap_decide(pool(d), 5, params)
    moved = head_gap_decide(pool([x * scale + shift for x in d]), 5, params)
    v = [(d[-1] - x) / (d[-1] - d[0]) if d[-1] > d[0] else 1.0 for x in d]
    assume(all(abs(s - (1 - band)) > 1e-6 for s in v))  # not on the band's edge (float noise)
    assert base[0] == moved[0] and base[1].method == moved[1].method


# ---- recency: re-orders; removes only for a newer, at-least-as-similar memory ------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.3, 1.4), st.floats(1.0, 1.85)),
        min_size=1,
        max_size=25,
        unique_by=lambda t: t[0],
    ),
    st.floats(0.0, 1.0),
    st.one_of(st.none(), st.floats(0.0, 1.0)),
    st.integers(1, 8),
)
def test_the_most_similar_memory_is_never_cut_whatever_its_age(
    rows: list[tuple[float, float]], band: float, margin: float | None, top_k: int
) -> None:
    """However old the closest memory is, and however many newer ones surround it, it is kept."""
    d = sorted(r[0] for r in rows)
    assume(all(b - a > 1e-9 for a, b in itertools.pairwise(d)))
    candidates = pool([r[0] for r in rows], [r[1] for r in rows])
    ids, _ = head_gap_decide(candidates, top_k, HeadGapParams(band=band, recency_margin=margin))
    assert candidates[0].id in ids


def test_recency_drops_a_memory_only_for_a_newer_one_at_least_as_similar() -> None:
    """(Memory 2 at 1.0 only gives the pool its spread.)"""
    no_margin = VECTOR_ONLY.model_copy(update={"recency_margin": None})
    # memory 0: old (×1.85) and the closest; memory 1: new (×1.0), a little farther → both stay.
    both = head_gap_decide(pool([0.50, 0.52, 1.0], [1.85, 1.0, 1.0]), 5, VECTOR_ONLY)[0]
    assert both == [1, 0]  # both kept, the newer one first: recency orders
    # memory 0: old and a little farther than the new memory 1 → the old one is dominated.
    assert head_gap_decide(pool([0.52, 0.50, 1.0], [1.85, 1.0, 1.0]), 5, VECTOR_ONLY)[0] == [1]
    # ...unless the margin is off, or the newer one is not clearly newer.
    assert sorted(head_gap_decide(pool([0.52, 0.50, 1.0], [1.85, 1.0, 1.0]), 5, no_margin)[0]) == [0, 1]
    assert sorted(head_gap_decide(pool([0.52, 0.50, 1.0], [1.05, 1.0, 1.0]), 5, VECTOR_ONLY)[0]) == [0, 1]


def test_top_k_keeps_the_most_similar_and_recency_only_orders_them() -> None:
    """Seven memories within the band: the five most similar are kept (the two newest but least
    similar are not), then ordered by recency-adjusted score."""
    distances = [0.50, 0.51, 0.52, 0.53, 0.54, 0.55, 0.56, 1.5]
    multipliers = [1.85, 1.85, 1.85, 1.85, 1.85, 1.0, 1.0, 1.0]
    ids, _ = head_gap_decide(pool(distances, multipliers), 5, HeadGapParams(band=0.5, recency_margin=None))
    assert sorted(ids) == [0, 1, 2, 3, 4]
    assert ids == [0, 1, 2, 3, 4]  # equal multipliers: similarity order


def test_an_old_relevant_memory_the_recency_scale_drops_is_kept() -> None:
    """A three-year-old finding at 0.60 and fresh ones at 0.90+: a fixed threshold on the recency-adjusted
    scale (0.60 × 1.85 = 1.11 > 1.0) loses it; headgap, cutting on the adjusted scale, keeps it first."""
    results = reranked([0.60, 0.90, 0.91, 0.92], [1100, 1, 1, 1])
    assert 1 in [r.memory_id for r in HeadGapCut(VECTOR_ONLY)(results, ctx()).results]
    assert 1 not in [r.memory_id for r in FixedCut(1.0, scale="recency")(results, ctx()).results]
    assert 1 in [r.memory_id for r in FixedCut(1.0)(results, ctx()).results]
    assert fixed_select(pool([0.6, 0.9], [1.85, 1.0]), 1.0, 5, "adjusted") == [1, 0]  # recency orders


# ---- the fused score -----------------------------------------------------------------------------------


FUSED = HeadGapParams(band=0.5, lexical_weight=0.5, lexical_band=0.3, recency_margin=None)


def test_the_lexical_channel_re_ranks_the_fused_order() -> None:
    """Memory 2 is third by vector distance but the only lexical match: fused it comes first."""
    candidates = pool([0.50, 0.52, 0.60, 0.95], lexical=[0.0, 0.0, 7.5, 0.0])
    ids, decision = head_gap_decide(candidates, 5, FUSED, lexical=True)
    assert ids[0] == 2 and decision.method == "headgap:band+lexical"
    vector_only, plain = head_gap_decide(candidates, 5, FUSED, lexical=False)
    assert vector_only[0] == 0 and plain.method == "headgap:band"


def test_each_channel_is_normalised_within_the_pool_before_fusion() -> None:
    """Multiplying every BM25 score (or every distance) by a constant changes nothing: the fusion never
    compares raw scores of the two channels, nor ranks alone."""
    distances = [0.50, 0.52, 0.60, 0.70, 0.95]
    bm25 = [0.0, 3.0, 7.5, 1.0, 0.0]
    base = head_gap_decide(pool(distances, lexical=bm25), 5, FUSED, lexical=True)
    louder = head_gap_decide(pool(distances, lexical=[s * 40 for s in bm25]), 5, FUSED, lexical=True)
    rescaled = head_gap_decide(pool([d * 1.7 for d in distances], lexical=bm25), 5, FUSED, lexical=True)
    assert base[0] == louder[0] == rescaled[0]


def test_fusion_is_not_rank_only() -> None:
    """The same ranks in each channel but different score gaps give different cuts (RRF could not)."""
    close = head_gap_decide(pool([0.50, 0.51, 0.90], lexical=[5.0, 4.9, 0.0]), 5, FUSED, lexical=True)
    apart = head_gap_decide(pool([0.50, 0.85, 0.90], lexical=[5.0, 0.5, 0.0]), 5, FUSED, lexical=True)
    assert close[0] == [0, 1] and apart[0] == [0]


def test_no_lexical_match_names_no_lexical_channel() -> None:
    _, decision = head_gap_decide(pool([0.5, 0.6], lexical=[0.0, 0.0]), 5, FUSED, lexical=True)
    assert decision.method == "headgap:band"


def test_the_cut_reads_lexical_scores_from_the_context() -> None:
    results = reranked([0.50, 0.52, 0.60, 0.95], [10, 10, 10, 10])
    fused = HeadGapCut(FUSED)(results, ctx(lexical={3: 7.5}))
    assert fused.results[0].memory_id == 3 and fused.threshold.method == "headgap:band+lexical"
    assert HeadGapCut(FUSED).uses_lexical and not HeadGapCut(VECTOR_ONLY).uses_lexical
    alone = HeadGapCut(FUSED)(results, ctx())  # the chain gave no lexical channel
    assert alone.results[0].memory_id == 1 and alone.threshold.method == "headgap:band"


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_lexical_weight_extremes(weight: float) -> None:
    """Weight 0 is the vector channel alone (its own band); weight 1 the lexical channel alone."""
    candidates = pool([0.50, 0.60, 0.95], lexical=[0.0, 6.0, 0.0])
    params = FUSED.model_copy(update={"lexical_weight": weight, "lexical_band": 0.0, "band": 0.0})
    ids, _ = head_gap_decide(candidates, 5, params, lexical=True)
    assert ids == ([0] if weight == 0.0 else [1])
