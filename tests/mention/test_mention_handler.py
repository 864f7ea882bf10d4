"""The mention handler end to end (behaviour E3, checklist E5.7; numbers in the test names).

Real router and lanes, git clones of ``file://`` bare repos, the fake GitHub through PyGithub, SQLite
stores (mention state included) and the Agent SDK client with a scripted model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kodiai.mention.intent import build_write_branch_name, build_write_output_key
from kodiai.storage.knowledge_models import FindingRecord, ReviewRecord
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.gitrepo import git
from support.mention_harness import MentionHarness
from support.review_harness import INSTALLATION, OWNER, REPO
from support.scripted_transport import Result, ToolCall

WRITE_ON = "write:\n  enabled: true\n"


def _reset(fake: FakeGitHub) -> None:
    with fake.lock:
        for key, value in list(fake.data.items()):
            if isinstance(value, (list, dict, set)) and not key.startswith("_"):
                value.clear()
        fake.faults.clear()
    fake.reset_calls()


@pytest.fixture
def mh(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[MentionHarness]:
    fake, state = fake_server
    _reset(fake)
    h = MentionHarness(tmp_path, fake, state)
    h.grant("alice")  # the original's tests comment as a writer; read-only commenters: test_write_permissions
    yield h
    h.close()


def comment_tool(body: str, number: int = 101) -> ToolCall:
    return ToolCall("github_comment", "create_comment", {"issueNumber": number, "body": body})


def bodies(items: list[dict[str, Any]]) -> list[str]:
    return [str(item.get("body") or "") for item in items]


# --------------------------------------------------------------------------- conversational


async def test_97_pr_mention_clones_base_and_checks_out_pr_head(mh: MentionHarness) -> None:
    mh.open_pr()
    mh.executor.probe = lambda ws: git("rev-parse", "--abbrev-ref", "HEAD", cwd=ws)
    mh.script(comment_tool("<details><summary>kodiai response</summary>\n\nHi\n</details>"))
    await mh.mention("@kodiai what does this do?")
    assert mh.executor.probes == ["pr-mention"]
    ctx = mh.executor.contexts[0]
    assert ctx.event_type == "issue_comment.created" and ctx.is_mention and not ctx.write_mode
    assert ctx.comment_id is None
    assert any("Hi" in b for b in bodies(mh.issue_comments()))
    assert len(mh.comment_reactions()) == 1 and mh.comment_reactions()[0]["content"] == "eyes"


async def test_question_answered_in_thread_via_reply_tool(mh: MentionHarness) -> None:
    pull = mh.open_pr()
    parent = mh.state.add_review_comment(OWNER, REPO, 101, "a finding", path="src/index.ts", line=1)
    trigger = mh.state.add_review_comment(
        OWNER, REPO, 101, "@kodiai why?", path="src/index.ts", line=1, in_reply_to_id=parent["id"]
    )
    cid = trigger["id"]
    mh.script(
        ToolCall(
            "reviewCommentThread",
            "reply_to_pr_review_comment",
            {"pullRequestNumber": 101, "commentId": cid, "body": "It returns 2."},
        )
    )
    await mh.inline_mention(pull, "@kodiai why?", comment_id=cid, in_reply_to=parent["id"])
    ctx = mh.executor.contexts[0]
    assert ctx.comment_id == cid and ctx.event_type == "pull_request_review_comment.created"
    assert mh.executor.results[0].published, mh.transports[0].tool_calls
    assert not mh.issue_comments()  # no fallback, no handler reply
    assert any("It returns 2." in b for b in bodies(mh.review_comments()))
    assert [r["content"] for r in mh.state.comment_reactions(OWNER, REPO, cid)] == ["eyes"]


async def test_r3_fallback_when_nothing_published(mh: MentionHarness) -> None:
    mh.open_pr()
    mh.script(Result())
    await mh.mention("@kodiai explain")
    [reply] = mh.issue_comments()
    assert "I saw your mention, but I didn't publish a reply automatically." in reply["body"]


async def test_98_self_and_bot_authors_are_skipped_before_enqueue(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@kodiai hi", author="kodiai")
    await mh.mention("@kodiai hi", author="dependabot[bot]")
    assert mh.executor.contexts == []
    assert not (mh.tmp / "ws").exists() or not list((mh.tmp / "ws").glob("kodiai-*"))
    assert not mh.calls("GET", r".*/pulls/101")  # no job: not even the refs lookup


async def test_99_turn_limit_persists_across_state_instances(
    tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]
) -> None:
    fake, state = fake_server
    _reset(fake)
    config = "mention:\n  conversation:\n    maxTurnsPerPr: 1\n"
    first = MentionHarness(tmp_path / "a", fake, state, jobs_db=tmp_path / "jobs.db")
    try:
        pull = first.open_pr(config=config)
        parent = state.add_review_comment(OWNER, REPO, 101, "finding", path="src/index.ts", line=1)
        first.script(comment_tool("answer one"))
        await first.inline_mention(pull, "@kodiai first?", in_reply_to=parent["id"])
        assert len(first.executor.contexts) == 1
    finally:
        first.close()
    second = MentionHarness(tmp_path / "b", fake, state, jobs_db=tmp_path / "jobs.db")
    try:
        pull = second.open_pr(config=config)
        await second.inline_mention(pull, "@kodiai second?", in_reply_to=parent["id"])
        assert second.executor.contexts == []
        replies = bodies(state.review_comments(OWNER, REPO, 101)) + bodies(
            state.issue_comments(OWNER, REPO, 101)
        )
        assert any("Conversation limit reached (1 turns per PR)." in b for b in replies)
    finally:
        second.close()


def seed_finding(mh: MentionHarness, comment_id: int) -> None:
    """A review of PR #101 whose MAJOR correctness finding was posted as review comment ``comment_id``."""
    assert mh.knowledge is not None
    review_id = mh.knowledge.record_review(ReviewRecord(repo=f"{OWNER}/{REPO}", pr_number=101))
    mh.knowledge.record_findings(
        [
            FindingRecord(
                review_id=review_id,
                file_path="src/app.ts",
                start_line=42,
                severity="major",
                category="correctness",
                confidence=80,
                title="Division by zero is not handled",
                comment_id=comment_id,
                comment_surface="pull_request_review_comment",
            )
        ]
    )


