"""A real PostgreSQL server for the tests, from Debian's package: no Docker, no server left behind.

One server per test session (per xdist worker), started only when a test asks for it: ``initdb`` into a
fresh directory under the system temp dir and ``pg_ctl start`` on a free loopback port, with its unix socket
in that directory too. ``initdb`` refuses to run as root, so as root every server command runs as the
``postgres`` system user (``runuser``) and the directory is handed to that user. Durability is switched off
(``fsync``, ``synchronous_commit``, ``full_page_writes``): a test server never outlives its run.

The session migrates one database once; each test gets it with no rows (every table emptied before and
after the test, identity sequences restarted: ~15 ms, where a fresh clone of a template database costs
~0.3 s). A test that changes the schema gets a database of its own. The Makefile installs the
``postgresql`` package when the binaries are missing.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

SUPERUSER = "kodiai_test"
SERVER_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
    "-c shared_buffers=32MB -c log_min_messages=warning"
)


def postgres_bindir() -> Path | None:
    """Where ``initdb``/``pg_ctl`` are: ``pg_config --bindir``, else the newest ``/usr/lib/postgresql/*/bin``,
    else ``PATH`` (Debian does not put them on ``PATH``)."""
    candidates: list[Path] = []
    if shutil.which("pg_config"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
            candidates.append(Path(out.stdout.strip()))
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True
    )
    candidates += [Path(p) for p in versions]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """One running server: ``url(db)`` for a database on it; :meth:`stop` removes every trace."""

    bindir: Path
    root: Path
    port: int
    _as_user: list[str] = field(default_factory=list)
    _counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        result = subprocess.run(
            [*self._as_user, *args], capture_output=True, text=True, timeout=120, cwd=self.root
        )
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{args[0]} failed ({result.returncode}): {result.stderr or result.stdout}\n{tail}"
            )

    @classmethod
    def start(cls) -> PostgresServer:
        bindir = postgres_bindir()
        if bindir is None:
            raise RuntimeError(
                "PostgreSQL server binaries (initdb, pg_ctl) not found: `make test` installs Debian's "
                "'postgresql' package, or run `apt-get install postgresql`"
            )
        root = Path(tempfile.mkdtemp(prefix="kodiai-pg-"))
        as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(root, user.pw_uid, user.pw_gid)
            as_user = ["runuser", "-u", "postgres", "--"]
        server = cls(bindir=bindir, root=root, port=free_port(), _as_user=as_user)
        try:
            server._run(
                str(bindir / "initdb"),
                "-D", str(server.datadir),
                "-U", SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            )  # fmt: skip
            server._run(
                str(bindir / "pg_ctl"),
                "-D", str(server.datadir),
                "-l", str(root / "server.log"),
                "-w",
                "-t", "60",
                "-o", f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 {SERVER_OPTIONS}",
                "start",
            )  # fmt: skip
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return server

    def stop(self) -> None:
        """Stop at once (nothing to keep) and remove the directory."""
        with contextlib.suppress(RuntimeError, subprocess.SubprocessError, OSError):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def admin(self, sql: str) -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE) on the maintenance database."""
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self) -> str:
        """A new empty database; returns its name."""
        name = f"t_{os.getpid()}_{next(self._counter)}"
        self.admin(f"CREATE DATABASE {name} TEMPLATE template0")
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def empty_all_tables(url: str) -> None:
    """Delete every row of every table but yoyo's and restart the identity sequences: the database is then
    as the migrations left it (~15 ms, where cloning a template database takes ~0.3 s). Foreign keys are not
    checked meanwhile (``session_replication_role = replica``: the server's superuser)."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename NOT LIKE '%yoyo%'"
            )
        ]
        sequences = [
            str(r[0])
            for r in conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema()")
        ]
        statements = [
            "SET session_replication_role = replica",
            *(f'DELETE FROM "{table}"' for table in tables),
            *(f'ALTER SEQUENCE "{seq}" RESTART' for seq in sequences),
            "SET session_replication_role = DEFAULT",
        ]
        conn.execute("; ".join(statements))  # type: ignore[arg-type]


# --- fixtures (imported by tests/conftest.py) --------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server, started on first use and removed at the end."""
    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def _postgres_migrated(postgres_server: PostgresServer) -> str:
    """One database of the session with every Kodiai migration applied (telemetry, knowledge, jobs)."""
    from kodiai.storage.migrations import apply_all_postgres_migrations

    name = postgres_server.create_database()
    url = postgres_server.url(name)
    apply_all_postgres_migrations(url)
    return url


@pytest.fixture
def postgres_url(_postgres_migrated: str) -> Iterator[str]:
    """``DATABASE_URL`` of a fully migrated database with no rows, emptied again after the test. A test that
    changes the schema takes :func:`empty_postgres_url` instead."""
    empty_all_tables(_postgres_migrated)
    try:
        yield _postgres_migrated
    finally:
        empty_all_tables(_postgres_migrated)


@pytest.fixture
def empty_postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A database of its own without any migration (migration tests, schema changes); dropped after."""
    name = postgres_server.create_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)
