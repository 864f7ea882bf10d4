"""A scriptable fake of the Anthropic Messages API that the real Claude Code CLI runs whole sessions against.

Why: the executor's behaviour (tool surface, permissions, MCP tools, error and timeout mapping) can only
be trusted when the real CLI runs it; this fake replaces the model, not the CLI. Usage::

    with FakeAnthropic() as fake:
        fake.script = ScriptedConversation([ToolUse("mcp__github_comment__create_comment", {...})],
                                           final=Text("Done."))
        options = ClaudeAgentOptions(cwd=..., env=fake.env(home=str(tmp_path)), ...)
        async for message in claude_agent_sdk.query(prompt=..., options=options): ...
        assert len(fake.main_requests) == 2        # exactly one main request per agent turn

``fake.script`` is called (in a worker thread, so it may block on a test's event) with a
:class:`MainRequest` for every main-conversation request and returns a reply: :class:`Text`,
:class:`ToolUse`, :class:`ToolUses` (several calls in one assistant message), :class:`Fail` (HTTP error
with the API's error envelope), :class:`Hang` (no answer until the client hangs up or the fake stops) or
:class:`Truncated` (the SSE stream stops before ``message_stop``). Side requests never reach the script.
Every request is in ``fake.requests`` (path, headers, JSON body, kind ``main``/``side``/``count_tokens``/
``other``, status). Answers carry the requested model name and fixed :class:`Usage` numbers, so the
``ResultMessage`` reports tokens and a non-zero ``total_cost_usd``.

Observed with the CLI bundled in claude-agent-sdk 0.2.187 (Claude Code 2.1.330, a native binary at
``claude_agent_sdk/_bundled/claude``; the SDK uses it when ``cli_path`` is None, before ``PATH``):

- Requests: ``POST /v1/messages?beta=true`` with ``"stream": true``, ``x-api-key`` from
  ``ANTHROPIC_API_KEY`` and ``user-agent: claude-cli/<version> (external, <entrypoint>, agent-sdk/…)``
  (the entrypoint is ``CLAUDE_CODE_ENTRYPOINT``, e.g. ``kodiai-github-app``). The body has ``tools``
  (built-ins plus ``ToolSearch``/``DeferredToolPlaceholder``: SDK MCP tools are *deferred*, not listed,
  yet ``mcp__<server>__<tool>`` calls work at once), ``thinking``, ``context_management``, and
  ``messages`` that include a ``role: "system"`` environment message. ``turn`` counts assistant
  messages, so a retry keeps its turn.
- Side requests: none at all with ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (no bash
  command-prefix detection either: ``Bash(git diff:*)`` rules are matched locally; a compound
  ``git diff && rm`` or ``git push`` is denied in ``dontAsk`` mode with a ``permission_denied`` system
  message). Without that variable: ``HEAD /api/hello`` (answered 200) and, for prompts worth a title
  ("Say hello" gets none), a concurrent title request on ``claude-haiku-*`` with no tools and
  ``output_config.format`` = JSON schema ``{title}`` (answered with JSON matching the schema).
  ``/v1/messages/count_tokens`` was never called but is answered.
- Errors: ``Fail(500)`` with ``CLAUDE_CODE_MAX_RETRIES=0`` yields an ``AssistantMessage`` with
  ``model="<synthetic>"``, ``error="server_error"``, then a ``ResultMessage`` with
  ``subtype="success"`` **and** ``is_error=True`` (text ``API Error: 500 <message>…``), then the CLI exits
  1 and ``query()`` raises ``claude_agent_sdk.ResultError`` — after the result was yielded. Code that
  reads only ``subtype`` sees such a run as a success. Without ``CLAUDE_CODE_MAX_RETRIES`` the CLI
  retries (``SystemMessage(subtype="api_retry")``, ``max_retries`` 10, first delay about 0.5 s,
  ``x-stainless-retry-count`` stays 0: the CLI retries, not the HTTP client).
- ``Truncated``: with retries allowed the CLI retries streaming (``api_retry`` with ``error: unknown``);
  with ``CLAUDE_CODE_MAX_RETRIES=0`` it repeats the request at once with ``"stream": false`` and the
  fake answers plain JSON. Either way the partial text is dropped and the run succeeds.
- ``Hang``: ``API_TIMEOUT_MS=1500`` + ``CLAUDE_CODE_MAX_RETRIES=0`` ends the run as an error result
  ("Request timed out…") and ``ResultError``; the fake records status 499 once the CLI hangs up.
- Cost: about 0.6–0.7 s from ``query()`` to the ``init`` message and 0.7–0.9 s for a whole one-turn
  session on this 2-core machine; 1.2–1.5 s with an SDK MCP server and a few tool turns.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from support.loopback import LoopbackServer

FAKE_API_KEY = "sk-ant-api03-fake-" + "0" * 40
DEFAULT_MODEL = "claude-sonnet-4-5"

# ----------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Usage:
    """Token counts reported with every answer (the CLI turns them into ``total_cost_usd``)."""

    input_tokens: int = 120
    output_tokens: int = 30
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass(frozen=True)
class Text:
    """An assistant message with one text block; ends the agent loop (``stop_reason: end_turn``)."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """One tool call. Return it alone, or several in a :class:`ToolUses` for one assistant message."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None  # generated (``toolu_…``) when None


