"""The executor through the real Claude Agent SDK client and a scripted transport (behaviour E1, E5.12).

Tool calls travel as the CLI sends them (``mcp_message`` control requests) into our in-process MCP
servers, which post to the fake GitHub server over HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog
from claude_agent_sdk import ClaudeAgentOptions
from execution_helpers import INSTALLATION, KEY, OWNER, PR, REPO, make_client
from pydantic import SecretStr

from kodiai.execution.config_view import ExecutorConfig
from kodiai.execution.executor import ClaudeAgentExecutor, Executor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.pacing import PacingPolicy
from kodiai.execution.review_output import build_review_output_marker
from kodiai.execution.types import ExecutionContext
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.scripted_transport import AssistantText, Crash, Hang, Result, ScriptedTransport, Step, ToolCall

SUMMARY = (
    "<details>\n<summary>Kodiai Review Summary</summary>\n\n## What Changed\nRetry loop.\n\n## Observations\n\n"
    "### Impact\n[MAJOR] src/app.py (12): Loop never ends\nThe counter is ignored.\n\n## Verdict\n"
    ":red_circle: **Address before merging** -- 1 blocking issue(s) found\n</details>"
)
API_KEY = "sk-ant-api03-" + "s3cr3t" * 8


class Harness:
    """An executor wired to the fake GitHub server and a scripted transport per run."""

    def __init__(self, fake: FakeGitHub, steps: list[Step], config: ExecutorConfig | None = None) -> None:
        self.transport = ScriptedTransport(steps)
        self.options: ClaudeAgentOptions | None = None
        self.config = config

        def transport_factory(options: ClaudeAgentOptions) -> ScriptedTransport:
            self.options = options
            return self.transport

        kwargs: dict[str, Any] = {}
        if config is not None:
            kwargs["config_loader"] = lambda _dir, _log: config
        self.executor: Executor = ClaudeAgentExecutor(
            installation_client=lambda installation_id: make_client(fake),
            credentials=ModelCredentials(anthropic_api_key=SecretStr(API_KEY)),
            transport_factory=transport_factory,
            pacing=PacingPolicy(min_write_interval=0.0),
            **kwargs,
        )


def review_context(workspace: Path, **overrides: Any) -> ExecutionContext:
    fields: dict[str, Any] = {
        "workspace_dir": workspace,
        "installation_id": INSTALLATION,
        "owner": OWNER,
        "repo": REPO,
        "event_type": "pull_request.opened",
        "pr_number": PR,
        "prompt": "Review PR #7 please.",
        "review_output_key": KEY,
        "delivery_id": "d-1",
        "bot_handles": ["kodiai", "claude"],
    }
    fields.update(overrides)
    return ExecutionContext(**fields)


async def test_review_run_posts_through_mcp_and_maps_result(
    tmp_path: Path, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    """E1.3/E1.5: tool calls reach our MCP servers and GitHub; the result is mapped; published=true."""
    h = Harness(
        fake_gh,
        [
            AssistantText("Looking at the diff."),
            ToolCall(
                "github_inline_comment",
                "create_inline_comment",
                {"path": "src/app.py", "line": 12, "body": "[MAJOR] Loop never ends @kodiai"},
            ),
            ToolCall("github_comment", "create_comment", {"issueNumber": PR, "body": SUMMARY}),
            Result(
                num_turns=4,
                session_id="sess-42",
                total_cost_usd=0.42,
                duration_ms=1234,
                stop_reason="end_turn",
            ),
        ],
    )
    result = await h.executor.execute(review_context(tmp_path))

    assert result.conclusion == "success" and result.published is True
    assert (result.num_turns, result.session_id, result.cost_usd, result.duration_ms) == (
        4,
        "sess-42",
        0.42,
        1234,
    )
    assert result.stop_reason == "end_turn" and result.error_message is None and result.is_timeout is None
    assert (result.model, result.input_tokens, result.output_tokens) == (
        "claude-sonnet-4-5-20250929",
        100,
        50,
    )
    assert (result.cache_read_tokens, result.cache_creation_tokens) == (10, 5)

    assert h.transport.prompt == "Review PR #7 please."
    assert [c.is_error for c in h.transport.tool_calls] == [False, False]
    marker = build_review_output_marker(KEY)
    [inline] = pr_state.review_comments(OWNER, REPO, PR)
    assert inline["body"] == f"[MAJOR] Loop never ends kodiai\n\n{marker}"
    [summary] = pr_state.issue_comments(OWNER, REPO, PR)
    assert summary["body"] == f"{SUMMARY}\n\n{marker}"
    assert h.transport.closed is True


async def test_tool_names_listed_to_the_cli(tmp_path: Path, fake_gh: FakeGitHub, pr_state: PrState) -> None:
    """E2.0: the servers expose exactly the six tools under their original names."""
    parent = pr_state.add_review_comment(OWNER, REPO, PR, "orig", path="src/app.py", line=3)
    h = Harness(
        fake_gh,
        [
            ToolCall("github_comment", "create_comment", {"issueNumber": PR, "body": "hi"}),
            ToolCall(
                "github_inline_comment",
                "create_inline_comment",
                {"path": "src/app.py", "line": 1, "body": "x"},
            ),
            ToolCall("github_ci", "get_ci_status", {}),
            ToolCall(
                "reviewCommentThread",
                "reply_to_pr_review_comment",
                {"pullRequestNumber": PR, "commentId": parent["id"], "body": "ok"},
            ),
            Result(),
        ],
    )
    # A review-comment surface that is not a mention event still gets every server (matrix row 1 + thread).
    await h.executor.execute(review_context(tmp_path, comment_id=parent["id"], review_output_key=None))
    assert h.transport.listed_tools == {
        "github_comment": ["update_comment", "create_comment"],
        "github_inline_comment": ["create_inline_comment"],
        "github_ci": ["get_ci_status", "get_workflow_run_details"],
        "reviewCommentThread": ["reply_to_pr_review_comment"],
    }
    assert all(not c.is_error for c in h.transport.tool_calls), [c.text for c in h.transport.tool_calls]


async def test_validation_error_returned_to_model_nothing_posted(
    tmp_path: Path, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    """E2.0: a validator error is a tool error the model sees; nothing is posted; published stays false."""
    bad = "<details>\n<summary>Kodiai Review Summary</summary>\n\nAll good.\n</details>"
    h = Harness(
        fake_gh, [ToolCall("github_comment", "create_comment", {"issueNumber": PR, "body": bad}), Result()]
    )
    result = await h.executor.execute(review_context(tmp_path))
    [record] = h.transport.tool_calls
    assert record.is_error and record.text.startswith("Error: ") and "missing required section" in record.text
    assert pr_state.issue_comments(OWNER, REPO, PR) == []
    assert result.conclusion == "success" and result.published is False


@pytest.mark.parametrize(
    ("overrides", "servers"),
    [
        ({}, ["github_comment", "github_inline_comment", "github_ci", "git"]),
        (
            {"event_type": "pull_request_review_comment.created", "comment_id": 5},
            ["github_comment", "reviewCommentThread", "git"],
        ),
        ({"event_type": "issue_comment.created"}, ["github_comment", "git"]),
        ({"event_type": "issue_comment.created", "pr_number": None}, ["github_comment", "git"]),
        (
            {"event_type": "pull_request_review_comment.created", "comment_id": 5, "write_mode": True},
            ["reviewCommentThread", "git"],
        ),
        ({"event_type": "issue_comment.created", "write_mode": True}, ["git"]),
    ],
    ids=[
        "review",
        "mention-inline-thread",
        "mention-pr",
        "mention-issue",
        "write-inline-thread",
        "write-other",
    ],
)
async def test_1_4_server_matrix(
    tmp_path: Path, fake_gh: FakeGitHub, overrides: dict[str, Any], servers: list[str]
) -> None:
    """E1.4 matrix and E1.3 step 5: servers built per surface; mcp__<key>__* allowed for each."""
    h = Harness(fake_gh, [Result()])
    await h.executor.execute(review_context(tmp_path, **overrides))
    assert h.options is not None
    assert list(h.options.mcp_servers) == servers  # type: ignore[arg-type]
    mcp_allowed = [t for t in h.options.allowed_tools if t.startswith("mcp__")]
    assert mcp_allowed == [f"mcp__{s}__*" for s in servers]


async def test_1_3_options_mapping_and_tool_surface(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.3 step 7 / E1.4 decision: model, turns, preset+append, no settings sources (issue 23), cwd,
    entrypoint env, dontAsk with an enforced allow-list; Bash, and outside write mode the write tools, and
    outside mentions with allowed domains the web tools, denied; the CLI is started by the run's launcher."""
    (tmp_path / ".kodiai.yml").write_text(
        "model: claude-opus-4-1\nmaxTurns: 7\nsystemPromptAppend: Be terse.\n", encoding="utf-8"
    )
    h = Harness(fake_gh, [Result()])
    await h.executor.execute(review_context(tmp_path))
    o = h.options
    assert o is not None
    assert (o.model, o.max_turns, o.cwd) == ("claude-opus-4-1", 7, str(tmp_path))
    assert o.system_prompt == {"type": "preset", "preset": "claude_code", "append": "Be terse."}
    assert o.setting_sources == [] and o.permission_mode == "dontAsk"
    assert o.allowed_tools[:3] == ["Read", "Grep", "Glob"]
    assert not [t for t in o.allowed_tools if t.startswith("Bash")]
    assert "Edit" not in o.allowed_tools and "WebSearch" not in o.allowed_tools
    assert o.disallowed_tools == ["Bash", "Edit", "Write", "MultiEdit", "NotebookEdit", "WebSearch", "WebFetch"]
    assert o.cli_path is not None and Path(o.cli_path).name == "claude" and not Path(o.cli_path).exists()
    assert o.env["CLAUDE_CODE_ENTRYPOINT"] == "kodiai-github-app"
    assert o.env["ANTHROPIC_API_KEY"] == API_KEY


