"""The review handler runs the stages after the cut by default (``knowledge.retrieval.secondStage`` /
``abstain`` unset = on), passes the PR's changed files to them, and records what they did in
``retrieval_quality``; switched off (both ``false``) the review is exactly as before (``headgap``).

Real: the handler, the fake GitHub, a LanceDB memory store with its full-text indexes, SQLite telemetry,
the shipped stages model. The embedder is the axis double, so every memory's vector distance is exact.
"""

from __future__ import annotations

from pathlib import Path

from test_review_checklist import AxisEmbedder
from test_review_lexical_channel import CHANGED, seed

from support.review_harness import ReviewHarness

ON_FILE = "Unchecked export counter in the index module"
NEAREST = "Vector neighbour 1 about widgets"


def seed_pool(h: ReviewHarness) -> None:
    """Twelve near memories on files the PR does not change, and one a little farther on the changed file."""
    for i in range(1, 13):
        seed(h, i, 0.30 + i * 0.02, 1 + i % 6, f"lib/widget{i}.ts", f"Vector neighbour {i} about widgets")
    seed(h, 99, 0.70, 7, CHANGED, ON_FILE)


def rows(h: ReviewHarness) -> list[tuple[object, ...]]:
    return h.rows(
        "telemetry.db",
        "SELECT threshold_method, second_stage, abstain_reason, result_count FROM retrieval_quality",
    )


async def test_by_default_the_second_stage_keeps_the_memory_on_the_changed_file(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    h = ReviewHarness(tmp_path / "on", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_pool(h)
        await h.deliver(h.open_pr(), delivery="stages-1")
        [prompt] = h.prompts
        assert ON_FILE in prompt and NEAREST not in prompt
        [(method, stage, reason, count)] = rows(h)
        assert (method, stage, reason, count) == ("rank:kept", "used", None, 1)
        [done] = h.logged("Retrieval completed")
        assert done["secondStage"] == "used"
    finally:
        h.close()


async def test_switched_off_the_review_is_as_before(tmp_path: Path, harness: ReviewHarness) -> None:
    h = ReviewHarness(tmp_path / "off", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_pool(h)
        config = "knowledge:\n  retrieval:\n    secondStage: false\n    abstain: false\n"
        await h.deliver(h.open_pr(config=config), delivery="stages-2")
        [prompt] = h.prompts
        assert NEAREST in prompt
        [(method, stage, reason, _)] = rows(h)
        assert str(method).startswith("headgap:") and (stage, reason) == (None, None)
        [done] = h.logged("Retrieval completed")
        assert (done["secondStage"], done["abstainReason"]) == (None, None)
    finally:
        h.close()
