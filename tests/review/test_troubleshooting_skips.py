"""docs/troubleshooting.md, "The bot says nothing": every skip reason of the review and mention handlers,
reproduced over the fake GitHub with the real handlers, and the line the page quotes asserted at a level
an operator sees with the default ``LOG_LEVEL=info`` (the page's entries are read by
:func:`support.troubleshooting_page.look_for`; the model is the scripted CLI stream, never reached here
except where a skip comes after a run).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from kodiai.execution.output_key import build_review_output_key, build_review_output_marker
from kodiai.handler_kit.deps import OperatorCaps
from kodiai.mention.state import MentionState
from kodiai.server.handlers import register_builtin_handlers
from kodiai.server.setup_mode import EVENTS
from kodiai.storage.telemetry import SpendEntry
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.router import EventRouter
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.mention_harness import MentionHarness
from support.review_harness import INSTALLATION, OWNER, REPO, ReviewHarness
from support.troubleshooting_page import PAGE, look_for

REVIEW = "the-review-was-skipped/"
MENTION = "the-mention-was-not-answered/"


@pytest.fixture
def mh(tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]) -> Iterator[MentionHarness]:
    """The mention handler on the module's fake GitHub, emptied for this test, with
    ``BOT_ALLOW_LIST=renovate`` (the bot filter would drop other bots' comments first) and no learned
    memory (no gate reads it)."""
    fake, state = fake_server
    with fake.lock:
        for key, value in fake.data.items():
            if isinstance(value, (list, dict, set)) and not key.startswith("_"):
                value.clear()
    fake.reset_calls()
    h = MentionHarness(tmp_path, fake, state, bot_allow_list=["renovate"], memory=False)
    yield h
    h.close()


def comments(h: ReviewHarness, number: int = 101) -> list[str]:
    return [c["body"] for c in h.issue_comments(number)]


# ---------------------------------------------------------------------- review, before the job


async def test_draft(harness: ReviewHarness) -> None:
    await harness.deliver(harness.open_pr(draft=True))
    look_for(REVIEW + "draft").check(logs=harness.logs)
    assert harness.executor.contexts == []


async def test_non_kodiai_reviewer(harness: ReviewHarness) -> None:
    await harness.deliver(harness.open_pr(), "review_requested", requested_reviewer={"login": "bob"})
    look_for(REVIEW + "non-kodiai-reviewer").check(logs=harness.logs)


async def test_team_only_request(harness: ReviewHarness) -> None:
    team = {"name": "Backend", "slug": "backend"}
    await harness.deliver(harness.open_pr(), "review_requested", requested_team=team)
    look_for(REVIEW + "team-only-request").check(logs=harness.logs)


async def test_missing_reviewer(harness: ReviewHarness) -> None:
    await harness.deliver(harness.open_pr(), "review_requested")
    look_for(REVIEW + "missing-or-malformed-reviewer-payload").check(logs=harness.logs)


async def test_malformed_pull_request_payload(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    del pull["head"]
    await harness.deliver(pull)
    look_for(REVIEW + "malformed-payload").check(logs=harness.logs)


# ---------------------------------------------------------------------- review, in the job


async def test_duplicate(harness: ReviewHarness) -> None:
    pull = harness.open_pr()
    await harness.deliver(pull)  # reviewed (the scripted model publishes nothing: approved)
    await harness.deliver(pull, "ready_for_review")  # same base and head, another delivery
    look_for(REVIEW + "duplicate").check(logs=harness.logs)
    assert len(harness.executor.contexts) == 1


async def test_review_disabled(harness: ReviewHarness) -> None:
    await harness.deliver(harness.open_pr(config="review:\n  enabled: false\n"))
    look_for(REVIEW + "review-disabled").check(logs=harness.logs)
    assert harness.executor.contexts == []


async def test_trigger_disabled(harness: ReviewHarness) -> None:
    """A push (``synchronize``) with the default triggers."""
    await harness.deliver(harness.open_pr(), "synchronize")
    look_for(REVIEW + "trigger-disabled").check(logs=harness.logs)
    assert harness.executor.contexts == []


async def test_keyword_skip(harness: ReviewHarness) -> None:
    await harness.deliver(harness.open_pr(title="[no-review] WIP"))
    look_for(REVIEW + "keyword-skip").check(logs=harness.logs, comments=comments(harness))


async def test_already_published(harness: ReviewHarness) -> None:
    """This delivery's output marker is on the PR already (a delivery run again after a restart)."""
    pull = harness.open_pr()
    key = build_review_output_key(
        installation_id=INSTALLATION,
        owner=OWNER,
        repo=REPO,
        pr_number=101,
        action="opened",
        delivery_id="again-1",
        head_sha=pull["head"]["sha"],
    )
    harness.state.add_issue_comment(OWNER, REPO, 101, f"Summary\n\n{build_review_output_marker(key)}")
    await harness.deliver(pull, delivery="again-1")
    look_for(REVIEW + "already-published").check(logs=harness.logs)
    assert harness.executor.contexts == []


async def test_skip_author(harness: ReviewHarness) -> None:
    await harness.deliver(harness.open_pr(config="review:\n  skipAuthors: [alice]\n"))
    look_for(REVIEW + "skip-author").check(logs=harness.logs)


async def test_skip_paths(harness: ReviewHarness) -> None:
    await harness.deliver(harness.open_pr(config="review:\n  skipPaths: ['src/**']\n"))
    look_for(REVIEW + "skip-paths").check(logs=harness.logs)
    assert harness.executor.contexts == []


async def test_spend_cap(
    harness: ReviewHarness, tmp_path: Path, fake_server: tuple[FakeGitHub, PrState]
) -> None:
    fake, state = fake_server
    capped = ReviewHarness(tmp_path / "capped", fake, state, spend_caps=OperatorCaps(1.0))
    try:
        assert capped.telemetry is not None
        capped.telemetry.record_spend(  # earlier today, another PR of the installation
            SpendEntry(
                created_at=capped.deps.clock() - timedelta(seconds=1),
                installation_id=INSTALLATION,
                repo=f"{OWNER}/{REPO}",
                number=1,
                kind="review",
                outcome="run",
                cost_usd=1.5,
            )
        )
        await capped.deliver(capped.open_pr())
        look_for(REVIEW + "spend-cap").check(logs=capped.logs, comments=comments(capped))
        assert capped.executor.contexts == []
    finally:
        capped.close()


# ---------------------------------------------------------------------- mentions, before the job


async def test_no_mention(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("Looks good to me")
    look_for(MENTION + "no-mention").check(logs=mh.logs)


async def test_empty_review_body(mh: MentionHarness) -> None:
    pull = mh.open_pr()
    review = {"id": 77, "body": None, "user": {"login": "alice", "type": "User"}, "state": "approved"}
    payload = {**mh.payload(pull, "submitted"), "review": review}
    await mh.deliver_event("pull_request_review", payload)
    look_for(MENTION + "empty-review-body").check(logs=mh.logs)


async def test_self_or_bot_author(mh: MentionHarness) -> None:
    """An allow-listed bot passes the bot filter, and its mention is still not answered."""
    mh.open_pr()
    await mh.mention("@kodiai please look", author="renovate[bot]")
    look_for(MENTION + "self-or-bot-author").check(logs=mh.logs)


async def test_malformed_mention_payload(mh: MentionHarness) -> None:
    payload = mh.issue_comment_payload("@kodiai what does this do?")
    del payload["issue"]["number"]
    await mh.deliver_event("issue_comment", payload)
    look_for(MENTION + "malformed-payload").check(logs=mh.logs)


# ---------------------------------------------------------------------- mentions, config gates in the job


async def test_mentions_disabled(mh: MentionHarness) -> None:
    mh.open_pr(config="mention:\n  enabled: false\n")
    await mh.mention("@kodiai what does this do?")
    look_for(MENTION + "mentions-disabled").check(logs=mh.logs)
    assert mh.executor.contexts == [] and mh.comment_reactions() == []


async def test_user_not_allowlisted(mh: MentionHarness) -> None:
    mh.open_pr(config="mention:\n  allowedUsers: [bob]\n")
    await mh.mention("@kodiai what does this do?")
    look_for(MENTION + "user-not-allowlisted").check(logs=mh.logs)


async def test_handle_not_accepted(mh: MentionHarness) -> None:
    mh.open_pr(config="mention:\n  acceptClaudeAlias: false\n")
    await mh.mention("@claude what does this do?")
    look_for(MENTION + "handle-not-accepted").check(logs=mh.logs)


async def test_empty_question(mh: MentionHarness) -> None:
    mh.open_pr()
    await mh.mention("@kodiai")
    look_for(MENTION + "empty-question").check(logs=mh.logs)


# ---------------------------------------------------------------------- the event table


def test_event_table_matches_the_app_registration_and_the_handlers(
    harness: ReviewHarness, tmp_path: Path
) -> None:
    """The page's table of events (what to subscribe to, which actions are acted on) is the App manifest's
    event list and the keys the built-in handlers register, as ``kodiai serve`` registers them."""
    router = EventRouter(BotFilter("kodiai"))
    state = MentionState.open(tmp_path / "jobs.db")
    try:
        register_builtin_handlers(router, harness.deps, state)
    finally:
        state.close()
    acted: dict[str, set[str]] = {}
    for key in router.keys():  # noqa: SIM118 (EventRouter is not a mapping)
        event, _, action = key.partition(".")
        acted.setdefault(event, set()).add(action)
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("| event (App subscription) |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    page: dict[str, set[str]] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        page[cells[0].strip("`")] = set(re.findall(r"`([a-z_]+)`", cells[1]))
    assert set(page) == set(EVENTS), "the table lists the events the App registration subscribes to"
    assert {e: a for e, a in page.items() if a} == acted, "and the actions the handlers act on"