async def test_1_3_defaults_without_config_and_no_append(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.3: no .kodiai.yml → default model and 25 turns; empty append is omitted from the preset."""
    h = Harness(fake_gh, [Result()])
    await h.executor.execute(review_context(tmp_path))
    assert h.options is not None
    assert (h.options.model, h.options.max_turns) == ("claude-sonnet-4-5-20250929", 25)
    assert h.options.system_prompt == {"type": "preset", "preset": "claude_code"}


async def test_1_4_write_mode_and_mention_tools(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.4: write mode adds Edit/Write/MultiEdit and denies only Bash; mentions get WebSearch and
    WebFetch for the trusted config's allowed domains only (issue 23), none without them."""
    h = Harness(fake_gh, [Result()])
    context = review_context(
        tmp_path, event_type="issue_comment.created", write_mode=True, allowed_domains=("docs.python.org",)
    )
    await h.executor.execute(context)
    assert h.options is not None
    assert {"Edit", "Write", "MultiEdit", "WebSearch", "WebFetch(domain:docs.python.org)"} <= set(
        h.options.allowed_tools
    )
    assert h.options.disallowed_tools == ["Bash"]
    h = Harness(fake_gh, [Result()])
    await h.executor.execute(review_context(tmp_path, event_type="issue_comment.created"))
    assert h.options is not None
    assert not [t for t in h.options.allowed_tools if t.startswith("Web")]
    assert {"WebSearch", "WebFetch"} <= set(h.options.disallowed_tools)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (Result(subtype="error_max_turns", is_error=True), "failure"),
        (Result(subtype="error_during_execution", is_error=True), "failure"),
        (Result(subtype="success", is_error=True, result="API Error: 500 upstream"), "error"),
    ],
    ids=["max-turns", "during-execution", "success-is-error"],
)
async def test_1_5_conclusion(tmp_path: Path, fake_gh: FakeGitHub, result: Result, expected: str) -> None:
    """E1.5: a non-success subtype is a failure; a success subtype with ``is_error`` (a failed model call)
    is an ``error`` (issue #12: the original recorded it as success)."""
    h = Harness(fake_gh, [result])
    mapped = await h.executor.execute(review_context(tmp_path))
    assert mapped.conclusion == expected and mapped.published is False


