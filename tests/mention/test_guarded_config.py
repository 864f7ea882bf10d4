"""Guarded `.kodiai.yml` settings fail closed in a real mention run (issue 24): an allow-list the loader
cannot read lets nobody in, where the original's section fallback let everyone in.

Real router and lanes, git clones of ``file://`` bare repos, the fake GitHub, SQLite stores and the Agent
SDK client with a scripted model (never reached here).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kodiai.config.loader import FAIL_CLOSED_LOG_MESSAGE
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.handler_fixtures import mention_harness
from support.mention_harness import MentionHarness


@pytest.fixture
def mh(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[MentionHarness]:
    with mention_harness(tmp_path, fake_server, clear="pr_state", grant="alice") as h:
        yield h


@pytest.mark.parametrize(
    "config",
    [
        pytest.param("mention:\n  allowedUsers: alice\n", id="a-string-not-a-list"),
        pytest.param("mention:\n  allowedUser: [alice]\n", id="a-misspelled-key"),
    ],
)
async def test_unreadable_allow_list_refuses_a_mention(mh: MentionHarness, config: str) -> None:
    """``mallory`` is not listed; the original reset the broken list to "everyone" and answered her."""
    mh.open_pr(config=config)
    await mh.mention("@kodiai please review", author="mallory")
    assert mh.executor.contexts == [] and not mh.issue_comments() and not mh.comment_reactions()
    assert any(e.get("skipReason") == "user-not-allowlisted" for e in mh.logs)
    # Logged for each read of the file (the head's for the run, the base's for its web domains).
    lines = [e for e in mh.logs if e["event"] == FAIL_CLOSED_LOG_MESSAGE]
    assert lines and all(line["log_level"] == "warning" and line["section"] == "mention" for line in lines)
    assert lines[0]["failedClosed"] == ["mention.allowedUsers: nobody may mention the bot"]
