"""Who may make write mode change the repository, and where it may push (issue 23).

Real router and lanes, git clones of ``file://`` bare repos, the fake GitHub (collaborator permissions,
branch protection) through PyGithub, the SQLite mention state and the Agent SDK with a scripted model.
``alice`` only reads unless a test grants her write access.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kodiai.mention.intent import build_write_branch_name, build_write_output_key
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.handler_fixtures import mention_harness
from support.mention_harness import MentionHarness
from support.review_harness import INSTALLATION, OWNER, REPO

WRITE_ON = "write:\n  enabled: true\n"
FORKS_ON = "write:\n  enabled: true\n  allowForks: true\n"


@pytest.fixture
def mh(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[MentionHarness]:
    with mention_harness(tmp_path, fake_server, clear="pr_state") as h:
        yield h


def branch_of(comment_id: int) -> str:
    key = build_write_output_key(
        installation_id=INSTALLATION,
        owner=OWNER,
        repo=REPO,
        pr_number=101,
        comment_id=comment_id,
        keyword="apply",
    )
    return build_write_branch_name(pr_number=101, comment_id=comment_id, write_output_key=key)


def last_reply(mh: MentionHarness) -> str:
    return str(mh.issue_comments()[-1]["body"])


# --------------------------------------------------------------------------- the commenter's permission


async def test_read_only_commenter_cannot_apply_and_nothing_is_pushed(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    mh.write_on_execute({"src/index.ts": "export const a = 9;\n"})
    refs, feature = mh.bare_refs(), mh.bare_log("feature")
    await mh.mention("@kodiai apply: set a to 9", comment_id=7001)
    assert mh.executor.contexts == []  # the model never ran, so nothing was cloned-and-edited either
    assert mh.bare_refs() == refs and mh.bare_log("feature") == feature and mh.bot_pulls() == []
    assert "need write access to this repository" in last_reply(mh) and "@alice" in last_reply(mh)
    assert mh.logged("Write request by a user without write access")


async def test_writer_can_apply(mh: MentionHarness) -> None:
    mh.grant("alice", "maintain")  # maintain reads as write
    mh.open_pr(config=WRITE_ON)
    mh.write_on_execute({"src/index.ts": "export const a = 9;\n"})
    await mh.mention("@kodiai apply: set a to 9", comment_id=7002)
    assert mh.executor.contexts[0].write_mode
    assert "kodiai-write-output-key" in mh.bare_log("feature")[0]
    assert "Updated PR" in last_reply(mh)


async def test_permission_lookup_failure_fails_closed(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=WRITE_ON)
    mh.fake.fail(503, times=20, method="GET", path=r"/collaborators/alice/permission")
    feature = mh.bare_log("feature")
    await mh.mention("@kodiai apply: set a to 9", comment_id=7003)
    assert mh.executor.contexts == [] and mh.bare_log("feature") == feature
    assert "couldn't verify your permission" in last_reply(mh)


async def test_plan_needs_no_write_access(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    await mh.mention("@kodiai plan: rename a")
    [context] = mh.executor.contexts
    assert not context.write_mode
    assert not [c for c in mh.issue_comments() if "write access" in str(c["body"])]


# --------------------------------------------------------------------------- forks


async def test_fork_write_is_refused_without_allow_forks(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=WRITE_ON, fork=True)
    mh.write_on_execute({"src/new.ts": "export const b = 1;\n"})
    refs = mh.bare_refs()
    await mh.mention("@kodiai apply: add b", comment_id=7010)
    assert mh.executor.contexts == [] and mh.bot_pulls() == [] and mh.bare_refs() == refs
    assert "comes from a fork" in last_reply(mh) and "allowForks" in last_reply(mh)


async def test_fork_own_config_cannot_enable_write(mh: MentionHarness) -> None:
    """The fork's head turns write mode and allowForks on; the base branch has no write config."""
    mh.grant("alice")
    mh.open_pr(
        fork=True,
        head_files={".kodiai.yml": FORKS_ON, ".github/workflows/x.yml": "on: push\n", "src/index.ts": "x\n"},
    )
    refs = mh.bare_refs()
    await mh.mention("@kodiai apply: ship it", comment_id=7011)
    assert mh.executor.contexts == [] and mh.bot_pulls() == [] and mh.bare_refs() == refs
    assert "Write mode is disabled" in last_reply(mh)


