"""Test-only handlers for the hostile-client tests (``kodiai serve --handlers hostile_handlers:register``).

``issues`` and ``push`` deliveries (events the built-in handlers ignore) get a job on the real lanes
that reads the whole payload, as any real handler does, and appends the delivery id to
``KODIAI_TEST_RECORD_FILE``.
"""

from __future__ import annotations

import os
from pathlib import Path

from kodiai.jobs.lanes import JobContext
from kodiai.server.runtime import Runtime
from kodiai.webhook.events import WebhookEvent


def register(runtime: Runtime) -> None:
    out = Path(os.environ["KODIAI_TEST_RECORD_FILE"])

    async def record(event: WebhookEvent) -> None:
        async def job() -> None:
            _ = event.payload  # the full parse a real handler does (lone surrogates, huge numbers, ...)
            with out.open("a") as fh:
                fh.write(event.id + "\n")

        await runtime.queue.enqueue(
            event.installation_id,
            job,
            JobContext(delivery_id=event.id, event_name=event.name, job_type="record"),
        )

    runtime.router.register("issues", record, name="record-issues")
    runtime.router.register("push", record, name="record-push")
