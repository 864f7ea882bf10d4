"""The MCP GitHub tools may write only to the issue or PR of the triggering event (port deviation: the
original posted to any issue number the model named). Real tools, real PyGithub, the fake GitHub."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions
from exec_tool_calls import call, payload, text
from execution_helpers import INSTALLATION, OWNER, PR, REPO, make_client
from pydantic import SecretStr

from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.pacing import PacingPolicy
from kodiai.execution.tools.comment_server import comment_tools
from kodiai.execution.tools.inline_server import InlineCommentServer
from kodiai.execution.tools.thread_server import thread_tools
from kodiai.execution.types import ExecutionContext
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.pr_payloads import user_object
from support.scripted_transport import Result, ScriptedTransport, ToolCall

OTHER = 99


def writes(fake: FakeGitHub) -> list[tuple[str, str]]:
    """Every non-GET request the tools sent to GitHub."""
    return [(m, p) for m, p, _ in fake.calls if m != "GET"]


def refused(result: dict[str, Any], message: str) -> bool:
    return bool(result.get("is_error")) and text(result) == f"Error: {message}"


# ---- github_comment -------------------------------------------------------------------------------


async def test_create_comment_on_another_issue_is_refused_and_nothing_is_posted(
    make_env: Any, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    env = make_env()
    result = await call(comment_tools(env), "create_comment", {"issueNumber": OTHER, "body": "hello"})
    assert refused(result, f"this run may only comment on #{PR}")
    assert writes(fake_gh) == [] and pr_state.issue_comments(OWNER, REPO, OTHER) == []
    assert env.publish.published is False
    ok = await call(comment_tools(env), "create_comment", {"issueNumber": PR, "body": "hello"})
    assert "comment_id" in payload(ok)


async def test_an_issue_run_may_comment_only_on_its_issue(
    make_env: Any, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    env = make_env(pr_number=None)
    env.issue_number = 55
    result = await call(comment_tools(env), "create_comment", {"issueNumber": PR, "body": "hi"})
    assert refused(result, "this run may only comment on #55")
    assert writes(fake_gh) == []
    payload(await call(comment_tools(env), "create_comment", {"issueNumber": 55, "body": "hi"}))
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, 55)] == ["hi"]


async def test_a_run_without_a_target_writes_nothing(make_env: Any, fake_gh: FakeGitHub) -> None:
    env = make_env(pr_number=None)
    tools = comment_tools(env)
    for name, args in (
        ("create_comment", {"issueNumber": PR, "body": "x"}),
        ("update_comment", {"commentId": 1, "body": "x"}),
    ):
        assert refused(await call(tools, name, args), "this run has no issue or pull request to write to")
    assert fake_gh.calls == []


async def test_update_comment_refuses_a_comment_on_another_issue(
    make_env: Any, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    elsewhere = pr_state.add_issue_comment(OWNER, REPO, OTHER, "the bot's comment on another issue")
    fake_gh.reset_calls()
    result = await call(
        comment_tools(make_env()), "update_comment", {"commentId": elsewhere["id"], "body": "pwned"}
    )
    assert refused(result, f"this run may only comment on #{PR}")
    assert writes(fake_gh) == []
    assert (
        pr_state.issue_comment(OWNER, REPO, elsewhere["id"])["body"] == "the bot's comment on another issue"
    )


async def test_update_comment_refuses_a_comment_the_bot_did_not_write(
    make_env: Any, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    human = pr_state.add_issue_comment(OWNER, REPO, PR, "LGTM from a maintainer")
    human["user"] = user_object("maintainer")
    fake_gh.reset_calls()
    result = await call(
        comment_tools(make_env()), "update_comment", {"commentId": human["id"], "body": "approved"}
    )
    assert refused(result, "this run may only update its own comments")
    assert writes(fake_gh) == []
    assert pr_state.issue_comment(OWNER, REPO, human["id"])["body"] == "LGTM from a maintainer"
    own = pr_state.add_issue_comment(OWNER, REPO, PR, "tracking")
    payload(await call(comment_tools(make_env()), "update_comment", {"commentId": own["id"], "body": "done"}))
    assert pr_state.issue_comment(OWNER, REPO, own["id"])["body"] == "done"


# ---- reviewCommentThread / github_inline_comment ----------------------------------------------------


async def test_thread_replies_stay_in_the_triggering_comments_thread(
    make_env: Any, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    trigger = pr_state.add_review_comment(OWNER, REPO, PR, "@kodiai why?", path="src/app.py", line=3)
    reply_in_thread = pr_state.add_review_comment(
        OWNER, REPO, PR, "me too", path="src/app.py", line=3, in_reply_to_id=trigger["id"]
    )
    other_thread = pr_state.add_review_comment(OWNER, REPO, PR, "unrelated", path="src/app.py", line=9)
    env = make_env()
    env.thread_comment_id = trigger["id"]
    tools = thread_tools(env)
    fake_gh.reset_calls()
    other_pr = await call(
        tools,
        "reply_to_pr_review_comment",
        {"pullRequestNumber": OTHER, "commentId": trigger["id"], "body": "x"},
    )
    assert refused(other_pr, f"this run may only reply on #{PR}")
    wrong_thread = await call(
        tools,
        "reply_to_pr_review_comment",
        {"pullRequestNumber": PR, "commentId": other_thread["id"], "body": "x"},
    )
    assert refused(wrong_thread, f"this run may only reply in the thread of review comment {trigger['id']}")
    assert writes(fake_gh) == []
    for parent in (trigger, reply_in_thread):
        payload(
            await call(
                tools,
                "reply_to_pr_review_comment",
                {"pullRequestNumber": PR, "commentId": parent["id"], "body": "ok"},
            )
        )
    replies = [c for c in pr_state.review_comments(OWNER, REPO, PR) if "kodiai response" in c["body"]]
    assert [c["in_reply_to_id"] for c in replies] == [trigger["id"], reply_in_thread["id"]]


async def test_inline_comments_only_on_the_runs_pull_request(make_env: Any, fake_gh: FakeGitHub) -> None:
    env = make_env()
    env.issue_number = OTHER  # a target that is not this PR: the inline tool (no number argument) refuses
    result = await InlineCommentServer(env).create_inline_comment(
        {"path": "src/app.py", "line": 1, "body": "x"}
    )
    assert result.get("is_error") and f"this run may only comment on #{OTHER}" in text(result)
    assert writes(fake_gh) == []


# ---- through the executor: the target comes from the triggering event --------------------------------


def scripted_executor(fake: FakeGitHub, transport: ScriptedTransport) -> ClaudeAgentExecutor:
    def transport_factory(_options: ClaudeAgentOptions) -> ScriptedTransport:
        return transport

    return ClaudeAgentExecutor(
        installation_client=lambda _installation: make_client(fake),
        credentials=ModelCredentials(anthropic_api_key=SecretStr("sk-ant-api03-" + "t" * 40)),
        transport_factory=transport_factory,
        pacing=PacingPolicy(min_write_interval=0.0),
    )


def mention_context(workspace: Path, **fields: Any) -> ExecutionContext:
    return ExecutionContext(
        workspace_dir=workspace,
        installation_id=INSTALLATION,
        owner=OWNER,
        repo=REPO,
        event_type="issue_comment.created",
        prompt="Answer the question.",
        delivery_id="d-pin",
        bot_handles=["kodiai", "claude"],
        **fields,
    )


async def test_executor_pins_the_tools_to_the_events_pull_request(
    tmp_path: Path, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    """A model that follows an injected "also post this on #99" gets a refusal; #7 gets its comment."""
    transport = ScriptedTransport(
        [
            ToolCall("github_comment", "create_comment", {"issueNumber": OTHER, "body": "spam"}),
            ToolCall("github_comment", "create_comment", {"issueNumber": PR, "body": "answer"}),
            Result(),
        ]
    )
    result = await scripted_executor(fake_gh, transport).execute(mention_context(tmp_path, pr_number=PR))
    first, second = transport.tool_calls
    assert first.is_error and first.text == f"Error: this run may only comment on #{PR}"
    assert not second.is_error
    assert pr_state.issue_comments(OWNER, REPO, OTHER) == []
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, PR)] == ["answer"]
    assert result.published is True


async def test_executor_gives_an_issue_mention_its_issue_as_the_target(
    tmp_path: Path, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    transport = ScriptedTransport(
        [
            ToolCall("github_comment", "create_comment", {"issueNumber": PR, "body": "spam"}),
            ToolCall("github_comment", "create_comment", {"issueNumber": 55, "body": "answer"}),
            Result(),
        ]
    )
    await scripted_executor(fake_gh, transport).execute(mention_context(tmp_path, issue_number=55))
    first, second = transport.tool_calls
    assert first.is_error and first.text == "Error: this run may only comment on #55"
    assert not second.is_error, second.text
    assert [c["body"] for c in pr_state.issue_comments(OWNER, REPO, 55)] == ["answer"]
    assert pr_state.issue_comments(OWNER, REPO, PR) == []
