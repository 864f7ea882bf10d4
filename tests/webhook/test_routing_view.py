"""The routing view (issue 5 hot path): the few fields routing needs, read without the whole payload.

It must agree with the full parse on every field routing and the logs read, and it may only answer for
a body the full parse accepts: anything else returns ``None`` so the ingress parses in full (and gives
its 400s). Checked on every real fixture, on hand-picked edge cases and on seeded random mutations.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from kodiai.webhook.body import parse_json
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.events import (
    WebhookEvent,
    build_event,
    build_lazy_event,
    installation_id,
    payload_action,
    repository_name,
    sender_login,
)
from kodiai.webhook.routing import routing_view
from support.live_server import fixture_payloads

FIXTURES = [(name, raw) for name, _, raw in fixture_payloads()]
FILTER = BotFilter("kodiai", ["dependabot"])


def routed(fields: dict[str, Any]) -> tuple[object, ...]:
    """Everything the ingress, the router and the log lines derive from the routing fields."""
    sender = fields.get("sender")
    decision = FILTER.decide(sender) if isinstance(sender, dict) else None
    return (
        payload_action(fields),
        fields.get("action"),
        installation_id(fields),
        sender_login(fields),
        repository_name(fields),
        decision,
    )


@pytest.mark.parametrize(("name", "raw"), FIXTURES, ids=[n for n, _ in FIXTURES])
def test_every_fixture_routes_as_the_full_parse(name: str, raw: bytes) -> None:
    view = routing_view(raw)
    assert view is not None, name
    assert routed(view) == routed(parse_json(raw))


@pytest.mark.parametrize(
    "body",
    [
        b'{"x":"\xff\xfe"}',  # invalid UTF-8 in a field the decoder skips
        b'{"action":"opened","x":NaN}',  # valid for json.loads, not strict JSON
        b'\xef\xbb\xbf{"action":"opened"}',  # UTF-8 BOM
        '{"action":"opened"}'.encode("utf-16"),
        b'{"x":"\\ud800"}',  # lone surrogate escape
        b"[1, 2]",  # not an object
        b'{"repository": 5}',  # a shape the view cannot type
        b'{"x":' + b"[" * 2000 + b"]" * 2000 + b"}",  # deeper than the decoder goes
        b'{"a":1,}',
        b"",
        b'{"a":1} trailing',
    ],
)
def test_bodies_the_view_cannot_vouch_for_go_to_the_full_parse(body: bytes) -> None:
    assert routing_view(body) is None


def test_duplicate_keys_and_hostile_types_agree_with_the_full_parse() -> None:
    for body in [
        b'{"action":"opened","action":"closed"}',
        b'{"action":{"x":1},"installation":{"id":"7"},"sender":["a"]}',
        b'{"installation":{"id":9223372036854775808},"sender":{"login":"Kodiai[bot]","type":"Bot"}}',
        b'{"installation":{"id":true},"repository":{"owner":{"login":"o"},"name":"n"}}',
        b'{"repository":null,"sender":null,"action":null}',
        b'{"action":"","sender":{"login":"dependabot[bot]","type":"Bot"}}',
    ]:
        view = routing_view(body)
        assert view is not None, body
        assert routed(view) == routed(parse_json(body)), body


def _mutate(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        pos = rng.randrange(len(data) + 1)
        if kind < 0.3 and data:
            del data[pos : pos + rng.randint(1, 40)]
        elif kind < 0.6:
            data[pos:pos] = bytes(
                rng.choice(b'{}[]",:0123456789eE+-.\\ntruefalsnul\xff\xc3\x80')
                for _ in range(rng.randint(1, 6))
            )
        elif data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
    return bytes(data)


def test_random_mutations_never_accept_what_the_full_parse_refuses() -> None:
    """Seeded: whenever the view answers, the full parse accepts the body, gives an object, and agrees."""
    seed = 20261122
    rng = random.Random(seed)
    answered = refused_by_both = 0
    for i in range(3000):
        _, raw = FIXTURES[i % len(FIXTURES)]
        body = _mutate(rng, raw)
        view = routing_view(body)
        try:
            full = parse_json(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            full = None
        if view is None:
            refused_by_both += full is None
            continue
        answered += 1
        assert isinstance(full, dict), f"seed {seed} case {i}: view answered for a body the parse refuses"
        assert routed(view) == routed(full), f"seed {seed} case {i}"
    assert answered > 100 and refused_by_both > 1000  # both branches were exercised


def test_lazy_event_parses_on_first_read_and_routes_from_the_view() -> None:
    raw = json.dumps(
        {"action": "opened", "installation": {"id": 42}, "sender": {"login": "u", "type": "User"}, "n": 1}
    ).encode()
    view = routing_view(raw)
    assert view is not None
    event = build_lazy_event("d", "pull_request", raw, view)
    assert (event.installation_id, event.action, event.specific_key) == (42, "opened", "pull_request.opened")
    assert event.routing is view  # nothing parsed yet
    assert event.payload == json.loads(raw)
    assert event.routing is event.payload  # once parsed, the payload answers
    eager = build_event("d", "pull_request", json.loads(raw))
    assert (eager.installation_id, eager.specific_key) == (event.installation_id, event.specific_key)
    assert WebhookEvent(id="e", name="ping").payload == {}
