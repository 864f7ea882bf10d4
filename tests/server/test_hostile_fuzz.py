"""Fuzz ``kodiai serve`` (a real process, its production HTTP limits) with 5,200 hostile deliveries.

A seeded generator (the seed is in every failure message) mixes signed and unsigned deliveries: lone
surrogates as JSON escapes and as raw bytes, invalid UTF-8, huge integers, 100,000 nested arrays,
non-JSON and non-object bodies, wrong content types, missing, malformed and wrong signatures (every body
that could be accepted is unique, so none is a replay of another). They go
through 8 concurrent keep-alive connections. The server must stay up, answer no 5xx for a delivery it
did not journal, and leave no job stranded: every ``issues``/``push`` delivery it accepted is journaled
``done`` and was run (the handler parses the whole payload).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from kodiai.webhook.signature import sign
from support.fake_github import FakeGitHub
from support.kodiai_process import ServeProcess
from support.live_server import SECRET

pytestmark = pytest.mark.slow

SEED = 15_2026
N = 5200
RECORDED_EVENTS = ("issues", "push")  # hostile_handlers records these
OTHER_EVENTS = ("ping", "pull_request", "issue_comment", "fuzz_event")
SURROGATES = ("\\ud800", "\\udfff", "\\udc00x", "x\\ud83d", "\\ud83d\\ude00\\ud800")
HUGE_NUMBERS = (
    "18446744073709551616",  # 2**64
    "-9223372036854775809",  # -2**63 - 1
    "1" + "0" * 40,
    "9" * 5000,  # past Python's 4,300-digit int parsing limit
    "1e400",
    "-1e400",
    "1e-400",
    "-0",
    "123456789012345678901234567890.5",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, fake: FakeGitHub) -> Iterator[ServeProcess]:
    # lanes long enough for the whole burst: shedding jobs (a full lane) is not what this test is about
    proc = ServeProcess(tmp_path_factory.mktemp("fuzz"), fake, MAX_LANE_LENGTH="100000").start()
    yield proc
    proc.stop()


def hostile_json(rng: random.Random, n: int) -> str:
    """A JSON object (as text) with lone surrogates, huge numbers and odd types in the routing fields."""
    surrogate = f'"{rng.choice(SURROGATES)}"'
    number = rng.choice(HUGE_NUMBERS)
    installation = rng.choice([str(rng.randint(1, 5)), number, surrogate, "null", "[]", '{"id":1}'])
    fields = [
        f'"n":{n}',
        f'"action":{rng.choice([surrogate, chr(34) + "opened" + chr(34), number, "[]", "null"])}',
        f'"installation":{{"id":{installation}}}',
        f'"sender":{{"login":{rng.choice([surrogate, chr(34) + "octocat" + chr(34), number])},"type":"User"}}',
        f'"repository":{{"full_name":{rng.choice([surrogate, chr(34) + "acme/repo" + chr(34), number])}}}',
        f'"note":{surrogate}',
        f'"count":{number}',
    ]
    rng.shuffle(fields)
    return "{" + ",".join(fields) + "}"


def make_case(rng: random.Random, i: int) -> tuple[bytes, dict[str, str], str]:
    """(body, headers, kind) for delivery ``i``."""
    event = rng.choice(RECORDED_EVENTS) if rng.random() < 0.6 else rng.choice(OTHER_EVENTS)
    kind = rng.choices(
        ["surrogates", "raw_bytes", "deep", "non_object", "form", "random", "unsigned", "bad_signature"],
        weights=[40, 8, 2, 8, 6, 6, 15, 15],
    )[0]
    if kind in ("surrogates", "unsigned", "bad_signature"):
        body = hostile_json(rng, i).encode()
    elif kind == "raw_bytes":  # a lone surrogate / invalid UTF-8 as raw bytes inside a string
        raw = rng.choice([b"\xed\xa0\x80", b"\xff", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80", b"\x80"])
        body = b'{"n":%d,"action":"opened","installation":{"id":1},"note":"' % i + raw + b'"}'
    elif kind == "deep":  # 100,000 nested arrays, alone or inside an object
        nested = b"[" * 100_000 + b"]" * 100_000
        body = nested if rng.random() < 0.5 else b'{"n":%d,"x":' % i + nested + b"}"
    elif kind == "non_object":
        bom_object = b'\xef\xbb\xbf{"n":%d}' % i  # parses (the standard library skips a BOM): an object
        body = rng.choice([b"[]", b"null", b'"\\ud800"', b"1e400", b"9" * 5000, b"", b"{", bom_object])
    elif kind == "form":
        body = b"payload=" + hostile_json(rng, i).encode()
    else:
        body = rng.randbytes(rng.randint(1, 4096))
    signature = {
        "unsigned": None,
        "bad_signature": rng.choice(
            ["sha256=" + "0" * 64, sign("another-secret-value", body), "sha256=", "x"]
        ),
    }.get(kind, sign(SECRET, body))
    headers = {
        "Content-Type": rng.choice(
            ["application/json", "application/x-www-form-urlencoded", "text/plain", "multipart/form-data"]
        ),
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": f"fz-{i}",
        "User-Agent": "GitHub-Hookshot/fuzz",
    }
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return body, headers, kind


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes, bool]:
    """One HTTP/1.1 request on an open connection: (status, body, whether the server closes it).

    A lean client: httpx's own CPU per request would dominate on a small shared machine."""
    writer.write(request)
    await writer.drain()
    status_line = await reader.readline()
    length, close = 0, False
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection" and value.strip().lower() == b"close":
            close = True
    return int(status_line.split()[1]), await reader.readexactly(length), close


