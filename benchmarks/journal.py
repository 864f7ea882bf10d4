"""Job journal benchmark: CPU and wall time per delivery for the intake write and the done write.

The real :class:`kodiai.jobs.journal.JobJournal` on a real SQLite file, through its group-commit writer
thread: ``--batch`` concurrent intake writes at a time, then the previous batch's done writes, with the
real ≈24 KB ``pull_request.opened`` body, on an empty journal and on one already holding ``--prefill``
finished deliveries (the delivery-id index then no longer fits in a few pages).

    .venv/bin/python benchmarks/journal.py                       # batches of 20, prefill 0 and 200,000
    .venv/bin/python benchmarks/journal.py --batch 5 --deliveries 5000
    PYTHONPATH=<checkout of an older commit>/src .venv/bin/python benchmarks/journal.py   # compare schemas
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT.parent / "shared" / "fixtures" / "webhooks" / "pull_request.opened.payload.json"


def run(deliveries: int, batch: int, prefill: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per delivery over ``deliveries`` intake + done writes through the writer."""
    from kodiai.jobs import journal as module

    JobJournal = module.JobJournal

    def accept(journal: Any, delivery: str, body: bytes) -> Any:
        if hasattr(module, "Intake"):
            return journal.accept_async(module.Intake(delivery, "pull_request", "opened", 1, body), now=now)
        entry = module.JournalEntry(
            delivery_id=delivery, event_name="pull_request", action="opened", payload={}
        )
        return journal.accept_async(entry, now=now, raw_payload=body)  # the first schema's API (before 0002)

    body = json.dumps(json.loads(FIXTURE.read_bytes())).encode()
    now = datetime.now(UTC)

    async def write(journal: Any, ids: list[str]) -> None:
        previous: list[str] = []
        for lo in range(0, len(ids), batch):
            current = ids[lo : lo + batch]
            accepted = await asyncio.gather(*(accept(journal, d, body) for d in current))
            assert all(accepted)
            for d in previous:
                journal.finish_later(d, now=now)
            previous = current
        for d in previous:
            journal.finish_later(d, now=now)

    with tempfile.TemporaryDirectory() as tmp:
        journal = JobJournal.open(Path(tmp) / "jobs.db")
        journal.start_writer()
        ids = [str(uuid.uuid4()) for _ in range(prefill + deliveries)]
        asyncio.run(write(journal, ids[:prefill]))
        cpu, wall = time.process_time(), time.perf_counter()
        asyncio.run(write(journal, ids[prefill:]))
        journal.close()  # applies what is still queued
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu / deliveries * 1e6, wall / deliveries * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deliveries", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--prefill", type=int, nargs="+", default=[0, 200_000])
    args = parser.parse_args()
    print(f"{'prefill':>8} {'batch':>5} {'cpu µs/delivery':>16} {'wall µs/delivery':>17}")
    for prefill in args.prefill:
        cpu, wall = run(args.deliveries, args.batch, prefill)
        print(f"{prefill:>8} {args.batch:>5} {cpu:>16.1f} {wall:>17.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