@dataclass(frozen=True)
class ToolUses:
    """Several tool calls (optionally after a text block) in one assistant message."""

    calls: tuple[ToolUse, ...]
    text: str | None = None

    def __init__(self, *calls: ToolUse, text: str | None = None) -> None:
        object.__setattr__(self, "calls", tuple(calls))
        object.__setattr__(self, "text", text)


@dataclass(frozen=True)
class Fail:
    """An HTTP error with the API's error envelope (``body`` replaces the envelope when given)."""

    status: int
    body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    message: str = "Injected failure"


@dataclass(frozen=True)
class Hang:
    """Never answer (until the client disconnects or the fake stops): for timeout tests."""


@dataclass(frozen=True)
class Truncated:
    """A stream cut in the middle: ``message_start`` and part of a text block, then the body ends.

    By default the HTTP response ends cleanly (no ``message_stop``); ``abort=True`` drops the
    connection instead (uvicorn then logs the aborted response). The CLI treats both the same way.
    A non-streaming request (the CLI's fallback) gets the partial text with ``stop_reason: max_tokens``.
    """

    text: str = "This answer is cut o"
    abort: bool = False


Reply = Text | ToolUse | ToolUses | Fail | Hang | Truncated

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

# ----------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class ToolResult:
    """A ``tool_result`` block the CLI sent back, flattened to text."""

    tool_use_id: str
    text: str
    is_error: bool


