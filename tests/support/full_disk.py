"""A full disk for the journal tests: a small tmpfs filled up to ENOSPC (root only), or the server's own
file-size limit where mounting is not permitted; and the WAL checkpoint that makes the next write need space."""

from __future__ import annotations

import errno
import resource
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.kodiai_process import wait_until


class TmpfsDisk:
    """A small tmpfs for the jobs database; "full" is a filler file written up to ENOSPC."""

    def __init__(self, where: Path) -> None:
        where.mkdir()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], check=True, capture_output=True
        )
        self.where = where
        self.filler = where / "filler"

    def fill(self, _pid: int) -> None:
        with self.filler.open("wb", buffering=0) as fh:
            for size in (1 << 16, 1 << 12, 512, 1):
                try:
                    while True:
                        fh.write(b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC

    def free(self, _pid: int) -> None:
        self.filler.unlink()

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.where)], check=False, capture_output=True)


class FileSizeLimit:
    """No mount: the server's own RLIMIT_FSIZE (soft limit 1 byte) refuses every write that extends a file."""

    def __init__(self, where: Path) -> None:
        where.mkdir()
        self.where = where

    def fill(self, pid: int) -> None:
        _soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, hard))

    def free(self, pid: int) -> None:
        _soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))

    def close(self) -> None:
        pass


def mount_permitted(tmp: Path) -> str | None:
    """Why a tmpfs cannot be mounted here, or ``None``."""
    probe = tmp / "mount-probe"
    probe.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True
    )
    if done.returncode != 0:
        return done.stderr.decode(errors="replace").strip() or f"mount exited {done.returncode}"
    subprocess.run(["umount", str(probe)], check=False, capture_output=True)
    return None


@contextmanager
def mounted_tmpfs(tmp: Path) -> Iterator[TmpfsDisk]:
    """A 4 MiB tmpfs under ``tmp`` for the test's duration; the test is skipped where mounting is refused."""
    reason = mount_permitted(tmp)
    if reason is not None:
        pytest.skip(f"cannot mount a tmpfs here ({reason})")
    made = TmpfsDisk(tmp / "disk")
    try:
        yield made
    finally:
        made.close()


def truncate_wal(db: Path) -> None:
    """Checkpoint the server's WAL to zero bytes (from another connection), so its next write needs space."""
    conn = sqlite3.connect(db, timeout=10, isolation_level=None)
    try:
        wait_until(
            lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0, 10, "a checkpoint"
        )
    finally:
        conn.close()
