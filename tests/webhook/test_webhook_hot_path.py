"""The webhook hot path (issue 5): the raw ASGI endpoint and the fast JSON parser answer exactly as before.

Over real HTTP against the real app: bodies the fast parser (orjson) refuses but the standard library
accepts are still accepted with the same payload; headers are read case-insensitively with the first
occurrence winning (as Starlette did); the shortcut and the framework route give the same answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kodiai.server.runtime import Runtime
from kodiai.webhook.body import parse_json
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.signature import sign
from support.fake_github import FakeGitHub
from support.live_server import SECRET, LiveServer, eventually, make_config, make_github, start_kodiai


class Seen:
    """Thread-safe record of the payloads handlers received, by delivery id."""

    def __init__(self) -> None:
        self.payloads: dict[str, object] = {}
        self._lock = threading.Lock()

    def add(self, event: WebhookEvent) -> None:
        with self._lock:
            self.payloads[event.id] = event.payload


@pytest.fixture
def live(tmp_path: Path, fake: FakeGitHub) -> Iterator[tuple[LiveServer, Runtime, Seen]]:
    seen = Seen()

    def register(rt: Runtime) -> None:
        async def handler(event: WebhookEvent) -> None:
            seen.add(event)

        rt.router.register("issues", handler, name="record")

    server, runtime = start_kodiai(make_config(tmp_path, fake.url), make_github(fake), register)
    yield server, runtime, seen
    server.stop()


@pytest.mark.parametrize(
    "body",
    [
        b'{"action":"opened","big":123456789012345678901234567890}',  # past 64 bits
        b'{"action":"opened","x":NaN,"y":-Infinity}',  # Python's json extensions
        b'\xef\xbb\xbf{"action":"opened"}',  # UTF-8 BOM
        '{"action":"opened","t":"é"}'.encode("utf-16"),  # UTF-16 with BOM
    ],
    ids=["bigint", "nan", "utf8-bom", "utf16"],
)
def test_bodies_the_fast_parser_refuses_are_accepted_as_before(
    live: tuple[LiveServer, Runtime, Seen], body: bytes
) -> None:
    """Accepted JSON is exactly what ``json.loads`` accepts; the handler gets the same payload."""
    server, runtime, seen = live
    delivery = f"fallback-{body[:6].hex()}"
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(SECRET, body),
    }
    r = httpx.post(f"{server.url}/webhooks/github", content=body, headers=headers)
    assert r.status_code == 200 and r.json() == {"received": True}
    assert eventually(lambda: delivery in seen.payloads)
    # the standard library's result, except integers outside 64 bits: the nearest float (as JSON.parse)
    expected = json.loads(body, parse_int=lambda s: int(s) if -(2**63) <= int(s) < 2**64 else float(s))
    got = seen.payloads[delivery]
    assert json.dumps(got, sort_keys=True) == json.dumps(
        expected, sort_keys=True
    )  # NaN != NaN, so compare text
    assert runtime.journal is not None and eventually(lambda: runtime.journal.counts().get("done") == 1)


def test_parse_json_matches_the_standard_library() -> None:
    """The parser refuses exactly what ``json.loads`` refuses (a 400 stays a 400)."""
    for bad in [b"{not json", b"", b"\xff\xfe\x00", b"[" * 100_000 + b"]" * 100_000, b'{"a":1,}']:
        with pytest.raises((ValueError, UnicodeDecodeError, RecursionError)):
            json.loads(bad)
        with pytest.raises((ValueError, UnicodeDecodeError, RecursionError)):
            parse_json(bad)
    doc = b'{"a":[1,2.5,"x",null,true,{"b":"\\u00e9\\ud83d\\ude00"}],"a":2}'
    assert parse_json(doc) == json.loads(doc)


def test_headers_case_insensitive_first_occurrence_wins(live: tuple[LiveServer, Runtime, Seen]) -> None:
    """Like Starlette's ``Headers.get``: lower/upper case names match, the first of a repeated header wins."""
    server, _runtime, seen = live
    body = b'{"action":"opened"}'
    good, bad = sign(SECRET, body), sign("wrong", body)
    url = f"{server.url}/webhooks/github"
    first_good = [
        ("x-github-event", "issues"),
        ("X-GITHUB-DELIVERY", "hdr-1"),
        ("X-GitHub-Delivery", "hdr-ignored"),
        ("X-Hub-Signature-256", good),
        ("x-hub-signature-256", bad),
    ]
    assert httpx.post(url, content=body, headers=first_good).status_code == 200
    assert eventually(lambda: "hdr-1" in seen.payloads) and "hdr-ignored" not in seen.payloads
    first_bad = [
        ("X-GitHub-Event", "issues"),
        ("X-GitHub-Delivery", "hdr-2"),
        ("X-Hub-Signature-256", bad),
        ("X-Hub-Signature-256", good),
    ]
    r = httpx.post(url, content=body, headers=first_bad)
    assert r.status_code == 401 and r.content == b"" and r.headers["content-type"].startswith("text/plain")


def test_framework_route_serves_the_same_endpoint(tmp_path: Path, fake: FakeGitHub) -> None:
    """Under a ``root_path`` (the shortcut does not match) the FastAPI route answers identically."""
    from kodiai.server.app import create_app
    from kodiai.server.runtime import build_runtime

    runtime = build_runtime(make_config(tmp_path, fake.url), github=make_github(fake))
    app = create_app(runtime)

    async def with_root_path(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            scope = {**scope, "root_path": "/kodiai", "path": "/kodiai" + scope["path"]}
        await app(scope, receive, send)

    with LiveServer(with_root_path) as server:
        body = b'{"action":"opened"}'
        headers = {
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": "rp-1",
            "X-Hub-Signature-256": sign(SECRET, body),
        }
        r = httpx.post(f"{server.url}/webhooks/github", content=body, headers=headers)
        assert r.status_code == 200 and r.json() == {"received": True}
        bad = httpx.post(
            f"{server.url}/webhooks/github", content=body, headers={**headers, "X-Hub-Signature-256": "x"}
        )
        assert bad.status_code == 401 and bad.content == b""
        assert runtime.journal is not None and runtime.journal.seen("rp-1")


def test_invalid_utf8_in_a_skipped_field_is_a_400_and_not_marked_seen(
    live: tuple[LiveServer, Runtime, Seen],
) -> None:
    """The routing view skips most of the body: a byte sequence that is not UTF-8 anywhere in it still gets
    the 400 the full parse gives, and the delivery is not remembered (a fixed redelivery is accepted)."""
    server, runtime, seen = live
    url = f"{server.url}/webhooks/github"
    bad = b'{"action":"opened","pull_request":{"body":"caf\xe9"}}'
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": "utf8-1",
        "X-Hub-Signature-256": sign(SECRET, bad),
    }
    r = httpx.post(url, content=bad, headers=headers)
    assert r.status_code == 400 and r.json() == {"error": "Invalid JSON payload"}
    assert runtime.journal is not None and not runtime.journal.seen("utf8-1")
    fixed = bad.replace(b"\xe9", "é".encode())
    headers["X-Hub-Signature-256"] = sign(SECRET, fixed)
    assert httpx.post(url, content=fixed, headers=headers).status_code == 200
    assert eventually(
        lambda: seen.payloads.get("utf8-1") == {"action": "opened", "pull_request": {"body": "café"}}
    )
