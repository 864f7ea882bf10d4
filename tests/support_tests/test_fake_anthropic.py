"""The fake Anthropic API driven by the real Claude Code CLI (bundled with claude-agent-sdk)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultError,
    ResultMessage,
    SystemMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_agent_sdk.types import McpSdkServerConfig

from kodiai.execution.config_view import ExecutorConfig
from kodiai.execution.options import ModelCredentials, build_agent_options
from kodiai.execution.types import ExecutionContext
from support.fake_anthropic import (
    FAKE_API_KEY,
    Fail,
    FakeAnthropic,
    Hang,
    MainRequest,
    Reply,
    ScriptedConversation,
    Text,
    ToolUse,
    ToolUses,
    Truncated,
    example_for_schema,
    is_main_request,
)
from support.gitrepo import commit_files, git

ALLOWED = ["Read", "Grep", "Glob", "Bash(git diff:*)", "Bash(git log:*)", "mcp__demo__*"]


@dataclass
class Session:
    """What one CLI run produced, exception included (the SDK raises after an error result)."""

    messages: list[Any] = field(default_factory=list)
    error: Exception | None = None

    @property
    def result(self) -> ResultMessage:
        results = [m for m in self.messages if isinstance(m, ResultMessage)]
        assert len(results) == 1, self.messages
        return results[0]

    def of(self, kind: type) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]


class EchoTool:
    """An in-process SDK MCP server ``demo`` with one tool, ``echo``, that records its calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

        @tool("echo", "Echo the text back", {"text": str})
        async def echo(args: dict[str, Any]) -> dict[str, Any]:
            self.calls.append(args)
            return {"content": [{"type": "text", "text": f"echo: {args['text']}"}]}

        self.server: McpSdkServerConfig = create_sdk_mcp_server("demo", tools=[echo])


@pytest.fixture(scope="module")
def _fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def fake(_fake: FakeAnthropic) -> FakeAnthropic:
    _fake.reset()
    _fake.script = lambda _request: Text("OK")
    return _fake


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A git repository with two commits (``a.txt`` added by the second) as the session's cwd."""
    work = tmp_path / "work"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    commit_files(work, {"README.md": "readme contents here\n"}, "one")
    commit_files(work, {"a.txt": "change\n"}, "two")
    return work


def options(fake: FakeAnthropic, tmp_path: Path, cwd: Path, echo: EchoTool, **env: str) -> ClaudeAgentOptions:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return ClaudeAgentOptions(
        cwd=str(cwd),
        env=fake.env(str(home), **env),
        mcp_servers={"demo": echo.server},
        allowed_tools=ALLOWED,
        disallowed_tools=["Edit", "Write", "MultiEdit", "NotebookEdit"],
        permission_mode="dontAsk",
        setting_sources=["project"],
    )


async def run(prompt: str, opts: ClaudeAgentOptions) -> Session:
    session = Session()
    try:
        async for message in query(prompt=prompt, options=opts):
            session.messages.append(message)
    except Exception as exc:  # ResultError after an error result: part of what is asserted
        session.error = exc
    return session


# ----------------------------------------------------------------------------- with the real CLI