async def test_1_5_token_sums_first_model_and_fallbacks(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.5: four token totals summed over models; model = first key; a zero duration is kept; a missing
    stop reason → None."""
    usage = {
        "claude-haiku-4-5": {
            "inputTokens": 7,
            "outputTokens": 3,
            "cacheReadInputTokens": 2,
            "cacheCreationInputTokens": 1,
        },
        "claude-sonnet-4-5-20250929": {
            "inputTokens": 100,
            "outputTokens": 50,
            "cacheReadInputTokens": 10,
            "cacheCreationInputTokens": 5,
        },
    }
    h = Harness(fake_gh, [Result(model_usage=usage, duration_ms=0, stop_reason=None)])
    r = await h.executor.execute(review_context(tmp_path))
    assert r.model == "claude-haiku-4-5"
    assert (r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_creation_tokens) == (107, 53, 12, 6)
    assert r.stop_reason is None and r.duration_ms == 0


def test_1_5_duration_falls_back_to_wall_clock_only_when_missing() -> None:
    """E1.5: durationMs = result duration_ms ?? wall clock (a missing value, not a zero, falls back)."""
    from claude_agent_sdk import ResultMessage

    from kodiai.execution.result_mapping import map_result

    message = ResultMessage(
        subtype="success",
        duration_ms=None,
        duration_api_ms=0,
        is_error=False,
        num_turns=1,  # type: ignore[arg-type]
        session_id="s",
    )
    assert map_result(message, published=False, wall_clock_ms=777).duration_ms == 777


async def test_1_5_empty_model_usage_is_unknown(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.5: an empty per-model map → model 'unknown', zero tokens."""
    h = Harness(fake_gh, [Result(model_usage={})])
    r = await h.executor.execute(review_context(tmp_path))
    assert (r.model, r.input_tokens, r.output_tokens) == ("unknown", 0, 0)


async def test_1_3_09_no_result_message(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.3 step 9: the stream ends without a result → error "No result message received ..."."""
    h = Harness(fake_gh, [AssistantText("thinking")])
    r = await h.executor.execute(review_context(tmp_path))
    assert r.conclusion == "error"
    assert r.error_message == "No result message received from Claude Code CLI"
    assert r.num_turns is None and r.cost_usd is None and r.session_id is None


async def test_1_6_timeout_after_publishing_reports_published(
    tmp_path: Path, fake_gh: FakeGitHub, pr_state: PrState
) -> None:
    """E1.6 + PARITY review Q4: a run that posted and then hangs times out with published=true, the
    timeout message, and the transport closed (the run really stopped)."""
    h = Harness(
        fake_gh,
        [
            ToolCall(
                "github_inline_comment",
                "create_inline_comment",
                {"path": "src/app.py", "line": 2, "body": "x"},
            ),
            Hang(),
        ],
    )
    r = await h.executor.execute(review_context(tmp_path, dynamic_timeout_seconds=3))
    assert r.conclusion == "error" and r.is_timeout is True and r.published is True
    assert r.error_message == (
        "Job timed out after 3 seconds. The operation was taking too long and was automatically terminated."
    )
    assert r.num_turns is None and r.cost_usd is None
    assert h.transport.hanging.is_set() and h.transport.closed is True
    assert len(pr_state.review_comments(OWNER, REPO, PR)) == 1


async def test_1_6_timeout_without_output_and_config_timeout(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.3 step 3: without a dynamic override the config's timeoutSeconds applies; nothing posted →
    published=false."""
    h = Harness(fake_gh, [Hang()], config=ExecutorConfig(timeout_seconds=0.25))
    r = await h.executor.execute(review_context(tmp_path))
    assert r.is_timeout is True and r.published is False
    assert r.error_message is not None and r.error_message.startswith("Job timed out after 0.25 seconds.")
    assert h.transport.closed is True


async def test_1_6_yaml_error_is_generic_error(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.3 step 2 / E1.6: a YAML syntax error in .kodiai.yml → error with the config message; no model run."""
    (tmp_path / ".kodiai.yml").write_text("review: [unclosed\n", encoding="utf-8")
    h = Harness(fake_gh, [Result()])
    r = await h.executor.execute(review_context(tmp_path))
    assert r.conclusion == "error" and r.published is False and r.is_timeout is None
    assert r.error_message is not None and r.error_message.startswith(
        "Invalid .kodiai.yml: YAML parse error:"
    )
    assert h.options is None


async def test_1_6_transport_failure_is_error(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.6: any other exception → conclusion error with the exception message."""

    class Broken(ScriptedTransport):
        async def connect(self) -> None:
            raise RuntimeError("CLI exploded")

    executor = ClaudeAgentExecutor(
        installation_client=lambda _i: make_client(fake_gh),
        credentials=ModelCredentials(),
        transport_factory=lambda _o: Broken([]),
    )
    r = await executor.execute(review_context(tmp_path))
    assert (r.conclusion, r.error_message, r.published) == ("error", "CLI exploded", False)


async def test_1_9_generic_prompt_when_none(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.9: no prompt → the generic prompt with the sanitized trigger body."""
    h = Harness(fake_gh, [Result()])
    await h.executor.execute(
        review_context(tmp_path, prompt=None, trigger_body="please look<!-- hidden -->\u200b now")
    )
    assert h.transport.prompt is not None
    lines = h.transport.prompt.split("\n")
    assert lines[:6] == [
        "You are reviewing a GitHub repository. Event: pull_request.opened",
        "Repository: acme/widgets",
        "Pull Request: #7",
        "",
        "User message:",
        "",
    ]
    assert lines[6] == "please look now"


async def test_credentials_reach_cli_env_only_and_are_never_logged(
    tmp_path: Path, fake_gh: FakeGitHub
) -> None:
    """Credentials go into the CLI env (options.env) and appear in no log event, even on failure."""
    h = Harness(fake_gh, [Result()])
    with structlog.testing.capture_logs() as logs:
        await h.executor.execute(review_context(tmp_path))
        (tmp_path / ".kodiai.yml").write_text(": bad: [", encoding="utf-8")
        await Harness(fake_gh, [Result()]).executor.execute(review_context(tmp_path))
    assert h.options is not None and h.options.env["ANTHROPIC_API_KEY"] == API_KEY
    assert logs and API_KEY not in repr(logs) and "s3cr3t" not in repr(logs)
    assert any(e["event"] == "Claude Code session started" for e in logs)


async def test_1_5_error_result_then_cli_exit_is_failure(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.5: error_max_turns followed by the CLI's non-zero exit (the SDK raises) is still the mapped
    result with conclusion failure, not a generic error."""
    h = Harness(fake_gh, [Result(subtype="error_max_turns", is_error=True, num_turns=25), Crash()])
    r = await h.executor.execute(review_context(tmp_path))
    assert (r.conclusion, r.num_turns, r.error_message) == ("failure", 25, None)


async def test_1_6_cli_crash_without_result_is_error(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.6: the CLI dies before any result → conclusion error with the process error message."""
    h = Harness(fake_gh, [AssistantText("x"), Crash(exit_code=3, stderr="boom")])
    r = await h.executor.execute(review_context(tmp_path))
    assert r.conclusion == "error" and r.published is False
    assert r.error_message is not None and "exit code: 3" in r.error_message


async def test_1_3_02_section_warning_logged_and_defaulted(tmp_path: Path, fake_gh: FakeGitHub) -> None:
    """E1.3 step 2: an invalid section is logged ("Config section invalid, using defaults") and the
    run continues with that section's defaults."""
    (tmp_path / ".kodiai.yml").write_text(
        "model: claude-opus-4-1\nreview:\n  maxComments: lots\n", encoding="utf-8"
    )
    h = Harness(fake_gh, [Result()])
    with structlog.testing.capture_logs() as logs:
        r = await h.executor.execute(review_context(tmp_path))
    assert r.conclusion == "success"
    assert h.options is not None and h.options.model == "claude-opus-4-1"
    warnings = [e for e in logs if e["event"] == "Config section invalid, using defaults"]
    assert [w["section"] for w in warnings] == ["review"]
