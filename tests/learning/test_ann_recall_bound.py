"""The in-memory index's recall estimate holds on queries it never sampled.

The calibration's estimate is a lower confidence bound (:func:`recall_lcb`) taken over several query
families, the worst family deciding; an index is kept only when clearly faster than the exact scan in two
timings (:func:`clearly_faster`); and it is measured again once its table has grown
(:func:`needs_recalibration`). The held-out check runs on a small low-rank table where a single family's
mean over-promises, and measures recall with the benchmark's held-out families (none of them a
calibration family).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kodiai.learning.ann_index import (
    CALIBRATION_FAMILIES,
    AnnIndex,
    build_calibrated,
    calibration_queries,
    clearly_faster,
    exact_neighbours,
    needs_recalibration,
    per_query_recall,
    recall_lcb,
)
from kodiai.learning.memory_index import MemoryStoreOptions

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import ann_recall  # noqa: E402

K = 20
recalls = st.lists(st.integers(0, K).map(lambda hits: hits / K), min_size=1, max_size=200)


@pytest.fixture(autouse=True, scope="module")
def one_faiss_thread() -> Iterator[None]:
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(threads)


# ---- the bound (pure) --------------------------------------------------------------------------------


@given(recalls)
def test_the_bound_lies_between_zero_and_the_mean(values: list[float]) -> None:
    bound = recall_lcb(np.array(values), K)
    assert 0.0 <= bound <= float(np.mean(values)) + 1e-12


@given(recalls, st.integers(2, 6))
def test_more_queries_of_the_same_shape_tighten_the_bound(values: list[float], copies: int) -> None:
    once = recall_lcb(np.array(values), K)
    more = recall_lcb(np.array(values * copies), K)
    assert more >= once - 1e-12


@given(st.integers(K // 2, K - 1), st.integers(4, 100))
def test_spread_at_the_same_mean_lowers_the_bound(hits: int, half: int) -> None:
    """Misses concentrated in some queries (a missed cell loses most neighbours at once) are less certain
    than the same misses spread evenly, so they bound lower."""
    even = np.full(2 * half, hits / K)
    lumpy = np.array([1.0, (2 * hits - K) / K] * half)
    assert np.isclose(even.mean(), lumpy.mean())
    assert recall_lcb(lumpy, K) < recall_lcb(even, K)


def test_a_perfect_score_on_few_queries_is_not_a_certainty() -> None:
    assert recall_lcb(np.ones(5), K) < 0.98  # 5 perfect queries: 100 neighbours, not proof of 0.98
    assert recall_lcb(np.ones(60), K) > 0.995
    assert recall_lcb(np.array([]), K) == 0.0
    assert recall_lcb(np.array([0.95] * 60), K) < 0.95  # the margin: a mean at the target is not enough


def test_one_timing_round_alone_never_keeps_an_index() -> None:
    """Exact unless clearly faster in every round: a lucky first timing (4x faster) followed by one at
    parity is rejected, as is an index measured at 1.02x, or not timed at all."""
    assert clearly_faster([(1.0, 4.0), (1.9, 4.0)], 0.5)
    assert not clearly_faster([(1.0, 4.0), (4.08, 4.0)], 0.5)
    assert not clearly_faster([(4.08, 4.0)], 0.5)
    assert not clearly_faster([], 0.5)


@given(st.lists(st.tuples(st.floats(0.01, 100), st.floats(0.01, 100)), max_size=4), st.floats(0, 2))
def test_a_stricter_cost_limit_never_keeps_more(rounds: list[tuple[float, float]], cost: float) -> None:
    if clearly_faster(rounds, cost):
        assert clearly_faster(rounds, cost * 1.5)
    if not clearly_faster(rounds, cost):
        assert not clearly_faster(rounds, cost / 1.5)


@given(st.integers(1, 10**7), st.integers(0, 10**8), st.floats(1.01, 8))
def test_recalibration_waits_for_the_growth_factor(calibrated: int, live: int, growth: float) -> None:
    assert needs_recalibration(calibrated, live, growth) == (live >= growth * calibrated)
    assert not needs_recalibration(calibrated, live, 0.0)


def test_calibration_draws_every_family_and_none_is_a_stored_row() -> None:
    x = ann_recall.lowrank(np.random.default_rng(4), 32).draw(3_000)
    families, held = calibration_queries(x, 480)
    assert tuple(families) == CALIBRATION_FAMILIES and len(held) == 60
    assert not set(ann_recall.HELD_OUT) & set(families)
    measured = np.delete(x, held, axis=0)
    for name, queries in families.items():
        assert len(queries) == 60, name
        gap = np.linalg.norm(measured[exact_neighbours(measured, queries, 1)[:, 0]] - queries, axis=1)
        assert gap.min() > 1e-4, name
        assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5), name


# ---- held out: the estimate against families the calibration never saw -------------------------------


def test_the_estimate_holds_on_held_out_families_where_one_family_over_promises() -> None:
    """Low rank, 6,000 × 32: IVF at 16 of 77 probes scores ≥ 0.96 on held-out stored rows (what a
    single-family calibration samples) but clearly less on the benchmark's held-out families; the
    calibration must neither stop there nor promise more than those families then measure."""
    rows, dim = 6_000, 32
    rng = np.random.default_rng(3 + rows + dim)
    source = ann_recall.lowrank(rng, dim)
    x = source.draw(rows)
    ids = np.arange(rows, dtype=np.int64) + 1
    held_out = ann_recall.held_out_queries(rng, source, x, 100)

    def measured(index: object) -> float:
        worst = 1.0
        for queries in held_out.values():
            truth = ids[exact_neighbours(x, queries, K)]
            found = np.array([[h.memory_id for h in index.search(q, K)] for q in queries])  # type: ignore[attr-defined]
            worst = min(worst, float(per_query_recall(found, truth).mean()))
        return worst

    families, held = calibration_queries(x, 480)
    single = AnnIndex(ids, x, nprobe=16, skip=held)
    truth = ids[exact_neighbours(x, families["heldout"], K, exclude=held)]
    single_estimate = float(per_query_recall(single.candidate_ids(families["heldout"], 36), truth).mean())
    single.add(ids[held], x[held])
    assert single_estimate >= 0.96 and measured(single) < single_estimate - 0.02  # one family over-promises

    options = MemoryStoreOptions(ann_max_cost=10.0, ann_structures=("ivf",))
    index, report = build_calibrated(ids, x, options)

    actual = measured(index)
    assert report.recall is not None and report.recall >= options.ann_recall_target
    assert actual >= 0.95
    assert report.recall <= actual  # the estimate is a bound on queries it never sampled
    assert set(report.recall_lcb_by_family) == set(CALIBRATION_FAMILIES)
    assert report.recall == min(report.recall_lcb_by_family.values())


def test_the_benchmark_smoke_run_reports_estimate_and_held_out_recall(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``benchmarks/ann_recall.py --smoke`` (the figures docs/learned-memory.md quotes come from its full
    run) reports the estimate beside the held-out recall and both p50s."""
    results = ann_recall.main(["--smoke", "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert [r["dist"] for r in printed] == ["clustered", "lowrank"] == [r.dist for r in results]
    for r in printed:
        assert set(r["measured"]) == set(ann_recall.HELD_OUT)
        assert r["measured_min"] >= 0.95 and r["estimated"] <= r["measured_min"] + 0.01
        assert r["p50_ms"] > 0 and r["exact_p50_ms"] > 0
