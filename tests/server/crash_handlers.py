"""Test-only handler set for the crash test, loaded by ``kodiai serve --handlers crash_handlers:register``.

Each delivery's job appends its id to ``KODIAI_TEST_RECORD_FILE`` (fsync'd). With
``KODIAI_TEST_BLOCK=1`` jobs whose payload has ``"block": true`` wait forever (until the process dies);
``KODIAI_TEST_SLEEP=<seconds>`` makes every job take that long.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from kodiai.jobs.lanes import JobContext
from kodiai.server.runtime import Runtime
from kodiai.webhook.events import WebhookEvent


def register(runtime: Runtime) -> None:
    out = Path(os.environ["KODIAI_TEST_RECORD_FILE"])
    block = os.environ.get("KODIAI_TEST_BLOCK") == "1"
    pause = float(os.environ.get("KODIAI_TEST_SLEEP", "0"))

    async def record(event: WebhookEvent) -> None:
        async def job() -> None:
            if block and event.payload.get("block"):
                await asyncio.Event().wait()
            if pause:
                await asyncio.sleep(pause)  # a job that takes a while (graceful-drain test)
            with out.open("a") as fh:
                fh.write(event.id + "\n")
                fh.flush()
                os.fsync(fh.fileno())

        await runtime.queue.enqueue(
            event.installation_id,
            job,
            JobContext(delivery_id=event.id, event_name=event.name, job_type="record"),
        )

    runtime.router.register("issues.opened", record, name="record")
