"""A stand-in for the ``claude`` CLI speaking stream-json on stdin/stdout (used via ``cli_path``).

It records its argv, working directory, pid and selected environment variables to ``$FAKE_CLI_RECORD``,
answers ``initialize``, and after the prompt either emits ``system/init`` + a ``result`` (mode
``result``) or emits ``system/init`` and then sleeps, ignoring stdin EOF (mode ``hang``) — a CLI that
only stops when it is terminated.
"""

from __future__ import annotations

import json
import os
import sys
import time

WATCHED = ("CLAUDE_CODE_ENTRYPOINT", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "GITHUB_PRIVATE_KEY")


def out(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


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
                while True:
                    time.sleep(1)
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
