"""docs/troubleshooting.md, what the server answers and logs: the real app over HTTP (uvicorn in a thread,
:mod:`support.live_server`) with its real ingress, journal, bot filter and router, each condition made real
(a wrong secret, a form-encoded body, setup mode, a journal deleted under the server, a full disk on a
tmpfs, GitHub failing ``GET /app``), and the page's "look for" entries asserted against what came back
(:func:`support.troubleshooting_page.look_for` reads them from the page).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
import structlog

from kodiai.jobs.journal_guard import JournalDamagedError
from kodiai.learning.embeddings import NoopEmbeddingProvider
from kodiai.server.app import create_app
from kodiai.server.runtime import Runtime, ServerConfig, build_runtime
from kodiai.server.stores import Stores
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.telemetry import TelemetryStore
from support.fake_github import FakeGitHub
from support.full_disk import TmpfsDisk, mounted_tmpfs
from support.live_server import (
    LiveServer,
    Recorder,
    eventually,
    make_config,
    make_github,
    recording_handler,
    signed_headers,
)
from support.sqlite_damage import filled_journal, zero_index_root
from support.troubleshooting_page import VISIBLE_LEVELS, look_for

PULL_OPENED = b'{"action":"opened","installation":{"id":1},"repository":{"full_name":"acme/widgets"},'


def opened(sender: str = "alice", kind: str = "User") -> bytes:
    return PULL_OPENED + b'"sender":{"login":"%s","type":"%s"}}' % (sender.encode(), kind.encode())


@dataclass
class Served:
    url: str
    runtime: Runtime
    recorder: Recorder
    logs: list[dict[str, Any]]

    def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return httpx.post(f"{self.url}/webhooks/github", content=body, headers=headers)

    def answer(self, response: httpx.Response) -> tuple[int, Any]:
        return response.status_code, (response.json() if response.content else None)

    def get(self, path: str) -> tuple[int, Any]:
        return self.answer(httpx.get(f"{self.url}{path}"))

    def logged(self, message: str) -> bool:
        return eventually(lambda: any(e.get("event") == message for e in self.logs), timeout=10)


@contextlib.contextmanager
def served(
    config: ServerConfig, github: Any, *, stores: Stores | None = None, processors: tuple[Any, ...] = ()
) -> Iterator[Served]:
    """The app over HTTP with a recording handler on ``pull_request.opened``; every log line captured
    from before start-up to the end."""
    recorder = Recorder()

    def register(rt: Runtime) -> None:
        rt.router.register("pull_request.opened", recording_handler(rt, recorder, "review"), name="review")

    with structlog.testing.capture_logs(processors=list(processors)) as logs:
        runtime = build_runtime(config, github=github, register_handlers=register, stores=stores)
        server = LiveServer(create_app(runtime)).start()
        try:
            yield Served(server.url, runtime, recorder, logs)
        finally:
            server.stop()


def app_config(tmp_path: Path, fake: FakeGitHub, **overrides: Any) -> ServerConfig:
    return make_config(tmp_path, fake.url, **overrides)


# ---------------------------------------------------------------------- the bot says nothing


def test_sender_is_a_bot(tmp_path: Path, fake: FakeGitHub) -> None:
    body = opened("dependabot[bot]", "Bot")
    headers = signed_headers(body, event="pull_request", delivery="bot-1")
    with served(app_config(tmp_path, fake), make_github(fake)) as app:
        assert app.post(body, headers).status_code == 200
        assert app.logged("Event filtered before dispatch")
        look_for("the-sender-is-a-bot").check(logs=app.logs)
        assert app.recorder.records == []
    allowed = app_config(tmp_path, fake, bot_allow_list=["dependabot"])
    with served(allowed, make_github(fake)) as app:  # the documented fix: BOT_ALLOW_LIST, restart
        assert app.post(body, headers).status_code == 200  # redelivered: still a duplicate
        assert app.logged("Duplicate delivery skipped")
        later = body.replace(b'"opened"', b'"opened","number":2')  # the bot's next pull request
        assert app.post(later, signed_headers(later, event="pull_request")).status_code == 200
        assert app.recorder.wait_count(1) and len(app.recorder.records) == 1


def test_unhandled_action(tmp_path: Path, fake: FakeGitHub) -> None:
    with served(app_config(tmp_path, fake), make_github(fake)) as app:
        body = opened().replace(b'"opened"', b'"labeled"')
        assert app.post(body, signed_headers(body, event="pull_request")).status_code == 200
        assert app.logged("Event skipped because no handlers matched")
        look_for("kodiai-does-not-act-on-that-event-or-action").check(logs=app.logs)


def test_redelivery_is_a_duplicate(tmp_path: Path, fake: FakeGitHub) -> None:
    with served(app_config(tmp_path, fake), make_github(fake)) as app:
        headers = signed_headers(opened(), event="pull_request", delivery="guid-1")
        assert app.post(opened(), headers).status_code == 200
        assert app.recorder.wait_count(1)
        assert app.post(opened(), headers).status_code == 200  # GitHub's Redeliver: the same GUID
        look_for("a-redelivery-did-nothing").check(logs=app.logs)
        assert len(app.recorder.records) == 1


# ---------------------------------------------------------------------- failed deliveries


def test_signature_failures(tmp_path: Path, fake: FakeGitHub) -> None:
    """A wrong secret, a body rewritten after signing (a proxy), and no signature at all (no secret set
    in the App): each answered 401, and each logged."""
    entry = look_for("401-signature-verification-failed")
    body = opened()
    cases = {
        "wrong secret": signed_headers(body, event="pull_request", secret="not-the-server-secret"),
        "rewritten body": signed_headers(
            json.dumps(json.loads(body), indent=2).encode(), event="pull_request"
        ),
        "no signature": {
            k: v for k, v in signed_headers(body, event="pull_request").items() if k != "X-Hub-Signature-256"
        },
    }
    with served(app_config(tmp_path, fake), make_github(fake)) as app:
        for case, headers in cases.items():
            before = len(app.logs)
            response = app.post(body, headers)
            assert response.status_code == 401, case
            entry.check(logs=app.logs[before:], answers=[app.answer(response)])
        assert app.recorder.records == []


def test_form_encoded_body(tmp_path: Path, fake: FakeGitHub) -> None:
    """The App's content type set to application/x-www-form-urlencoded: signed, but not JSON."""
    body = urlencode({"payload": opened().decode()}).encode()
    headers = {
        **signed_headers(body, event="pull_request"),
        "Content-Type": "application/x-www-form-urlencoded",
    }
    with served(app_config(tmp_path, fake), make_github(fake)) as app:
        response = app.post(body, headers)
        look_for("400-invalid-json-payload").check(logs=app.logs, answers=[app.answer(response)])


