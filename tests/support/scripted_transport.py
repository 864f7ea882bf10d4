"""A claude-agent-sdk ``Transport`` that replays a recorded Claude Code message stream.

It plays the CLI's side of the stream-json protocol against the *real* SDK client: it answers the
``initialize`` control request, reads the prompt, emits ``system/init``, assistant turns, and for every
:class:`ToolCall` drives the SDK's in-process MCP server through ``mcp_message`` control requests
(``initialize`` handshake, ``tools/list``, ``tools/call``) — exactly what the CLI does — records the tool
result and feeds it back as a ``tool_result`` user message, then emits the final ``result``. A
:class:`Hang` step blocks until the transport is closed, which is how timeouts are exercised.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from claude_agent_sdk import ProcessError, Transport

DEFAULT_MODEL = "claude-sonnet-4-5-20250929"


@dataclass
class AssistantText:
    text: str


@dataclass
class ToolCall:
    server: str
    tool: str
    arguments: dict[str, Any]


@dataclass
class Result:
    subtype: str = "success"
    is_error: bool = False
    num_turns: int = 3
    session_id: str = "session-1"
    total_cost_usd: float | None = 0.0123
    duration_ms: int = 4200
    stop_reason: str | None = "end_turn"
    model_usage: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            DEFAULT_MODEL: {
                "inputTokens": 100,
                "outputTokens": 50,
                "cacheReadInputTokens": 10,
                "cacheCreationInputTokens": 5,
                "webSearchRequests": 0,
                "costUSD": 0.0123,
                "contextWindow": 200000,
                "maxOutputTokens": 64000,
            }
        }
    )
    result: str = "done"


@dataclass
class Crash:
    """The CLI process exits non-zero (as it does after an error result): the read raises ProcessError."""

    exit_code: int = 1
    stderr: str = "Error: Claude Code exited"


@dataclass
class Hang:
    """Block until the SDK closes the transport (a CLI that never answers)."""


@dataclass
class ToolCallRecord:
    server: str
    tool: str
    arguments: dict[str, Any]
    response: dict[str, Any]

    @property
    def text(self) -> str:
        content = self.response.get("result", {}).get("content", [])
        return "".join(item.get("text", "") for item in content)

    @property
    def is_error(self) -> bool:
        return bool(self.response.get("result", {}).get("isError")) or "error" in self.response

    @property
    def json(self) -> Any:
        return json.loads(self.text)


Step = AssistantText | ToolCall | Result | Crash | Hang


class ScriptedTransport(Transport):
    """Replays ``steps``; inspect ``prompt``, ``tool_calls``, ``listed_tools``, ``closed`` afterwards."""

    def __init__(
        self, steps: list[Step], *, session_id: str = "session-1", model: str = DEFAULT_MODEL
    ) -> None:
        self.steps = steps
        self.session_id = session_id
        self.model = model
        self.prompt: str | None = None
        self.initialize_request: dict[str, Any] | None = None
        self.tool_calls: list[ToolCallRecord] = []
        self.listed_tools: dict[str, list[str]] = {}
        self.connected = False
        self.closed = False
        self.input_ended = False
        self.hanging = anyio.Event()
        # made on connect() and closed on close(): a transport the SDK never connects holds nothing open
        self._send: MemoryObjectSendStream[dict[str, Any]]
        self._incoming: MemoryObjectReceiveStream[dict[str, Any]]
        self._closed_event = anyio.Event()
        self._input_ended_event = anyio.Event()
        self._ids = itertools.count(1)
        self._handshaken: set[str] = set()

    # -------------------------------------------------------------- Transport API
    async def connect(self) -> None:
        self._send, self._incoming = anyio.create_memory_object_stream[dict[str, Any]](100)
        self.connected = True

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                await self._send.send(json.loads(line))

    async def end_input(self) -> None:
        self.input_ended = True
        self._input_ended_event.set()

    async def close(self) -> None:
        self.closed = True
        self._closed_event.set()
        if self.connected:
            self._send.close()
            self._incoming.close()

    def is_ready(self) -> bool:
        return self.connected and not self.closed

    def read_messages(self) -> Any:
        return self._play()

    # -------------------------------------------------------------- the CLI's side
    async def _next_incoming(self) -> dict[str, Any]:
        return await self._incoming.receive()

    async def _play(self) -> Any:
        request = await self._next_incoming()
        assert request.get("type") == "control_request", request
        self.initialize_request = request["request"]
        yield {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request["request_id"], "response": {}},
        }
        user = await self._next_incoming()
        assert user.get("type") == "user", user
        self.prompt = user["message"]["content"]
        yield {
            "type": "system",
            "subtype": "init",
            "session_id": self.session_id,
            "model": self.model,
            "claude_code_version": "2.1.200",
            "tools": [],
        }
        for step in self.steps:
            if isinstance(step, AssistantText):
                yield self._assistant([{"type": "text", "text": step.text}])
            elif isinstance(step, ToolCall):
                async for message in self._tool_call(step):
                    yield message
            elif isinstance(step, Result):
                yield self._result(step)
            elif isinstance(step, Crash):
                raise ProcessError("Command failed", exit_code=step.exit_code, stderr=step.stderr)
            elif isinstance(step, Hang):
                self.hanging.set()
                await self._closed_event.wait()
                return
        if any(isinstance(step, Result) for step in self.steps):
            # A CLI exits once the SDK closes its stdin after the result; without a result it just ends.
            with anyio.move_on_after(5):
                await self._input_ended_event.wait()

    async def _mcp(self, server: str, message: dict[str, Any]) -> Any:
        """Send one ``mcp_message`` control request; yield it, then wait for the SDK's answer."""
        request_id = f"cli_req_{next(self._ids)}"
        yield {
            "type": "control_request",
            "request_id": request_id,
            "request": {"subtype": "mcp_message", "server_name": server, "message": message},
        }
        while True:
            incoming = await self._next_incoming()
            if (
                incoming.get("type") == "control_response"
                and incoming["response"]["request_id"] == request_id
            ):
                self._last_response = incoming["response"]
                return

    async def _tool_call(self, step: ToolCall) -> Any:
        if step.server not in self._handshaken:
            async for m in self._mcp(
                step.server,
                {
                    "jsonrpc": "2.0",
                    "id": next(self._ids),
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "claude-code", "version": "2.1.200"},
                    },
                },
            ):
                yield m
            async for m in self._mcp(step.server, {"jsonrpc": "2.0", "method": "notifications/initialized"}):
                yield m
            async for m in self._mcp(
                step.server, {"jsonrpc": "2.0", "id": next(self._ids), "method": "tools/list"}
            ):
                yield m
            listed = self._last_response["response"]["mcp_response"]["result"]["tools"]
            self.listed_tools[step.server] = [t["name"] for t in listed]
            self._handshaken.add(step.server)
        tool_use_id = f"toolu_{next(self._ids)}"
        yield self._assistant(
            [
                {
                    "type": "tool_use",
                    "id": tool_use_id,
                    "name": f"mcp__{step.server}__{step.tool}",
                    "input": step.arguments,
                }
            ]
        )
        async for m in self._mcp(
            step.server,
            {
                "jsonrpc": "2.0",
                "id": next(self._ids),
                "method": "tools/call",
                "params": {"name": step.tool, "arguments": step.arguments},
            },
        ):
            yield m
        response = self._last_response
        mcp_response = (
            response.get("response", {}).get("mcp_response", {}) if response["subtype"] == "success" else {}
        )
        record = ToolCallRecord(step.server, step.tool, step.arguments, mcp_response)
        self.tool_calls.append(record)
        yield {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_use_id,
                        "content": record.text,
                        "is_error": record.is_error,
                    }
                ],
            },
            "parent_tool_use_id": None,
            "session_id": self.session_id,
        }

    def _assistant(self, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {"role": "assistant", "model": self.model, "content": content},
            "parent_tool_use_id": None,
            "session_id": self.session_id,
        }

    def _result(self, step: Result) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "result",
            "subtype": step.subtype,
            "duration_ms": step.duration_ms,
            "duration_api_ms": step.duration_ms,
            "is_error": step.is_error,
            "num_turns": step.num_turns,
            "session_id": step.session_id,
            "stop_reason": step.stop_reason,
            "total_cost_usd": step.total_cost_usd,
            "usage": {},
            "modelUsage": step.model_usage,
            "result": step.result,
        }
        return message
