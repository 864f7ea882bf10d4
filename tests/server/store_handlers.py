"""Test-only handlers for the full-disk store tests (``kodiai serve --handlers store_handlers:register``).

An ``issues.opened`` delivery gets one job on the real lanes shaped like the end of a review job
(behaviour R1 steps 46-50): first its GitHub effect, then a fail-open write to one store.

1. the storm handlers' GitHub effect (``storm_handlers.post_once``): read the issue's comments on the fake
   GitHub and post a comment with this delivery's marker unless it is there already (as the review
   handler looks for its output marker), so a replay never repeats it;
2. write to the store named by the payload's ``kodiai_test_store``, else by ``KODIAI_TEST_STORE``
   (``knowledge``: a ``reviews`` row; ``telemetry``: an ``executions`` row; ``memory``: one learned
   memory with a unit vector) through the server's own store
   object, wrapped in the project's :func:`~kodiai.handler_kit.fail_open.fail_open` exactly as
   ``kodiai.review.record`` wraps its writes;
3. append ``wrote <delivery>`` or ``lost <delivery>`` to ``KODIAI_TEST_RECORD_FILE`` (fsync'd).

Each run reads the comments once, so the fake GitHub's ``GET …/comments`` count per issue is the number of
times the job ran. The issue number is the payload's ``issue.number``; the repository is ``acme/widgets``.
Only ``kodiai serve`` loads this module (with tests/server on its ``PYTHONPATH``), hence the top-level
``storm_handlers`` import.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
from storm_handlers import REPO, append_line, post_once

from kodiai.handler_kit.fail_open import fail_open
from kodiai.jobs.lanes import JobContext
from kodiai.learning.types import LearningMemoryRecord
from kodiai.log import get_logger
from kodiai.server.runtime import Runtime
from kodiai.storage.knowledge_models import ReviewRecord
from kodiai.storage.telemetry import ExecutionRecord
from kodiai.webhook.events import WebhookEvent

OWNER = REPO.split("/")[0]


def register(runtime: Runtime) -> None:
    default_store = os.environ.get("KODIAI_TEST_STORE", "")
    record = Path(os.environ["KODIAI_TEST_RECORD_FILE"])
    stores = runtime.stores
    assert runtime.github is not None and stores is not None
    log = get_logger("kodiai.test.store_handlers")

    def write(store_name: str, delivery: str, number: int) -> bool:
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

    async def handle(event: WebhookEvent) -> None:
        number = int(event.payload["issue"]["number"])
        store_name = str(event.payload.get("kodiai_test_store") or default_store)

        async def job() -> None:
            await post_once(runtime, event)
            wrote = await fail_open(
                log,
                f"{store_name}-store",
                lambda: asyncio.to_thread(write, store_name, event.id, number),
                False,
                f"Test {store_name} store write failed (fail-open)",
            )
            await asyncio.to_thread(append_line, record, f"{'wrote' if wrote else 'lost'} {event.id}")

        await runtime.queue.enqueue(
            event.installation_id,
            job,
            JobContext(delivery_id=event.id, event_name=event.name, job_type="store-write"),
        )

    runtime.router.register("issues.opened", handle, name="store-write")
