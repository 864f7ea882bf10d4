"""Spec checklists R4.25 (AT), R4.27 (RQ), R4.28 (RR), R4.29 (RK): the original's unit tests, ported."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from learning_helpers import make_record

from kodiai.learning.adaptive_threshold import AdaptiveThresholdConfig, compute_adaptive_threshold
from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.rerank import DEFAULT_RERANK_CONFIG, RerankConfig, rerank_by_language
from kodiai.learning.retrieval_query import RetrievalQuerySignals, build_retrieval_query
from kodiai.learning.types import RerankedResult, RetrievalResult

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _sqlite(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def result(memory_id: int, distance: float, path: str = "src/a.ts") -> RetrievalResult:
    return RetrievalResult(
        memory_id=memory_id,
        distance=distance,
        record=make_record(finding_id=memory_id, file_path=path),
        source_repo="acme/api",
    )


def reranked(
    memory_id: int, adjusted: float, *, severity: str = "major", age_days: float | None = 0
) -> RerankedResult:
    created = None if age_days is None else _sqlite(NOW - timedelta(days=age_days))
    return RerankedResult(
        memory_id=memory_id,
        distance=adjusted,
        record=make_record(finding_id=memory_id, severity=severity, created_at=created),
        source_repo="acme/api",
        adjusted_distance=adjusted,
        language_match=False,
    )


# ---- R4.25 adaptive threshold -------------------------------------------------------------------------


def test_at_01_no_distances_configured() -> None:
    r = compute_adaptive_threshold([], 0.3)
    assert (r.threshold, r.method, r.candidate_count) == (0.3, "configured", 0)


def test_at_02_single_distance_percentile() -> None:
    r = compute_adaptive_threshold([0.2], 0.3)
    assert (r.threshold, r.method, r.candidate_count) == (0.2, "percentile", 1)


def test_at_03_seven_distances_percentile_index_5() -> None:
    r = compute_adaptive_threshold([0.1, 0.15, 0.18, 0.2, 0.22, 0.25, 0.3], 0.3)
    assert (r.method, r.threshold) == ("percentile", 0.25)


def test_at_04_gap_before_half_adaptive() -> None:
    r = compute_adaptive_threshold([0.1, 0.12, 0.15, 0.18, 0.2, 0.22, 0.25, 0.5], 0.3)
    assert r.method == "adaptive"
    assert r.threshold == 0.25
    assert r.gap_size == pytest.approx(0.25)
    assert r.gap_index == 7


def test_at_05_small_max_gap_falls_back_to_configured_with_gap() -> None:
    r = compute_adaptive_threshold([0.28, 0.29, 0.3, 0.31, 0.32, 0.33, 0.34, 0.35], 0.3)
    assert (r.method, r.threshold) == ("configured", 0.3)
    assert r.gap_size == pytest.approx(0.01)
    assert r.gap_index is None


def test_at_06_clamped_to_floor() -> None:
    assert compute_adaptive_threshold([0.05, 0.06], 0.3).threshold == 0.15


def test_at_07_clamped_to_ceiling() -> None:
    assert compute_adaptive_threshold([0.7, 0.8, 0.9], 0.3).threshold == 0.65


def test_at_08_unsorted_equals_sorted() -> None:
    d = [0.1, 0.12, 0.15, 0.18, 0.2, 0.22, 0.25, 0.5]
    assert compute_adaptive_threshold(list(reversed(d)), 0.3) == compute_adaptive_threshold(d, 0.3)


def test_at_09_config_override() -> None:
    cfg = AdaptiveThresholdConfig(fallback_percentile=0.5, ceiling=0.2)
    assert compute_adaptive_threshold([0.12, 0.25, 0.3, 0.35], 0.3, cfg).threshold == 0.2


# ---- R4.27 retrieval query ----------------------------------------------------------------------------


def test_rq_01_title_only() -> None:
    assert build_retrieval_query(RetrievalQuerySignals(pr_title="Fix login")) == "Fix login"


def test_rq_02_every_signal_appears() -> None:
    q = build_retrieval_query(
        RetrievalQuerySignals(
            pr_title="Add auth",
            pr_body="Adds OAuth flow",
            conventional_type="feat",
            detected_languages=["TypeScript", "Python"],
            risk_signals=["auth", "crypto"],
            author_tier="first-time",
            top_file_paths=["src/auth.ts", "src/login.py"],
        )
    )
    assert q.split("\n") == [
        "Add auth",
        "Adds OAuth flow",
        "[feat]",
        "Languages: TypeScript, Python",
        "Risk: auth, crypto",
        "Author: first-time",
        "src/auth.ts",
        "src/login.py",
    ]


def test_rq_03_body_cut_to_200() -> None:
    q = build_retrieval_query(RetrievalQuerySignals(pr_title="t", pr_body="x" * 500))
    assert len(q.split("\n")[1]) <= 200


def test_rq_04_languages_capped_at_5() -> None:
    q = build_retrieval_query(
        RetrievalQuerySignals(pr_title="t", detected_languages=[f"L{i}" for i in range(8)])
    )
    assert "Languages: L0, L1, L2, L3, L4" in q and "L5" not in q


def test_rq_05_risks_capped_at_3() -> None:
    q = build_retrieval_query(RetrievalQuerySignals(pr_title="t", risk_signals=[f"r{i}" for i in range(6)]))
    assert "Risk: r0, r1, r2" in q and "r3" not in q


def test_rq_06_paths_capped_at_15() -> None:
    q = build_retrieval_query(
        RetrievalQuerySignals(pr_title="t", top_file_paths=[f"p{i}.ts" for i in range(25)])
    )
    assert len(q.split("\n")) == 16


def test_rq_07_total_capped_at_800_title_kept() -> None:
    q = build_retrieval_query(
        RetrievalQuerySignals(
            pr_title="Important title",
            pr_body="b" * 300,
            top_file_paths=[f"src/{'d' * 60}/{i}.ts" for i in range(15)],
        )
    )
    assert len(q) <= 800 and q.startswith("Important title")


def test_rq_08_null_conventional_type_no_brackets() -> None:
    assert "[" not in build_retrieval_query(RetrievalQuerySignals(pr_title="t", conventional_type=None))


def test_rq_09_absent_conventional_type_no_bracket() -> None:
    assert "[" not in build_retrieval_query({"pr_title": "t"})


def test_rq_10_empty_body_left_out() -> None:
    assert build_retrieval_query(RetrievalQuerySignals(pr_title="t", pr_body="")) == "t"


# ---- R4.28 recency ------------------------------------------------------------------------------------


def test_rr_01_recent_ranks_ahead_of_old_at_same_distance() -> None:
    out = apply_recency_weighting([reranked(1, 0.3, age_days=200), reranked(2, 0.3, age_days=7)], NOW)
    assert [r.memory_id for r in out] == [2, 1]


def test_rr_02_critical_365_days_x_1_7() -> None:
    out = apply_recency_weighting([reranked(1, 0.2, severity="critical", age_days=365)], NOW)
    assert out[0].adjusted_distance == pytest.approx(0.2 * 1.7)


def test_rr_03_minor_365_days_x_1_85() -> None:
    out = apply_recency_weighting([reranked(1, 0.2, severity="minor", age_days=365)], NOW)
    assert out[0].adjusted_distance == pytest.approx(0.2 * 1.85)


def test_rr_04_missing_created_at_is_age_0() -> None:
    out = apply_recency_weighting([reranked(1, 0.2, age_days=None)], NOW)
    assert out[0].adjusted_distance == pytest.approx(0.2)


def test_rr_05_resorted_old_loses_to_recent() -> None:
    out = apply_recency_weighting([reranked(1, 0.20, age_days=365), reranked(2, 0.25, age_days=1)], NOW)
    assert [r.memory_id for r in out] == [2, 1]


def test_rr_06_input_not_mutated() -> None:
    items = [reranked(1, 0.2, age_days=365), reranked(2, 0.25, age_days=1)]
    before = [r.model_dump() for r in items]
    apply_recency_weighting(items, NOW)
    assert [r.model_dump() for r in items] == before


def test_rr_iso_and_sqlite_created_at_agree() -> None:
    """Both created_at forms are UTC: ISO-with-Z and SQLite text give the same weight."""
    a = reranked(1, 0.4, age_days=30)
    b = a.model_copy(
        update={
            "record": a.record.model_copy(
                update={"created_at": (NOW - timedelta(days=30)).isoformat().replace("+00:00", "Z")}
            )
        }
    )
    assert apply_recency_weighting([a], NOW)[0].adjusted_distance == pytest.approx(
        apply_recency_weighting([b], NOW)[0].adjusted_distance, rel=1e-12
    )


# ---- R4.29 rerank -------------------------------------------------------------------------------------


def test_rk_01_same_language_boost() -> None:
    out = rerank_by_language([result(1, 0.4, "src/a.ts")], ["TypeScript"])
    assert out[0].adjusted_distance == pytest.approx(0.34) and out[0].language_match is True


def test_rk_02_cross_language_penalty() -> None:
    out = rerank_by_language([result(1, 0.4, "src/a.py")], ["TypeScript"])
    assert out[0].adjusted_distance == pytest.approx(0.46) and out[0].language_match is False


def test_rk_03_unknown_language_neutral() -> None:
    out = rerank_by_language([result(1, 0.4, "package.json")], ["TypeScript"])
    assert out[0].adjusted_distance == 0.4 and out[0].language_match is False


def test_rk_04_mixed_resort() -> None:
    out = rerank_by_language(
        [result(1, 0.35, "a.json"), result(2, 0.3, "b.py"), result(3, 0.4, "c.ts")], ["TypeScript"]
    )
    assert [round(r.adjusted_distance, 3) for r in out] == [0.34, 0.345, 0.35]


def test_rk_05_custom_config() -> None:
    cfg = RerankConfig(same_language_boost=0.7, cross_language_penalty=1.3)
    out = rerank_by_language([result(1, 0.4, "a.ts"), result(2, 0.4, "a.go")], ["TypeScript"], cfg)
    assert [r.adjusted_distance for r in out] == [pytest.approx(0.28), pytest.approx(0.52)]


def test_rk_06_empty() -> None:
    assert rerank_by_language([], ["TypeScript"]) == []


def test_rk_07_close_cross_language_beats_far_same_language() -> None:
    out = rerank_by_language([result(1, 0.5, "a.ts"), result(2, 0.1, "a.go")], ["TypeScript"])
    assert out[0].memory_id == 2


def test_rk_08_two_pr_languages_boosted_go_penalised() -> None:
    out = rerank_by_language(
        [result(1, 0.4, "a.ts"), result(2, 0.4, "a.py"), result(3, 0.4, "a.go")], ["TypeScript", "Python"]
    )
    assert {r.memory_id: r.language_match for r in out} == {1: True, 2: True, 3: False}
    assert out[-1].adjusted_distance == pytest.approx(0.46)


def test_rk_09_defaults() -> None:
    assert (DEFAULT_RERANK_CONFIG.same_language_boost, DEFAULT_RERANK_CONFIG.cross_language_penalty) == (
        0.85,
        1.15,
    )
