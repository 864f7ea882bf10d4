"""``kodiai serve`` as a real child process for the journal tests (restart storms, full disk, damage).

The server is started with ``--port 0``: the OS picks the port while the server binds it, and the test
reads it back from ``/proc/<pid>`` (the listening socket among the process's own file descriptors), so
no port is picked and released before the child binds it. Start-up fails at once, with the log's tail,
when the child exits; stopping is bounded (SIGTERM or SIGKILL, then SIGKILL after ``timeout``). The child's
output goes through a pipe that a thread copies to ``server.log`` (so a file-size limit put on the child
never stops its logging).
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
from pathlib import Path
from typing import Any

import httpx

from kodiai.webhook.signature import sign
from support.fake_github import FakeGitHub
from support.live_server import SECRET

HERE = Path(__file__).resolve().parent


def listening_port(pid: int) -> int | None:
    """The TCP port ``pid`` listens on (its own sockets only), or ``None`` yet."""
    sockets = listening_sockets(pid)
    return sockets[0][1] if sockets else None


def listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of each TCP socket ``pid`` listens on (its own sockets only), e.g.
    ``("127.0.0.1", 3000)`` or ``("0.0.0.0", 3000)``; IPv6 addresses in their compressed form."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        tables = [Path(f"/proc/{pid}/net/tcp").read_text(), Path(f"/proc/{pid}/net/tcp6").read_text()]
    except OSError:
        return []
    found = []
    for table in tables:
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].rsplit(":", 1)
                found.append((_proc_address(address), int(port, 16)))
    return found


def _proc_address(hex_address: str) -> str:
    """/proc/net/tcp's address (32-bit words in host byte order) as text."""
    raw = b"".join(
        int(hex_address[i : i + 8], 16).to_bytes(4, sys.byteorder) for i in range(0, len(hex_address), 8)
    )
    return str(ipaddress.ip_address(raw))


class KodiaiServe:
    """One ``python -m kodiai.server`` over ``tmp`` (restartable: the journal and the log survive)."""

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
        self.tmp = tmp
        self.args = args  # more `kodiai serve` options (e.g. --role worker)
        self.jobs_db = jobs_db or tmp / "jobs.db"
        self.log_path = tmp / "server.log"
        self.handlers = handlers
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HTTP_", "WEBHOOK_"))},
            "GITHUB_APP_ID": str(fake.app_id),
            "GITHUB_PRIVATE_KEY": fake.private_key_pem,
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": fake.url,
            "JOBS_DB_PATH": str(self.jobs_db),
            "TELEMETRY_DB_PATH": str(tmp / "telemetry.db"),
            "KNOWLEDGE_DB_PATH": str(tmp / "knowledge.db"),
            "LEARNING_MEMORY_URI": str(tmp / "memory.lance"),
            "WORKSPACE_ROOT": str(tmp / "ws"),
            "EMBEDDING_PROVIDER": "none",
            "LOG_LEVEL": "info",
            "SHUTDOWN_GRACE_SECONDS": "0.5",
            "HOME": str(tmp),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0
        self._pump: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the child without waiting for it (for tests that expect it to exit)."""
        with self.log_path.open("ab") as log:
            log.write(f"--- start {self.starts + 1} ---\n".encode())
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kodiai.server",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--env-file",
                str(self.tmp / "absent.env"),
                "--handlers",
                self.handlers,
                *self.args,
            ],
            env=self.env,
            cwd=self.tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._pump = threading.Thread(target=self._copy_output, args=(self.proc,), daemon=True)
        self._pump.start()
        self.starts += 1
        return self.proc

    def _copy_output(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with proc.stdout, self.log_path.open("ab", buffering=0) as log:
            for line in proc.stdout:
                log.write(line)

    def start(self, timeout: float = 180.0) -> KodiaiServe:
        proc = self.spawn()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.proc = None
                self.wait_output()
                raise RuntimeError(f"kodiai serve exited with {proc.returncode}:\n{self.log_text()[-3000:]}")
            port = listening_port(proc.pid)
            if port:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code in (200, 503):
                        self.port = port
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.05)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"kodiai serve did not start in {timeout} s:\n{self.log_text()[-3000:]}")

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

    def deliver(self, body: bytes, delivery: str, *, event: str = "issues") -> httpx.Response:
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": sign(SECRET, body),
            "User-Agent": "GitHub-Hookshot/test",
        }
        return httpx.post(f"{self.url}/webhooks/github", content=body, headers=headers, timeout=15)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", timeout=10)

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def log_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_text().splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def journal(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` on the jobs database, read-only."""
        db = sqlite3.connect(f"file:{self.jobs_db}?mode=ro", uri=True, timeout=10)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def statuses(self) -> dict[str, str]:
        return {str(d): str(s) for d, s in self.journal("SELECT delivery_id, status FROM delivery_journal")}


def wait_until(predicate: Any, timeout: float, what: str, server: KodiaiServe | None = None) -> None:
    """Poll ``predicate`` (state with no event to wait on: a file, another process's database)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if server is not None and server.proc is not None and server.proc.poll() is not None:
            raise AssertionError(f"kodiai serve died while waiting for {what}:\n{server.log_text()[-3000:]}")
        if time.monotonic() > deadline:
            tail = server.log_text()[-3000:] if server is not None else ""
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{tail}")
        time.sleep(0.02)