def thread_with_earlier_reply(mh: MentionHarness) -> tuple[dict[str, Any], dict[str, Any], int]:
    """PR #101 with a finding comment, an earlier human reply in its thread, and the mention's reply id."""
    pull = mh.open_pr()
    parent = mh.state.add_review_comment(
        OWNER, REPO, 101, "**Division by zero is not handled**", path="src/app.ts", line=42
    )
    mh.state.add_review_comment(
        OWNER,
        REPO,
        101,
        "Earlier reply: b is validated upstream",
        path="src/app.ts",
        line=42,
        in_reply_to_id=parent["id"],
    )
    trigger = mh.state.add_review_comment(
        OWNER, REPO, 101, "@kodiai is this real?", path="src/app.ts", line=42, in_reply_to_id=parent["id"]
    )
    mh.script(
        ToolCall(
            "reviewCommentThread",
            "reply_to_pr_review_comment",
            {"pullRequestNumber": 101, "commentId": trigger["id"], "body": "Yes: b can be 0."},
        )
    )
    return pull, parent, trigger["id"]


async def test_100_thread_reply_to_a_finding_gets_the_finding_preamble(mh: MentionHarness) -> None:
    pull, parent, cid = thread_with_earlier_reply(mh)
    seed_finding(mh, parent["id"])
    await mh.inline_mention(
        pull, "@kodiai is this real?", comment_id=cid, in_reply_to=parent["id"], path="src/app.ts", line=42
    )
    [prompt] = mh.prompts
    assert "Finding: [MAJOR] correctness" in prompt
    assert 'File: "src/app.ts" (line 42)' in prompt  # stored fields are quoted data (issue 23)
    assert "Division by zero is not handled" in prompt
    assert mh.executor.results[0].published and not mh.issue_comments()


async def test_101_finding_lookup_failure_still_answers_without_preamble(mh: MentionHarness) -> None:
    import sqlite3

    pull, parent, cid = thread_with_earlier_reply(mh)
    seed_finding(mh, parent["id"])
    conn = sqlite3.connect(mh.tmp / "knowledge.db")  # the store's next query fails for real
    conn.execute("ALTER TABLE findings RENAME TO findings_gone")
    conn.commit()
    conn.close()
    await mh.inline_mention(
        pull, "@kodiai is this real?", comment_id=cid, in_reply_to=parent["id"], path="src/app.ts", line=42
    )
    assert len(mh.executor.contexts) == 1
    [prompt] = mh.prompts
    assert "Earlier reply: b is validated upstream" in prompt  # thread context kept
    assert "Finding: [" not in prompt and "follow-up to a review finding" not in prompt
    assert mh.executor.results[0].published
    assert not mh.issue_comments()  # the handler itself posts nothing
    assert [b for b in bodies(mh.review_comments()) if "Yes: b can be 0." in b]
    assert [
        e
        for e in mh.logs
        if e.get("log_level") == "warning" and "Failed to look up finding" in str(e.get("event"))
    ]


