"""Pure pieces of the webhook pipeline: signature, bot filter, event derivation, router, payload models."""

from __future__ import annotations

import asyncio
import hashlib
import hmac

import pytest

from kodiai.webhook.bot_filter import BotFilter, normalize_login
from kodiai.webhook.events import build_event, repository_name
from kodiai.webhook.payloads import PullRequestEvent, parse_payload
from kodiai.webhook.router import EventRouter
from kodiai.webhook.signature import sign, verify_signature
from support.live_server import fixture_payloads, payload_json

SECRET = "s3cret"
BODY = b'{"a":1}'


def test_3_1_03_signature_accepts_exact_lowercase_sha256() -> None:
    """P3.1 #3: sha256= + lower-case hex HMAC over the exact bytes."""
    digest = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, BODY) == "sha256=" + digest
    assert verify_signature(SECRET, BODY, "sha256=" + digest)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256=" + hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest().upper(),
        hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest(),
        "sha1=" + hmac.new(SECRET.encode(), BODY, hashlib.sha1).hexdigest(),
        "sha256=" + hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()[:-1],
        "sha256=é",
    ],
)
def test_3_1_03_signature_rejects_variants(header: str | None) -> None:
    """P3.1 #3: missing, upper-case, bare digest, sha1, short, non-ASCII → false."""
    assert not verify_signature(SECRET, BODY, header)


def test_3_1_03_empty_body_fails_even_with_its_signature() -> None:
    assert not verify_signature(SECRET, b"", sign(SECRET, b""))


@pytest.mark.parametrize(
    ("sender", "expected"),
    [
        ({"login": "kodiai[bot]", "type": "Bot"}, False),
        ({"login": "KODIAI", "type": "User"}, False),
        ({"login": "octocat", "type": "User"}, True),
        ({"login": "renovate[bot]", "type": "Bot"}, True),
        ({"login": "Renovate", "type": "Organization"}, True),
        ({"login": "dependabot[bot]", "type": "Bot"}, False),
        ({"login": "ghost", "type": "Mannequin"}, False),
        ({"login": "octocat", "type": "user"}, False),  # type must be exactly "User"
    ],
)
def test_3_3_bot_filter(sender: dict[str, str], expected: bool) -> None:
    """P3.3 bot filter, in order: self → User → allow list."""
    assert BotFilter("kodiai", ["renovate"]).should_process(sender) is expected


def test_3_3_allow_list_entry_with_bot_suffix_never_matches() -> None:
    """P1.1 BOT_ALLOW_LIST quirk kept: `renovate[bot]` as an entry never matches."""
    assert not BotFilter("kodiai", ["renovate[bot]"]).should_process(
        {"login": "renovate[bot]", "type": "Bot"}
    )
    assert normalize_login("Foo[BOT]") == "foo"


def test_3_1_06_derived_fields() -> None:
    """P3.1 #6: installation id (else 0), repository full_name else owner/name."""
    assert build_event("d", "push", {"installation": {"id": 9}}).installation_id == 9
    assert build_event("d", "push", {"installation": {"id": "9"}}).installation_id == 0
    assert build_event("d", "push", {}).installation_id == 0
    assert repository_name({"repository": {"owner": {"login": "o"}, "name": "r"}}) == "o/r"
    assert (
        repository_name({"repository": {"full_name": "a/b", "owner": {"login": "o"}, "name": "r"}}) == "a/b"
    )


async def test_3_3_specific_handlers_before_general_in_registration_order() -> None:
    """P3.3 router #2–3: specific key handlers (registration order) then general key handlers."""
    router = EventRouter(BotFilter("kodiai"))
    order: list[str] = []
    started = asyncio.Event()

    def make(name: str):  # type: ignore[no-untyped-def]
        async def handler(_event) -> None:  # type: ignore[no-untyped-def]
            order.append(name)
            started.set()

        return handler

    router.register("issues", make("general"), name="general")
    router.register("issues.opened", make("a"), name="a")
    router.register("issues.opened", make("b"), name="b")
    outcome = await router.dispatch(build_event("d", "issues", {"action": "opened"}))
    assert order == ["a", "b", "general"]
    assert outcome.matched == 3 and outcome.succeeded == 3
    assert [r.name for r in router.handlers_for(build_event("d", "issues", {}))] == ["general"]


async def test_3_3_handlers_run_concurrently() -> None:
    """P3.3 router #6: all handlers start before any finishes."""
    router = EventRouter(BotFilter("kodiai"))
    both = asyncio.Barrier(2)

    async def h(_event) -> None:  # type: ignore[no-untyped-def]
        async with asyncio.timeout(2):
            await both.wait()

    router.register("x", h, name="one")
    router.register("x", h, name="two")
    outcome = await router.dispatch(build_event("d", "x", {}))
    assert outcome.succeeded == 2


async def test_3_3_skip_and_done_callback() -> None:
    """Journal replay support: skipped handlers do not run; finished ones are reported at once."""
    router = EventRouter(BotFilter("kodiai"))
    ran: list[str] = []
    done: list[str] = []

    async def h(event) -> None:  # type: ignore[no-untyped-def]
        ran.append("h")

    async def g(event) -> None:  # type: ignore[no-untyped-def]
        ran.append("g")

    router.register("x", h, name="h")
    router.register("x", g, name="g")
    outcome = await router.dispatch(build_event("d", "x", {}), skip={"h"}, on_handler_done=done.append)
    assert ran == ["g"] and done == ["g"] and outcome.skipped == 1


FIXTURES = fixture_payloads()


@pytest.mark.parametrize(("name", "event", "raw"), FIXTURES, ids=[f[0] for f in FIXTURES])
def test_payload_models_parse_every_fixture(name: str, event: str, raw: bytes) -> None:
    """Typed payload models accept every real payload and keep unknown fields."""
    payload = payload_json(raw)
    model = parse_payload(event, payload)
    if isinstance(model, PullRequestEvent):
        assert model.pull_request.number == payload["pull_request"]["number"]
        assert model.pull_request.head.ref == payload["pull_request"]["head"]["ref"]
    assert model.model_dump(exclude_unset=True).keys() >= {
        k for k in payload if k in type(model).model_fields
    }
    assert set(payload) <= set(model.model_dump())


def test_payload_model_rejects_missing_pull_request() -> None:
    with pytest.raises(ValueError):
        parse_payload("pull_request", {"action": "opened", "number": 1})
