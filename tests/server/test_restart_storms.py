"""Restart storms: ``kodiai serve`` stopped 3 times by SIGTERM or ``kill -9`` during a burst of 12
deliveries to one installation (0.4 s jobs, run one at a time on the installation's lane; each start of
``kodiai serve`` costs a few seconds of CPU). The jobs pass a gate once the whole burst is acknowledged,
so however slow the intake, each restart consumes about two jobs (one finished, one cut) and about eight
deliveries are still waiting in the lane through all three restarts: more deliveries only lengthen the test.
Every acknowledged delivery runs to completion at least once, its GitHub effect (a comment carrying its
marker) appears exactly once, and none is dead-lettered.

Before attempts were counted at job start, the deliveries waiting in the lane used up an attempt at intake
and another at each replay's submission, so the second restart abandoned most of them without a run.

Three restarts cover what two did: each stop waits for progress and a running job, so a three-restart storm
passes through a two-restart one, and the assertions (made once every delivery is done) are the same.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

from server.issue_jobs import effects, opened_issue
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.kodiai_process import KodiaiServe, wait_until

pytestmark = pytest.mark.slow

DELIVERIES = 12
JOB_SECONDS = 0.4  # longer than SHUTDOWN_GRACE_SECONDS below: SIGTERM cuts the running job
RESTARTS = 3


def records(path: Path) -> list[tuple[str, str]]:
    if not path.exists():
        return []
    return [(kind, delivery) for kind, delivery in (line.split() for line in path.read_text().splitlines())]


def effects_of(state: PrState, deliveries: list[str], offset: int) -> Counter[str]:
    return Counter({delivery: effects(state, offset + i, delivery) for i, delivery in enumerate(deliveries)})


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
def test_every_acknowledged_delivery_completes_once_through_a_restart_storm(
    tmp_path: Path, github: tuple[FakeGitHub, PrState], sig: signal.Signals
) -> None:
    restarts = RESTARTS
    fake, state = github
    record, gate = tmp_path / "record.txt", tmp_path / "gate"
    server = KodiaiServe(
        tmp_path,
        fake,
        handlers="storm_handlers:register",
        KODIAI_TEST_RECORD_FILE=str(record),
        KODIAI_TEST_GATE=str(gate),
        KODIAI_TEST_JOB_SECONDS=str(JOB_SECONDS),
        SHUTDOWN_GRACE_SECONDS="0.2",  # SIGTERM cuts the running job (a real deploy allows 30 s)
    )
    offset = 1000 * restarts + (100 if sig == signal.SIGKILL else 0)  # one issue per delivery, per test
    acknowledged: list[str] = []
    server.start()
    try:
        for i in range(DELIVERIES):
            delivery = f"storm-{sig.name}-{restarts}-{i}"
            if server.deliver(opened_issue(offset + i), delivery).status_code == 200:
                acknowledged.append(delivery)
        assert len(acknowledged) == DELIVERIES
        gate.touch()

        for _ in range(restarts):
            finished = sum(1 for kind, _d in records(record) if kind == "done")

            def progressed_and_running(before: int = finished) -> bool:
                lines = records(record)
                done = sum(1 for kind, _d in lines if kind == "done")
                return done > before and bool(lines) and lines[-1][0] == "start"

            # stop only while a job runs, and only after the last restart made progress
            wait_until(progressed_and_running, 60, "a finished job and a running one", server)
            never_started = set(acknowledged) - {d for _kind, d in records(record)}
            server.stop(sig, timeout=30)
            server.start()

        # the storm is the point: some deliveries waited in the lane through every restart
        assert len(never_started) >= 3, f"only {len(never_started)} deliveries waited through the restarts"

        def all_done() -> bool:
            statuses = server.statuses()
            return all(statuses.get(d) == "done" for d in acknowledged)

        wait_until(all_done, 60, "every acknowledged delivery done in the journal", server)
    finally:
        code = server.stop(signal.SIGTERM, timeout=30)
    assert code in (0, -signal.SIGTERM)

    completed = Counter(d for kind, d in records(record) if kind == "done")
    assert set(completed) == set(acknowledged), "every acknowledged delivery runs to completion"
    seen = effects_of(state, acknowledged, offset)
    assert {d: seen[d] for d in acknowledged if seen[d] != 1} == {}, "each effect appears exactly once"
    rows = server.journal("SELECT status, COUNT(*) FROM delivery_journal GROUP BY status")
    assert rows == [("done", DELIVERIES)]
    stops = sum(1 for e in server.log_lines() if e.get("msg") == "Kodiai server started")
    assert stops == restarts + 1