async def test_plain_text_answer_is_a_success_result(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    fake.script = lambda request: Text(f"Hello from turn {request.turn}")
    session = await run("Say hello", options(fake, tmp_path, workdir, EchoTool()))

    assert session.error is None
    result = session.result
    assert (result.subtype, result.is_error, result.result) == ("success", False, "Hello from turn 0")
    assert result.num_turns == 1
    assert result.total_cost_usd and result.total_cost_usd > 0
    assert result.usage and result.usage["input_tokens"] == 120 and result.usage["output_tokens"] == 30
    [main] = fake.main_requests
    assert main.stream and "Say hello" in main.user_text
    assert {"Read", "Bash"} <= set(main.tool_names)
    assert main.system_text  # the preset's prompt
    assert result.model_usage and main.model in result.model_usage
    [record] = [r for r in fake.requests if r.kind == "main"]
    assert (record.path, record.query, record.status) == ("/v1/messages", "beta=true", 200)
    assert record.headers["x-api-key"] == FAKE_API_KEY
    assert fake.side_requests == []  # none with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1


async def test_mcp_tool_call_reaches_the_tool_and_its_result_the_next_turn(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    echo = EchoTool()
    conversation = ScriptedConversation([ToolUse("mcp__demo__echo", {"text": "ping"}, id="toolu_echo1")])
    fake.script = conversation
    session = await run("Use the echo tool", options(fake, tmp_path, workdir, echo))

    assert session.result.subtype == "success" and session.result.result == "Done."
    assert echo.calls == [{"text": "ping"}]
    first, second = fake.main_requests  # exactly one main request per agent turn
    assert (first.turn, second.turn) == (0, 1)
    assert [(r.tool_use_id, r.text, r.is_error) for r in second.tool_results] == [
        ("toolu_echo1", "echo: ping", False)
    ]
    assert conversation.seen[1].tool_results == second.tool_results


async def test_read_and_mcp_calls_in_one_assistant_message(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    echo = EchoTool()
    fake.script = ScriptedConversation(
        [
            ToolUses(
                ToolUse("Read", {"file_path": str(workdir / "README.md")}),
                ToolUse("mcp__demo__echo", {"text": "x"}),
                text="Let me look.",
            )
        ],
        final=Text("Read it."),
    )
    session = await run("Read the README", options(fake, tmp_path, workdir, echo))

    assert session.result.result == "Read it."
    assert len(fake.main_requests) == 2
    read, echoed = fake.main_requests[1].tool_results
    assert "readme contents here" in read.text and not read.is_error
    assert echoed.text == "echo: x"


async def test_allowed_bash_git_diff_runs_and_other_commands_are_denied(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    fake.script = ScriptedConversation(
        [
            ToolUse("Bash", {"command": "git diff HEAD~1 -- a.txt", "description": "Show the diff"}),
            ToolUse("Bash", {"command": "git push origin main", "description": "Push"}),
            ToolUse("Write", {"file_path": str(workdir / "x.txt"), "content": "x"}),
        ]
    )
    session = await run("Show the diff", options(fake, tmp_path, workdir, EchoTool()))

    assert session.result.subtype == "success"
    requests = fake.main_requests
    assert [r.turn for r in requests] == [0, 1, 2, 3]
    [diff], [push], [write] = (r.tool_results for r in requests[1:])
    assert "+change" in diff.text and not diff.is_error
    assert "denied" in push.text
    assert write.is_error and not (workdir / "x.txt").exists()
    denied = [m for m in session.of(SystemMessage) if m.subtype == "permission_denied"]
    assert [m.data["tool_name"] for m in denied] == ["Bash"]


async def test_session_with_the_apps_own_options(fake: FakeAnthropic, tmp_path: Path, workdir: Path) -> None:
    """``build_agent_options`` (dontAsk, no shell at all — ``Bash`` denied, git goes through the ``git``
    MCP server —, ``mcp__<server>__*``, no settings sources)."""
    echo = EchoTool()
    context = ExecutionContext(
        workspace_dir=workdir,
        installation_id=1,
        owner="acme",
        repo="widgets",
        event_type="pull_request.opened",
    )
    config = ExecutorConfig(max_turns=10, system_prompt_append="Review carefully.")
    credentials = ModelCredentials(anthropic_api_key=FAKE_API_KEY)
    opts = build_agent_options(context, config, {"demo": echo.server}, credentials, environ={})
    home = tmp_path / "home"
    home.mkdir()
    opts.env.update(fake.env(str(home)))
    fake.script = ScriptedConversation(
        [
            ToolUse("Bash", {"command": "git diff HEAD~1", "description": "diff"}),
            ToolUse("mcp__demo__echo", {"text": "review"}),
            ToolUse("Edit", {"file_path": str(workdir / "a.txt"), "old_string": "change", "new_string": "x"}),
        ],
        final=Text("Reviewed."),
    )
    session = await run("Review this PR", opts)

    assert session.result.subtype == "success" and session.result.result == "Reviewed."
    requests = fake.main_requests
    assert len(requests) == 4
    assert {r.model for r in requests} == {config.model}
    assert "Review carefully." in requests[0].system_text
    assert requests[1].tool_results[0].is_error and "+change" not in requests[1].tool_results[0].text
    assert "Bash" not in requests[0].tool_names
    assert echo.calls == [{"text": "review"}]
    assert requests[3].tool_results[0].is_error and (workdir / "a.txt").read_text() == "change\n"
    assert session.result.model_usage and config.model in session.result.model_usage
    assert requests[0].headers["user-agent"].startswith("claude-cli/")
    assert "kodiai-github-app" in requests[0].headers["user-agent"]


async def test_http_500_without_retries_ends_as_an_error_result(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    fake.script = ScriptedConversation([Fail(500, message="boom")])
    opts = options(fake, tmp_path, workdir, EchoTool(), CLAUDE_CODE_MAX_RETRIES="0")
    session = await run("Say hello", opts)

    # The CLI reports the API error as a result with is_error=True but subtype "success", then
    # exits 1; the SDK yields that result and then raises ResultError.
    result = session.result
    assert (result.subtype, result.is_error) == ("success", True)
    assert result.result and "500" in result.result and "boom" in result.result
    [assistant] = session.of(AssistantMessage)
    assert (assistant.model, assistant.error) == ("<synthetic>", "server_error")
    assert isinstance(session.error, ResultError) and "500" in str(session.error)
    assert len(fake.main_requests) == 1


async def test_http_500_is_retried_by_the_cli_by_default(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    fake.script = ScriptedConversation([Fail(500)], final=Text("recovered"))
    session = await run("Say hello", options(fake, tmp_path, workdir, EchoTool()))

    assert session.error is None and session.result.result == "recovered"
    [retry] = [m for m in session.of(SystemMessage) if m.subtype == "api_retry"]
    assert (retry.data["attempt"], retry.data["error_status"]) == (1, 500)
    failed, retried = fake.main_requests
    assert failed.turn == retried.turn == 0 and retried.stream


async def test_truncated_stream_is_retried_without_streaming(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    fake.script = ScriptedConversation([Truncated()], final=Text("Complete answer"))
    opts = options(fake, tmp_path, workdir, EchoTool(), CLAUDE_CODE_MAX_RETRIES="0")
    session = await run("Say hello", opts)

    assert session.error is None and session.result.result == "Complete answer"
    first, retry = fake.main_requests
    assert (first.stream, retry.stream) == (True, False)
    assert first.turn == retry.turn == 0  # a retry of the same turn, not a new one


async def test_hung_request_times_out_on_the_cli_side(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    fake.script = ScriptedConversation([Hang()])
    opts = options(fake, tmp_path, workdir, EchoTool(), CLAUDE_CODE_MAX_RETRIES="0", API_TIMEOUT_MS="1500")
    session = await run("Say hello", opts)

    assert session.result.is_error and "timed out" in (session.result.result or "")
    assert isinstance(session.error, ResultError)
    [record] = [r for r in fake.requests if r.kind == "main"]
    # The CLI hung up; the fake's handler notices on its next disconnect poll (50 ms, later on a loaded
    # machine), so wait for it rather than read the status the moment the session ends.
    fake.wait_until(lambda: fake.hanging == 0, timeout=30)
    assert record.status == 499


async def test_side_requests_are_kept_apart_from_main_turns(
    fake: FakeAnthropic, tmp_path: Path, workdir: Path
) -> None:
    """With non-essential traffic allowed the CLI probes ``/api/hello`` and asks haiku for a title."""

    def script(request: MainRequest) -> Reply:
        # The title request runs concurrently with the first turn: hold the answer until it came,
        # or the session may end first.
        fake.wait_until(lambda: any(r.path == "/v1/messages" for r in fake.side_requests), timeout=10)
        return Text("main answer")

    fake.script = script
    opts = options(
        fake,
        tmp_path,
        workdir,
        EchoTool(),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="",
        CLAUDE_CODE_MAX_RETRIES="0",
    )
    session = await run("Review the changes in this repository", opts)  # "Say hello" gets no title

    assert session.result.result == "main answer"
    assert len(fake.main_requests) == 1
    titles = [r for r in fake.side_requests if r.path == "/v1/messages"]
    assert titles and all(not is_main_request(r.body) for r in titles)
    assert all(r.status == 200 for r in fake.side_requests)


# ----------------------------------------------------------------------------- without the CLI


def test_non_streaming_answer_and_stream_events(fake: FakeAnthropic) -> None:
    fake.script = lambda request: ToolUse("Read", {"file_path": "/x"}, id="toolu_1")
    body = {"model": "claude-test", "max_tokens": 10, "messages": [], "tools": [{"name": "Read"}]}
    plain = httpx.post(f"{fake.url}/v1/messages", json=body).json()
    assert plain["model"] == "claude-test" and plain["stop_reason"] == "tool_use"
    assert plain["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/x"}}
    ]
    assert plain["usage"]["input_tokens"] == 120

    streamed = httpx.post(f"{fake.url}/v1/messages", json={**body, "stream": True})
    events = [line[7:] for line in streamed.text.splitlines() if line.startswith("event: ")]
    assert events == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    data = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: ")]
    partial = "".join(d["delta"]["partial_json"] for d in data if d["type"] == "content_block_delta")
    assert json.loads(partial) == {"file_path": "/x"}
    assert [r.index for r in fake.main_requests] == [0, 1]


def test_fail_count_tokens_and_unknown_paths(fake: FakeAnthropic) -> None:
    fake.script = lambda request: Fail(529)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "Read"}]}
    failed = httpx.post(f"{fake.url}/v1/messages", json=body)
    assert failed.status_code == 529 and failed.json()["error"]["type"] == "overloaded_error"
    counted = httpx.post(f"{fake.url}/v1/messages/count_tokens", json=body)
    assert counted.json()["input_tokens"] > 0
    assert httpx.get(f"{fake.url}/v1/models").status_code == 404
    assert [r.kind for r in fake.requests] == ["main", "count_tokens", "other"]


def test_hang_holds_the_request_until_the_client_gives_up(fake: FakeAnthropic) -> None:
    """Tests synchronise on the hang itself (``wait_until``), then on the handler's release."""
    fake.script = lambda request: Hang()
    body = {"model": "m", "messages": [], "tools": [{"name": "Read"}]}
    outcome: list[BaseException] = []

    def client() -> None:
        try:
            httpx.post(f"{fake.url}/v1/messages", json=body, timeout=3)
        except httpx.HTTPError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=client)
    thread.start()
    fake.wait_until(lambda: fake.hanging == 1)
    assert len(fake.wait_for_main_requests(1)) == 1
    thread.join()
    assert isinstance(outcome[0], httpx.ReadTimeout)
    fake.wait_until(lambda: fake.hanging == 0)
    assert [r.status for r in fake.requests] == [499]


def test_scripted_conversation_and_helpers() -> None:
    conversation = ScriptedConversation([ToolUse("Read"), Fail(500)], final=Text("end"))
    request = MainRequest(0, {"messages": []}, {})
    assert [conversation(request) for _ in range(4)] == [ToolUse("Read"), Fail(500), Text("end"), Text("end")]
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "n": {"type": ["integer", "null"]}},
    }
    assert example_for_schema(schema) == {"title": "Fake title", "n": 0}
    assert is_main_request({"model": "claude-opus", "tools": [{"name": "Read"}]})
    assert not is_main_request({"model": "claude-haiku-5-5", "messages": []})
    assert not is_main_request({"model": "claude-opus", "output_config": {"format": {"type": "json_schema"}}})