async def test_102_error_reply_defuses_mentions(mh: MentionHarness) -> None:
    mh.open_pr()
    mh.script(Result(is_error=True, result="Bad @kodiai and @claude here"))
    await mh.mention("@kodiai do it")
    assert mh.executor.results[0].conclusion == "error"
    [text] = bodies(mh.issue_comments())
    assert "kodiai" in text and "claude" in text
    assert "@kodiai" not in text and "@claude" not in text


async def test_113_review_command_runs_the_executor(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@kodiai review")
    assert len(mh.executor.contexts) == 1


# --------------------------------------------------------------------------- config gates


async def test_114_allowed_users_contains_author(mh: MentionHarness) -> None:
    mh.open_pr(config="mention:\n  allowedUsers: [alice, Bob]\n")
    await mh.mention("@kodiai hi", author="alice")
    assert len(mh.executor.contexts) == 1


async def test_115_allowed_users_without_author(mh: MentionHarness) -> None:
    mh.open_pr(config="mention:\n  allowedUsers: [bob]\n")
    await mh.mention("@kodiai hi", author="alice")
    assert mh.executor.contexts == [] and not mh.issue_comments() and not mh.comment_reactions()
    assert any(e.get("skipReason") == "user-not-allowlisted" for e in mh.logs)


async def test_116_empty_allowed_users(mh: MentionHarness) -> None:
    mh.open_pr(config="mention:\n  allowedUsers: []\n")
    await mh.mention("@kodiai hi")
    assert len(mh.executor.contexts) == 1


async def test_claude_alias_accepted_unless_disabled(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@claude hi")
    assert len(mh.executor.contexts) == 1
    mh.open_pr(102, config="mention:\n  acceptClaudeAlias: false\n", head_files={"b.ts": "b\n"}, branch="f2")
    await mh.mention("@claude hi", number=102)
    assert len(mh.executor.contexts) == 1
    assert any(e.get("skipReason") == "handle-not-accepted" for e in mh.logs)


async def test_empty_question_is_skipped_silently(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@kodiai   ")
    assert mh.executor.contexts == [] and not mh.issue_comments()
    assert any(e.get("skipReason") == "empty-question" for e in mh.logs)


# --------------------------------------------------------------------------- write intent gates


async def test_103_apply_with_write_disabled_r9(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@kodiai apply: fix it")
    assert mh.executor.contexts == []
    [reply] = mh.issue_comments()
    assert "Write mode is disabled" in reply["body"] and "write:" in reply["body"]
    assert "enabled: true" in reply["body"]


async def test_r8_plan_on_issue_refused(mh: MentionHarness) -> None:
    mh.repo.commit({"README.md": "# repo\n"}, "base")
    await mh.mention("@kodiai plan: do things", on_pr=False, number=7)
    assert mh.executor.contexts == []
    [reply] = mh.issue_comments(7)
    assert "I can only apply changes in a PR context." in reply["body"]


def _key_and_branch(comment_id: int) -> tuple[str, str]:
    key = build_write_output_key(
        installation_id=INSTALLATION,
        owner=OWNER,
        repo=REPO,
        pr_number=101,
        comment_id=comment_id,
        keyword="apply",
    )
    return key, build_write_branch_name(pr_number=101, comment_id=comment_id, write_output_key=key)


async def test_107_existing_bot_pr_r5(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    _key, branch = _key_and_branch(6001)
    mh.state.add_pull(OWNER, REPO, 9, head_ref=branch, state="closed")  # any state counts
    await mh.mention("@kodiai apply: fix", comment_id=6001)
    assert mh.executor.contexts == []
    [reply] = mh.issue_comments()
    assert "Existing PR: https://github.com/acme/repo/pull/9" in reply["body"]


async def test_r6_write_in_progress(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    key, _branch = _key_and_branch(6002)
    assert mh.mention_state.try_acquire_write(key, "someone-else", mh.deps.clock())
    await mh.mention("@kodiai apply: fix", comment_id=6002)
    assert mh.executor.contexts == []
    [reply] = mh.issue_comments()
    assert "Write request already in progress." in reply["body"]
    assert mh.mention_state.write_holder(key, mh.deps.clock()) == "someone-else"


async def test_112_rate_limit_r7(mh: MentionHarness) -> None:
    """The same-repo push counts too (the original counted bot PRs only)."""
    mh.open_pr(config=WRITE_ON + "  minIntervalSeconds: 60\n")
    mh.write_on_execute({"src/new.ts": "export const b = 1;\n"})
    await mh.mention("@kodiai apply: add b", comment_id=6003)
    assert "Updated PR" in mh.issue_comments()[-1]["body"]
    await mh.mention("@kodiai apply: add b", comment_id=6004)
    assert len(mh.executor.contexts) == 1 and mh.bot_pulls() == []
    assert "rate-limited" in mh.issue_comments()[-1]["body"]
    assert "Try again in" in mh.issue_comments()[-1]["body"]


async def test_write_gates_in_order_r5_before_r6_before_r7(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON + "  minIntervalSeconds: 60\n")
    key, branch = _key_and_branch(6005)
    mh.mention_state.record_write(f"{INSTALLATION}:{OWNER}/{REPO}", mh.deps.clock())
    mh.mention_state.try_acquire_write(key, "other", mh.deps.clock())
    mh.state.add_pull(OWNER, REPO, 9, head_ref=branch)
    await mh.mention("@kodiai apply: fix", comment_id=6005)
    assert "Existing PR" in mh.issue_comments()[-1]["body"]
    with mh.fake.lock:
        del mh.fake.data["pulls"][(OWNER, REPO, 9)]
    await mh.mention("@kodiai apply: fix", comment_id=6005)
    assert "already in progress" in mh.issue_comments()[-1]["body"]
    mh.mention_state.release_write(key, "other")
    await mh.mention("@kodiai apply: fix", comment_id=6005)
    assert "rate-limited" in mh.issue_comments()[-1]["body"]
    assert mh.executor.contexts == []


# --------------------------------------------------------------------------- write-mode publishing


async def test_105_apply_same_repo_pushes_to_head_r13(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    mh.write_on_execute({"src/index.ts": "export const a = 3;\n"})
    await mh.mention("@kodiai apply: set a to 3", comment_id=6010)
    ctx = mh.executor.contexts[0]
    assert ctx.write_mode
    [message, *_] = mh.bare_log("feature")
    key, _ = _key_and_branch(6010)
    assert f"kodiai-write-output-key: {key}" in message
    assert mh.bot_pulls() == []
    assert "Updated PR: https://github.com/acme/repo/pull/101" in mh.issue_comments()[-1]["body"]
    assert "set a to 3" in mh.prompts[0] and "apply:" not in mh.prompts[0].split("## User's Question")[1][:80]


async def test_same_comment_twice_pushes_one_commit(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    mh.write_on_execute({"src/index.ts": "export const a = 4;\n"})
    await mh.mention("@kodiai apply: set a to 4", comment_id=6011, delivery="d-1")
    await mh.mention("@kodiai apply: set a to 4", comment_id=6011, delivery="d-2")
    key, _ = _key_and_branch(6011)
    marked = [m for m in mh.bare_log("feature", 10) if key in m]
    assert len(marked) == 1
    last = mh.issue_comments()[-1]["body"]
    assert "Already applied (idempotent)" in last


async def test_104_apply_on_fork_no_longer_opens_a_bot_pr(mh: MentionHarness) -> None:
    """The original pushed the fork's head to a bot branch of the base repository; now refused (see
    test_write_permissions for the opt-in patch reply)."""
    mh.open_pr(config=WRITE_ON, fork=True)
    mh.write_on_execute({"src/new.ts": "export const b = 1;\n"})
    before = mh.bare_refs()
    await mh.mention("@kodiai apply: add b", comment_id=6012)
    assert mh.executor.contexts == [] and mh.bot_pulls() == []
    assert mh.bare_refs() == before
    assert "comes from a fork" in mh.issue_comments()[-1]["body"]


async def test_106_plan_runs_without_write_mode(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    await mh.mention("@kodiai plan: add b")
    assert not mh.executor.contexts[0].write_mode
    assert mh.bot_pulls() == []


async def test_110_staged_github_pat_refused_r15(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    before = mh.bare_log("feature")
    mh.write_on_execute({"README.md": "token ghp_" + "a1B2c3D4e5" * 3 + "abcdef\n"})
    await mh.mention("@kodiai apply: add token", comment_id=6013)
    body = mh.issue_comments()[-1]["body"]
    assert "Reason: write-policy-secret-detected" in body
    assert "Detector: regex:github-pat" in body and "File: README.md" in body
    assert mh.bare_log("feature") == before
    assert mh.bot_pulls() == []


async def test_111_removing_a_committed_token_is_allowed(mh: MentionHarness) -> None:
    token_line = "token ghp_" + "a1B2c3D4e5" * 3 + "abcdef\n"
    mh.open_pr(
        config=WRITE_ON,
        base_files={"README.md": "# repo\n" + token_line, "src/index.ts": "export const a = 1;\n"},
    )
    mh.write_on_execute({"README.md": "# repo\n"})
    await mh.mention("@kodiai apply: remove the leaked token", comment_id=6015)
    body = mh.issue_comments()[-1]["body"]
    assert "write-policy-secret-detected" not in body
    assert "Updated PR" in body
    assert "ghp_" in git("show", "main:README.md", cwd=mh.repo.path)  # the token was committed
    assert git("show", "feature:README.md", cwd=mh.repo.path).strip() == "# repo"  # and is pushed away


async def test_r11_no_changes(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON)
    await mh.mention("@kodiai apply: nothing", comment_id=6014)
    assert "I didn't end up making any file changes." in mh.issue_comments()[-1]["body"]


# --------------------------------------------------------------------------- telemetry


async def test_117_telemetry_disabled_no_row(mh: MentionHarness) -> None:
    mh.open_pr(config="telemetry:\n  enabled: false\n")
    await mh.mention("@kodiai hi")
    assert mh.rows("telemetry.db", "SELECT event_type FROM executions") == []


async def test_telemetry_row_with_mention_event_type(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@kodiai hi")
    assert mh.rows("telemetry.db", "SELECT event_type FROM executions") == [("issue_comment.created",)]


async def test_118_cost_warning(mh: MentionHarness) -> None:
    mh.open_pr(config="telemetry:\n  costWarningUsd: 1.0\n")
    mh.script(comment_tool("answer"), Result(total_cost_usd=3.5))
    await mh.mention("@kodiai hi")
    warnings = [b for b in bodies(mh.issue_comments()) if "cost warning" in b]
    assert warnings and "$3.5000" in warnings[0] and "$1.00" in warnings[0]


async def test_119_telemetry_disabled_no_cost_warning(mh: MentionHarness) -> None:
    mh.open_pr(config="telemetry:\n  enabled: false\n  costWarningUsd: 1.0\n")
    mh.script(comment_tool("answer"), Result(total_cost_usd=3.5))
    await mh.mention("@kodiai hi")
    assert not [b for b in bodies(mh.issue_comments()) if "cost warning" in b]
    assert mh.rows("telemetry.db", "SELECT event_type FROM executions") == []


async def test_108_denied_path_refused(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON + "  denyPaths: ['README.md']\n")
    mh.write_on_execute({"README.md": "# changed\n"})
    await mh.mention("@kodiai apply: edit readme", comment_id=6020)
    body = mh.issue_comments()[-1]["body"]
    assert "Reason: write-policy-denied-path" in body and "Rule: denyPaths" in body
    assert "File: README.md" in body and "Matched pattern: README.md" in body
    assert mh.bot_pulls() == []


async def test_109_allow_paths_blocks_readme(mh: MentionHarness) -> None:
    mh.open_pr(config=WRITE_ON + "  allowPaths: ['src/']\n")
    mh.write_on_execute({"README.md": "# changed\n"})
    await mh.mention("@kodiai apply: edit readme", comment_id=6021)
    body = mh.issue_comments()[-1]["body"]
    assert "Reason: write-policy-not-allowed" in body and "Rule: allowPaths" in body
    assert "Smallest config change" in body and "- 'README.md'" in body


async def test_same_repo_push_failure_falls_back_to_bot_pr_with_the_commit(mh: MentionHarness) -> None:
    """The E3.14.3d caveat decided in the user's favour: the made commit goes out as a bot PR."""
    mh.open_pr(config=WRITE_ON)
    hook = mh.repo.path / "hooks" / "pre-receive"
    hook.write_text(
        '#!/bin/sh\nwhile read old new ref; do [ "$ref" = refs/heads/feature ] && exit 1; done\nexit 0\n'
    )
    hook.chmod(0o755)
    mh.write_on_execute({"src/index.ts": "export const a = 5;\n"})
    await mh.mention("@kodiai apply: set a to 5", comment_id=6022)
    [bot] = mh.bot_pulls()
    key, branch = _key_and_branch(6022)
    assert key in mh.bare_log(branch)[0]
    assert key not in mh.bare_log("feature")[0]
    assert f"Opened PR: {bot['html_url']}" in mh.issue_comments()[-1]["body"]


async def test_catch_all_posts_classified_error(mh: MentionHarness) -> None:
    mh.repo.commit({"README.md": "# repo\n"}, "base")
    await mh.mention("@kodiai hi", number=404)  # no such PR: GET pulls/404 fails in the job
    assert mh.executor.contexts == []
    [reply] = mh.issue_comments(404)
    assert "Kodiai encountered an error" in reply["body"]
    assert mh.logged("Mention handler failed")
