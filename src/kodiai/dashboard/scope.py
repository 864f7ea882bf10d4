"""What a page is asked for and what the viewer may see: pure values and the SQL filters they become.

A signed-in GitHub user sees the repositories where GitHub says they may push (and the job-journal rows of
the installations those repositories belong to); the operator token sees everything. Every query takes a
:class:`Scope`, so no page can forget the filter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from kodiai.dashboard.tables import Table

RANGES = {"1d": 1, "7d": 7, "30d": 30, "90d": 90}
DEFAULT_RANGE = "30d"
REPO_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
NUMBER = re.compile(r"[0-9]{1,18}")
"""An id or PR number: ASCII digits only (``int()`` also takes ``²``-like digits) that fit in 64 bits."""
MAX_VALUE = 256


@dataclass(frozen=True)
class Access:
    """Who is looking and what they may see (``repos``/``installations``: ignored for the operator)."""

    login: str
    operator: bool = False
    repos: frozenset[str] = frozenset()
    installations: frozenset[int] = frozenset()
    installation_repos: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """``(installation id, the repositories of it the viewer may push to)``: the installation filter."""

    def can_see(self, repo: str) -> bool:
        return self.operator or repo.lower() in {r.lower() for r in self.repos}

    def can_see_installation(self, installation_id: int) -> bool:
        return self.operator or installation_id in self.installations


@dataclass(frozen=True)
class Scope:
    """The rows a query may read: ``repos`` None = every repository (operator, no filter); an empty tuple
    = none; ``since``: the range's start in the stores' text form (``YYYY-MM-DD HH:MM:SS`` UTC)."""

    repos: tuple[str, ...] | None
    installations: tuple[int, ...] | None
    since: str
    days: int

    def repo_sql(self, column: str = "repo") -> tuple[str, list[object]]:
        """`` AND <column> IN (…)`` and its parameters (nothing for every repository, false for none)."""
        return _in_sql(column, self.repos)

    def installation_sql(self, column: str = "installation_id") -> tuple[str, list[object]]:
        return _in_sql(column, self.installations)


def query_problem(
    pairs: Sequence[tuple[str, str]], numbers: Sequence[str] = ("installation", "pr")
) -> str | None:
    """What is wrong with a request's parameters (answered 400), or None. Bounded before any query: a NUL
    byte (PostgreSQL refuses it in text), an over-long value, a repository that is no ``owner/name``, or a
    number that is not plain digits of at most 18 (a 64-bit column overflows past that). ``pairs``: every
    ``(name, value)``, repeated names included (the last one is the one used)."""
    for name, value in pairs:
        if "\0" in value or len(value) > MAX_VALUE:
            return f"{name} is too long or holds a NUL byte"
    params = dict(pairs)
    repo = params.get("repo", "").strip()
    if repo and not REPO_NAME.fullmatch(repo):
        return "repo must be owner/name"
    for name in numbers:
        value = params.get(name, "").strip()
        if value and not NUMBER.fullmatch(value):
            return f"{name} must be a number"
    return None


def hide_unseen(table: Table, access: Access, repo_column: str, hidden: Sequence[str]) -> Table:
    """``table`` with the ``hidden`` columns blanked, and the repository named only "another repository", in
    rows whose ``repo_column`` the viewer may not see: a memory shared from another repository
    (``knowledge.sharing``) is counted, not described."""
    where = table.columns.index(repo_column)
    blank = {table.columns.index(c) for c in hidden}
    rows = [
        row
        if access.can_see(str(row[where]))
        else tuple(
            "another repository" if i == where else None if i in blank else v for i, v in enumerate(row)
        )
        for row in table.rows
    ]
    return replace(table, rows=rows)


def _in_sql(column: str, values: tuple[object, ...] | None) -> tuple[str, list[object]]:
    if values is None:
        return "", []
    if not values:
        return " AND 1 = 0", []
    return f" AND {column} IN ({', '.join('?' for _ in values)})", list(values)


def stores_time(moment: datetime) -> str:
    """The stores' timestamp text (``datetime('now')``'s form), which sorts like the time it names."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def scope_for(access: Access, *, repo: str | None, range_key: str | None, now: datetime) -> Scope:
    """The scope of one request: the viewer's repositories, narrowed to ``repo`` when asked (a repository the
    viewer may not see gives an empty scope, never an error that would confirm it exists)."""
    days = RANGES.get(range_key or DEFAULT_RANGE, RANGES[DEFAULT_RANGE])
    since = stores_time(now - timedelta(days=days))
    installations = None if access.operator else tuple(sorted(access.installations))
    if repo:
        # the viewer's own spelling of the name (GitHub's), so a differently cased request still matches
        named = next((r for r in access.repos if r.lower() == repo.lower()), repo)
        repos: tuple[str, ...] | None = (named,) if access.can_see(repo) else ()
    else:
        repos = None if access.operator else tuple(sorted(access.repos))
    return Scope(repos=repos, installations=installations, since=since, days=days)


def narrow_to_installation(scope: Scope, access: Access, installation_id: int, known: Sequence[str]) -> Scope:
    """``scope`` limited to one installation: its job-journal rows, and the repositories ``known`` to belong
    to it (the viewer's own list for a GitHub user; the spend ledger's for the operator) within the scope."""
    if not access.can_see_installation(installation_id):
        return replace(scope, repos=(), installations=())
    if not access.operator:
        known = next((repos for i, repos in access.installation_repos if i == installation_id), ())
    wanted = {r.lower() for r in known}
    base = scope.repos if scope.repos is not None else tuple(sorted(known))
    return replace(
        scope,
        repos=tuple(r for r in base if r.lower() in wanted),
        installations=(installation_id,),
    )
