"""``kodiai serve`` as a real child process: the one launcher every process-level test uses.

The server is started with ``--port 0``: the OS picks the port while the server binds it, and the test
reads it back from ``/proc/<pid>`` (the listening socket among the process's own file descriptors), so no
port is picked and released before the child binds it. Start-up waits for ``/health`` and fails at once,
with the log's tail, when the child exits; stopping is bounded (the signal, then SIGKILL after ``timeout``).
The child's output goes through a pipe that a thread copies to ``server.log`` (so a file-size limit put on
the child never stops its logging); the process is restartable on the same data (journal and log survive).

Presets keep each family of tests' environment: :class:`KodiaiProcess` (end to end: the fake model, the
real Claude Code CLI and the local embedder), :class:`KodiaiServe` (journal tests: test handlers from
tests/server, a short shutdown grace) and :class:`ServeProcess` (hostile clients: the hostile handlers and
a record file).
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Self

import httpx

from kodiai.webhook.signature import sign
from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from support.fake_github import FakeGitHub
from support.live_server import SECRET

E2E_SECRET = "e2e-webhook-secret"
#: The TLS context of every request made here (all to http:// URLs, so it is never used): built once. Without
#: it httpx builds one per call, loading the CA bundle (~60 ms of CPU), so each poll of ``/health`` or
#: ``/readiness`` in a wait loop cost that much.
TLS = httpx.create_ssl_context()
SERVER_HANDLERS = Path(__file__).resolve().parents[1] / "server"  # test handler modules (--handlers)
# Settings a developer's shell may hold that would leak into the child's configuration.
_FOREIGN_ENV = ("GITHUB_", "HTTP_", "WEBHOOK_", "ANTHROPIC_", "CLAUDE_")


def listening_port(pid: int) -> int | None:
    """The TCP port ``pid`` listens on (its own sockets only), or ``None`` yet."""
    sockets = listening_sockets(pid)
    return sockets[0][1] if sockets else None


def listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of each TCP socket ``pid`` listens on (its own sockets only), e.g.
    ``("127.0.0.1", 3000)`` or ``("0.0.0.0", 3000)``; IPv6 addresses in their compressed form.

    Polled while a server starts, so kept cheap: the socket tables (every socket of the network namespace,
    hundreds of lines while the suite runs) are read only once the process has a socket, and only the
    lines naming one of its sockets are split (parsing every line cost ~7 ms of CPU a poll)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        if not inodes:
            return []
        tables = [Path(f"/proc/{pid}/net/tcp").read_text(), Path(f"/proc/{pid}/net/tcp6").read_text()]
    except OSError:
        return []
    found = []
    for table in tables:
        for line in _lines_naming(table, inodes):
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].rsplit(":", 1)
                found.append((_proc_address(address), int(port, 16)))
    return found


def _lines_naming(table: str, inodes: set[str]) -> list[str]:
    """The lines of a /proc/net/tcp table that name one of ``inodes``."""
    return [line for line in table.splitlines() if any(f" {inode} " in line for inode in inodes)]


def _proc_address(hex_address: str) -> str:
    """/proc/net/tcp's address (32-bit words in host byte order) as text."""
    raw = b"".join(
        int(hex_address[i : i + 8], 16).to_bytes(4, sys.byteorder) for i in range(0, len(hex_address), 8)
    )
    return str(ipaddress.ip_address(raw))


