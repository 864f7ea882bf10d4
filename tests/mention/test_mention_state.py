"""Persisted mention state on real SQLite files and on a real PostgreSQL (``DATABASE_URL``): shared between
stores (workers, processes), TTL, pruning, caps, restart. Tests taking ``db`` run on both."""

from __future__ import annotations

import multiprocessing
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kodiai.jobs.journal import JobJournal
from kodiai.mention.state import (
    MAX_ENTRIES,
    STATE_WINDOW,
    WRITE_LOCK_TTL,
    MentionState,
    rate_limit_retry_seconds,
)
from kodiai.storage.additive import check_migration_file
from kodiai.storage.migrations import MIGRATIONS_DIR, migration_status
from support.db_backends import DbBackend, db_backend, open_target  # noqa: F401  (db_backend: the fixture)

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
KEY = "kodiai-write-output:v1:inst-42:acme/repo:pr-101:comment-555:keyword-apply"


@pytest.fixture
def db(db_backend: DbBackend) -> str:  # noqa: F811  (the imported fixture)
    """The jobs database: a file in a directory still to be made, or the PostgreSQL URL."""
    if db_backend.url is not None:
        return db_backend.url
    return str(db_backend.tmp_path / "data" / "kodiai-jobs.db")


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "kodiai-jobs.db"


def _rows(db: str, sql: str) -> list[tuple[object, ...]]:
    """Read through a second connection."""
    conn = open_target(db, "jobs")
    try:
        return conn.fetch_all(sql)
    finally:
        conn.close()


def test_defaults() -> None:
    assert timedelta(minutes=30) == WRITE_LOCK_TTL
    assert timedelta(hours=24) == STATE_WINDOW
    assert MAX_ENTRIES == 10_000


def test_migration_is_additive_and_applied_with_the_jobs_database(sqlite_db: Path) -> None:
    db = sqlite_db
    assert check_migration_file(MIGRATIONS_DIR / "jobs" / "0003_mention_state.sql") == []
    MentionState.open(db).close()
    states = {s.id: s.applied for s in migration_status(db, "jobs")}
    assert states["0003_mention_state"] is True
    # the journal opens the same file afterwards without trouble, and vice versa on a fresh file
    JobJournal.open(db).close()
    other = db.parent / "other.db"
    JobJournal.open(other).close()
    with MentionState.open(other) as state:
        assert state.try_acquire_write(KEY, "w1", T0)


# ---- in-flight write keys --------------------------------------------------------------------------


def test_two_stores_on_one_file_see_each_others_keys(db: str) -> None:
    with MentionState.open(db) as a, MentionState.open(db) as b:
        assert a.try_acquire_write(KEY, "worker-a", T0)
        assert not b.try_acquire_write(KEY, "worker-b", T0 + timedelta(seconds=1))
        assert not a.try_acquire_write(KEY, "worker-a", T0 + timedelta(seconds=1))  # held is held
        assert b.write_holder(KEY, T0) == "worker-a"
        assert not b.release_write(KEY, "worker-b")  # not its key
        assert b.write_holder(KEY, T0) == "worker-a"
        assert a.release_write(KEY, "worker-a")
        assert not a.release_write(KEY, "worker-a")
        assert b.try_acquire_write(KEY, "worker-b", T0 + timedelta(seconds=2))
        assert a.try_acquire_write("another-key", "worker-a", T0 + timedelta(seconds=2))


def test_a_crashed_holder_expires_after_the_ttl(db: str) -> None:
    with MentionState.open(db) as a, MentionState.open(db) as b:
        assert a.try_acquire_write(KEY, "crashed", T0)
        just_before = T0 + WRITE_LOCK_TTL - timedelta(microseconds=1)
        assert not b.try_acquire_write(KEY, "worker-b", just_before)
        assert b.try_acquire_write(KEY, "worker-b", T0 + WRITE_LOCK_TTL)
        assert b.write_holder(KEY, T0 + WRITE_LOCK_TTL) == "worker-b"
        # the expired holder waking up cannot release the new holder's key
        assert not a.release_write(KEY, "crashed")
        assert b.write_holder(KEY, T0 + WRITE_LOCK_TTL) == "worker-b"


def test_custom_ttl_and_its_validation(db: str) -> None:
    with MentionState.open(db) as state:
        assert state.try_acquire_write(KEY, "a", T0, ttl=timedelta(seconds=5))
        assert not state.try_acquire_write(KEY, "b", T0 + timedelta(seconds=4))
        assert state.try_acquire_write(KEY, "b", T0 + timedelta(seconds=5))
        with pytest.raises(ValueError):
            state.try_acquire_write("k", "a", T0, ttl=timedelta(0))


