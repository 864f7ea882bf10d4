"""A COMMIT that fails rolls the transaction back, so the shared connection stays usable."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from kodiai.storage.connection import LockedConnection, connect

SCHEMA = """
CREATE TABLE parent (id INTEGER PRIMARY KEY);
CREATE TABLE child (
  id INTEGER PRIMARY KEY,
  parent_id INTEGER NOT NULL REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED
);
"""


@pytest.fixture
def db(tmp_path: Path) -> Iterator[LockedConnection]:
    conn = connect(tmp_path / "t.db", foreign_keys=True)
    conn.executescript(SCHEMA)
    locked = LockedConnection(conn)
    yield locked
    locked.close()


def test_a_failing_commit_is_rolled_back_and_the_connection_stays_usable(db: LockedConnection) -> None:
    # A deferred foreign key is checked at COMMIT: the COMMIT itself fails and SQLite keeps the
    # transaction open.
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"), db.transaction() as conn:
        conn.execute("INSERT INTO child (id, parent_id) VALUES (1, 42)")
    assert not db.raw.in_transaction
    assert db.query("SELECT COUNT(*) AS n FROM child")[0]["n"] == 0  # the failed block left nothing
    with db.transaction() as conn:  # the next transaction can begin
        conn.execute("INSERT INTO parent (id) VALUES (42)")
        conn.execute("INSERT INTO child (id, parent_id) VALUES (1, 42)")
    assert db.query("SELECT COUNT(*) AS n FROM child")[0]["n"] == 1


def test_an_error_inside_the_block_still_rolls_back(db: LockedConnection) -> None:
    with pytest.raises(RuntimeError), db.transaction() as conn:
        conn.execute("INSERT INTO parent (id) VALUES (1)")
        raise RuntimeError("boom")
    assert db.query("SELECT COUNT(*) AS n FROM parent")[0]["n"] == 0
    assert not db.raw.in_transaction
