"""The PostgreSQL test server leaves nothing behind: its process stops and its directory is removed; as root
its files belong to the ``postgres`` user (initdb refuses root)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psycopg

from support.postgres import PostgresServer


def test_server_starts_serves_and_leaves_nothing_behind() -> None:
    server = PostgresServer.start()
    try:
        pid = int((server.datadir / "postmaster.pid").read_text().splitlines()[0])
        if os.geteuid() == 0:
            assert server.datadir.stat().st_uid != 0
        with psycopg.connect(server.url()) as conn:
            assert conn.execute("SELECT current_setting('fsync')").fetchone() == ("off",)
    finally:
        server.stop()
    assert not server.root.exists()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _running(pid):
        time.sleep(0.05)
    assert not _running(pid)


def _running(pid: int) -> bool:
    """Alive and not a zombie (a daemon's exit is reaped by whatever init the machine has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
