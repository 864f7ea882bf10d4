"""The review handler runs the lexical channel (BM25 over finding text and file path) next to the vector
channel, as the built-in headgap profile expects (weight 0.5), and stays fail-open when it breaks.

Real: the handler, the fake GitHub, a LanceDB memory store with its full-text indexes, SQLite telemetry.
The embedder is the axis double, so every memory's vector distance is exact. A memory whose vector is far
from the query (outside the vector channel's pool of 20) but whose file path is the one the PR changes can
only reach the prompt through the lexical channel.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from test_review_checklist import AxisEmbedder, at_distance

from kodiai.handler_kit.deps import LearnedMemory
from kodiai.learning.lexical import LexicalChannel, unindexed_rows
from kodiai.learning.memory_store import LanceMemoryStore
from kodiai.learning.pipeline import LexicalMatches
from kodiai.learning.types import LearningMemoryRecord
from kodiai.review import entry as review
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.router import EventRouter
from support.review_harness import FIRST_STAGE, ReviewHarness

#: The file the PR changes (the harness's default head tree); the retrieval query lists it.
CHANGED = "src/index.ts"
PATH_MATCH = "Unchecked export counter in the index module"
NEAREST = "Vector neighbour 1 about widgets"


def seed(h: ReviewHarness, finding_id: int, distance: float, axis: int, path: str, text: str) -> None:
    assert h.memory_store is not None
    record = LearningMemoryRecord(
        repo="acme/repo",
        owner="acme",
        finding_id=finding_id,
        review_id=1,
        source_repo="acme/repo",
        finding_text=text,
        severity="major",
        category="correctness",
        file_path=path,
        outcome="accepted",
        embedding_model=h.embedder.model,
        embedding_dim=h.embedder.dimensions,
    )
    h.memory_store.write_memory(record, at_distance(distance, axis))


def seed_pool(h: ReviewHarness) -> None:
    """Twenty vector neighbours (they fill the vector channel's pool of max(20, 4 x topK)) on paths and
    words the query does not share, and one far memory on the changed file."""
    for i in range(1, 21):
        seed(h, i, 0.30 + i * 0.01, 1 + i % 6, f"docs/guide{i}.md", f"Vector neighbour {i} about widgets")
    seed(h, 99, 1.60, 7, CHANGED, PATH_MATCH)


def channel_rows(h: ReviewHarness) -> list[tuple[object, ...]]:
    return h.rows(
        "telemetry.db",
        "SELECT channels, threshold_method, result_count FROM retrieval_quality",
    )


def table_dir(h: ReviewHarness) -> Path:
    [table] = (h.tmp / "memory.lance").glob("*.lance")
    return table


async def test_a_memory_only_the_lexical_channel_finds_reaches_the_prompt(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    h = ReviewHarness(tmp_path / "lexical", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        assert h.deps.memory is not None and isinstance(h.deps.memory.lexical, LexicalChannel)
        seed_pool(h)
        pull = h.open_pr(config=FIRST_STAGE)
        await h.deliver(pull, delivery="lexical-1")
        [prompt] = h.prompts
        assert "## Similar Prior Findings (Learning Context)" in prompt
        assert PATH_MATCH in prompt and NEAREST in prompt
        [(channels, method, count)] = channel_rows(h)
        assert (channels, method) == ("vector+lexical", "headgap:band+lexical")
        assert 1 <= int(count) <= 5  # type: ignore[call-overload]
        [done] = h.logged("Retrieval completed")
        assert done["channels"] == "vector+lexical" and done["lexicalCandidates"] == 1
        assert not h.logged("Lexical channel failed")
    finally:
        h.close()


async def test_with_the_default_stages_the_lexical_only_memory_on_the_changed_file_is_kept(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    """The default chain (cut, then second stage and abstention): the memory on the file the PR changes,
    which only the lexical channel finds, is what the second stage keeps."""
    h = ReviewHarness(tmp_path / "staged", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_pool(h)
        await h.deliver(h.open_pr(), delivery="lexical-6")
        [prompt] = h.prompts
        assert PATH_MATCH in prompt
        [(channels, method, count)] = channel_rows(h)
        assert (channels, method) == ("vector+lexical", "rank:kept")
        assert int(count) == 1 and NEAREST not in prompt  # type: ignore[call-overload]
    finally:
        h.close()


async def test_without_the_lexical_weight_the_far_memory_stays_out(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    """The same pool with ``headLexicalWeight: 0`` (the vector channel only): the path match is not found."""
    h = ReviewHarness(tmp_path / "vector", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_pool(h)
        config = FIRST_STAGE + "    calibration:\n      headLexicalWeight: 0\n"
        await h.deliver(h.open_pr(config=config), delivery="lexical-2")
        [prompt] = h.prompts
        assert NEAREST in prompt and PATH_MATCH not in prompt
        [(channels, method, _)] = channel_rows(h)
        assert (channels, method) == ("vector", "headgap:band")
    finally:
        h.close()


async def test_a_store_whose_full_text_index_cannot_be_built_still_answers_by_vector(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    """A regular file where LanceDB keeps its indexes (``_indices``): building the full-text index fails
    with a real I/O error inside LanceDB; the review still gets the vector channel's memories."""
    h = ReviewHarness(tmp_path / "broken", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_pool(h)
        indices = table_dir(h) / "_indices"
        assert not indices.exists()
        indices.write_text("not a directory")
        await h.deliver(h.open_pr(config=FIRST_STAGE), delivery="lexical-3")
        [prompt] = h.prompts
        assert NEAREST in prompt and PATH_MATCH not in prompt
        [(channels, method, count)] = channel_rows(h)
        assert (channels, method) == ("vector", "headgap:band")
        assert int(count) >= 1  # type: ignore[call-overload]
        [failed] = h.logged("Lexical channel failed")
        assert failed["gate"] == "lexical-channel" and "Not a directory" in failed["err"]
    finally:
        h.close()


def test_learned_memory_builds_one_channel_per_store(tmp_path: Path, harness: ReviewHarness) -> None:
    """Built once with the store (it remembers that the indexes exist), not per request."""
    assert harness.deps.memory is not None and harness.memory_store is not None
    memory = harness.deps.memory
    assert isinstance(memory.lexical, LexicalChannel)
    again = LearnedMemory(memory.store, memory.isolation, memory.embeddings, memory.lexical)
    assert again.lexical is memory.lexical


class ThreadRecordingChannel:
    """The real channel, recording whether each call ran with an event loop in its thread (it must not:
    index builds and ``table.optimize()`` are blocking LanceDB calls) and how many rows it found unindexed."""

    def __init__(self, inner: LexicalChannel, store: LanceMemoryStore) -> None:
        self.inner = inner
        self.store = store
        self.calls: list[tuple[bool, int]] = []

    def match(
        self,
        query_text: str,
        query_embedding: Sequence[float] | np.ndarray,
        *,
        repo: str,
        limit: int,
        known: Sequence[int],
    ) -> LexicalMatches:
        on_loop = asyncio_running_loop() is not None
        self.calls.append((on_loop, self.store.with_table(unindexed_rows)))
        return self.inner.match(query_text, query_embedding, repo=repo, limit=limit, known=known)


def asyncio_running_loop() -> object:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def test_the_channel_runs_off_the_event_loop_and_folds_new_rows_once(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    """One channel serves every review; a memory written between two reviews is folded into the full-text
    index by the next retrieval, in the retrieval's worker thread."""
    h = ReviewHarness(tmp_path / "thread", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        assert h.deps.memory is not None and h.memory_store is not None
        recording = ThreadRecordingChannel(LexicalChannel(h.memory_store), h.memory_store)
        deps = dataclasses.replace(h.deps, memory=dataclasses.replace(h.deps.memory, lexical=recording))
        h.deps = deps
        h.router = EventRouter(BotFilter("kodiai", []))
        review.register(h.router, deps)
        seed_pool(h)
        await h.deliver(h.open_pr(), delivery="lexical-4")
        seed(h, 100, 1.65, 6, CHANGED, "Second export counter bug in the index module")
        second = h.open_pr(
            number=102,
            branch="feature-2",
            base_files={"README.md": "# repo 2\n", CHANGED: "export const a = 1;\n"},
            head_files={CHANGED: "export const a = 3;\n"},
        )
        await h.deliver(second, delivery="lexical-5")
        assert recording.calls == [(False, 0), (False, 1)]  # no index yet, then one row to fold
        assert h.memory_store.with_table(unindexed_rows) == 0
        assert "Second export counter bug" in h.prompts[1]
        assert [r[0] for r in channel_rows(h)] == ["vector+lexical", "vector+lexical"]
    finally:
        h.close()
