"""``kodiai serve`` as a real child process on an OS-chosen port, for the hostile-client tests.

The server binds ``--port 0`` itself and logs the port it got ("Kodiai server started"), so there is no
pick-then-bind race; start-up waits on that log line and fails at once if the process dies.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from support.fake_github import FakeGitHub
from support.live_server import SECRET

HERE = Path(__file__).resolve().parent


class ServeProcess:
    """One ``python -m kodiai.server`` with the given extra environment (e.g. shortened HTTP timeouts).

    ``host``: the ``--host`` option, or ``None`` to pass none (the server then picks the interface)."""

    def __init__(self, tmp: Path, fake: FakeGitHub, *, host: str | None = "127.0.0.1", **env: str) -> None:
        self.tmp = tmp
        self.host = host
        self.log_path = tmp / "server.log"
        self.record_path = tmp / "record.txt"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HTTP_", "WEBHOOK_"))},
            "GITHUB_APP_ID": str(fake.app_id),
            "GITHUB_PRIVATE_KEY": fake.private_key_pem,
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": fake.url,
            "JOBS_DB_PATH": str(tmp / "jobs.db"),
            "TELEMETRY_DB_PATH": str(tmp / "telemetry.db"),
            "KNOWLEDGE_DB_PATH": str(tmp / "knowledge.db"),
            "LEARNING_MEMORY_URI": str(tmp / "memory.lance"),
            "WORKSPACE_ROOT": str(tmp / "ws"),
            "EMBEDDING_PROVIDER": "none",
            "LOG_LEVEL": "info",
            "SHUTDOWN_GRACE_SECONDS": "5",
            "HOME": str(tmp),
            "KODIAI_TEST_RECORD_FILE": str(self.record_path),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 120.0) -> ServeProcess:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kodiai.server",
                    *(["--host", self.host] if self.host is not None else []),
                    "--port",
                    "0",
                    "--env-file",
                    str(self.tmp / "absent.env"),
                    "--handlers",
                    "hostile_handlers:register",
                ],
                env=self.env,
                cwd=self.tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"kodiai serve exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}"
                )
            started = [e for e in self.log_lines() if e.get("msg") == "Kodiai server started"]
            if started:
                self.port = int(started[-1]["port"])
                return self
            time.sleep(0.05)
        raise RuntimeError(f"kodiai serve did not start:\n{self.log_text()[-3000:]}")

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        code = self.proc.returncode
        self.proc = None
        return code

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_kib(self) -> int:
        """Resident set size now (``VmRSS`` of /proc/<pid>/status), in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

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

    def recorded(self) -> list[str]:
        return self.record_path.read_text().split() if self.record_path.exists() else []

    def journal_statuses(self) -> dict[str, str]:
        """delivery id → journal status, read from the jobs database (read-only)."""
        db = sqlite3.connect(f"file:{self.tmp / 'jobs.db'}?mode=ro", uri=True, timeout=10)
        try:
            rows = db.execute("SELECT delivery_id, status FROM delivery_journal").fetchall()
        finally:
            db.close()
        return {str(d): str(s) for d, s in rows}
