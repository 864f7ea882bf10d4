"""The lexical channel on a real LanceDB store: its full-text indexes, what it returns, and how the chain
merges it (scores normalised per channel, the fused order re-ranked, the channel named in telemetry)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from learning_helpers import at_distance, make_record, retrieve_kw, unit

from kodiai.learning.isolation import IsolationLayer
from kodiai.learning.lexical import LexicalChannel, unindexed_rows
from kodiai.learning.memory_schema import InvalidNameError
from kodiai.learning.memory_store import LanceMemoryStore, open_memory_store
from kodiai.learning.pipeline import LexicalMatches
from kodiai.learning.threshold.head_gap import HeadGapCut
from kodiai.learning.threshold.max_gap import max_gap_cut
from kodiai.learning.threshold.profiles import MINILM_PROFILE

DIM = 32
NOW = datetime(2026, 6, 1, tzinfo=UTC)
QUERY_TEXT = "Fix the pool reuse in ctx release\nLanguages: Go\nsrc/ctx/pool_reuse.go"
# (finding text, file path, distance from the query vector, repo)
MEMORIES = [
    ("Fix nil pointer in router", "src/router/tree.go", 0.60, "acme/api"),
    ("Fix header parsing of quoted values", "src/helpers.go", 0.62, "acme/api"),
    ("Fix race in scheduler", "src/sched/worker.go", 0.64, "acme/api"),
    ("Fix leak when the pool is reused after release", "src/ctx/pool_reuse.go", 0.66, "acme/api"),
    ("Fix pool reuse leak", "src/ctx/pool_reuse.go", 0.30, "acme/web"),  # another repo: never returned
    ("Update wording", "docs/intro.md", 1.10, "acme/api"),  # far, shares no term: gives the pool its spread
]


def build(tmp_path: Path) -> tuple[LanceMemoryStore, np.ndarray]:
    rng = np.random.default_rng(11)
    query = unit(rng, DIM)
    store = open_memory_store(str(tmp_path / "mem.lance"), DIM)
    for i, (text, path, distance, repo) in enumerate(MEMORIES, start=1):
        record = make_record(
            repo=repo,
            finding_id=i,
            text=text,
            file_path=path,
            model="m",
            dim=DIM,
            created_at="2026-05-01 00:00:00",
        )
        store.write_memory(record, at_distance(query, distance, rng))
    return store, query


def test_indexes_are_created_once_on_text_and_path(tmp_path: Path) -> None:
    store, _ = build(tmp_path)
    channel = LexicalChannel(store)
    assert sorted(channel.ensure_index()) == ["file_path", "finding_text"]
    assert channel.ensure_index() == []


def test_match_returns_repo_hits_with_true_distances_and_scores_for_vector_candidates(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    found = LexicalChannel(store).match(QUERY_TEXT, query, repo="acme/api", limit=1, known=[1, 2])
    assert [r.memory_id for r in found.extra] == [4]  # the path match, only in its own repo
    assert found.extra[0].distance == pytest.approx(0.66, abs=1e-5)
    assert found.extra[0].record.file_path == "src/ctx/pool_reuse.go"
    assert set(found.scores) == {4, 1, 2}  # the known candidates are scored too, beyond the limit
    assert found.scores[4] > max(found.scores[1], found.scores[2])
    assert 5 not in found.scores


def test_rows_written_after_the_index_are_folded_in_and_scored_as_indexed(tmp_path: Path) -> None:
    """LanceDB scores unindexed rows differently; the channel folds them in first."""
    store, query = build(tmp_path)
    channel = LexicalChannel(store)
    channel.ensure_index()
    rng = np.random.default_rng(5)
    late = make_record(
        finding_id=9, text="Fix pool reuse again", file_path="src/ctx/pool_reuse.go", model="m", dim=DIM
    )
    store.write_memory(late, at_distance(query, 0.95, rng))
    assert store.with_table(unindexed_rows) > 0
    found = channel.match(QUERY_TEXT, query, repo="acme/api", limit=10, known=[])
    assert store.with_table(unindexed_rows) == 0
    fresh_dir = tmp_path / "fresh"
    fresh, _ = build(fresh_dir)
    fresh.write_memory(late, at_distance(query, 0.95, rng))
    again = LexicalChannel(fresh).match(QUERY_TEXT, query, repo="acme/api", limit=10, known=[])
    assert found.scores == pytest.approx(again.scores)


def test_awkward_query_text_and_bad_repo_names(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    channel = LexicalChannel(store)
    text = 'fix: "quoted" (parser) -x AND OR NOT * ~ ^2 [fix] \' ; DROP TABLE'
    assert isinstance(channel.match(text, query, repo="acme/api", limit=5, known=[]), LexicalMatches)
    assert channel.match("   ", query, repo="acme/api", limit=5, known=[]).extra == []
    with pytest.raises(InvalidNameError):
        channel.match(text, query, repo="acme/api' OR '1'='1", limit=5, known=[])


def _run(store: LanceMemoryStore, query: np.ndarray, cut: object, lexical: object) -> object:
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
        cut=cut,  # type: ignore[arg-type]
        lexical=lexical,  # type: ignore[arg-type]
        query_text=QUERY_TEXT,
    )


def test_the_chain_fuses_the_channels_and_names_them(tmp_path: Path) -> None:
    """The path match is fourth by vector distance; fused, it is first, and the method says so."""
    store, query = build(tmp_path)
    out = _run(store, query, MINILM_PROFILE.cut(), LexicalChannel(store))
    assert out.results[0].memory_id == 4  # type: ignore[attr-defined]
    assert out.threshold.method == "headgap:band+lexical"  # type: ignore[attr-defined]
    assert out.quality.channels == "vector+lexical" and out.quality.lexical_candidates == 0  # type: ignore[attr-defined]
    assert out.lexical is not None and out.lexical[4] > 0  # type: ignore[attr-defined]
    vector = _run(
        store,
        query,
        HeadGapCut(MINILM_PROFILE.head_gap_params().model_copy(update={"lexical_weight": 0.0})),
        LexicalChannel(store),
    )
    assert vector.results[0].memory_id == 1 and vector.quality.channels == "vector"  # type: ignore[attr-defined]


def test_the_lexical_channel_adds_candidates_the_vector_pool_missed(tmp_path: Path) -> None:
    """With many nearer memories the path match falls outside the vector pool; the channel brings it in
    with its true distance and its score (the best of the pool)."""
    store, query = build(tmp_path)
    rng = np.random.default_rng(3)
    for i in range(30):
        record = make_record(
            finding_id=100 + i,
            text=f"Update unrelated thing {i}",
            file_path=f"lib/x{i}.rb",
            model="m",
            dim=DIM,
        )
        store.write_memory(record, at_distance(query, 0.5 + 0.001 * i, rng))
    vector_pool = _run(store, query, max_gap_cut, None)
    assert 4 not in [c.memory_id for c in vector_pool.candidates]  # type: ignore[attr-defined]
    out = _run(store, query, MINILM_PROFILE.cut(), LexicalChannel(store))
    assert out.quality.lexical_candidates >= 1  # type: ignore[attr-defined]
    hit = next(c for c in out.candidates if c.memory_id == 4)  # type: ignore[attr-defined]
    assert hit.distance == pytest.approx(0.66, abs=1e-5)
    assert out.lexical[4] == max(out.lexical.values())  # type: ignore[attr-defined]


def test_the_originals_cut_never_sees_the_lexical_channel(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    with_channel = _run(store, query, max_gap_cut, LexicalChannel(store))
    without = _run(store, query, max_gap_cut, None)
    assert with_channel == without
    assert with_channel.quality.channels == "vector" and with_channel.lexical is None  # type: ignore[attr-defined]


class Broken:
    def match(
        self,
        query_text: str,
        query_embedding: Sequence[float] | np.ndarray,
        *,
        repo: str,
        limit: int,
        known: Sequence[int],
    ) -> LexicalMatches:
        raise RuntimeError("index corrupted")


def test_a_failing_channel_leaves_the_vector_channel_answering(tmp_path: Path) -> None:
    store, query = build(tmp_path)
    out = _run(store, query, MINILM_PROFILE.cut(), Broken())
    assert out.results and out.quality.channels == "vector"  # type: ignore[attr-defined]
    assert out.threshold.method == "headgap:band"  # type: ignore[attr-defined]
