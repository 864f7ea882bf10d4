"""Test-only handlers for the delivery-guarantee tests (``kodiai serve --handlers storm_handlers:register``).

An ``issues.opened`` delivery gets one job on the real lanes that does what a real handler does, reduced
to its delivery-guarantee shape:

1. append ``start <delivery>`` to ``KODIAI_TEST_RECORD_FILE`` (fsync'd; when it is set);
2. with ``KODIAI_TEST_GATE`` set, wait until that file exists (the test releases the jobs);
3. read the issue's comments on the fake GitHub and look for this delivery's marker (as the review
   handler looks for its review output marker), sleep ``KODIAI_TEST_JOB_SECONDS``, and post the comment
   only when the marker is not there yet: the effect is idempotent, so a replayed job does not repeat it;
4. append ``done <delivery>``.

Each run reads the comments once, so the fake GitHub's ``GET …/comments`` count per issue is the number of
times the job ran.

The issue number is the payload's ``issue.number``; the repository is ``acme/widgets``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx

from kodiai.jobs.lanes import JobContext
from kodiai.server.runtime import Runtime
from kodiai.webhook.events import WebhookEvent

REPO = "acme/widgets"
#: One TLS context for every job's client (the fake GitHub is plain http): httpx otherwise loads the CA
#: bundle for each client, ~60 ms of the server's CPU per job.
TLS = httpx.create_ssl_context()


def marker(delivery: str) -> str:
    return f"<!-- kodiai:test-effect:{delivery} -->"


def append_line(path: Path, line: str) -> None:
    with path.open("a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


async def post_once(runtime: Runtime, event: WebhookEvent, pause: float = 0.0) -> None:
    """The job's GitHub effect: read the issue's comments, wait ``pause`` seconds, and post this delivery's
    marker comment unless it is there already."""
    github = runtime.github
    assert github is not None
    number = int(event.payload["issue"]["number"])
    token = await asyncio.to_thread(github.installation_token, event.installation_id)
    url = f"{runtime.config.github_api_url}/repos/{REPO}/issues/{number}/comments"
    async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"token {token}"}, verify=TLS) as http:
        comments = (await http.get(url, params={"per_page": 100})).json()
        done = any(marker(event.id) in c["body"] for c in comments)
        if pause:
            await asyncio.sleep(pause)
        if not done:
            r = await http.post(url, json={"body": f"{marker(event.id)}\nDone for {event.id}."})
            r.raise_for_status()


def register(runtime: Runtime) -> None:
    record_file = os.environ.get("KODIAI_TEST_RECORD_FILE")
    record = Path(record_file) if record_file else None
    gate = os.environ.get("KODIAI_TEST_GATE")
    pause = float(os.environ.get("KODIAI_TEST_JOB_SECONDS", "0"))
    assert runtime.github is not None

    async def handle(event: WebhookEvent) -> None:
        async def job() -> None:
            if record is not None:
                await asyncio.to_thread(append_line, record, f"start {event.id}")
            while gate and not Path(gate).exists():
                await asyncio.sleep(0.02)
            await post_once(runtime, event, pause)
            if record is not None:
                await asyncio.to_thread(append_line, record, f"done {event.id}")

        await runtime.queue.enqueue(
            event.installation_id,
            job,
            JobContext(delivery_id=event.id, event_name=event.name, job_type="storm"),
        )

    runtime.router.register("issues.opened", handle, name="storm")
