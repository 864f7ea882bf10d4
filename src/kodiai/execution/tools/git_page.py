"""One page of a ``git`` tool's output, and the note that says how to get the next one (pure logic).

Why: the Claude Code CLI does not hand the model a tool result over about 50 KB (it keeps a 2 KB preview
and writes the rest to a file) and refuses one over 25,000 tokens; the model has no shell to page such a
file. So every ``git`` tool answers at most :data:`PAGE_BYTES` of git's output, cut at a line end, as
plain text, and a cut answer ends with a note naming the exact call for the next part (``offset``: the
output lines to skip) and, for a diff, the files it covers so that one can be read at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Bytes of git output per call: with the note, well under the CLI's ~50 KB and 25,000-token limits.
PAGE_BYTES = 40_000
#: Bytes of file names a cut diff's note lists (the rest: ``nameOnly``).
NOTE_NAMES_BYTES = 2_000
_DIFF_HEADER = re.compile(rb"^diff --git a/.* b/(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Page:
    """Output lines ``first + 1`` … ``first + lines`` (1-based) of one git run."""

    data: bytes
    first: int
    lines: int
    more: bool  # git printed more after this page
    cut_line: bool = False  # the page's last line is longer than a page and was cut

    @property
    def next_offset(self) -> int:
        return self.first + self.lines

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    def last_diff_file(self) -> str | None:
        """The file whose diff this page ends in (the last ``diff --git`` header it holds)."""
        headers = _DIFF_HEADER.findall(self.data)
        return headers[-1].decode("utf-8", "replace") if headers else None


@dataclass
class Pager:
    """Fed git's stdout chunk by chunk: skips ``offset`` lines, then keeps up to ``limit`` bytes, cut at a
    line end. A line longer than ``limit`` is kept cut, and read to its end (not kept) to learn whether
    anything follows. Memory stays at one page whatever git prints."""

    offset: int = 0
    limit: int = PAGE_BYTES
    skipped: int = 0
    buffer: bytearray = field(default_factory=bytearray)
    full: bool = False  # there is more after the page: stop reading
    cut_line: bool = False  # the page is the start of a line longer than ``limit``
    _line_ended: bool = False

    def feed(self, chunk: bytes) -> bool:
        """Take the next chunk; True once the page is full (the caller stops reading)."""
        if self.skipped < self.offset:
            chunk = self._skip(chunk)
        if self.cut_line:
            return self._after_cut(chunk)
        self.buffer += chunk
        if len(self.buffer) <= self.limit:
            return False
        if b"\n" in self.buffer[: self.limit]:
            self.full = True
            return True
        rest = bytes(self.buffer[self.limit :])
        del self.buffer[self.limit :]
        self.cut_line = True
        return self._after_cut(rest)

    def _skip(self, chunk: bytes) -> bytes:
        newlines = chunk.count(b"\n")
        if self.skipped + newlines < self.offset:
            self.skipped += newlines
            return b""
        start = 0
        while self.skipped < self.offset:
            start = chunk.index(b"\n", start) + 1
            self.skipped += 1
        return chunk[start:]

    def _after_cut(self, chunk: bytes) -> bool:
        if not self._line_ended:
            end = chunk.find(b"\n")
            if end < 0:
                return False
            self._line_ended = True
            chunk = chunk[end + 1 :]
        self.full = bool(chunk)
        return self.full

    @property
    def past_end(self) -> bool:
        """The output had no line after ``offset`` (``skipped`` is then its line count)."""
        return self.offset > 0 and not self.buffer

    def page(self) -> Page:
        data = bytes(self.buffer)
        if self.cut_line:
            return Page(utf8_prefix(data), self.offset, 1, more=self.full, cut_line=True)
        if not self.full:
            tail = 1 if data and not data.endswith(b"\n") else 0
            return Page(data, self.offset, data.count(b"\n") + tail, more=False)
        body = data[: data.rfind(b"\n", 0, self.limit) + 1]
        return Page(body, self.offset, body.count(b"\n"), more=True)


def utf8_prefix(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence cut at its end."""
    end = len(data)
    back = 0
    while back < 3 and end - back - 1 >= 0 and data[end - back - 1] & 0xC0 == 0x80:
        back += 1
    lead = end - back - 1
    if lead >= 0 and data[lead] >= 0xC0:
        width = 2 if data[lead] < 0xE0 else 3 if data[lead] < 0xF0 else 4
        if width > back + 1:
            return data[:lead]
    return data


def name_list(names: list[str], more: bool, budget: int = NOTE_NAMES_BYTES) -> str:
    """``a.py, b.py`` within ``budget`` bytes, then how to list the rest."""
    shown: list[str] = []
    used = 0
    for name in names:
        used += len(name.encode()) + 2
        if used > budget:
            break
        shown.append(name)
    rest = "" if len(shown) == len(names) and not more else ', … (all of them: "nameOnly": true)'
    return ", ".join(shown) + rest


def page_note(tool: str, page: Page, files: tuple[list[str], bool] | None = None) -> str | None:
    """The line after a page: for a cut answer, the call that gets the next part; for the last part of a
    paged answer, that it is the end. None for an answer that came whole."""
    span = f"lines {page.first + 1}–{page.next_offset} shown"
    if page.cut_line:
        span += f" (line {page.next_offset} is longer than {PAGE_BYTES:,} bytes and was cut)"
    if not page.more:
        return f"[end of output: {span}]" if page.first or page.cut_line else None
    head = f"[output cut at {PAGE_BYTES:,} bytes per call: {span}"
    last = page.last_diff_file()
    if last:
        head += f"; this part ends in the diff of {last}"
    parts = [
        head,
        f"For the next part, call mcp__git__{tool} again with the same arguments and "
        f'"offset": {page.next_offset}',
    ]
    if tool == "diff":
        parts[-1] += ', or read one file at a time with "paths": ["<file>"]'
        if files is not None:
            names, more = files
            count = f"{len(names)}{'+' if more else ''}"
            parts.append(f"Files in this diff ({count}): {name_list(names, more)}")
    else:
        parts[-1] += ', or narrow it with "paths"' + (', "maxCount"' if tool == "log" else "")
    return ". ".join(parts) + ".]"
