"""Test-only handlers for the full-disk store tests (``kodiai serve --handlers store_handlers:register``).

An ``issues.opened`` delivery gets one job on the real lanes shaped like the end of a review job
(spec/review.md §1 steps 46-50): first its GitHub effect, then a fail-open write to one store.

1. read the issue's comments on the fake GitHub, and post a comment with this delivery's marker unless it
   is there already (as the review handler looks for its output marker): a replay never repeats it;
2. write to the store named by ``KODIAI_TEST_STORE`` (``knowledge``: a ``reviews`` row; ``telemetry``: an
   ``executions`` row; ``memory``: one learned memory with a unit vector) through the server's own store
   object, wrapped in the project's :func:`~kodiai.handlers.fail_open.fail_open` exactly as
   ``kodiai.handlers.review.record`` wraps its writes;
3. append ``wrote <delivery>`` or ``lost <delivery>`` to ``KODIAI_TEST_RECORD_FILE`` (fsync'd).

Each run reads the comments once, so the fake GitHub's ``GET …/comments`` count per issue is the number of
times the job ran. The issue number is the payload's ``issue.number``; the repository is ``acme/widgets``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import numpy as np

from kodiai.handlers.fail_open import fail_open
from kodiai.jobs.lanes import JobContext
from kodiai.learning.types import LearningMemoryRecord
from kodiai.log import get_logger
from kodiai.server.runtime import Runtime
from kodiai.storage.knowledge_models import ReviewRecord
from kodiai.storage.telemetry import ExecutionRecord
from kodiai.webhook.events import WebhookEvent

REPO = "acme/widgets"
OWNER = "acme"


def marker(delivery: str) -> str:
    return f"<!-- kodiai:test-effect:{delivery} -->"


def _append(path: Path, line: str) -> None:
    with path.open("a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def register(runtime: Runtime) -> None:
    store_name = os.environ["KODIAI_TEST_STORE"]
    record = Path(os.environ["KODIAI_TEST_RECORD_FILE"])
    github, stores = runtime.github, runtime.stores
    assert github is not None and stores is not None
    log = get_logger("kodiai.test.store_handlers")

    def write(delivery: str, number: int) -> bool:
        """One write of the kind a review records at its end, through the server's store."""
        if store_name == "knowledge":
            stores.knowledge.record_review(
                ReviewRecord(repo=REPO, pr_number=number, head_sha="0" * 40, delivery_id=delivery)
            )
        elif store_name == "telemetry":
            stores.telemetry.record(
                ExecutionRecord(
                    delivery_id=delivery,
                    repo=REPO,
                    pr_number=number,
                    event_type="pull_request.opened",
                    model="test",
                    conclusion="success",
                )
            )
        else:
            memory = stores.memory
            assert memory is not None, "the memory variant needs an embedding provider with a store"
            vector = np.ones(memory.dimensions) / np.sqrt(memory.dimensions)
            memory.write_memories(
                [
                    LearningMemoryRecord(
                        repo=REPO,
                        owner=OWNER,
                        finding_id=number,
                        review_id=number,
                        source_repo=REPO,
                        finding_text=f"finding of {delivery}",
                        severity="major",
                        category="correctness",
                        file_path="src/app.py",
                        outcome="accepted",
                        embedding_model=stores.embeddings.model,
                        embedding_dim=memory.dimensions,
                    )
                ],
                [vector],
            )
        return True

    async def effect(event: WebhookEvent, number: int) -> None:
        token = await asyncio.to_thread(github.installation_token, event.installation_id)
        url = f"{runtime.config.github_api_url}/repos/{REPO}/issues/{number}/comments"
        async with httpx.AsyncClient(timeout=10, headers={"Authorization": f"token {token}"}) as http:
            comments = (await http.get(url, params={"per_page": 100})).json()
            if not any(marker(event.id) in c["body"] for c in comments):
                r = await http.post(url, json={"body": f"{marker(event.id)}\nDone for {event.id}."})
                r.raise_for_status()

    async def handle(event: WebhookEvent) -> None:
        number = int(event.payload["issue"]["number"])

        async def job() -> None:
            await effect(event, number)
            wrote = await fail_open(
                log,
                f"{store_name}-store",
                lambda: asyncio.to_thread(write, event.id, number),
                False,
                f"Test {store_name} store write failed (fail-open)",
            )
            await asyncio.to_thread(_append, record, f"{'wrote' if wrote else 'lost'} {event.id}")

        await runtime.queue.enqueue(
            event.installation_id,
            job,
            JobContext(delivery_id=event.id, event_name=event.name, job_type="store-write"),
        )

    runtime.router.register("issues.opened", handle, name="store-write")