@dataclass
class RecordedRequest:
    """Every HTTP request the fake received, classified."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    kind: Literal["main", "side", "count_tokens", "other"]
    status: int = 0


@dataclass
class MainRequest:
    """A main-conversation ``POST /v1/messages`` as the script sees it."""

    index: int  # 0-based position among main requests (retries included)
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def model(self) -> str:
        return str(self.body.get("model") or DEFAULT_MODEL)

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def turn(self) -> int:
        """Agent turn: the number of assistant messages so far (a retry keeps the same turn)."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def system_text(self) -> str:
        """The top-level system prompt, its text blocks joined."""
        return _text_of(self.body.get("system"))

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name")) for t in self.body.get("tools") or []]

    @property
    def user_text(self) -> str:
        """All text the user role sent (prompt, reminders), for asserting what the model was told."""
        return "\n".join(
            _text_of(m.get("content"), skip_tool_results=True)
            for m in self.messages
            if m.get("role") == "user"
        )

    @property
    def tool_results(self) -> list[ToolResult]:
        """The tool results in the last user message (what the previous turn's calls returned)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _tool_results(message)
        return []

    @property
    def all_tool_results(self) -> list[ToolResult]:
        return [r for m in self.messages if m.get("role") == "user" for r in _tool_results(m)]


Script = Callable[[MainRequest], Reply]


class ScriptedConversation:
    """Plays ``steps`` in order, one per main request; once they run out, answers ``final``."""

    def __init__(self, steps: Iterable[Reply], final: Reply | None = None) -> None:
        self.steps = list(steps)
        self.final = final if final is not None else Text("Done.")
        self.seen: list[MainRequest] = []
        self._lock = threading.Lock()

    def __call__(self, request: MainRequest) -> Reply:
        with self._lock:
            position = len(self.seen)
            self.seen.append(request)
        return self.steps[position] if position < len(self.steps) else self.final


def _text_of(content: Any, *, skip_tool_results: bool = False) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result" and not skip_tool_results:
            parts.append(_text_of(block.get("content")))
    return "\n".join(parts)


def _tool_results(message: dict[str, Any]) -> list[ToolResult]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        ToolResult(str(b.get("tool_use_id")), _text_of(b.get("content")), bool(b.get("is_error")))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


# ----------------------------------------------------------------------------- classification


def is_main_request(body: dict[str, Any]) -> bool:
    """Main turns offer tools; the CLI's helpers (title generation, …) offer none.

    A tool-less request is still main unless it asks for structured output or uses a haiku model,
    which is how the CLI's side requests look (``FakeAnthropic(classify=...)`` overrides this).
    """
    if body.get("tools"):
        return True
    if (body.get("output_config") or {}).get("format"):
        return False
    return "haiku" not in str(body.get("model", ""))


def side_reply(body: dict[str, Any]) -> Reply:
    """A plausible answer to a side request: JSON matching its schema when it asks for one."""
    output_format = (body.get("output_config") or {}).get("format") or {}
    if output_format.get("type") == "json_schema":
        return Text(json.dumps(example_for_schema(output_format.get("schema") or {})))
    return Text("Fake side answer")


def example_for_schema(schema: dict[str, Any]) -> Any:
    """A minimal value satisfying a simple JSON schema (objects, arrays, strings, numbers, enums)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: example_for_schema(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "Fake title"


# ----------------------------------------------------------------------------- the server


class FakeAnthropic:
    """``with FakeAnthropic() as fake: fake.script = ScriptedConversation([...]); run the CLI with fake.env()``."""

    def __init__(
        self,
        *,
        script: Script | None = None,
        usage: Usage | None = None,
        classify: Callable[[dict[str, Any]], bool] = is_main_request,
        delay: Callable[[MainRequest], float] | None = None,
    ) -> None:
        self.script: Script = script or (lambda _request: Text("OK"))
        # Seconds to wait before answering a main request (a model's think time: the cluster test and the
        # throughput benchmark), awaited on the event loop, so many slow answers can be in flight at once.
        self.delay = delay
        self.classify = classify
        self.usage = usage or Usage()
        self.requests: list[RecordedRequest] = []
        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)
        self._main_count = 0
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self.hanging = 0
        self.app = Starlette(
            routes=[
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/{path:path}", self._other, methods=["GET", "POST", "PUT", "DELETE", "HEAD"]),
            ]
        )
        self._server: LoopbackServer | None = None

    # ------------------------------------------------------------------- lifecycle
    @property
    def url(self) -> str:
        assert self._server is not None, "FakeAnthropic is not started"
        return self._server.url

    def start(self) -> FakeAnthropic:
        self._stopping.clear()
        self._server = LoopbackServer(self.app, lifespan="off", name="fake Anthropic API").start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # hung handlers return, so uvicorn can shut down
        if self._server is not None:
            self._server.stop(timeout=10)
        self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self, home: str, **extra: str) -> dict[str, str]:
        """The CLI environment that points it at this fake (pass as ``ClaudeAgentOptions.env``)."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "HOME": home,
            **extra,
        }

    # ------------------------------------------------------------------- inspection
    @property
    def main_requests(self) -> list[MainRequest]:
        with self.lock:
            records = [r for r in self.requests if r.kind == "main"]
        return [MainRequest(i, r.body, r.headers) for i, r in enumerate(records)]

    @property
    def side_requests(self) -> list[RecordedRequest]:
        with self.lock:
            return [r for r in self.requests if r.kind != "main"]

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
        """Block until ``predicate()`` holds; re-checked whenever a request arrives or a hang changes."""
        with self._changed:
            if not self._changed.wait_for(predicate, timeout=timeout):
                raise TimeoutError(f"condition not met after {timeout}s")

    def wait_for_main_requests(self, count: int, timeout: float = 30.0) -> list[MainRequest]:
        """Block until ``count`` main requests arrived (e.g. a :class:`Hang` is in flight)."""
        self.wait_until(lambda: self._main_count >= count, timeout)
        return self.main_requests

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self._main_count = 0

    # ------------------------------------------------------------------- routes
    async def _record(self, request: Request, kind: str) -> tuple[RecordedRequest, Any]:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        record = RecordedRequest(
            method=request.method,
            path=request.url.path,
            query=request.url.query,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            kind=kind,  # type: ignore[arg-type]
        )
        with self._changed:
            self.requests.append(record)
            self._changed.notify_all()
        return record, body

    async def _count_tokens(self, request: Request) -> Response:
        record, body = await self._record(request, "count_tokens")
        record.status = 200
        return JSONResponse({"input_tokens": _estimate_tokens(body)})

    async def _other(self, request: Request) -> Response:
        record, _ = await self._record(request, "other")
        if request.url.path == "/api/hello":  # the CLI's connectivity probe (HEAD), when not disabled
            record.status = 200
            return Response(status_code=200)
        record.status = 404
        return _error(404, f"Not found: {request.url.path}")

    async def _messages(self, request: Request) -> Response:
        record, body = await self._record(request, "side")
        if not isinstance(body, dict):
            record.status = 400
            return _error(400, "Body must be a JSON object")
        if self.classify(body):
            with self._changed:
                record.kind = "main"
                index = self._main_count
                self._main_count += 1
                self._changed.notify_all()
            main = MainRequest(index, body, record.headers)
            if self.delay is not None:
                await asyncio.sleep(self.delay(main))
            try:
                # In a worker thread: a script may block (e.g. wait for a test's event) without
                # stalling the fake's event loop, which keeps serving the CLI's other requests.
                reply = await asyncio.to_thread(self.script, main)
            except Exception as exc:  # a broken script must fail the test loudly, not hang the CLI
                record.status = 500
                return _error(500, f"fake script raised {type(exc).__name__}: {exc}")
        else:
            reply = side_reply(body)
        return await self._answer(request, record, body, reply)

    async def _answer(
        self, request: Request, record: RecordedRequest, body: dict[str, Any], reply: Reply
    ) -> Response:
        model = str(body.get("model") or DEFAULT_MODEL)
        if isinstance(reply, Fail):
            record.status = reply.status
            payload = reply.body or {
                "type": "error",
                "error": {"type": _ERROR_TYPES.get(reply.status, "api_error"), "message": reply.message},
            }
            headers = {"request-id": "req_fake_" + secrets.token_hex(6), **(reply.headers or {})}
            return JSONResponse(payload, status_code=reply.status, headers=headers)
        if isinstance(reply, Hang):
            with self._changed:
                self.hanging += 1
                self._changed.notify_all()
            try:
                while not self._stopping.is_set() and not await request.is_disconnected():
                    await asyncio.sleep(0.05)
            finally:
                with self._changed:
                    # 499 (nginx's "client closed request") when the CLI gave up; 529 if the fake stopped.
                    record.status = 529 if self._stopping.is_set() else 499
                    self.hanging -= 1
                    self._changed.notify_all()
            return _error(record.status, "The fake stopped while hanging")
        record.status = 200
        message = self._message(model, reply)
        if not body.get("stream"):
            if isinstance(reply, Truncated):
                message["content"] = [{"type": "text", "text": reply.text}]
                message["stop_reason"] = "max_tokens"
            return JSONResponse(message, headers={"request-id": "req_fake_" + secrets.token_hex(6)})
        return StreamingResponse(
            self._events(message, truncated=reply if isinstance(reply, Truncated) else None),
            media_type="text/event-stream",
            headers={"request-id": "req_fake_" + secrets.token_hex(6), "cache-control": "no-cache"},
        )

    def _message(self, model: str, reply: Reply) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        stop_reason = "end_turn"
        if isinstance(reply, Text | Truncated):
            content.append({"type": "text", "text": reply.text})
        else:
            calls = (reply,) if isinstance(reply, ToolUse) else reply.calls  # type: ignore[union-attr]
            if isinstance(reply, ToolUses) and reply.text:
                content.append({"type": "text", "text": reply.text})
            for call in calls:
                call_id = call.id or f"toolu_fake{next(self._ids):04d}{secrets.token_hex(6)}"
                content.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.input})
            stop_reason = "tool_use"
        return {
            "id": f"msg_fake{next(self._ids):04d}{secrets.token_hex(6)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": self.usage.as_dict(),
        }

    async def _events(self, message: dict[str, Any], *, truncated: Truncated | None) -> AsyncIterator[bytes]:
        usage = message["usage"]
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        yield _sse("message_start", {"type": "message_start", "message": start})
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                yield _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
                text = block["text"]
                for piece in _halves(text):
                    delta = {"type": "text_delta", "text": piece}
                    yield _sse(
                        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
                    )
                    if truncated is not None:
                        if truncated.abort:
                            raise _Truncate(truncated.text)
                        return
            else:
                opening = {**block, "input": {}}
                yield _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opening},
                )
                for piece in _halves(json.dumps(block["input"])):
                    delta = {"type": "input_json_delta", "partial_json": piece}
                    yield _sse(
                        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
                    )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})


class _Truncate(Exception):
    """Raised inside the SSE generator: uvicorn then aborts the connection mid-body."""


def _estimate_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4) if body is not None else 1


def _halves(text: str) -> Sequence[str]:
    """Two deltas (or one when short): enough to exercise the CLI's delta accumulation."""
    if len(text) < 2:
        return [text]
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _error(status: int, message: str) -> JSONResponse:
    envelope = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}
    return JSONResponse(envelope, status_code=status)