def setup_config(tmp_path: Path, fake: FakeGitHub) -> ServerConfig:
    missing = ["GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"]
    return app_config(tmp_path, fake, app_id=None, webhook_secret=None, missing_settings=missing)


def test_setup_mode_refuses_deliveries(tmp_path: Path, fake: FakeGitHub) -> None:
    with served(setup_config(tmp_path, fake), None) as app:
        response = app.post(opened(), signed_headers(opened(), event="pull_request"))
        look_for("503-kodiai-is-in-setup-mode").check(logs=app.logs, answers=[app.answer(response)])


def test_setup_mode_is_not_ready(tmp_path: Path, fake: FakeGitHub) -> None:
    with served(setup_config(tmp_path, fake), None) as app:
        look_for("github-app-not-configured").check(answers=[app.get("/readiness")])


def delete_journal(app: Served, db: Path) -> None:
    """What ``rm data/kodiai-jobs.db*`` does under a running server; waits until it noticed."""
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.unlink(missing_ok=True)
    assert eventually(lambda: app.get("/health")[0] == 503)


def test_journal_cannot_record_a_delivery(tmp_path: Path, fake: FakeGitHub) -> None:
    with served(app_config(tmp_path, fake), make_github(fake)) as app:
        delete_journal(app, tmp_path / "jobs.db")
        response = app.post(opened(), signed_headers(opened(), event="pull_request"))
        look_for("500-the-journal-could-not-record-the-delivery").check(
            logs=app.logs, answers=[app.answer(response)]
        )
        assert app.recorder.records == []


# ---------------------------------------------------------------------- /readiness and /health


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_github_unreachable(tmp_path: Path, fake: FakeGitHub) -> None:
    clock = Clock()
    with served(app_config(tmp_path, fake), make_github(fake, clock=clock)) as app:
        assert app.get("/readiness") == (200, {"status": "ready"})
        fake.fail(500, times=10, path="^/app$")
        clock.t += 31  # past the cached answer
        look_for("github-api-unreachable").check(logs=app.logs, answers=[app.get("/readiness")])


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[TmpfsDisk]:
    """A 4 MiB tmpfs to fill up (root only: elsewhere tests/server/test_full_disk*.py cover the full disk
    through a file-size limit on a ``kodiai serve`` child)."""
    with mounted_tmpfs(tmp_path) as made:
        yield made


