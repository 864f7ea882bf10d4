"""docs/troubleshooting.md, "job journal has no space reserved for completion marks": the real app over
HTTP (:func:`server.test_troubleshooting_http.served`) on a real 4 MiB tmpfs (root only) with less than the
reserve's 1 MiB free when it starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kodiai.jobs.journal import JobJournal
from kodiai.jobs.journal_reserve import RESERVE_BYTES, reserve_path
from server.test_troubleshooting_http import app_config, served
from support.fake_github import FakeGitHub
from support.full_disk import TmpfsDisk, mounted_tmpfs
from support.kodiai_process import wait_until
from support.live_server import make_github
from support.troubleshooting_page import look_for


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[TmpfsDisk]:
    with mounted_tmpfs(tmp_path) as made:
        yield made


def test_no_room_for_the_reserve_at_start_up_is_loud_and_not_ready_until_it_is_made(
    tmp_path: Path, fake: FakeGitHub, tmpfs: TmpfsDisk
) -> None:
    """Less than the reserve's 1 MiB free when the server starts: deliveries are still taken, but the
    server says (log, readiness) that finished jobs would run again after a restart on a full disk."""
    db = tmpfs.where / "jobs.db"
    JobJournal.open(db).close()
    tmpfs.fill(0)
    os.truncate(tmpfs.filler, tmpfs.filler.stat().st_size - 256 * 1024)  # room for the journal's writes only
    with served(app_config(tmp_path, fake, jobs_db_path=str(db)), make_github(fake)) as app:
        not_ready = app.get("/readiness")
        look_for("job-journal-has-no-space-reserved-for-completion-marks").check(
            logs=app.logs, answers=[not_ready]
        )
        assert not reserve_path(db).exists() and list(tmpfs.where.glob("*.tmp")) == []
        tmpfs.free(0)
        wait_until(lambda: app.get("/readiness") == (200, {"status": "ready"}), 10, "ready again")
        assert reserve_path(db).stat().st_size == RESERVE_BYTES
        assert app.logged("Job journal reserve file created; ready")
