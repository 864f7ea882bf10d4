"""The end-to-end stack: ``kodiai serve`` as a real process between a fake GitHub and a fake model.

- GitHub: :class:`support.fake_github.FakeGitHub` with the PR routes and git smart HTTP
  (``git http-backend``), so the server clones over HTTP with the installation token header.
- The model: :class:`support.fake_anthropic.FakeAnthropic`; the server runs the real Claude Code CLI
  bundled with claude-agent-sdk, pointed at it by ``ANTHROPIC_BASE_URL``.
- Kodiai: ``python -m kodiai.server`` with its own SQLite files, LanceDB directory and workspace root
  under the test's temp dir, the real local embedder, and JSON log lines in ``server.log``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from kodiai.webhook.signature import sign
from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from support.fake_github import FakeGitHub
from support.gitrepo import BareRepo

SECRET = "e2e-webhook-secret"
OWNER, REPO, INSTALLATION = "acme", "widgets", 42


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class KodiaiProcess:
    """One ``kodiai serve`` process; restartable on the same data (the job journal survives)."""

    def __init__(
        self, tmp: Path, fake: FakeGitHub, model: FakeAnthropic, *, argv: tuple[str, ...] = (), **env: str
    ) -> None:
        self.tmp = tmp
        self.argv = argv  # extra command-line options, e.g. ("--role", "worker")
        self.log_path = tmp / "server.log"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ANTHROPIC_", "CLAUDE_"))},
            "GITHUB_APP_ID": str(fake.app_id),
            "GITHUB_PRIVATE_KEY": fake.private_key_pem,
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_API_URL": fake.url,
            "JOBS_DB_PATH": str(tmp / "jobs.db"),
            "TELEMETRY_DB_PATH": str(tmp / "telemetry.db"),
            "KNOWLEDGE_DB_PATH": str(tmp / "knowledge.db"),
            "LEARNING_MEMORY_URI": str(tmp / "memory.lance"),
            "WORKSPACE_ROOT": str(tmp / "workspaces"),
            "EMBEDDING_PROVIDER": "local",
            "HF_HUB_OFFLINE": "1",
            "LOG_LEVEL": "info",
            "SHUTDOWN_GRACE_SECONDS": "5",
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "HOME": str(tmp / "home"),
            **env,
        }
        (tmp / "home").mkdir(exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._log_read = 0  # bytes of the log already parsed into _log_entries
        self._log_entries: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> KodiaiProcess:
        self.port = free_port()
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kodiai.server",
                "--port",
                str(self.port),
                "--env-file",
                str(self.tmp / "none.env"),
                *self.argv,
            ],
            env=self.env,
            cwd=self.tmp,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"kodiai serve exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}"
                )
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"kodiai serve did not answer /health:\n{self.log_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        code = self.proc.returncode
        self.proc = None
        return code

    def deliver(
        self, payload: dict[str, Any], *, event: str = "pull_request", delivery: str | None = None
    ) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(SECRET, body),
            "User-Agent": "GitHub-Hookshot/e2e",
        }
        return httpx.post(f"{self.url}/webhooks/github", content=body, headers=headers, timeout=10)

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

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=5).text


def pull_payload(
    repo: BareRepo,
    number: int,
    *,
    head_sha: str,
    base_sha: str,
    branch: str,
    title: str,
    action: str = "opened",
    author: str = "alice",
    additions: int = 10,
    deletions: int = 0,
    delivery_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``pull_request`` webhook for a same-repository PR of ``repo``."""
    base_repo = {"name": repo.name, "full_name": f"{repo.owner}/{repo.name}", "owner": {"login": repo.owner}}
    return {
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "title": title,
            "body": "Please review.",
            "draft": False,
            "state": "open",
            "user": {"login": author, "type": "User"},
            "author_association": "MEMBER",
            "head": {"ref": branch, "sha": head_sha, "repo": base_repo},
            "base": {"ref": "main", "sha": base_sha, "repo": base_repo},
            "labels": [],
            "additions": additions,
            "deletions": deletions,
            "commits": 1,
        },
        "repository": {**base_repo, "id": 7, "private": False, "default_branch": "main"},
        "installation": {"id": INSTALLATION},
        "sender": {"login": author, "type": "User"},
        **(delivery_extra or {}),
    }
