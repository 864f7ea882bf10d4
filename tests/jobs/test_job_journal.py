"""The SQLite dedup + job journal, and the dispatcher's replay and drain (real SQLite files)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import zstandard

from kodiai.jobs.dispatcher import MAX_ATTEMPTS, DeliveryDispatcher
from kodiai.jobs.journal import JobJournal, JournalEntry
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def entry(delivery: str, installation: int = 1) -> JournalEntry:
    return JournalEntry(
        delivery_id=delivery,
        event_name="issues",
        action="opened",
        installation_id=installation,
        payload={"action": "opened", "installation": {"id": installation}, "n": delivery},
    )


def test_dedup_survives_a_restart(tmp_path: Path) -> None:
    """Dedup is persisted: a reopened journal still knows the delivery."""
    db = tmp_path / "jobs.db"
    journal = JobJournal.open(db)
    assert journal.accept(entry("a"), now=T0)
    assert not journal.accept(entry("a"), now=T0)
    journal.close()
    reopened = JobJournal.open(db)
    assert not reopened.accept(entry("a"), now=T0 + timedelta(hours=1))
    assert reopened.seen("a")
    reopened.close()


def test_dedup_window_is_at_least_24h(tmp_path: Path) -> None:
    """P3.2: remembered ≥ 24 h. Ids without work go after the window; finished jobs are kept (and stay
    duplicates) for their 7-day retention; a pending job is never forgotten."""
    journal = JobJournal.open(tmp_path / "j.db")
    journal.accept(entry("old"), now=T0)
    journal.finish("old", now=T0)
    journal.accept(entry("pending"), now=T0)
    journal.accept(entry("no-work"), now=T0, journal=False)
    journal.accept(entry("fresh", 2), now=T0 + timedelta(hours=23), journal=False)
    assert journal.evict(now=T0 + timedelta(hours=23, minutes=59)) == 0
    assert journal.evict(now=T0 + timedelta(hours=24, minutes=1)) == 1
    assert not journal.seen("no-work")
    assert journal.seen("fresh") and journal.seen("pending")
    # the finished row is kept for its own retention, so a late redelivery is still a duplicate
    assert not journal.accept(entry("old"), now=T0 + timedelta(hours=25))
    assert journal.evict(now=T0 + timedelta(days=7, minutes=1)) == 2  # "old" and "fresh"
    assert not journal.seen("old") and journal.seen("pending")
    assert [e.delivery_id for e in journal.unfinished()] == ["pending"]
    journal.close()


def test_unjournaled_delivery_is_remembered_but_not_replayed(tmp_path: Path) -> None:
    journal = JobJournal.open(tmp_path / "j.db")
    assert journal.accept(entry("f"), now=T0, journal=False)
    assert journal.seen("f") and journal.get("f") is None and journal.unfinished() == []
    journal.close()


def test_handler_progress_and_unfinished(tmp_path: Path) -> None:
    journal = JobJournal.open(tmp_path / "j.db")
    journal.accept(entry("x"), now=T0)
    journal.start_attempt("x", now=T0)
    journal.mark_handler_done("x", "review")
    journal.mark_handler_done("x", "review")
    [row] = journal.unfinished()
    assert row.delivery_id == "x" and row.attempts == 1 and row.handlers_done == ["review"]
    assert row.payload["n"] == "x"
    journal.finish("x", now=T0)
    assert journal.unfinished() == []
    assert journal.counts() == {"done": 1}
    journal.close()


def make_router(log: list[tuple[str, str]], *, block: asyncio.Event | None = None) -> EventRouter:
    router = EventRouter(BotFilter("kodiai"))

    def handler(name: str):  # type: ignore[no-untyped-def]
        async def run(event: WebhookEvent) -> None:
            if block is not None and name == "slow":
                await block.wait()
            log.append((event.id, name))

        return run

    router.register("issues.opened", handler("fast"), name="fast")
    router.register("issues.opened", handler("slow"), name="slow")
    return router


async def test_replay_runs_only_unfinished_handlers_once(tmp_path: Path) -> None:
    """A delivery interrupted mid-dispatch is replayed at start-up, skipping handlers that finished."""
    db = tmp_path / "j.db"
    journal = JobJournal.open(db)
    ran: list[tuple[str, str]] = []
    gate = asyncio.Event()
    first = DeliveryDispatcher(make_router(ran, block=gate), journal)
    journal.accept(entry("d1"), now=T0)
    first.submit(WebhookEvent(id="d1", name="issues", payload={"action": "opened"}, installation_id=1))
    while ("d1", "fast") not in ran:
        await asyncio.sleep(0)
    assert await first.drain(0) == 1  # "shutdown" with the slow handler in flight
    journal.close()

    journal2 = JobJournal.open(db)
    ran2: list[tuple[str, str]] = []
    second = DeliveryDispatcher(make_router(ran2), journal2)
    assert await second.replay_unfinished() == 1
    await second.drain(5)
    assert ran2 == [("d1", "slow")]
    assert journal2.get("d1")["status"] == "done"  # type: ignore[index]
    assert await second.replay_unfinished() == 0
    journal2.close()


async def test_a_delivery_whose_job_was_cut_max_attempts_times_is_dead_with_its_body(tmp_path: Path) -> None:
    """Attempts count job starts; after MAX_ATTEMPTS starts cut by a dying process the delivery is dead
    (not replayed again), with its error and its stored body kept for `kodiai jobs retry`."""
    journal = JobJournal.open(tmp_path / "j.db")
    journal.accept(entry("poison"), now=T0)
    for _ in range(MAX_ATTEMPTS):
        journal.start_attempt("poison", now=T0)  # each start cut short by a crash
    ran: list[tuple[str, str]] = []
    dispatcher = DeliveryDispatcher(make_router(ran), journal)
    assert await dispatcher.replay_unfinished() == 0
    assert ran == []
    row = journal.get("poison")
    assert row is not None and row["status"] == "dead" and row["attempts"] == MAX_ATTEMPTS
    assert "gave up after 3 attempts" in row["error"]
    assert journal._db.fetch_one("SELECT COUNT(*) FROM delivery_payloads") == (1,)
    await dispatcher.drain(0)
    journal.close()


async def test_drain_waits_for_in_flight_jobs_within_grace(tmp_path: Path) -> None:
    """Graceful shutdown: in-flight dispatches that finish within the grace period complete normally."""
    journal = JobJournal.open(tmp_path / "j.db")
    ran: list[tuple[str, str]] = []
    gate = asyncio.Event()
    dispatcher = DeliveryDispatcher(make_router(ran, block=gate), journal)
    journal.accept(entry("d"), now=T0)
    dispatcher.submit(WebhookEvent(id="d", name="issues", payload={"action": "opened"}, installation_id=1))
    asyncio.get_running_loop().call_later(0.05, gate.set)
    assert await dispatcher.drain(5) == 0
    assert sorted(ran) == [("d", "fast"), ("d", "slow")]
    assert journal.get("d")["status"] == "done"  # type: ignore[index]
    journal.close()


@pytest.mark.parametrize("bad", ["", "x" * 10])
def test_finish_unknown_delivery_is_harmless(tmp_path: Path, bad: str) -> None:
    journal = JobJournal.open(tmp_path / "j.db")
    journal.finish(bad, now=T0)
    journal.mark_handler_done(bad, "h")
    assert journal.counts() == {}
    journal.close()


def test_payload_stored_compressed_replayed_exactly_and_dropped_when_done(tmp_path: Path) -> None:
    """Issue 5: the body is kept as received, zstd-compressed (a 24 KB payload fits one page); replay
    parses the exact bytes; the stored body goes when the job finishes."""
    journal = JobJournal.open(tmp_path / "j.db")
    raw = json.dumps({"action": "opened", "n": "z", "body": "lorem ipsum " * 2000}).encode()
    assert journal.accept(entry("z"), now=T0, raw_payload=raw)
    [(stored,)] = journal._db.raw.execute("SELECT payload FROM delivery_payloads").fetchall()
    assert isinstance(stored, bytes) and len(stored) < len(raw) // 4
    assert zstandard.ZstdDecompressor().decompress(stored) == raw
    [row] = journal.unfinished()
    assert row.payload == json.loads(raw)
    journal.finish("z", now=T0)
    assert journal._db.raw.execute("SELECT COUNT(*) FROM delivery_payloads").fetchone() == (0,)
    assert journal.get("z")["status"] == "done"  # type: ignore[index]
    journal.close()


def test_rows_of_the_first_schema_are_adopted_on_open(tmp_path: Path) -> None:
    """An upgrade from the three-table schema (0001): a pending job (its body stored as JSON text, as the
    earliest versions did) is replayed, a finished one and a bare dedup id stay duplicates."""
    db = tmp_path / "j.db"
    JobJournal.open(db).close()
    raw = sqlite3.connect(db)
    raw.executescript(
        """
        INSERT INTO webhook_deliveries VALUES ('legacy', 'issues', '2026-01-01T00:00:00+00:00');
        INSERT INTO webhook_deliveries VALUES ('done-before', 'issues', '2026-01-01T00:00:01+00:00');
        INSERT INTO webhook_deliveries VALUES ('no-work', 'push', '2026-01-01T00:00:02+00:00');
        INSERT INTO job_journal (delivery_id, event_name, action, installation_id, status, attempts, received_at)
          VALUES ('legacy', 'issues', 'opened', 4, 'pending', 1, '2026-01-01T00:00:00+00:00');
        INSERT INTO job_journal (delivery_id, event_name, action, installation_id, status, attempts, received_at)
          VALUES ('done-before', 'issues', 'opened', 4, 'done', 1, '2026-01-01T00:00:01+00:00');
        INSERT INTO job_payloads VALUES ('legacy', '{"action":"opened","n":"old"}');
        INSERT INTO job_payloads VALUES ('done-before', '{"action":"opened"}');
        """
    )
    raw.close()
    reopened = JobJournal.open(db)
    [row] = reopened.unfinished()
    assert (row.delivery_id, row.installation_id, row.attempts) == ("legacy", 4, 1)
    assert row.payload == {"action": "opened", "n": "old"}
    assert reopened.get("done-before")["status"] == "done"  # type: ignore[index]
    assert reopened.get("no-work") is None and reopened.seen("no-work")
    for delivery in ("legacy", "done-before", "no-work"):
        assert not reopened.accept(entry(delivery), now=T0 + timedelta(hours=1))
    left = reopened._db.raw.execute(
        "SELECT (SELECT COUNT(*) FROM webhook_deliveries) + (SELECT COUNT(*) FROM job_journal)"
        " + (SELECT COUNT(*) FROM job_payloads)"
    ).fetchone()
    assert left == (0,)
    reopened.close()
