"""Isolation (R2.25), the chain (R1 step 32, X-24/X-25), confidence labels, the ambiguity signal and
retrieval telemetry — on a real LanceDB store and the real SQLite telemetry store."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from learning_helpers import at_distance, make_record, retrieve_kw, unit

from kodiai.learning.ambiguity import AmbiguityConfig, ambiguity_signal
from kodiai.learning.confidence import ConfidenceConfig, confidence_labels, label_for
from kodiai.learning.isolation import IsolationLayer, internal_top_k
from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store
from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.learning.telemetry import record_retrieval_quality
from kodiai.learning.threshold.types import AdaptiveThresholdResult, CutContext, CutDecision
from kodiai.learning.types import RerankedResult
from kodiai.storage.telemetry import TelemetryStore

DIM = 48
NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> LanceMemoryStore:
    return open_memory_store(str(tmp_path / "m.lance"), dimensions=DIM)


def fill(
    store: LanceMemoryStore, q: np.ndarray, spec: Sequence[tuple[str, float, str]], seed: int = 1
) -> None:
    rng = np.random.default_rng(seed)
    for fid, (repo, distance, path) in enumerate(spec, start=1):
        store.write_memory(
            make_record(repo, fid, file_path=path, dim=DIM, created_at="2026-06-01 00:00:00"),
            at_distance(q, distance, rng),
        )


def run(store: LanceMemoryStore, q: np.ndarray, **kw: object) -> RetrievalOutcome:
    args: dict[str, object] = {
        "repo": "acme/api",
        "owner": "acme",
        "sharing_enabled": False,
        "pr_languages": ["TypeScript"],
        "top_k": 3,
        "distance_threshold": 0.3,
        "adaptive": True,
        "now": NOW,
    }
    args.update(kw)
    return retrieve_kw(IsolationLayer(store), q, **args)


def test_internal_top_k() -> None:
    """R2.25: max(20, top_k*4) when adaptive, else top_k."""
    assert [internal_top_k(k, True) for k in (1, 5, 6, 20)] == [20, 20, 24, 80]
    assert internal_top_k(5, False) == 5


def test_isolation_adaptive_is_unfiltered_wide_pool(store: LanceMemoryStore) -> None:
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", 0.1 + 0.05 * i, "a.ts") for i in range(25)])
    out = IsolationLayer(store).retrieve_with_isolation(
        query_embedding=q,
        repo="acme/api",
        owner="acme",
        sharing_enabled=False,
        top_k=2,
        distance_threshold=0.3,
    )
    assert len(out.results) == 20
    assert max(r.distance for r in out.results) > 0.3
    assert out.provenance.query.internal_top_k == 20
    assert out.provenance.repo_sources == ["acme/api"]
    assert out.provenance.shared_pool_used is False


def test_isolation_non_adaptive_filters_by_threshold(store: LanceMemoryStore) -> None:
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", d, "a.ts") for d in (0.1, 0.2, 0.5)])
    out = IsolationLayer(store).retrieve_with_isolation(
        query_embedding=q,
        repo="acme/api",
        owner="acme",
        sharing_enabled=False,
        top_k=5,
        distance_threshold=0.3,
        adaptive=False,
    )
    assert [round(r.distance, 3) for r in out.results] == [0.1, 0.2]


def test_isolation_sharing_adds_owner_pool_with_provenance(store: LanceMemoryStore) -> None:
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", 0.3, "a.ts"), ("acme/web", 0.1, "b.ts"), ("other/x", 0.05, "c.ts")])
    out = IsolationLayer(store).retrieve_with_isolation(
        query_embedding=q,
        repo="acme/api",
        owner="acme",
        sharing_enabled=True,
        top_k=5,
        distance_threshold=0.3,
    )
    assert [r.record.repo for r in out.results] == ["acme/web", "acme/api"]
    assert out.provenance.repo_sources == ["acme/web", "acme/api"]
    assert out.provenance.shared_pool_used is True
    assert out.provenance.total_candidates == 2


def test_x_25_non_adaptive_reports_configured_threshold_unclamped(store: LanceMemoryStore) -> None:
    """X-25: adaptive off → threshold = configured value, unclamped, method configured."""
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", d, "a.ts") for d in (0.1, 0.2, 0.5)])
    out = run(store, q, adaptive=False, distance_threshold=0.9, top_k=2)
    assert (out.threshold.threshold, out.threshold.method) == (0.9, "configured")
    assert out.quality.distance_threshold == 0.9
    assert len(out.results) == 2


def test_chain_cuts_at_gap_and_reports_quality(store: LanceMemoryStore) -> None:
    q = unit(np.random.default_rng(0), DIM)
    spec = [("acme/api", d, "a.ts") for d in (0.20, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26)] + [
        ("acme/api", d, "a.py") for d in (0.9, 0.95, 1.0)
    ]
    fill(store, q, spec)
    out = run(store, q, top_k=5)
    assert out.threshold.method == "adaptive"
    assert len(out.candidates) == 10
    assert len(out.results) == 5
    assert all(r.language_match for r in out.results)
    assert out.quality.result_count == 5
    assert out.quality.language_match_ratio == 1.0
    assert out.quality.avg_distance == pytest.approx(sum(r.adjusted_distance for r in out.results) / 5)


def test_empty_store_gives_clamped_configured_and_null_averages(store: LanceMemoryStore) -> None:
    out = run(store, unit(np.random.default_rng(0), DIM), distance_threshold=0.9)
    assert (out.threshold.threshold, out.threshold.method, out.threshold.candidate_count) == (
        0.65,
        "configured",
        0,
    )
    assert out.results == []
    assert (out.quality.avg_distance, out.quality.language_match_ratio) == (None, None)


def test_cut_strategy_is_swappable(store: LanceMemoryStore) -> None:
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", d, "a.ts") for d in (0.1, 0.2, 0.3)])

    def keep_one(reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
        t = AdaptiveThresholdResult(threshold=1.0, method="configured", candidate_count=len(reranked))
        return CutDecision(results=list(reranked[:1]), threshold=t)

    out = run(store, q, cut=keep_one)
    assert len(out.results) == 1 and out.threshold.threshold == 1.0


# ---- confidence labels --------------------------------------------------------------------------------


def test_confidence_single_weak_result_is_not_high() -> None:
    assert confidence_labels([1.1]) == ["low"]
    assert confidence_labels([0.8]) == ["medium"]


def test_confidence_single_strong_result_is_high() -> None:
    assert confidence_labels([0.2]) == ["high"]


def test_confidence_ties_share_a_label() -> None:
    labels = confidence_labels([0.3, 0.3, 0.3, 0.75, 0.75])
    assert labels[:3] == ["high"] * 3
    assert labels[3] == labels[4]


def test_confidence_ratio_bands() -> None:
    cfg = ConfidenceConfig(high_min_similarity=0.0, medium_min_similarity=0.0)
    assert label_for(0.75, 1.0, cfg) == "high"
    assert label_for(0.7499, 1.0, cfg) == "medium"
    assert label_for(0.40, 1.0, cfg) == "medium"
    assert label_for(0.3999, 1.0, cfg) == "low"


def test_confidence_empty_and_zero_defined() -> None:
    assert confidence_labels([]) == []
    # orthogonal or worse: best similarity 0 → all low
    assert confidence_labels([2.0, 1.5]) == ["low", "low"]


def test_pipeline_labels_follow_results_and_count_in_quality(store: LanceMemoryStore) -> None:
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", d, "a.ts") for d in (0.1, 0.12, 0.5)])
    out = run(store, q, confidence=ConfidenceConfig(), adaptive=False, distance_threshold=2.0)
    assert out.confidence == confidence_labels([r.distance for r in out.results])
    assert out.quality.confidence_high == out.confidence.count("high")  # type: ignore[union-attr]
    off = run(store, q)
    assert off.confidence is None and off.quality.confidence_high is None


# ---- ambiguity ----------------------------------------------------------------------------------------


def test_ambiguity_counts_the_whole_pool_not_top_k(store: LanceMemoryStore) -> None:
    """Eight near-equal candidates, top_k 3: the cluster is 8 (> 3) — measured before truncation."""
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", 0.2 + 0.001 * i, "a.ts") for i in range(8)] + [("acme/api", 1.2, "a.ts")])
    out = run(store, q, top_k=3, ambiguity=AmbiguityConfig())
    assert out.ambiguity is not None
    assert (out.ambiguity.pool_size, out.ambiguity.cluster_size, out.ambiguity.ambiguous) == (9, 8, True)
    assert len(out.results) <= 3
    assert out.quality.ambiguity_cluster_size == 8


def test_ambiguity_distinct_best_is_not_ambiguous() -> None:
    s = ambiguity_signal([0.1, 0.9, 1.0, 1.1], 3, AmbiguityConfig())
    assert (s.cluster_size, s.ambiguous) == (1, False)
    assert ambiguity_signal([], 3, AmbiguityConfig()).cluster_size == 0


# ---- telemetry ----------------------------------------------------------------------------------------


def test_telemetry_one_row_per_delivery_idempotent(store: LanceMemoryStore, tmp_path: Path) -> None:
    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", d, "a.ts") for d in (0.1, 0.2)])
    out = run(store, q, confidence=ConfidenceConfig(), ambiguity=AmbiguityConfig())
    db = tmp_path / "telemetry.db"
    telemetry = TelemetryStore(db)
    for _ in range(2):
        assert record_retrieval_quality(
            telemetry,
            out,
            enabled=True,
            delivery_id="d-1",
            repo="acme/api",
            pr_number=7,
            event_type="pull_request",
        )
    telemetry.close()
    rows = (
        sqlite3.connect(db)
        .execute(
            "SELECT delivery_id, event_type, top_k, distance_threshold, result_count, avg_distance, "
            "language_match_ratio, threshold_method, candidate_count, ambiguity_cluster_size, confidence_high "
            "FROM retrieval_quality"
        )
        .fetchall()
    )
    assert len(rows) == 1
    row = rows[0]
    assert row[:5] == ("d-1", "pull_request", 3, out.threshold.threshold, len(out.results))
    assert row[5] == pytest.approx(out.quality.avg_distance)
    assert row[7] == out.threshold.method
    assert row[8:] == (2, out.quality.ambiguity_cluster_size, out.quality.confidence_high)


def test_telemetry_disabled_writes_nothing_and_failure_is_fail_open(
    store: LanceMemoryStore, tmp_path: Path
) -> None:
    out = run(store, unit(np.random.default_rng(0), DIM))
    telemetry = TelemetryStore(tmp_path / "t.db")
    assert not record_retrieval_quality(
        telemetry,
        out,
        enabled=False,
        delivery_id="d",
        repo="acme/api",
        pr_number=1,
        event_type="pull_request",
    )
    telemetry.close()  # a closed store raises on write: the retrieval must not
    assert not record_retrieval_quality(
        telemetry, out, enabled=True, delivery_id="d", repo="acme/api", pr_number=1, event_type="pull_request"
    )
    count = sqlite3.connect(tmp_path / "t.db").execute("SELECT COUNT(*) FROM retrieval_quality").fetchone()[0]
    assert count == 0


def test_signal_configs_defaults() -> None:
    from kodiai.learning.retrieval_options import signal_configs

    assert signal_configs(None, None) == (ConfidenceConfig(), None)
    assert signal_configs(False, True) == (None, AmbiguityConfig())


def test_prompt_findings_carry_adjusted_distance_and_label(store: LanceMemoryStore) -> None:
    """R1 step 32.8: findings for the prompt use the adjusted distance; the label rides along."""
    from kodiai.review.prompt.context import RetrievedFinding

    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", 0.1, "a.ts"), ("acme/api", 0.2, "b.ts")])
    out = run(store, q, confidence=ConfidenceConfig())
    findings = out.prompt_findings()
    assert [f["distance"] for f in findings] == [r.adjusted_distance for r in out.results]
    assert [f["confidence"] for f in findings] == out.confidence
    parsed = [RetrievedFinding.model_validate(f) for f in findings]
    assert parsed[0].file_path == out.results[0].record.file_path


def test_telemetry_retrieval_report_shows_confidence_columns(store: LanceMemoryStore, tmp_path: Path) -> None:
    """`kodiai telemetry retrieval` reports the columns of migration 0100 written by a real retrieval."""
    import json as _json

    from typer.testing import CliRunner

    from kodiai.cli.main import app

    q = unit(np.random.default_rng(0), DIM)
    fill(store, q, [("acme/api", d, "a.ts") for d in (0.1, 0.11, 0.12)])
    out = run(store, q, confidence=ConfidenceConfig(), ambiguity=AmbiguityConfig())
    db = tmp_path / "telemetry.db"
    telemetry = TelemetryStore(db)
    record_retrieval_quality(
        telemetry,
        out,
        enabled=True,
        delivery_id="d-9",
        repo="acme/api",
        pr_number=1,
        event_type="pull_request",
    )
    telemetry.close()
    result = CliRunner().invoke(app, ["telemetry", "retrieval", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    report = _json.loads(result.stdout)
    for column in (
        "candidate_count",
        "ambiguity_cluster_size",
        "confidence_high",
        "confidence_medium",
        "confidence_low",
    ):
        assert column in report["extra_columns"]
    assert report["overall"]["extra"]["ambiguity_cluster_size"] == 3
    assert report["overall"]["extra"]["confidence_high"] == out.confidence.count("high")  # type: ignore[union-attr]


def test_recency_can_be_owned_by_the_cut_or_switched_off(store: LanceMemoryStore) -> None:
    """A cut with ``owns_recency`` gets the unweighted list plus what it needs to weight it itself."""
    q = unit(np.random.default_rng(0), DIM)
    rng = np.random.default_rng(1)
    store.write_memory(
        make_record("acme/api", 1, file_path="a.ts", dim=DIM, created_at="2025-06-01 00:00:00"),
        at_distance(q, 0.2, rng),
    )
    seen: list[tuple[float, CutContext]] = []

    class Owning:
        owns_recency = True

        def __call__(self, reranked: Sequence[RerankedResult], ctx: CutContext) -> CutDecision:
            seen.append((reranked[0].adjusted_distance, ctx))
            t = AdaptiveThresholdResult(threshold=1.0, method="configured", candidate_count=len(reranked))
            return CutDecision(results=list(reranked), threshold=t)

    run(store, q, cut=Owning())
    unweighted, ctx = seen[0]
    assert unweighted == pytest.approx(0.2 * 0.85, rel=1e-6)  # language boost only
    assert ctx.now == NOW and ctx.recency is True
    weighted = run(store, q).reranked[0].adjusted_distance
    assert weighted > unweighted
    assert run(store, q, recency=False).reranked[0].adjusted_distance == pytest.approx(unweighted)
