"""Pure, incremental parsers for the git output the diff collection streams (no I/O here).

Each parser is fed chunks of a git child's stdout as they arrive and keeps only what the review needs,
so a hostile pull request (a 100 MB file, 100,000 files, a path with a newline) costs bounded memory:

- :class:`RawListing` reads ``git diff --raw -z``: the changed paths (raw bytes, no C-quoting, so a
  newline, tab, quote or leading dash is part of the name), their blob ids and statuses, up to a count;
- :class:`NumstatListing` reads ``git diff --numstat -z`` into ``added<TAB>removed<TAB>path`` lines
  (a rename is keyed by its new path; ``-`` marks a binary file), up to a count;
- :class:`DiffReader` reads the full patch: it counts hunks exactly as :func:`count_hunks` would over
  the whole text, and keeps the text only while it is small enough to matter (the content risk scan
  reads diffs under ``CONTENT_SCAN_LIMIT`` characters only).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from kodiai.compat.js import JS_LINE_TERMINATORS

__all__ = [
    "ChangedFile",
    "DiffReader",
    "HunkCounter",
    "NulRecords",
    "NumstatListing",
    "RawListing",
    "decode_path",
    "parse_blob_sizes",
]


def decode_path(raw: bytes) -> str:
    """A path as text: UTF-8, an undecodable byte shown as U+FFFD (what git's quoted output decoded to)."""
    return raw.decode("utf-8", "replace")


class NulRecords:
    """Splits a NUL-terminated stream into records across chunk boundaries."""

    def __init__(self) -> None:
        self._partial = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        parts = chunk.split(b"\0")
        if len(parts) == 1:
            self._partial += parts[0]
            return []
        first = bytes(self._partial) + parts[0]
        self._partial = bytearray(parts[-1])
        return [first, *parts[1:-1]]

    @property
    def pending(self) -> bool:
        """An unterminated record is left (output cut short)."""
        return bool(self._partial)


@dataclass(frozen=True)
class ChangedFile:
    """One ``--raw`` entry: ``path`` is the new name, ``old_path`` the source of a rename or copy."""

    path: str
    status: str
    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str
    old_path: str | None = None

    @property
    def content_changed(self) -> bool:
        return self.old_blob != self.new_blob


@dataclass
class RawListing:
    """``git diff --raw -z --no-abbrev`` → :class:`ChangedFile` entries, at most ``max_files``.

    ``feed`` returns False once a file beyond ``max_files`` appears (``capped`` is then True), so the
    reader can stop git there.
    """

    max_files: int
    files: list[ChangedFile] = field(default_factory=list)
    capped: bool = False
    _records: NulRecords = field(default_factory=NulRecords)
    _header: list[str] | None = None
    _paths: list[str] = field(default_factory=list)

    def feed(self, chunk: bytes) -> bool:
        for record in self._records.feed(chunk):
            if self._header is None:
                if not record.startswith(b":"):
                    raise ValueError("unexpected git diff --raw output")
                fields = record[1:].decode("ascii", "replace").split(" ")
                if len(fields) != 5:
                    raise ValueError("unexpected git diff --raw header")
                self._header, self._paths = fields, []
                continue
            self._paths.append(decode_path(record))
            old_mode, new_mode, old_blob, new_blob, status = self._header
            if status[:1] in ("R", "C") and len(self._paths) < 2:
                continue
            if len(self.files) >= self.max_files:
                self.capped = True
                return False
            self.files.append(
                ChangedFile(
                    path=self._paths[-1],
                    status=status,
                    old_mode=old_mode,
                    new_mode=new_mode,
                    old_blob=old_blob,
                    new_blob=new_blob,
                    old_path=self._paths[0] if len(self._paths) == 2 else None,
                )
            )
            self._header = None
        return True

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


@dataclass
class NumstatListing:
    """``git diff --numstat -z`` → ``added<TAB>removed<TAB>path`` lines, at most ``max_files``."""

    max_files: int
    lines: list[str] = field(default_factory=list)
    capped: bool = False
    _records: NulRecords = field(default_factory=NulRecords)
    _counts: str | None = None
    _names: int = 0

    def feed(self, chunk: bytes) -> bool:
        for record in self._records.feed(chunk):
            if self._counts is not None:
                # a rename or copy: ``added<TAB>removed<TAB>`` then the source and the destination
                self._names += 1
                if self._names < 2:
                    continue
                if not self._add(f"{self._counts}{decode_path(record)}"):
                    return False
                self._counts = None
                continue
            added, _, rest = record.partition(b"\t")
            removed, _, path = rest.partition(b"\t")
            counts = f"{decode_path(added)}\t{decode_path(removed)}\t"
            if path:
                if not self._add(counts + decode_path(path)):
                    return False
            else:
                self._counts, self._names = counts, 0
        return True

    def _add(self, line: str) -> bool:
        if len(self.lines) >= self.max_files:
            self.capped = True
            return False
        self.lines.append(line)
        return True


class HunkCounter:
    """``count_hunks`` over a text that arrives in pieces: ``@@`` at the start or right after ``\\n``,
    ``\\r``, U+2028 or U+2029. Bytes are decoded the way the whole text would be (UTF-8, ``replace``)."""

    def __init__(self) -> None:
        self.count = 0
        self._carry = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed_bytes(self, chunk: bytes, *, final: bool = False) -> None:
        self.feed_text(self._decoder.decode(chunk, final))

    def feed_text(self, text: str) -> None:
        if not text:
            return
        joined = self._carry + text
        # pairs that ended inside the carry were counted by the previous call
        pos = joined.find("@@", max(len(self._carry) - 1, 0))
        while pos != -1:
            if pos == 0 or joined[pos - 1] in JS_LINE_TERMINATORS:
                self.count += 1
                pos = joined.find("@@", pos + 2)
            else:
                pos = joined.find("@@", pos + 1)
        self._carry = joined[-2:]


class DiffReader:
    """The full patch: hunks counted over everything read, the text kept while under ``keep_bytes``."""

    def __init__(self, keep_bytes: int) -> None:
        self.hunks = HunkCounter()
        self.keep_bytes = keep_bytes
        self._kept: bytearray | None = bytearray()

    def feed(self, chunk: bytes) -> bool:
        self.hunks.feed_bytes(chunk)
        if self._kept is not None:
            if len(self._kept) + len(chunk) > self.keep_bytes:
                self._kept = None  # too long to be scanned: keep nothing
            else:
                self._kept += chunk
        return True

    def finish(self) -> None:
        self.hunks.feed_bytes(b"", final=True)

    @property
    def text(self) -> str | None:
        """The whole patch, or None when it outgrew ``keep_bytes``."""
        return None if self._kept is None else self._kept.decode("utf-8", "replace")


def parse_blob_sizes(output: bytes) -> dict[str, int]:
    """``git cat-file --batch-check='%(objectname) %(objectsize)'`` → ``{blob id: size}`` (missing
    objects, e.g. a submodule's commit, are left out)."""
    sizes: dict[str, int] = {}
    for line in output.decode("ascii", "replace").splitlines():
        name, _, size = line.partition(" ")
        if size.isdigit():
            sizes[name] = int(size)
    return sizes