async def test_fork_with_allow_forks_gets_a_patch_and_nothing_is_pushed(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=FORKS_ON, fork=True)
    mh.write_on_execute({"src/new.ts": "export const b = 1;\n"})
    refs = mh.bare_refs()
    await mh.mention("@kodiai apply: add b", comment_id=7012)
    assert mh.executor.contexts[0].write_mode
    assert mh.bot_pulls() == [] and mh.bare_refs() == refs
    reply = last_reply(mh)
    assert "```diff" in reply and "+++ b/src/new.ts" in reply and "+export const b = 1;" in reply
    assert "git apply" in reply and "Opened PR" not in reply


async def test_fork_patch_still_obeys_the_write_policy(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=FORKS_ON, fork=True)
    mh.write_on_execute({".github/workflows/evil.yml": "on: push\n"})
    await mh.mention("@kodiai apply: add a workflow", comment_id=7013)
    assert "Reason: write-policy-denied-path" in last_reply(mh) and "```diff" not in last_reply(mh)


# --------------------------------------------------------------------------- protected heads


async def test_protected_head_gets_a_bot_pr_instead_of_a_push(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=WRITE_ON)
    mh.state.protect_branch(OWNER, REPO, "feature")
    mh.write_on_execute({"src/index.ts": "export const a = 7;\n"})
    feature = mh.bare_log("feature")
    await mh.mention("@kodiai apply: set a to 7", comment_id=7020)
    assert mh.bare_log("feature") == feature  # never pushed to the protected branch
    [bot] = mh.bot_pulls()
    assert bot["base"]["ref"] == "feature" and bot["head"]["ref"] == branch_of(7020)
    assert "kodiai-write-output-key" in mh.bare_log(branch_of(7020))[0]
    assert "is a protected branch" in last_reply(mh) and f"Opened PR: {bot['html_url']}" in last_reply(mh)


async def test_default_branch_head_is_never_pushed_to(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=WRITE_ON, branch="main")
    mh.write_on_execute({"src/index.ts": "export const a = 8;\n"})
    main = mh.bare_log("main")
    await mh.mention("@kodiai apply: set a to 8", comment_id=7021)
    assert mh.bare_log("main") == main
    [bot] = mh.bot_pulls()
    assert bot["base"]["ref"] == "main"
    assert "is the repository's default branch" in last_reply(mh)


async def test_protection_lookup_failure_means_no_direct_push(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=WRITE_ON)
    mh.fake.fail(404, times=5, method="GET", path=r"/branches/feature")
    mh.write_on_execute({"src/index.ts": "export const a = 6;\n"})
    feature = mh.bare_log("feature")
    await mh.mention("@kodiai apply: set a to 6", comment_id=7022)
    assert mh.bare_log("feature") == feature
    assert len(mh.bot_pulls()) == 1 and "could not be checked" in last_reply(mh)


# --------------------------------------------------------------------------- the rate limit


async def test_a_policy_refusal_counts_against_the_rate_limit(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=WRITE_ON + "  minIntervalSeconds: 60\n")
    mh.write_on_execute({".env": "A=1\n"})
    await mh.mention("@kodiai apply: add env", comment_id=7030)
    assert "write-policy-denied-path" in last_reply(mh)
    await mh.mention("@kodiai apply: add env", comment_id=7031)
    assert len(mh.executor.contexts) == 1 and "rate-limited" in last_reply(mh)


async def test_a_fork_patch_counts_against_the_rate_limit(mh: MentionHarness) -> None:
    mh.grant("alice")
    mh.open_pr(config=FORKS_ON + "  minIntervalSeconds: 60\n", fork=True)
    mh.write_on_execute({"src/new.ts": "export const b = 1;\n"})
    await mh.mention("@kodiai apply: add b", comment_id=7032)
    await mh.mention("@kodiai apply: add b", comment_id=7033)
    assert len(mh.executor.contexts) == 1 and "rate-limited" in last_reply(mh)