def test_naive_times_are_refused(db: str) -> None:
    with MentionState.open(db) as state, pytest.raises(ValueError):
        state.try_acquire_write(KEY, "a", datetime(2025, 1, 1))


def _contend(path: str, start: str, index: int, results: multiprocessing.Queue[tuple[int, bool]]) -> None:
    with MentionState.open(path) as state:
        results.put((index, state.try_acquire_write(KEY, f"proc-{index}", datetime.fromisoformat(start))))


def test_exactly_one_of_several_processes_acquires(sqlite_db: Path) -> None:
    """SQLite's busy timeout across processes. (On PostgreSQL two stores are two pools, i.e. two sessions of
    the server, as two processes would be: the other tests taking ``db`` cover it without spawning.)"""
    db = str(sqlite_db)
    MentionState.open(db).close()  # migrate once up front
    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[tuple[int, bool]] = ctx.Queue()
    procs = [ctx.Process(target=_contend, args=(str(db), T0.isoformat(), i, results)) for i in range(4)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    assert sorted(won for _, won in outcomes) == [False, False, False, True]
    winner = next(i for i, won in outcomes if won)
    with MentionState.open(db) as state:
        assert state.write_holder(KEY, T0) == f"proc-{winner}"


# ---- rate limit ----------------------------------------------------------------------------------


def test_retry_seconds() -> None:
    assert rate_limit_retry_seconds(None, T0, 60) is None
    assert rate_limit_retry_seconds(T0, T0, 0) is None
    assert rate_limit_retry_seconds(T0, T0, 60) == 60
    assert rate_limit_retry_seconds(T0, T0 + timedelta(seconds=0.5), 60) == 60  # ceil(59.5)
    assert rate_limit_retry_seconds(T0, T0 + timedelta(seconds=59), 60) == 1
    assert rate_limit_retry_seconds(T0, T0 + timedelta(seconds=59.999), 60) == 1
    assert rate_limit_retry_seconds(T0, T0 + timedelta(seconds=60), 60) is None
    assert rate_limit_retry_seconds(T0, T0 + timedelta(seconds=1), 2.5) == 2  # ceil(1.5)
    assert rate_limit_retry_seconds(T0 + timedelta(seconds=30), T0, 60) == 60  # future stamp: one interval


def test_record_and_read_the_last_write_across_stores(db: str) -> None:
    scope = "42:acme/repo"
    with MentionState.open(db) as a, MentionState.open(db) as b:
        assert b.last_write_at(scope) is None
        a.record_write(scope, T0)
        assert b.last_write_at(scope) == T0  # microseconds survive
        b.record_write(scope, T0 + timedelta(seconds=10))
        assert a.last_write_at(scope) == T0 + timedelta(seconds=10)
        a.record_write(scope, T0 + timedelta(seconds=5))  # an older stamp never moves it back
        assert a.last_write_at(scope) == T0 + timedelta(seconds=10)
        assert rate_limit_retry_seconds(a.last_write_at(scope), T0 + timedelta(seconds=40), 60) == 30


def test_rate_entries_older_than_24h_are_pruned(db: str) -> None:
    with MentionState.open(db) as state:
        state.record_write("1:a/old", T0)
        state.record_write("1:a/edge", T0 + timedelta(seconds=1))
        later = T0 + STATE_WINDOW + timedelta(seconds=1)
        assert state.last_write_at("1:a/old", later) is None  # already counts as gone
        assert state.last_write_at("1:a/edge", later) is not None  # exactly 24 h old: kept
        state.record_write("1:a/new", later)
        assert state.last_write_at("1:a/old") is None  # and is now deleted
        assert state.last_write_at("1:a/edge") == T0 + timedelta(seconds=1)
        assert state.last_write_at("1:a/new") == later


def test_rate_entries_are_capped_oldest_first(db: str) -> None:
    with MentionState.open(db, max_entries=3) as state:
        for i in range(5):
            state.record_write(f"1:o/r{i}", T0 + timedelta(seconds=i))
        kept = [f"1:o/r{i}" for i in range(5) if state.last_write_at(f"1:o/r{i}") is not None]
        assert kept == ["1:o/r2", "1:o/r3", "1:o/r4"]
        state.record_write("1:o/r2", T0 + timedelta(seconds=10))  # refreshed: now the newest
        state.record_write("1:o/r5", T0 + timedelta(seconds=11))
        kept = [f"1:o/r{i}" for i in range(6) if state.last_write_at(f"1:o/r{i}") is not None]
        assert kept == ["1:o/r2", "1:o/r4", "1:o/r5"]


# ---- conversation turns ----------------------------------------------------------------------------


def test_turns_count_up_across_stores(db: str) -> None:
    key = "acme/repo#7"
    with MentionState.open(db) as a, MentionState.open(db) as b:
        assert a.turn_count(key, T0) == 0
        assert a.increment_turn(key, T0) == 1
        assert b.increment_turn(key, T0 + timedelta(minutes=1)) == 2
        assert a.turn_count(key, T0 + timedelta(minutes=2)) == 2
        assert b.turn_count("acme/repo#8", T0) == 0


def test_turns_untouched_for_24h_count_as_gone(db: str) -> None:
    key = "acme/repo#7"
    with MentionState.open(db) as state:
        state.increment_turn(key, T0)
        state.increment_turn(key, T0 + timedelta(hours=1))
        touched = T0 + timedelta(hours=1)
        assert state.turn_count(key, touched + STATE_WINDOW) == 2  # exactly 24 h: still there
        assert state.turn_count(key, touched + STATE_WINDOW + timedelta(microseconds=1)) == 0
        assert state.increment_turn(key, touched + STATE_WINDOW + timedelta(seconds=1)) == 1  # starts again


def test_turn_entries_are_pruned_and_capped(db: str) -> None:
    with MentionState.open(db, max_entries=2) as state:
        state.increment_turn("o/r#1", T0)
        state.increment_turn("o/r#2", T0 + timedelta(seconds=1))
        state.increment_turn("o/r#2", T0 + timedelta(seconds=2))
        state.increment_turn("o/r#3", T0 + timedelta(seconds=3))
        assert [state.turn_count(f"o/r#{i}", T0) for i in (1, 2, 3)] == [0, 2, 1]
        far = T0 + STATE_WINDOW + timedelta(seconds=10)
        state.increment_turn("o/r#4", far)
        assert _rows(db, "SELECT pr_key FROM mention_conversation_turns") == [("o/r#4",)]


# ---- restart --------------------------------------------------------------------------------------


def test_state_survives_close_and_reopen(db: str) -> None:
    state = MentionState.open(db)
    assert state.try_acquire_write(KEY, "w1", T0)
    state.record_write("42:acme/repo", T0)
    state.increment_turn("acme/repo#7", T0)
    state.close()
    state.close()  # harmless twice
    with pytest.raises(sqlite3.ProgrammingError):
        state.turn_count("acme/repo#7", T0)

    with MentionState.open(db) as reopened:
        assert not reopened.try_acquire_write(KEY, "w2", T0 + timedelta(minutes=1))
        assert reopened.write_holder(KEY, T0) == "w1"
        assert reopened.last_write_at("42:acme/repo") == T0
        assert reopened.turn_count("acme/repo#7", T0) == 1


def test_prune_clears_everything_expired(db: str) -> None:
    with MentionState.open(db) as state:
        state.try_acquire_write(KEY, "w1", T0)
        state.record_write("42:acme/repo", T0)
        state.increment_turn("acme/repo#7", T0)
        state.prune(T0 + STATE_WINDOW + timedelta(seconds=1))
        for table in ("mention_write_locks", "mention_write_rate", "mention_conversation_turns"):
            assert _rows(db, f"SELECT COUNT(*) FROM {table}") == [(0,)]


def test_the_owner_takes_its_key_back_and_others_still_wait(db: str) -> None:
    """A delivery replayed after its process died while holding the key (same owner token) continues
    at once, with a renewed expiry; another owner still sees the key held."""
    path = db
    with MentionState.open(path) as crashed, MentionState.open(path) as restarted:
        assert crashed.try_acquire_write(KEY, "delivery-1", T0)
        assert not restarted.acquire_or_resume_write(KEY, "delivery-2", T0 + timedelta(seconds=5))
        assert restarted.acquire_or_resume_write(KEY, "delivery-1", T0 + timedelta(seconds=5))
        assert not restarted.try_acquire_write(KEY, "delivery-2", T0 + timedelta(minutes=29, seconds=30))
        assert restarted.release_write(KEY, "delivery-1")
        assert restarted.acquire_or_resume_write(KEY, "delivery-2", T0 + timedelta(seconds=6))
