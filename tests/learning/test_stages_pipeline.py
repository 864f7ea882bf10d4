"""The stages in the real chain (LanceDB store, lexical channel, ``retrieve_context``) and in telemetry:
off changes nothing, the ranker and the abstain stage decide and say why, ``maxgap`` and the re-review
scope never run them, and the ``retrieval_quality`` row carries ``second_stage`` / ``abstain_reason`` on
SQLite and PostgreSQL (migration 0104)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from learning_helpers import at_distance, make_record, retrieve_kw, unit

from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.lexical import LexicalChannel
from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store
from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.learning.recency import apply_recency_weighting
from kodiai.learning.stages import StageSwitches
from kodiai.learning.telemetry import quality_row
from kodiai.learning.threshold.profiles import MINILM_PROFILE, VOYAGE_PROFILE
from kodiai.storage.telemetry import TelemetryStore
from support.db_backends import DbBackend, db_backend  # noqa: F401  (the fixture)

DIM = 32
NOW = datetime(2026, 6, 1, tzinfo=UTC)
# the query names no path, so the first stage goes by wording and distance alone
QUERY_TEXT = "Fix a race when the scheduler releases a worker\nLanguages: Go"
PR_FILES = ["src/ctx/pool_reuse.go"]
# (finding text, file path, distance from the query vector)
MEMORIES = [
    ("Fix nil pointer in router", "src/router/tree.go", 0.50),
    ("Fix header parsing of quoted values", "src/helpers.go", 0.55),
    ("Fix race in scheduler", "src/sched/worker.go", 0.58),
    ("Fix leak when the pool is reused after release", "src/ctx/pool_reuse.go", 0.66),
    ("Fix double close of the ctx", "src/ctx/ctx.go", 0.70),
    ("Update wording", "docs/intro.md", 1.10),
]


def build(tmp_path: Path) -> tuple[LanceMemoryStore, np.ndarray]:
    rng = np.random.default_rng(5)
    query = unit(rng, DIM)
    store = open_memory_store(str(tmp_path / "mem.lance"), DIM)
    for i, (text, path, distance) in enumerate(MEMORIES, start=1):
        record = make_record(
            repo="acme/api",
            finding_id=i,
            text=text,
            file_path=path,
            model="m",
            dim=DIM,
            created_at="2025-05-01 00:00:00",
        )
        store.write_memory(record, at_distance(query, distance, rng))
    return store, query


def run(
    store: LanceMemoryStore,
    query: np.ndarray,
    *,
    stages: StageSwitches | None,
    pr_files: list[str] = PR_FILES,
    cut: object = None,
    same_pr: frozenset[int] | None = None,
) -> RetrievalOutcome:
    return retrieve_kw(
        IsolationLayer(store),
        query,
        repo="acme/api",
        owner="acme",
        sharing_enabled=False,
        pr_languages=["Go"],
        top_k=5,
        distance_threshold=0.3,
        adaptive=True,
        now=NOW,
        cut=cut or MINILM_PROFILE.cut(),  # type: ignore[arg-type]
        lexical=LexicalChannel(store),
        query_text=QUERY_TEXT,
        stages=stages,
        pr_files=pr_files,
        same_pr_review_ids=same_pr,
    )


def _ids(out: RetrievalOutcome) -> list[int]:
    return [r.memory_id for r in out.results]


def test_switched_off_the_chain_is_exactly_as_before(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    before = run(store, query, stages=None)
    off = run(store, query, stages=StageSwitches())
    assert before == off
    assert before.threshold.method == "headgap:band+lexical"
    assert (before.quality.second_stage, before.quality.abstain_reason) == (None, None)


def test_the_ranker_keeps_the_memory_on_the_changed_file_and_says_it_ran(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    first = run(store, query, stages=None)
    assert _ids(first)[0] != 4  # headgap puts a nearer memory on another file first
    ranked = run(store, query, stages=StageSwitches(second_stage=True))
    assert _ids(ranked)[0] == 4
    assert set(_ids(ranked)) <= {4, 5}  # the changed file, then at most its directory's neighbour
    assert ranked.threshold.method == "rank:kept" and ranked.quality.second_stage == "used"
    # shown like the cut's results: with the recency-adjusted distance
    shown = {r.memory_id: r.adjusted_distance for r in apply_recency_weighting(first.reranked, NOW)}
    assert ranked.results[0].adjusted_distance == shown[4]


def test_without_file_evidence_the_ranker_skips_and_the_abstain_stage_decides(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    out = run(store, query, stages=StageSwitches(second_stage=True, abstain=True), pr_files=["web/app.ts"])
    assert out.quality.second_stage == "skipped:no-file-evidence"
    assert out.results == [] and out.threshold.method == "abstain"
    assert out.quality.abstain_reason is not None and "weakest=" in out.quality.abstain_reason
    kept = run(store, query, stages=StageSwitches(abstain=True))
    assert kept.threshold.method == "headgap:band+lexical" and kept.results
    assert kept.quality.abstain_reason is not None and kept.quality.abstain_reason.startswith("p=")


def test_maxgap_and_the_re_review_scope_never_run_the_stages_nor_drop_same_pr_memories(
    tmp_path: Path,
) -> None:
    store, query = build(tmp_path)
    both = StageSwitches(second_stage=True, abstain=True)
    original = run(store, query, stages=None, cut=VOYAGE_PROFILE.cut())
    assert run(store, query, stages=both, cut=VOYAGE_PROFILE.cut()) == original
    scoped = run(store, query, stages=both, same_pr=frozenset({999}))  # a PR with no memory
    assert scoped.threshold.method == "same-pr:abstain" and scoped.quality.second_stage is None
    # a re-review of the PR every memory came from (review 7), with files that make the abstain stage
    # fire on a first review: the default stages drop none of the PR's own memories
    assert run(store, query, stages=both, pr_files=["web/app.ts"]).threshold.method == "abstain"
    own = run(store, query, stages=both, pr_files=["web/app.ts"], same_pr=frozenset({7}))
    assert own.threshold.method == "same-pr:kept" and len(own.results) == 5
    assert (own.quality.second_stage, own.quality.abstain_reason) == (None, None)


def test_the_telemetry_row_carries_the_stage_and_the_reason(tmp_path: Path, db_backend: DbBackend) -> None:  # noqa: F811
    store, query = build(tmp_path)
    out = run(store, query, stages=StageSwitches(second_stage=True, abstain=True), pr_files=["web/app.ts"])
    telemetry = TelemetryStore(db_backend.target("telemetry"))
    try:
        row = quality_row(out, delivery_id="d-1", repo="acme/api", pr_number=3, event_type="pull_request")
        assert telemetry.record_retrieval_quality(row)
    finally:
        telemetry.close()
    stored = db_backend.rows(
        "telemetry",
        "SELECT threshold_method, second_stage, abstain_reason, result_count FROM retrieval_quality",
    )
    assert stored == [
        {
            "threshold_method": "abstain",
            "second_stage": "skipped:no-file-evidence",
            "abstain_reason": out.quality.abstain_reason,
            "result_count": 0,
        }
    ]
