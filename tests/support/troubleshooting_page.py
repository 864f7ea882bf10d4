"""docs/troubleshooting.md read as data: the "Look for" entries the tests reproduce.

The page tells an operator what to look for per symptom, in a form a test can read back:

- a section (a heading) with a ``**Look for:**`` line, whose id is the heading's anchor
  (``webhooks-answer-401``); or
- a row of a table with a ``Look for`` column, whose id is the anchor of the heading above the table, a
  slash, and the text of the row's first cell (``the-review-was-skipped/draft``).

A Look-for text is a list of evidence items, each a kind word followed by a code span:

- ``log `{"level":"info","msg":"…","skipReason":"draft"}``` — a log line with these fields (``msg`` is the
  message, ``level`` its level; other keys are fields of the JSON line);
- ``answer `401```, ``answer `503 {"status":"not ready",…}``` — an HTTP status and its JSON body (an
  empty body when none is given);
- ``comment `Kodiai encountered an API error``` — text of a comment the bot posts;
- ``fatal `job journal … is damaged``` — text of the one ``FATAL:`` line ``kodiai serve`` exits with.

In any quoted string, ``…`` stands for any text (the page's convention for variable parts: paths, ids).
:func:`look_for` returns an :class:`Entry`; its :meth:`Entry.check` fails unless every item of the entry is
found in the evidence the test collected, so the page and the behaviour cannot drift apart silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"
KINDS = ("log", "answer", "comment", "fatal")
#: Levels an operator sees with the default ``LOG_LEVEL=info``.
VISIBLE_LEVELS = ("info", "warning", "error", "critical")
_ITEM = re.compile(r"\b(" + "|".join(KINDS) + r")\s+`([^`]+)`")
_SPAN = re.compile(r"`[^`]+`")
_LOOK_FOR_LINE = re.compile(r"^\s*(?:[-*]\s+)?\*\*Look for:\*\*\s*(.+)$")
_HEADING = re.compile(r"^(#+)\s+(.*)$")


@dataclass(frozen=True)
class Item:
    kind: str
    text: str

    def parsed(self) -> Any:
        """``log``: the field dict; ``answer``: ``(status, body or None)``; else the text."""
        if self.kind == "log":
            fields = json.loads(self.text)
            if not isinstance(fields, dict) or "msg" not in fields or "level" not in fields:
                raise ValueError(f"a log item needs a JSON object with msg and level: {self.text}")
            return fields
        if self.kind == "answer":
            status, _, body = self.text.partition(" ")
            return int(status), (json.loads(body) if body.strip() else None)
        return self.text


@dataclass(frozen=True)
class Entry:
    id: str
    items: tuple[Item, ...]

    def check(
        self,
        *,
        logs: Sequence[Mapping[str, Any]] = (),
        answers: Iterable[tuple[int, Any]] = (),
        comments: Iterable[str] = (),
        fatal: Iterable[str] = (),
    ) -> None:
        """Assert every item is in the evidence: ``logs`` as ``structlog.testing.capture_logs`` records
        them, ``answers`` as ``(status, parsed JSON body or None)``, ``comments`` and ``fatal`` as text."""
        answers, comments, fatal = list(answers), list(comments), list(fatal)
        for item in self.items:
            if item.kind == "log":
                fields = item.parsed()
                assert any(log_matches(fields, entry) for entry in logs), (
                    f"{self.id}: no log line {item.text} among:\n" + "\n".join(map(str, logs))
                )
            elif item.kind == "answer":
                status, body = item.parsed()
                assert any(s == status and value_matches(body, b) for s, b in answers), (
                    f"{self.id}: no answer {item.text} among {answers}"
                )
            else:
                texts = comments if item.kind == "comment" else fatal
                assert any(text_matches(item.text, t, whole=False) for t in texts), (
                    f"{self.id}: no {item.kind} containing {item.text!r} among {texts}"
                )


def text_matches(pattern: str, text: str, *, whole: bool = True) -> bool:
    """``pattern`` with ``…`` as a wildcard matches ``text`` (the whole of it, or a part)."""
    regex = ".*".join(re.escape(part) for part in pattern.split("…"))
    found = re.fullmatch(regex, text, re.S) if whole else re.search(regex, text, re.S)
    return found is not None


def value_matches(expected: Any, actual: Any) -> bool:
    """JSON values: strings with ``…`` are patterns, objects match key by key, the rest must be equal."""
    if isinstance(expected, str) and "…" in expected:
        return isinstance(actual, str) and text_matches(expected, actual)
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(value_matches(v, actual[k]) for k, v in expected.items())
        )
    return bool(expected == actual)


def log_matches(fields: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    """A captured log record (``event``, ``log_level``) has every field the page quotes."""
    record = {("msg" if k == "event" else "level" if k == "log_level" else k): v for k, v in entry.items()}
    return all(k in record and value_matches(v, record[k]) for k, v in fields.items())


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading (as tests/test_docs_stand_alone.py computes it)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _items(entry_id: str, text: str) -> tuple[Item, ...]:
    items = tuple(Item(kind, code) for kind, code in _ITEM.findall(text))
    spans = _SPAN.findall(text)
    if not items or len(items) != len(spans):
        raise ValueError(
            f"{entry_id}: every code span of a Look-for needs a kind ({', '.join(KINDS)}): {text}"
        )
    for item in items:
        item.parsed()
    return items


def parse(text: str) -> dict[str, Entry]:
    """Every entry of the page by id (duplicate ids are an error)."""
    entries: dict[str, Entry] = {}

    def add(entry_id: str, look: str) -> None:
        if entry_id in entries:
            raise ValueError(f"duplicate Look-for id {entry_id}")
        entries[entry_id] = Entry(entry_id, _items(entry_id, look))

    heading, column, fenced = "", None, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if m := _HEADING.match(line):
            heading, column = anchor(m.group(2)), None
        elif m := _LOOK_FOR_LINE.match(line):
            add(heading, m.group(1))
        elif line.lstrip().startswith("|"):
            cells = _cells(line)
            if column is None and "Look for" in cells:
                column = cells.index("Look for")
            elif column is not None and not set("".join(cells)) <= set("-: "):
                add(f"{heading}/{cells[0].strip('`')}", cells[column])
        else:
            column = None
    return entries


@cache
def entries() -> dict[str, Entry]:
    return parse(PAGE.read_text(encoding="utf-8"))


def look_for(entry_id: str) -> Entry:
    """The page's entry ``entry_id`` (a KeyError names the ids there are)."""
    found = entries().get(entry_id)
    if found is None:
        raise KeyError(
            f"docs/troubleshooting.md has no Look-for entry {entry_id!r}; it has {sorted(entries())}"
        )
    return found
