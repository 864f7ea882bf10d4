"""The re-review scope: on a re-review the PR's own earlier memories are the answer, found by review id even
when they lie outside the vector pool; nothing changes on a first review; the evaluation harness maps each
PR to one synthetic review and scores the scope like every other strategy."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from learning_helpers import at_distance, make_record, retrieve_kw, unit

from kodiai.evaluation.data import EvalDataset, EvalFinding, EvalQuery, FindingSource
from kodiai.evaluation.evaluate import build_strategies, check_replays, replay_judgements
from kodiai.evaluation.loo import evaluation_loo
from kodiai.evaluation.metrics import aggregate
from kodiai.evaluation.runner import (
    ChainOptions,
    ScopedPool,
    memory_record,
    run_chain,
    same_pr_scope,
    synthetic_review_id,
)
from kodiai.evaluation.targets import check_targets
from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store
from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.learning.threshold.head_gap import HeadGapCut
from kodiai.learning.threshold.profiles import MINILM_PROFILE
from kodiai.learning.threshold.same_pr import SamePrStrategy, same_pr_decide
from kodiai.learning.threshold.types import Candidate
from kodiai.learning.types import MemoryHit

DIM = 32
NOW = datetime(2026, 6, 1, tzinfo=UTC)
THIS_PR_REVIEW = 42
OTHER_REVIEW = 7


# ---- the pure decision ------------------------------------------------------------------------------


def own(*rows: tuple[str, float, float]) -> list[Candidate[str]]:
    return [Candidate(i, d, m) for i, d, m in rows]


def test_only_keeps_the_most_similar_own_memories_and_lets_recency_order_them() -> None:
    pool = own(("a", 0.5, 1.8), ("b", 0.6, 1.0), ("c", 0.9, 1.0))
    ids, method = same_pr_decide(pool, ["x", "y"], 2, "only")
    assert (ids, method) == (["b", "a"], "same-pr:kept")  # top 2 by distance; b is newer: first


def test_only_abstains_when_the_pr_has_no_earlier_memory() -> None:
    assert same_pr_decide([], ["x"], 5, "only") == ([], "same-pr:abstain")


def test_first_and_fallback_modes() -> None:
    pool = own(("a", 0.5, 1.0))
    assert same_pr_decide(pool, ["x", "a", "y"], 3, "first") == (["a", "x", "y"], "same-pr:first")
    assert same_pr_decide(pool, ["x"], 3, "fallback") == (["a"], "same-pr:kept")
    assert same_pr_decide([], ["x", "y"], 1, "fallback") == (["x"], "same-pr:fallback")
    assert same_pr_decide([], ["x"], 5, "first") == (["x"], "same-pr:fallback")


# ---- the chain on a real store ----------------------------------------------------------------------


def build(tmp_path: Path) -> tuple[LanceMemoryStore, np.ndarray]:
    """30 memories of other PRs close to the query (0.20 … 0.49) and this PR's two earlier findings far
    from it (0.95, 1.05): outside the wide pool of 20 the vector channel fetches."""
    rng = np.random.default_rng(5)
    query = unit(rng, DIM)
    store = open_memory_store(str(tmp_path / "mem.lance"), DIM)
    rows = [(i, 0.20 + 0.01 * i, OTHER_REVIEW, "acme/api", False) for i in range(30)]
    rows += [(100, 1.05, THIS_PR_REVIEW, "acme/api", False), (101, 0.95, THIS_PR_REVIEW, "acme/api", False)]
    rows += [(102, 0.10, THIS_PR_REVIEW, "acme/web", False)]  # same review id, another repo: never seen
    rows += [(103, 0.15, THIS_PR_REVIEW, "acme/api", True)]  # stale: never seen
    for finding, distance, review, repo, stale in rows:
        record = make_record(
            repo=repo, finding_id=finding, model="m", dim=DIM, created_at="2026-05-30 00:00:00"
        ).model_copy(update={"review_id": review, "stale": stale})
        store.write_memory(record, at_distance(query, distance, rng))
    return store, query


def run(store: LanceMemoryStore, query: np.ndarray, **scope: object) -> RetrievalOutcome:
    return retrieve_kw(
        IsolationLayer(store),
        query,
        repo="acme/api",
        owner="acme",
        sharing_enabled=False,
        pr_languages=["TypeScript"],
        top_k=5,
        distance_threshold=0.3,
        adaptive=True,
        now=NOW,
        cut=HeadGapCut(MINILM_PROFILE.model_copy(update={"head_lexical_weight": 0.0}).head_gap_params()),
        **scope,  # type: ignore[arg-type]
    )


def test_same_pr_memories_outside_the_vector_pool_are_found_and_are_the_answer(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    out = run(store, query, same_pr_review_ids=frozenset({THIS_PR_REVIEW}))
    assert [r.record.finding_id for r in out.results] == [101, 100]
    assert all(r.memory_id not in {c.memory_id for c in out.candidates} for r in out.results)  # not in pool
    assert out.threshold.method == "same-pr:kept" and out.quality.threshold_method == "same-pr:kept"
    assert out.quality.same_pr_memories == 2
    assert out.quality.distance_threshold == pytest.approx(max(r.adjusted_distance for r in out.results))
    assert out.same_pr is not None and [r.record.finding_id for r in out.same_pr] == [101, 100]


def test_the_scope_is_inert_without_review_ids(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    plain = run(store, query)
    explicit = run(store, query, same_pr_review_ids=None)
    assert plain == explicit
    assert plain.same_pr is None and plain.quality.same_pr_memories is None
    assert plain.threshold.method.startswith("headgap:")
    assert {r.record.finding_id for r in plain.results} <= set(range(30))


def test_a_re_review_of_a_pr_without_earlier_memories_abstains(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    for ids in (frozenset({999}), frozenset()):
        out = run(store, query, same_pr_review_ids=ids)
        assert out.results == [] and out.quality.threshold_method == "same-pr:abstain"
        assert out.quality.result_count == 0 and out.quality.same_pr_memories == 0
        assert out.candidates  # the pool was there: the scope, not an empty store, answered


def test_first_mode_puts_own_memories_before_the_normal_cut(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    normal = run(store, query)
    first = run(store, query, same_pr_review_ids=frozenset({THIS_PR_REVIEW}), same_pr_mode="first")
    kept = [r.record.finding_id for r in first.results]
    assert kept[:2] == [101, 100]
    assert kept[2:] == [r.record.finding_id for r in normal.results][: 5 - 2]
    assert first.quality.threshold_method == "same-pr:first"


def test_the_store_selects_by_review_within_the_repo_and_live_rows(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    hits = store.retrieve_review_memories(query, "acme/api", [THIS_PR_REVIEW], 10)
    records = store.get_memory_records([h.memory_id for h in hits])
    assert [records[h.memory_id].finding_id for h in hits] == [101, 100]
    assert hits[0].distance == pytest.approx(0.95, abs=1e-5)
    assert store.retrieve_review_memories(query, "acme/api", [], 10) == []


def test_review_id_is_indexed_and_a_table_indexed_without_it_gets_it_at_the_next_upkeep(
    tmp_path: Path,
) -> None:
    """The scope filters by review_id: once the table is indexed that column has a scalar index, and a
    table an older version indexed (vector and pre-filter indexes only) gains it on its next upkeep; the
    scope's answer is the same either way."""
    rng = np.random.default_rng(3)
    uri = str(tmp_path / "mem.lance")
    store = open_memory_store(uri, DIM)
    records = [
        make_record(finding_id=i, model="m", dim=DIM).model_copy(update={"review_id": i // 10})
        for i in range(300)
    ]
    store.write_memories(records, [unit(rng, DIM) for _ in records])
    query = unit(rng, DIM)
    exact = store.retrieve_review_memories(query, "acme/api", [3, 17], 20)
    found = store.get_memory_records([h.memory_id for h in exact])
    assert len(exact) == 20 and {r.review_id for r in found.values()} == {3, 17}

    def indexed_columns(table: object) -> set[str]:
        return {column for idx in table.list_indices() for column in idx.columns}  # type: ignore[attr-defined]

    assert store.ensure_index(force=True) is True
    assert {"vector", "repo", "owner", "stale", "id", "review_id"} <= store.with_table(indexed_columns)
    assert store.retrieve_review_memories(query, "acme/api", [3, 17], 20) == exact

    store.with_table(lambda table: table.drop_index("review_id_idx"))  # as an older version left it
    reopened = open_memory_store(uri, DIM)
    assert "review_id" not in reopened.with_table(indexed_columns)
    assert reopened.ensure_index(force=True) is True  # the missing scalar index is the upkeep's work
    assert "review_id" in reopened.with_table(indexed_columns)
    assert reopened.ensure_index(force=True) is False  # checked once: nothing more to do
    assert reopened.retrieve_review_memories(query, "acme/api", [3, 17], 20) == exact


class _PlainReader:
    """A store without review selection (the isolation protocol only)."""

    def retrieve_memories(self, query_embedding: object, repo: str, top_k: int) -> list[MemoryHit]:
        return []

    def retrieve_memories_for_owner(
        self, query_embedding: object, owner: str, exclude_repo: str, top_k: int
    ) -> list[MemoryHit]:
        return []

    def get_memory_records(self, memory_ids: Sequence[int]) -> dict[int, object]:
        return {}


def test_a_store_without_review_selection_is_an_error_only_when_the_scope_is_asked_for() -> None:
    isolation = IsolationLayer(_PlainReader())  # type: ignore[arg-type]
    kwargs: dict[str, object] = {
        "repo": "acme/api",
        "owner": "acme",
        "sharing_enabled": False,
        "pr_languages": [],
        "top_k": 5,
        "distance_threshold": 0.3,
        "adaptive": True,
    }
    assert retrieve_kw(isolation, np.ones(4), **kwargs).results == []
    with pytest.raises(TypeError, match="cannot select memories by review"):
        retrieve_kw(isolation, np.ones(4), same_pr_review_ids=frozenset({1}), **kwargs)


# ---- the evaluation harness ---------------------------------------------------------------------------


def finding(fid: str, pr: int | None, created: datetime, repo: str = "acme/api") -> EvalFinding:
    return EvalFinding(
        id=fid,
        repo=repo,
        owner="acme",
        finding_text=f"Fix {fid}",
        file_path="src/a.go",
        category="correctness",
        created_at=created,
        source=FindingSource(pr=pr),
    )


def eval_query(
    qid: str, pr: int, created: datetime, relevant: list[str], repo: str = "acme/api"
) -> EvalQuery:
    return EvalQuery(
        id=qid,
        repo=repo,
        owner="acme",
        created_at=created,
        query_text=f"PR {qid}",
        languages=["Go"],
        pr_number=pr,
        relevant_ids=relevant,
    )


def test_a_finding_made_on_a_pr_is_stored_with_that_pr_s_synthetic_review() -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    f = EvalFinding.model_validate(
        {
            "id": "f",
            "repo": "acme/api",
            "owner": "acme",
            "finding_text": "Fix it",
            "file_path": "a.go",
            "category": "correctness",
            "created_at": start.isoformat(),
            "source": {"commit": "abc", "pr": 3348, "code_files": ["a.go"]},
        }
    )
    assert synthetic_review_id(3348) == 3348
    assert memory_record(f, 0, "m", DIM).review_id == 3348
    assert memory_record(finding("g", None, start), 1, "m", DIM).review_id is None
    query = eval_query("q", 3348, start, [])
    rereview = EvalDataset(name="rereview", findings=[f], queries=[query])
    assert same_pr_scope(rereview, query) == frozenset({3348})
    assert same_pr_scope(EvalDataset(name="past-fixes", findings=[f], queries=[query]), query) is None
    with pytest.raises(ValueError, match="no pr_number"):
        same_pr_scope(rereview, query.model_copy(update={"pr_number": None}))


def rereview_track() -> tuple[EvalDataset, np.ndarray, np.ndarray]:
    """PR 50 (a re-review with two earlier findings far from its query), PR 60 (no earlier finding) and
    25 findings of other PRs close to both queries."""
    rng = np.random.default_rng(9)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    q = unit(rng, DIM)
    findings = [finding(f"o{i}", 10 + i, start + timedelta(days=i)) for i in range(25)]
    findings += [
        finding("own1", 50, start + timedelta(days=40)),
        finding("own2", 50, start + timedelta(days=41)),
    ]
    queries = [
        eval_query("q50", 50, start + timedelta(days=50), ["own1", "own2"]),
        eval_query("q60", 60, start + timedelta(days=51), []),
    ]
    vectors = [at_distance(q, 0.2 + 0.01 * i, rng) for i in range(25)] + [
        at_distance(q, 1.0, rng),
        at_distance(q, 1.1, rng),
    ]
    return (
        EvalDataset(name="rereview", findings=findings, queries=queries),
        np.stack([q, q]),
        np.stack(vectors),
    )


def test_the_harness_scores_the_scope_on_re_reviews_and_its_replay_agrees(tmp_path: Path) -> None:
    ds, qv, fv = rereview_track()
    options = ChainOptions(lexical=False)
    strategies, default, _ = build_strategies("m", options=options, rereview=True)
    assert default == "same-pr" and isinstance(strategies["same-pr"], SamePrStrategy)
    assert {"same-pr-then-headgap", "same-pr-else-headgap", "headgap"} <= set(strategies)
    judgements, pools = run_chain(ds, qv, fv, strategies, model="m", options=options, workdir=tmp_path)
    check_replays(judgements, pools, strategies, options.top_k)  # raises on any disagreement
    kept = {j.query_id: (j.kept, j.method) for j in judgements["same-pr"]}
    assert kept["q50"] == (["own1", "own2"], "same-pr:kept")
    assert kept["q60"] == ([], "same-pr:abstain")
    assert not set(next(j.kept for j in judgements["headgap"] if j.query_id == "q50")) & {"own1", "own2"}
    assert all(isinstance(p, ScopedPool) for p in pools)
    by_id = {p.query_id: p for p in pools}
    assert [c.id for c in by_id["q50"].same_pr or []] == ["own1", "own2"]
    assert by_id["q60"].same_pr == []
    m = aggregate(judgements["same-pr"])
    assert (m.f0_5, m.empty, m.abstain) == (1.0, 0.0, 1.0)


def test_first_reviews_get_no_scope_and_scoped_rows_run_as_their_cut(tmp_path: Path) -> None:
    ds, qv, fv = rereview_track()
    first = ds.model_copy(update={"name": "past-fixes"})
    options = ChainOptions(lexical=False)
    strategies, _, _ = build_strategies("m", options=options, rereview=True)
    assert build_strategies("m", options=options)[1] == "headgap"
    judgements, pools = run_chain(first, qv, fv, strategies, model="m", options=options, workdir=tmp_path)
    assert all(isinstance(p, ScopedPool) and p.same_pr is None for p in pools)
    for name in ("same-pr", "same-pr-then-headgap", "same-pr-else-headgap"):
        assert [j.kept for j in judgements[name]] == [j.kept for j in judgements["headgap"]]
        assert [j.kept for j in replay_judgements(pools, strategies[name], 5)] == [
            j.kept for j in judgements["headgap"]
        ]


def test_leave_one_out_and_targets_judge_the_default_each_track_runs(tmp_path: Path) -> None:
    ds, qv, fv = rereview_track()
    options = ChainOptions(lexical=False)
    scoped, _, _ = build_strategies("m", options=options, rereview=True)
    _, b_pools = run_chain(ds, qv, fv, scoped, model="m", options=options, workdir=tmp_path)
    # a first-review track over two repositories (LOO needs two): the same data, renamed
    rows = [f.model_copy(update={"repo": "acme/web"}) for f in ds.findings]
    queries = [q.model_copy(update={"repo": "acme/web", "id": q.id + "w"}) for q in ds.queries]
    a = EvalDataset(name="past-fixes", findings=[*ds.findings, *rows], queries=[*ds.queries, *queries])
    plain, _, _ = build_strategies("m", options=options)
    _, a_pools = run_chain(
        a,
        np.concatenate([qv, qv]),
        np.concatenate([fv, fv]),
        plain,
        model="m",
        options=options,
        workdir=tmp_path,
    )
    loo = evaluation_loo(
        {"past-fixes": a_pools, "rereview": b_pools}, model="m", options=options, bootstrap_reps=0
    )
    assert loo.defaults == {"past-fixes": "headgap", "rereview": "same-pr"}
    assert "same-pr" in loo.strategies["rereview"] and "same-pr" not in loo.strategies["past-fixes"]
    assert "same-pr-then-headgap" in loo.strategies["rereview"] and "same-pr-then-headgap" in loo.fitted
    assert not any(n.startswith("same-pr") for n in loo.strategies["past-fixes"])
    held = loo.strategies["rereview"]["same-pr"]
    assert (held.f0_5, held.abstain) == (1.0, 1.0)
    checks = [c for c in check_targets({}, loo) if c.split == "loo" and c.track == "rereview"]
    assert {c.target: c.met for c in checks}["abstain ≥ 70%"]
    assert any("no fitted constants" in c.value for c in checks)


def test_a_re_review_track_without_pr_numbers_cannot_run_the_scope(tmp_path: Path) -> None:
    ds, qv, fv = rereview_track()
    bare = ds.model_copy(update={"queries": [q.model_copy(update={"pr_number": None}) for q in ds.queries]})
    assert ds.scoped and bare.rereview and not bare.scoped
    options = ChainOptions(lexical=False)
    plain, _, _ = build_strategies("m", options=options)
    _, pools = run_chain(bare, qv, fv, plain, model="m", options=options, workdir=tmp_path)
    assert all(isinstance(p, ScopedPool) and p.same_pr is None for p in pools)  # no scope asked: no error
    scoped, _, _ = build_strategies("m", options=options, rereview=True)
    with pytest.raises(ValueError, match="no pr_number"):
        run_chain(bare, qv, fv, scoped, model="m", options=options, workdir=tmp_path)
