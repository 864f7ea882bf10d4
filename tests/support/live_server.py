"""Run the real Kodiai app (or any ASGI app) under uvicorn on 127.0.0.1 in a thread, for HTTP tests.

Also: signing helpers for webhook deliveries and a thread-safe recording handler that goes through the
real job lanes, so tests can wait for an *event* (a condition variable), never sleep.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from kodiai.github.app_auth import GitHubApp
from kodiai.github.retry import GitHubRetry
from kodiai.jobs.lanes import JobContext
from kodiai.server.app import create_app
from kodiai.server.runtime import Runtime, ServerConfig, build_runtime
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.signature import sign
from support.loopback import LoopbackServer

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "webhooks"
SECRET = "test-webhook-secret"


class LiveServer(LoopbackServer):
    """The real Kodiai app on loopback (see :class:`support.loopback.LoopbackServer`)."""


def signed_headers(
    body: bytes, *, event: str, delivery: str | None = None, secret: str = SECRET
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(secret, body),
        "User-Agent": "GitHub-Hookshot/test",
    }


@dataclass
class Recorder:
    """Records (delivery id, handler name) as handlers finish; tests wait on it."""

    records: list[tuple[str, str]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def add(self, delivery: str, handler: str) -> None:
        with self.cond:
            self.records.append((delivery, handler))
            self.cond.notify_all()

    def wait_for(self, predicate: Callable[[list[tuple[str, str]]], bool], timeout: float = 10.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self.records), timeout=timeout)

    def wait_count(self, n: int, timeout: float = 10.0) -> bool:
        return self.wait_for(lambda r: len(r) >= n, timeout)


def recording_handler(
    runtime: Runtime,
    recorder: Recorder,
    name: str,
    *,
    gate: threading.Event | None = None,
    fail: bool = False,
    job_type: str = "test-job",
) -> Callable[[WebhookEvent], Any]:
    """A handler that enqueues a job on the real lanes; the job optionally waits for ``gate``."""

    async def handler(event: WebhookEvent) -> None:
        async def job() -> None:
            if gate is not None:
                await asyncio.to_thread(gate.wait, 30)
            if fail:
                raise RuntimeError(f"{name} failed on purpose")
            recorder.add(event.id, name)

        await runtime.queue.enqueue(
            event.installation_id,
            job,
            JobContext(delivery_id=event.id, event_name=event.name, action=event.action, job_type=job_type),
        )

    handler.__name__ = name
    return handler


def make_config(tmp_path: Path, fake_url: str, **overrides: Any) -> ServerConfig:
    values: dict[str, Any] = {
        "app_id": "4242",
        "private_key": None,
        "webhook_secret": SecretStr(SECRET),
        "github_api_url": fake_url,
        "jobs_db_path": str(tmp_path / "jobs.db"),
        "workspace_root": str(tmp_path / "ws"),
        "shutdown_grace_seconds": 5.0,
    }
    values.update(overrides)
    return ServerConfig(**values)


def make_github(fake: Any, **kwargs: Any) -> GitHubApp:
    retry = GitHubRetry(total=3, backoff_factor=0.01, max_wait=5)
    return GitHubApp(fake.app_id, fake.private_key_pem, base_url=fake.url, retry=retry, **kwargs)


def start_kodiai(
    config: ServerConfig, github: GitHubApp | None, register: Callable[[Runtime], None] | None = None
) -> tuple[LiveServer, Runtime]:
    runtime = build_runtime(config, github=github, register_handlers=register)
    server = LiveServer(create_app(runtime)).start()
    return server, runtime


def fixture_payloads() -> list[tuple[str, str, bytes]]:
    """(file name, event name, exact bytes) for every webhook fixture."""
    out = []
    for path in sorted(FIXTURES.glob("*.json")):
        out.append((path.name, path.name.split(".", 1)[0], path.read_bytes()))
    return out


def payload_json(raw: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(raw)
    return value


def client(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=10)


def eventually(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01) -> bool:
    """Poll ``predicate`` until true (for state with no event to wait on, e.g. a metric or a file)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