def checkpoint(db: Path) -> None:
    """The WAL checkpointed to zero bytes, so the next write needs new space."""
    conn = sqlite3.connect(db, timeout=10, isolation_level=None)
    try:
        assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    finally:
        conn.close()


def test_journal_disk_full(tmp_path: Path, fake: FakeGitHub, tmpfs: TmpfsDisk) -> None:
    db = tmpfs.where / "jobs.db"
    with served(app_config(tmp_path, fake, jobs_db_path=str(db)), make_github(fake)) as app:
        checkpoint(db)
        tmpfs.fill(0)
        assert app.post(opened(), signed_headers(opened(), event="pull_request")).status_code == 500
        look_for("job-journal-cannot-record-deliveries").check(logs=app.logs, answers=[app.get("/readiness")])
        assert app.get("/health") == (200, {"status": "ok"})  # a restart frees no space


def test_store_disk_full(tmp_path: Path, fake: FakeGitHub, tmpfs: TmpfsDisk) -> None:
    """The knowledge database on a full disk: a review's write to it fails, and the server says so."""
    knowledge = KnowledgeStore(tmpfs.where / "knowledge.db")
    stores = Stores(TelemetryStore(tmp_path / "telemetry.db"), knowledge, NoopEmbeddingProvider())
    with served(app_config(tmp_path, fake), make_github(fake), stores=stores) as app:
        checkpoint(tmpfs.where / "knowledge.db")
        tmpfs.fill(0)
        with pytest.raises(sqlite3.OperationalError):  # the review step's write (fail-open there)
            knowledge.check_and_claim_run(
                repo="acme/widgets",
                pr_number=7,
                base_sha="b" * 40,
                head_sha="h" * 40,
                delivery_id="d-7",
                action="opened",
            )
        look_for("a-store-cannot-write").check(logs=app.logs, answers=[app.get("/readiness")])


def test_journal_deleted_while_running(tmp_path: Path, fake: FakeGitHub) -> None:
    with served(app_config(tmp_path, fake), make_github(fake)) as app:
        delete_journal(app, tmp_path / "jobs.db")
        assert app.logged("Job journal damaged; refusing new deliveries (jobs already accepted keep running)")
        look_for("the-journal-was-deleted-or-replaced-while-the-server-ran").check(
            logs=app.logs, answers=[app.get("/health")]
        )


def test_journal_damaged_at_start_up(tmp_path: Path, fake: FakeGitHub) -> None:
    """The start-up step that opens the journal refuses it; ``kodiai serve`` prints this error on its one
    ``FATAL:`` line and exits 1 (tests/server/test_journal_damage.py runs that process)."""
    db = tmp_path / "jobs.db"
    filled_journal(db)
    zero_index_root(db)
    with pytest.raises(JournalDamagedError) as refused:
        build_runtime(app_config(tmp_path, fake, jobs_db_path=str(db)), github=make_github(fake))
    look_for("the-journal-is-damaged-at-start-up").check(fatal=[str(refused.value)])


# ---------------------------------------------------------------------- finding a delivery's lines


def test_every_line_of_a_delivery_carries_its_id(tmp_path: Path, fake: FakeGitHub) -> None:
    """The page's "Find one delivery's lines": every line logged from its acceptance to the end of its job names the
    delivery id (a field of its own, or the ``delivery_id`` bound for the whole dispatch)."""
    merge = structlog.contextvars.merge_contextvars
    with served(app_config(tmp_path, fake), make_github(fake), processors=(merge,)) as app:
        before = len(app.logs)
        headers = signed_headers(opened(), event="pull_request", delivery="5e0bd5c0-find-me")
        assert app.post(opened(), headers).status_code == 200
        assert app.recorder.wait_count(1)
        assert app.logged("Dispatched to 1 handler(s)")  # the dispatch's last line
        lines = app.logs[before:]
    messages = [str(line.get("event")) for line in lines]
    assert "Webhook accepted and queued for dispatch" in messages and "Job execution completed" in messages
    for line in lines:  # what an operator sees at the default level (debug adds queue housekeeping)
        if line["log_level"] in VISIBLE_LEVELS:
            assert "5e0bd5c0-find-me" in json.dumps(line, default=str), line
