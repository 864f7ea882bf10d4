"""Fuzz: ≥ 5,000 random, truncated and malformed deliveries against one running server.

A seeded generator (reproducible; the seed is in the failure message) mixes: random bytes with random
signatures, truncated real fixtures correctly signed, signed non-JSON / invalid UTF-8 / deeply nested
JSON, signed JSON with hostile field types (installation ids out of range, senders as lists, actions as
objects), odd header values and missing headers. The server must never answer 5xx, never leak a stack
trace, and keep serving; every delivery it accepted must have been dispatched.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kodiai.server.runtime import Runtime
from kodiai.webhook.signature import sign
from support.fake_github import FakeGitHub
from support.live_server import (
    LiveServer,
    Recorder,
    eventually,
    fixture_payloads,
    make_config,
    make_github,
    recording_handler,
    start_kodiai,
)

SEED = 20261121
N = 5200
SECRET = "test-webhook-secret"
FIXTURES = [raw for _, _, raw in fixture_payloads()]
EVENTS = [
    "pull_request",
    "issue_comment",
    "push",
    "ping",
    "issues",
    "x" * 300,
    "",
    "Pull_Request",
    "a.b",
    "日本",
]


@pytest.fixture(scope="module")
def target(
    tmp_path_factory: pytest.TempPathFactory, fake: FakeGitHub
) -> Iterator[tuple[LiveServer, Runtime, Recorder]]:
    recorder = Recorder()

    def register(rt: Runtime) -> None:
        for key in ("pull_request", "issue_comment", "issues", "push", "pull_request.opened"):
            rt.router.register(key, recording_handler(rt, recorder, f"rec-{key}"), name=f"rec-{key}")

    tmp: Path = tmp_path_factory.mktemp("fuzz")
    server, runtime = start_kodiai(
        make_config(tmp, fake.url, max_body_bytes=256 * 1024), make_github(fake), register
    )
    yield server, runtime, recorder
    server.stop()


def hostile_value(rng: random.Random) -> object:
    return rng.choice(
        [
            None,
            True,
            -1,
            0,
            2**70,
            -(2**70),
            1.5,
            "1",
            "",
            [],
            {},
            [1, {"a": None}],
            {"id": "x"},
            "\u0000",
            "😀" * 5,
        ]
    )


def hostile_payload(rng: random.Random) -> dict[str, object]:
    payload: dict[str, object] = {}
    for key in ("action", "installation", "sender", "repository", "pull_request", "issue", "comment"):
        if rng.random() < 0.6:
            payload[key] = hostile_value(rng)
    if rng.random() < 0.5:
        payload["installation"] = {"id": hostile_value(rng)}
    if rng.random() < 0.5:
        payload["sender"] = {"login": hostile_value(rng), "type": rng.choice(["User", "Bot", None, 3])}
    if rng.random() < 0.3:
        payload["repository"] = {
            "full_name": hostile_value(rng),
            "owner": hostile_value(rng),
            "name": hostile_value(rng),
        }
    return payload


def header_text(rng: random.Random, max_len: int = 64) -> str:
    alphabet = string.printable.replace("\n", "").replace("\r", "").replace("\x0b", "").replace("\x0c", "")
    # header values cannot start or end with whitespace on the wire (h11 refuses to send them)
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len))).strip(" \t")


def make_case(rng: random.Random, i: int) -> tuple[bytes, dict[str, str]]:
    kind = rng.randrange(8)
    if kind == 0:  # random bytes, random signature
        body = rng.randbytes(rng.randint(0, 2048))
        sig = rng.choice(["", "sha256=", "sha256=" + "0" * 64, header_text(rng), sign("wrong", body)])
    elif kind == 1:  # truncated real fixture, correctly signed
        raw = rng.choice(FIXTURES)
        body = raw[: rng.randint(0, len(raw))]
        sig = sign(SECRET, body)
    elif kind == 2:  # signed garbage: invalid UTF-8, non-JSON, JSON scalars, deep nesting
        body = rng.choice(
            [
                rng.randbytes(rng.randint(1, 512)),
                b"\xff\xfe{}",
                b"[" * 100_000 + b"]" * 100_000,
                b'{"a":' * 5000 + b"1" + b"}" * 5000,
                b"nan",
                b"1e999999",
                json.dumps(header_text(rng)).encode(),
            ]
        )
        sig = sign(SECRET, body)
    elif kind in (3, 4):  # signed JSON objects with hostile field types
        body = json.dumps(hostile_payload(rng)).encode()
        sig = sign(SECRET, body)
    elif kind == 5:  # a real fixture with one byte flipped, original signature
        raw = bytearray(rng.choice(FIXTURES))
        pos = rng.randrange(len(raw))
        raw[pos] = (raw[pos] + 1) % 256
        body = bytes(raw)
        sig = sign(SECRET, rng.choice(FIXTURES))
    elif kind == 6:  # valid fixture, valid signature, odd headers
        body = rng.choice(FIXTURES)
        sig = sign(SECRET, body)
    else:  # oversized for this server's limit
        body = b"{" + b" " * (256 * 1024 + rng.randint(1, 1000)) + b"}"
        sig = sign(SECRET, body)
    headers = {
        "Content-Type": rng.choice(["application/json", "text/plain", "application/x-www-form-urlencoded"])
    }
    if rng.random() < 0.9:
        headers["X-Hub-Signature-256"] = sig
    if rng.random() < 0.9:
        headers["X-GitHub-Event"] = rng.choice(EVENTS) if rng.random() < 0.8 else header_text(rng)
    if rng.random() < 0.9:
        headers["X-GitHub-Delivery"] = f"fz-{i}" if rng.random() < 0.7 else header_text(rng, 200)
    if rng.random() < 0.2:
        headers["User-Agent"] = header_text(rng, 300)
    return body, headers


@pytest.mark.slow
def test_fuzz_never_crashes_or_leaks(target: tuple[LiveServer, Runtime, Recorder]) -> None:
    server, runtime, recorder = target
    rng = random.Random(SEED)
    statuses: dict[int, int] = {}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for i in range(N):
            body, headers = make_case(rng, i)
            try:
                headers = {k: v.encode("ascii", "replace").decode() for k, v in headers.items()}
                r = http.post("/webhooks/github", content=body, headers=headers)
            except httpx.RemoteProtocolError:  # the server closing after a 413 is allowed
                statuses[-1] = statuses.get(-1, 0) + 1
                continue
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code in (200, 400, 401, 413), (
                f"seed={SEED} case={i} status={r.status_code} body={r.text[:200]}"
            )
            assert "Traceback" not in r.text and 'File "' not in r.text, f"seed={SEED} case={i}"
        assert http.get("/health").json() == {"status": "ok"}
    assert sum(statuses.values()) == N
    assert statuses.get(200, 0) > 500 and statuses.get(400, 0) > 500 and statuses.get(401, 0) > 500
    assert statuses.get(413, 0) > 100
    dispatcher = runtime.dispatcher
    assert dispatcher is not None and eventually(lambda: dispatcher.in_flight == 0, timeout=60)
    journal = runtime.journal
    assert journal is not None
    counts = journal.counts()
    assert counts.get("pending", 0) == 0 and counts.get("failed", 0) == 0, counts
    # every journaled delivery ran its handlers: one record per (delivery, handler) pair, no duplicates
    assert counts.get("done", 0) > 100
    assert len(recorder.records) == len(set(recorder.records)) >= counts["done"]
