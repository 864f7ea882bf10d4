"""Space reserved ahead for the job journal's completion marks: ``<jobs db>.reserve``, 1 MiB next to it.

On a full disk the journal cannot record that a job finished ("done", "failed", a handler done). Held only
in memory, those marks were lost when the process stopped before space returned (a restart is what an
operator does after freeing space), and every one of those jobs ran again. So the journal keeps a file
of zeros, written in full at start-up while there is space, and saves each held-back mark into it by
overwriting those zeros: rewriting blocks a file already owns needs no new space (on ext4, xfs, tmpfs;
a copy-on-write filesystem such as btrfs or ZFS may still refuse, and the mark is then named in the log as
lost). The next start applies the saved marks to the journal before anything is replayed; once the
held-back marks land in the journal the reserve is zeroed again.

The format is one JSON object per line from the start of the file; the first NUL byte ends it, and a
line that does not parse (a write cut by a power loss) is skipped. Pure encoding and parsing here are
separate from the file's I/O (:class:`MarkReserve`).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from kodiai.jobs.journal_rows import FINAL_STATUSES

RESERVE_BYTES = 1 << 20  # ~10,000 "done" marks (~100 bytes each); a failure's error text takes more
CHUNK = 64 * 1024

MarkKind = Literal["finish", "handler"]
FINISHED = frozenset({*FINAL_STATUSES, "dead"})  # the statuses a finish mark may carry


@dataclass(frozen=True, slots=True)
class Mark:
    """One completion mark: a delivery's final status (``finish``), or one of its handlers done."""

    delivery_id: str
    kind: MarkKind
    status: str = ""
    error: str | None = None
    at: str = ""  # ISO time of a finish
    handler: str = ""

    def encode(self) -> bytes:
        fields: dict[str, str | None] = {"d": self.delivery_id, "k": self.kind}
        if self.kind == "finish":
            fields |= {"s": self.status, "t": self.at, "e": self.error}
        else:
            fields["h"] = self.handler
        return json.dumps(fields, separators=(",", ":"), ensure_ascii=True).encode("ascii") + b"\n"


def parse(data: bytes) -> list[Mark]:
    """The marks in a reserve's bytes, in order (up to the first NUL byte; a line that does not parse, or
    does not hold a final status and a time, is skipped)."""
    end = data.find(b"\0")
    marks = []
    for line in (data if end < 0 else data[:end]).split(b"\n"):
        try:
            fields = json.loads(line)
            delivery, kind = str(fields["d"]), fields["k"]
            if kind == "finish":
                status, at, error = str(fields["s"]), str(fields["t"]), fields.get("e")
                datetime.fromisoformat(at)  # a damaged line is skipped here, not applied
                if status not in FINISHED:
                    continue
                marks.append(Mark(delivery, "finish", status, None if error is None else str(error), at))
            elif kind == "handler":
                marks.append(Mark(delivery, "handler", handler=str(fields["h"])))
        except (ValueError, KeyError, TypeError):
            continue
    return marks


def reserve_path(journal: str | Path) -> Path:
    target = Path(journal)
    return target.with_name(f"{target.name}.reserve")


class MarkReserve:
    """The reserve file of one journal. Never raises ``OSError``: :attr:`problem` says why there is none."""

    def __init__(self, journal: str | Path, *, size: int = RESERVE_BYTES) -> None:
        self.path = reserve_path(journal)
        self.size = size
        self._fd: int | None = None
        self._end = 0  # where the next mark goes
        self._keep = b""  # the marks of a file found cut short, written first when it is made again
        self._torn = False  # the last saved line was cut: the next save starts on a new line
        self.problem: str | None = None
        self.found: list[Mark] = []  # marks a previous process saved, read at open

    def load(self) -> MarkReserve:
        """Read the marks a previous process saved (:attr:`found`); creates nothing (see :meth:`ensure`)."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return self
        except OSError as exc:
            self.problem = f"{self.path} cannot be opened: {exc}"
            return self
        try:
            data = os.pread(fd, os.fstat(fd).st_size, 0)
        except OSError as exc:
            os.close(fd)
            self.problem = f"{self.path} cannot be read: {exc}"
            return self
        self.found = parse(data)
        end = data.find(b"\0")
        self._end = len(data) if end < 0 else end
        self._torn = self._end > 0 and data[self._end - 1 : self._end] != b"\n"
        if len(data) < self.size:  # cut short: :meth:`ensure` writes it again in full, marks first
            os.close(fd)
            self._keep = data[: self._end]
        else:
            self._fd = fd
        return self

    def ensure(self) -> bool:
        """Create the full reserve (the marks it already holds first, then zeros) unless it is there;
        True when it is, else :attr:`problem` says why."""
        if self._fd is not None:
            return True
        keep = self._keep
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, keep)
                zeros = bytes(CHUNK)
                written = len(keep)
                while written < self.size:
                    written += os.write(fd, zeros[: min(CHUNK, self.size - written)])
                os.fsync(fd)
                os.replace(tmp, self.path)
            except BaseException:
                os.close(fd)
                raise
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self.problem = (
                f"no space reserved for completion marks: {self.path} ({self.size // 1024} KiB) "
                f"could not be created: {exc.strerror or exc}"
            )
            return False
        self._fd, self._end, self._keep, self.problem = fd, len(keep), b"", None
        return True

    def save(self, marks: list[Mark]) -> int:
        """Write ``marks`` into the reserve (synced); returns how many were saved, from the first."""
        if self._fd is None or not marks:
            return 0
        data, saved = (b"\n" if self._torn else b""), 0
        for mark in marks:
            line = mark.encode()
            if self._end + len(data) + len(line) > self.size:
                break
            data += line
            saved += 1
        if not saved:
            return 0
        try:
            os.pwrite(self._fd, data, self._end)
            os.fdatasync(self._fd)
        except OSError:
            return 0
        self._end += len(data)
        self._torn = False
        return saved

    @property
    def ready(self) -> bool:
        """The full reserve is there and open."""
        return self._fd is not None

    def clear(self) -> None:
        """Zero what was saved (every mark has landed in the journal)."""
        self._keep = b""
        if self._fd is None:
            self._end = 0
        if self._fd is None or self._end == 0:
            return
        try:
            os.pwrite(self._fd, bytes(self._end), 0)
            os.fdatasync(self._fd)
        except OSError:
            return  # the marks stay; applying them again at the next start is harmless
        self._end, self._torn = 0, False

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
