"""docs/troubleshooting.md, "The bot posts an error comment": the model's failures, each reproduced by a real
review (the handler over the fake GitHub) whose real Claude Code CLI calls the fake Anthropic API, which
answers ``401`` or ``429``, or an endpoint that refuses connections, or no credentials at all.

The CLI runs are the cost here (about a second each), so one module fixture runs the four reviews once,
``CLAUDE_CODE_MAX_RETRIES=0`` (the CLI would otherwise retry a 429 for minutes); each test then checks its
page entry against its PR's comments and log lines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import structlog
import structlog.testing
from pydantic import SecretStr

from kodiai.execution.executor import ClaudeAgentExecutor
from kodiai.execution.options import ModelCredentials
from kodiai.execution.types import ExecutionContext, ExecutionResult
from kodiai.server.composition import log_model_credentials_status
from support.fake_anthropic import FAKE_API_KEY, Fail, FakeAnthropic, MainRequest, Reply, Text
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.review_harness import ReviewHarness
from support.troubleshooting_page import Entry, look_for

pytestmark = pytest.mark.slow

#: PR number → what the model endpoint does for that PR's review.
BAD_KEY, RATE_LIMITED, REFUSED, NO_CREDENTIALS = 101, 102, 103, 104
ALL = (BAD_KEY, RATE_LIMITED, REFUSED, NO_CREDENTIALS)
ANSWERS = {BAD_KEY: 401, RATE_LIMITED: 429}
CLOSED_PORT = "http://127.0.0.1:9"  # discard: nothing listens there


@dataclass
class Outcome:
    comments: dict[int, list[str]]
    logs: dict[int, list[dict[str, Any]]]


class ByPullRequest:
    """The :class:`~kodiai.execution.executor.Executor` of each PR's review (its endpoint or credentials)."""

    def __init__(self, executors: dict[int, ClaudeAgentExecutor], default: ClaudeAgentExecutor) -> None:
        self.executors = executors
        self.default = default

    async def execute(self, context: ExecutionContext) -> ExecutionResult:
        return await self.executors.get(context.pr_number or 0, self.default).execute(context)


def answer(request: MainRequest) -> Reply:
    """The failure for the PR whose title is in the prompt."""
    for number, status in ANSWERS.items():
        if f"Model check {number}" in request.user_text:
            return Fail(status, message=f"injected {status}")
    return Text("No findings.")


@pytest.fixture(scope="module")
def outcome(
    fake_server: tuple[FakeGitHub, PrState], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Outcome]:
    fake, state = fake_server
    with pytest.MonkeyPatch.context() as env, FakeAnthropic(script=answer) as model:
        env.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
        env.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        h = ReviewHarness(tmp_path_factory.mktemp("model"), fake, state, memory=False)

        def executor(url: str, key: str | None) -> ClaudeAgentExecutor:
            credentials = ModelCredentials(
                anthropic_api_key=SecretStr(key) if key else None,
                endpoint={"ANTHROPIC_BASE_URL": SecretStr(url)},
            )
            return ClaudeAgentExecutor(
                installation_client=h.github.installation_client, credentials=credentials
            )

        h.executor.inner = ByPullRequest(  # type: ignore[assignment]
            {REFUSED: executor(CLOSED_PORT, FAKE_API_KEY), NO_CREDENTIALS: executor(model.url, None)},
            default=executor(model.url, FAKE_API_KEY),
        )
        try:
            for number in ALL:
                base = {"README.md": f"# repo {number}\n", "src/index.ts": "export const a = 1;\n"}
                pull = h.open_pr(
                    number, title=f"Model check {number}", branch=f"check-{number}", base_files=base
                )
                asyncio.run(h.deliver(pull))
            yield Outcome(
                comments={n: [c["body"] for c in h.issue_comments(n)] for n in ALL},
                logs={n: [e for e in h.logs if n in (e.get("pr_number"), e.get("prNumber"))] for n in ALL},
            )
        finally:
            h.close()


def check(entry: Entry, outcome: Outcome, number: int) -> None:
    entry.check(logs=outcome.logs[number], comments=outcome.comments[number])
    assert outcome.comments[number] and len(outcome.comments[number]) == 1, outcome.comments[number]


def test_bad_key(outcome: Outcome) -> None:
    check(look_for("bad-or-revoked-model-key-api-error-401"), outcome, BAD_KEY)


def test_rate_limited(outcome: Outcome) -> None:
    check(look_for("rate-limit-or-quota-request-rejected-429"), outcome, RATE_LIMITED)


def test_endpoint_refuses_connections(outcome: Outcome) -> None:
    check(look_for("model-endpoint-unreachable-connection-refused"), outcome, REFUSED)


def test_no_credentials(outcome: Outcome) -> None:
    """The review's comment, and the start-up warning for the same credentials (no key, a base URL)."""
    none = ModelCredentials(endpoint={"ANTHROPIC_BASE_URL": SecretStr("http://127.0.0.1:9")})
    with structlog.testing.capture_logs() as startup:
        log_model_credentials_status(none)
        log_model_credentials_status(ModelCredentials(anthropic_api_key=SecretStr(FAKE_API_KEY)))
    assert len(startup) == 1, startup  # a configured key warns nothing
    look_for("no-model-credentials-not-logged-in").check(
        logs=[*outcome.logs[NO_CREDENTIALS], *startup], comments=outcome.comments[NO_CREDENTIALS]
    )