async def fire(port: int, cases: list[tuple[bytes, dict[str, str], str]], connections: int = 8) -> list[int]:
    """Post every case over ``connections`` keep-alive connections; the status of each (-1: no answer)."""
    statuses = [0] * len(cases)
    pending = iter(range(len(cases)))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for i in pending:
                body, headers, _ = cases[i]
                head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                request = (
                    f"POST /webhooks/github HTTP/1.1\r\nHost: kodiai\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                ).encode() + body
                try:
                    statuses[i], answer, close = await exchange(reader, writer, request)
                    assert b"Traceback" not in answer, f"seed={SEED} case={i}"
                except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                    statuses[i], close = -1, True
                if close:
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
        finally:
            writer.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    return statuses


def test_fuzz_no_5xx_without_a_journal_record_and_no_stranded_job(served: ServeProcess) -> None:
    rng = random.Random(SEED)
    cases = [make_case(rng, i) for i in range(N)]
    started = time.monotonic()
    statuses = asyncio.run(fire(served.port, cases))
    elapsed = time.monotonic() - started
    assert served.alive(), served.log_text()[-3000:]
    assert httpx.get(f"{served.url}/health", timeout=5).json() == {"status": "ok"}
    by_status = Counter(statuses)
    print(f"fuzz: {N} deliveries in {elapsed:.1f} s ({N / elapsed:.0f}/s): {dict(sorted(by_status.items()))}")
    assert by_status[-1] == 0, f"seed={SEED}: {by_status[-1]} requests got no answer"
    for i, (status, (_, _, kind)) in enumerate(zip(statuses, cases, strict=True)):
        if kind in ("unsigned", "bad_signature") or (kind == "non_object" and cases[i][0] == b""):
            assert status == 401, f"seed={SEED} case={i} kind={kind} status={status}"
        else:
            assert status in (200, 400, 500), f"seed={SEED} case={i} kind={kind} status={status}"

    # no stranded job: nothing pending once the accepted deliveries have run
    deadline = time.monotonic() + 60
    while "pending" in served.statuses().values() and time.monotonic() < deadline:
        time.sleep(0.2)
    journal = served.statuses()
    assert "pending" not in journal.values(), Counter(journal.values())
    server_errors = [i for i, status in enumerate(statuses) if status >= 500]
    unrecorded = [i for i in server_errors if f"fz-{i}" not in journal]
    assert not unrecorded, f"seed={SEED}: 5xx without a journal record for cases {unrecorded[:10]}"
    assert not server_errors, f"seed={SEED}: 5xx (journaled) for cases {server_errors[:10]}"

    ran = set(served.recorded())
    accepted = [
        f"fz-{i}"
        for i, (status, (_, headers, _)) in enumerate(zip(statuses, cases, strict=True))
        if status == 200 and headers["X-GitHub-Event"] in RECORDED_EVENTS
    ]
    assert len(accepted) > 1000
    assert all(journal.get(d) == "done" for d in accepted), Counter(journal.get(d) for d in accepted)
    assert set(accepted) <= ran, f"seed={SEED}: accepted but never run: {sorted(set(accepted) - ran)[:10]}"
    assert len({kind for *_, kind in cases}) == 8  # every kind was generated
