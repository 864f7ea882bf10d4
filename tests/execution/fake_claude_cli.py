"""A stand-in for the ``claude`` CLI speaking stream-json on stdin/stdout (used via ``cli_path``).

It records its argv, working directory, pid and selected environment variables to ``$FAKE_CLI_RECORD``,
answers ``initialize``, and after the prompt either emits ``system/init`` + a ``result`` (mode
``result``) or emits ``system/init`` and then sleeps, ignoring stdin EOF (mode ``hang``) — a CLI that
only stops when it is terminated. Once hanging it creates ``$FAKE_CLI_RECORD.hanging``.
"""

from __future__ import annotations

import json
import os
import sys
import time

WATCHED = (
    "CLAUDE_CODE_ENTRYPOINT",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "GITHUB_PRIVATE_KEY",
    "GITHUB_WEBHOOK_SECRET",
    "VOYAGE_API_KEY",
    "METRICS_TOKEN",
    "PATH",
    "HOME",
)


def out(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


_ids = iter(range(1, 10_000))


def request(server: str, message: dict[str, object]) -> dict[str, object]:
    """Send one ``mcp_message`` control request and read stdin until its control response arrives."""
    request_id = f"cli_{next(_ids)}"
    out(
        {
            "type": "control_request",
            "request_id": request_id,
            "request": {"subtype": "mcp_message", "server_name": server, "message": message},
        }
    )
    for line in sys.stdin:
        reply = json.loads(line)
        if reply.get("type") == "control_response" and reply["response"].get("request_id") == request_id:
            return reply["response"]
    raise SystemExit("stdin closed while waiting for a control response")


def call_tool(server: str, tool: str, arguments: dict[str, object]) -> None:
    """The CLI's side of one MCP tool call: handshake, tools/list, tools/call."""
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "fake", "version": "0"},
    }
    request(server, {"jsonrpc": "2.0", "id": next(_ids), "method": "initialize", "params": init})
    request(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    request(
        server,
        {
            "jsonrpc": "2.0",
            "id": next(_ids),
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
    )


def main() -> None:
    mode = os.environ.get("FAKE_CLI_MODE", "result")
    with open(os.environ["FAKE_CLI_RECORD"], "w", encoding="utf-8") as fh:
        json.dump(
            {
                "argv": sys.argv[1:],
                "cwd": os.getcwd(),
                "pid": os.getpid(),
                "env": {k: os.environ.get(k) for k in WATCHED},
            },
            fh,
        )
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") == "control_request" and message["request"].get("subtype") == "initialize":
            out(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": message["request_id"], "response": {}},
                }
            )
        elif message.get("type") == "user":
            out(
                {
                    "type": "system",
                    "subtype": "init",
                    "session_id": "cli-session",
                    "claude_code_version": "2.1.200",
                }
            )
            if mode == "hang":
                open(os.environ["FAKE_CLI_RECORD"] + ".hanging", "w").close()
                while True:
                    time.sleep(1)
            if mode == "tool":
                server, tool, arguments = json.loads(os.environ["FAKE_CLI_TOOL"])
                call_tool(server, tool, arguments)
            out(
                {
                    "type": "result",
                    "subtype": "success",
                    "duration_ms": 10,
                    "duration_api_ms": 5,
                    "is_error": False,
                    "num_turns": 1,
                    "session_id": "cli-session",
                    "total_cost_usd": 0.001,
                    "modelUsage": {
                        "claude-sonnet-4-5-20250929": {
                            "inputTokens": 1,
                            "outputTokens": 2,
                            "cacheReadInputTokens": 0,
                            "cacheCreationInputTokens": 0,
                        }
                    },
                }
            )


if __name__ == "__main__":
    main()