class KodiaiServer:
    """One ``python -m kodiai.server`` over ``tmp``.

    ``host``: the ``--host`` option, or ``None`` to pass none (the server then picks the interface);
    ``handlers``: a ``--handlers`` spec (``module:function``, importable from ``pythonpath``);
    ``args``: more ``kodiai serve`` options (e.g. ``("--role", "worker")``);
    ``ready``: the ``/health`` statuses that count as started;
    ``strict_stop``: a child that ignores the stop signal for ``timeout`` fails the test (after SIGKILL);
    ``pipe_output``: the child's output goes through a pipe that a thread copies to ``server.log`` (a
    file-size limit put on the child then never stops its logging); otherwise the child writes the log
    itself (its own children, e.g. a CLI still running after ``kill -9``, never hold a pipe open);
    ``env``: overrides of the child's environment (the defaults below keep every store under ``tmp``)."""

    def __init__(
        self,
        tmp: Path,
        fake: FakeGitHub,
        *,
        host: str | None = "127.0.0.1",
        handlers: str | None = None,
        args: Iterable[str] = (),
        jobs_db: Path | None = None,
        secret: str = SECRET,
        pythonpath: Iterable[Path] = (),
        ready: tuple[int, ...] = (200, 503),
        strict_stop: bool = True,
        pipe_output: bool = False,
        default_event: str = "issues",
        **env: str,
    ) -> None:
        self.tmp = tmp
        self.host = host
        self.handlers = handlers
        self.args = tuple(args)
        self.jobs_db = jobs_db or tmp / "jobs.db"
        self.secret = secret
        self.ready = ready
        self.strict_stop = strict_stop
        self.pipe_output = pipe_output
        self.default_event = default_event
        self.log_path = tmp / "server.log"
        self.record_path = tmp / "record.txt"
        paths = [str(p) for p in pythonpath]
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_ENV)},
            "GITHUB_APP_ID": str(fake.app_id),
            "GITHUB_PRIVATE_KEY": fake.private_key_pem,
            "GITHUB_WEBHOOK_SECRET": secret,
            "GITHUB_API_URL": fake.url,
            "JOBS_DB_PATH": str(self.jobs_db),
            "TELEMETRY_DB_PATH": str(tmp / "telemetry.db"),
            "KNOWLEDGE_DB_PATH": str(tmp / "knowledge.db"),
            "LEARNING_MEMORY_URI": str(tmp / "memory.lance"),
            "WORKSPACE_ROOT": str(tmp / "ws"),
            "EMBEDDING_PROVIDER": "none",
            "LOG_LEVEL": "info",
            "SHUTDOWN_GRACE_SECONDS": "5",
            "HOME": str(tmp),
            **({"PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])} if paths else {}),
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0
        self._pump: threading.Thread | None = None
        self._log_read = 0  # bytes of the log already parsed into _log_entries
        self._log_entries: list[dict[str, Any]] = []
        self._start_entries = 0  # log entries written before the current start
        self._proc_looked = 0.0  # when bound_port last read /proc

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "kodiai.server",
            *(["--host", self.host] if self.host is not None else []),
            "--port",
            "0",
            "--env-file",
            str(self.tmp / "absent.env"),
            *(["--handlers", self.handlers] if self.handlers is not None else []),
            *self.args,
        ]

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the child without waiting for it (for tests that expect it to exit)."""
        self._start_entries = len(self.log_lines())  # this start's lines come after these
        self._proc_looked = 0.0
        with self.log_path.open("ab") as log:
            log.write(f"--- start {self.starts + 1} ---\n".encode())
        if self.pipe_output:
            self.proc = subprocess.Popen(
                self.command(), env=self.env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
            self._pump = threading.Thread(target=self._copy_output, args=(self.proc,), daemon=True)
            self._pump.start()
        else:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    self.command(), env=self.env, cwd=self.tmp, stdout=log, stderr=subprocess.STDOUT
                )
        self.starts += 1
        return self.proc

    def _copy_output(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with proc.stdout, self.log_path.open("ab", buffering=0) as log:
            for line in proc.stdout:
                log.write(line)

    def start(self, timeout: float = 180.0) -> Self:
        """Spawn and wait until ``/health`` answers one of ``ready`` (returns ``self``)."""
        self.spawn()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.started():
                return self
            time.sleep(0.05)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"kodiai serve did not start in {timeout} s:\n{self.log_text()[-3000:]}")

    def started(self) -> bool:
        """One look at the spawned child: ``True`` (and ``port`` set) once ``/health`` answers one of
        ``ready``; raises ``RuntimeError`` with the log's tail when the child has exited."""
        proc = self.proc
        assert proc is not None, "spawn() first"
        if proc.poll() is not None:
            self.proc = None
            self.wait_output()
            raise RuntimeError(f"kodiai serve exited with {proc.returncode}:\n{self.log_text()[-3000:]}")
        port = self.bound_port()
        if not port:
            return False
        try:
            answered = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2, verify=TLS).status_code
        except httpx.HTTPError:  # not listening yet
            return False
        if answered in self.ready:
            self.port = port
            return True
        return False

    def bound_port(self) -> int | None:
        """The port this start of the child serves on, once known: from its "Kodiai server started" line
        (logged just before it listens), else (a log level that hides that line) its listening socket
        in /proc, looked up at most every 0.5 s: reading the socket tables costs ~10 ms of CPU, and the
        wait loops poll every 20–50 ms."""
        for entry in self.log_lines()[self._start_entries :]:
            if entry.get("msg") == "Kodiai server started" and isinstance(entry.get("port"), int):
                return int(entry["port"])
        now = time.monotonic()
        if self.proc is None or now - self._proc_looked < 0.5:
            return None
        self._proc_looked = now
        return listening_port(self.proc.pid)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        """Signal the child and wait at most ``timeout`` (then SIGKILL); returns its exit code."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        try:
            if proc.poll() is None:
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
                    if self.strict_stop:
                        raise AssertionError(f"kodiai serve ignored signal {sig} for {timeout} s") from None
        finally:
            self.wait_output()
        return proc.returncode

    def wait_output(self, timeout: float = 10.0) -> None:
        """Wait until the exited child's output is all in ``server.log``."""
        if self._pump is not None:
            self._pump.join(timeout)
            self._pump = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_kib(self) -> int:
        """Resident set size now (``VmRSS`` of /proc/<pid>/status), in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def deliver(
        self, payload: dict[str, Any] | bytes, delivery: str | None = None, *, event: str | None = None
    ) -> httpx.Response:
        """POST a signed webhook (a JSON payload or exact body bytes)."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": event or self.default_event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(self.secret, body),
            "User-Agent": "GitHub-Hookshot/test",
        }
        return httpx.post(
            f"{self.url}/webhooks/github", content=body, headers=headers, timeout=15, verify=TLS
        )

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", timeout=10, verify=TLS)

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=5, verify=TLS).text

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def log_lines(self) -> list[dict[str, Any]]:
        """The JSON lines of the log so far. Each complete line is parsed once: waits poll this every 0.1 s,
        and re-parsing the whole log each time cost seconds of CPU per test."""
        if self.log_path.exists():
            with self.log_path.open("rb") as log:
                log.seek(self._log_read)
                chunk = log.read()
            complete = chunk.rfind(b"\n") + 1
            self._log_read += complete
            for line in chunk[:complete].decode("utf-8", errors="replace").splitlines():
                if line.startswith("{"):
                    try:
                        self._log_entries.append(json.loads(line))
                    except ValueError:
                        continue
        return list(self._log_entries)

    def wait_for_log(
        self, message: str, *, count: int = 1, timeout: float = 120.0, **fields: Any
    ) -> list[dict[str, Any]]:
        """Block until ``count`` log lines carry ``message`` (and the given fields)."""
        deadline = time.monotonic() + timeout
        while True:
            hits = [
                e
                for e in self.log_lines()
                if message in str(e.get("msg", "")) and all(e.get(k) == v for k, v in fields.items())
            ]
            if len(hits) >= count:
                return hits
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {count}× {message!r} {fields} in the log:\n{self.log_text()[-4000:]}")
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"kodiai serve exited:\n{self.log_text()[-4000:]}")
            time.sleep(0.1)

    def recorded(self) -> list[str]:
        """What the test handlers wrote to ``KODIAI_TEST_RECORD_FILE`` (when the preset sets it)."""
        return self.record_path.read_text().split() if self.record_path.exists() else []

    def journal(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` on the jobs database, read-only."""
        db = sqlite3.connect(f"file:{self.jobs_db}?mode=ro", uri=True, timeout=10)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def statuses(self) -> dict[str, str]:
        """delivery id → journal status."""
        return {str(d): str(s) for d, s in self.journal("SELECT delivery_id, status FROM delivery_journal")}


class KodiaiProcess(KodiaiServer):
    """End to end: the fake model behind the real Claude Code CLI, the real local embedder, the built-in
    handlers; ``/health`` must be 200; ``deliver`` defaults to ``pull_request``."""

    def __init__(
        self, tmp: Path, fake: FakeGitHub, model: FakeAnthropic, *, argv: tuple[str, ...] = (), **env: str
    ) -> None:
        (tmp / "home").mkdir(exist_ok=True)
        super().__init__(
            tmp,
            fake,
            host=None,
            args=argv,
            secret=E2E_SECRET,
            ready=(200,),
            strict_stop=False,
            default_event="pull_request",
        )
        self.env.update(
            {
                "WORKSPACE_ROOT": str(tmp / "workspaces"),
                "EMBEDDING_PROVIDER": "local",
                "HF_HUB_OFFLINE": "1",
                "ANTHROPIC_BASE_URL": model.url,
                "ANTHROPIC_API_KEY": FAKE_API_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0",
                "HOME": str(tmp / "home"),
                **env,
            }
        )


class KodiaiServe(KodiaiServer):
    """Journal tests (restart storms, full disk, damage): handlers from tests/server, a 0.5 s grace."""

    def __init__(
        self,
        tmp: Path,
        fake: FakeGitHub,
        *,
        handlers: str,
        jobs_db: Path | None = None,
        args: tuple[str, ...] = (),
        **env: str,
    ) -> None:
        super().__init__(
            tmp,
            fake,
            handlers=handlers,
            jobs_db=jobs_db,
            args=args,
            pythonpath=[SERVER_HANDLERS],
            pipe_output=True,
        )
        self.env.update({"SHUTDOWN_GRACE_SECONDS": "0.5", **env})


class ServeProcess(KodiaiServer):
    """Hostile-client tests: tests/server/hostile_handlers.py, which records each job in ``record.txt``;
    ``host=None`` passes no ``--host``."""

    def __init__(self, tmp: Path, fake: FakeGitHub, *, host: str | None = "127.0.0.1", **env: str) -> None:
        super().__init__(
            tmp,
            fake,
            host=host,
            handlers="hostile_handlers:register",
            pythonpath=[SERVER_HANDLERS],
            strict_stop=False,
        )
        self.env.update({"KODIAI_TEST_RECORD_FILE": str(self.record_path), **env})


def wait_until(predicate: Any, timeout: float, what: str, server: KodiaiServer | None = None) -> None:
    """Poll ``predicate`` (state with no event to wait on: a file, another process's database)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if server is not None and server.proc is not None and server.proc.poll() is not None:
            raise AssertionError(f"kodiai serve died while waiting for {what}:\n{server.log_text()[-3000:]}")
        if time.monotonic() > deadline:
            tail = server.log_text()[-3000:] if server is not None else ""
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{tail}")
        time.sleep(0.02)
