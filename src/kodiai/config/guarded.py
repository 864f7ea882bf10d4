"""The `.kodiai.yml` settings that decide who or what may act, and their safe values (pure).

The loader replaces an invalid section by its defaults (the original's fallback). For most settings that
is harmless, but for the ones below a default is *more* permissive than what the operator wrote:
`mention.allowedUsers: alice` (a string, not a list) would reset the allow-list to "everyone". A guarded
setting that cannot be read therefore takes its **safe** value instead, and the loader reports that it
failed closed.

A guarded setting fails when:

- validation reports an issue at, below or above its path (`mention.allowedUsers: alice`,
  `allowedUsers: [alice, 7]`, `mention: null`); or
- a key no setting reads is a likely misspelling of it (`allowedUser:`, `AllowedUsers:`, a section
  `mentions:` holding `allowedUsers:`): the operator meant to set it, so it is not read as absent.

Restriction settings (`keep_written`) also keep their valid written value when a *sibling* key breaks
the section, instead of the section default (`allowedUsers: [alice]` survives a bad
`conversation.maxTurnsPerPr`). Grant settings take the section default then, which is the restrictive one.
`telemetry.dailySpendCapUsd` is only kept that way: a cap is about cost, not access, so an unreadable cap
is an ordinary fallback (the operator's server-wide cap still applies) rather than a refusal of every run.

Deliberately not guarded, because their defaults are the cautious direction: `review.enabled`,
`review.skipAuthors` and `review.skipPaths` (a fallback reviews more, it grants nobody anything), the
turn and timeout limits (cost, not access), prompts and the rest of telemetry.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_snake

from kodiai.config.unknown_keys import UnknownKey, unknown_keys

#: The allow-list entry that matches nobody: it holds spaces, which no GitHub login can.
NOBODY = "<nobody: mention.allowedUsers was invalid>"

Path = tuple[str, ...]


@dataclass(frozen=True)
class Guard:
    """One guarded setting. ``path`` is where a failure is detected (aliases, from the top level);
    ``target`` is the key set to ``safe`` when it fails; ``effect`` says what that means, for people."""

    path: Path
    target: Path
    safe: Any
    effect: str
    keep_written: bool = False
    closes: bool = True
    """False for a limit that only survives a sibling's failure: its own failure is an ordinary fallback."""

    @property
    def section(self) -> str:
        return self.path[0]

    @property
    def name(self) -> str:
        return ".".join(self.path)

    def describe(self) -> str:
        """``mention.allowedUsers: nobody may mention the bot``."""
        return f"{self.name}: {self.effect}"


GUARDS: tuple[Guard, ...] = (
    Guard(
        ("write",),
        ("write", "enabled"),
        False,
        "write mode is off (apply:/change: are refused); every write.* key guards what the bot may push",
    ),
    Guard(("mention", "enabled"), ("mention", "enabled"), False, "mentions are off", keep_written=True),
    Guard(
        ("mention", "allowedUsers"),
        ("mention", "allowedUsers"),
        [NOBODY],
        "nobody may mention the bot",
        keep_written=True,
    ),
    Guard(
        ("mention", "allowedDomains"),
        ("mention", "allowedDomains"),
        None,
        "mention runs have no web access",
    ),
    Guard(
        ("review", "autoApprove"),
        ("review", "autoApprove"),
        False,
        "clean reviews are not approved",
        keep_written=True,
    ),
    Guard(
        ("knowledge", "sharing", "enabled"),
        ("knowledge", "sharing", "enabled"),
        False,
        "no retrieval from the owner's other repositories",
    ),
    Guard(
        ("telemetry", "dailySpendCapUsd"),
        ("telemetry", "dailySpendCapUsd"),
        None,
        "no repository spend cap (the operator's cap still applies)",
        keep_written=True,
        closes=False,
    ),
    Guard(
        ("knowledge", "shareGlobal"),
        ("knowledge", "shareGlobal"),
        False,
        "no global pattern aggregates are written",
    ),
)

GUARDED_SECTIONS: frozenset[str] = frozenset(g.section for g in GUARDS)


def _same_key(part: object, alias: str) -> bool:
    """A location part names ``alias`` (camelCase) or its field name (snake_case is accepted too)."""
    return isinstance(part, str) and part in (alias, to_snake(alias))


def _related(loc: tuple[Any, ...], path: Path) -> bool:
    """``loc`` is at, below or above ``path`` (one is a prefix of the other)."""
    n = min(len(loc), len(path))
    return all(_same_key(loc[i], path[i]) for i in range(n))


def guards_hit(locations: list[tuple[Any, ...]]) -> list[Guard]:
    """The guards that the validation issues at ``locations`` (from the top level) break, in order."""
    return [g for g in GUARDS if g.closes and any(_related(loc, g.path) for loc in locations)]


def _split(path: str) -> tuple[str, ...]:
    return tuple(path.replace("[", ".[").split("."))


@dataclass(frozen=True)
class Misspelling:
    """An unknown key read as an attempt at a guarded setting."""

    key: UnknownKey
    meant: Path

    @property
    def section(self) -> str:
        return self.meant[0]

    def issue(self) -> str:
        """An issue line for the section's warning (the full path: the key may sit outside it)."""
        meant = ".".join(self.meant)
        holding = f" (it holds `{meant}`)" if meant != self.key.suggestion else ""
        return f"{self.key.path}: unknown key, taken as a misspelling of `{self.key.suggestion}`{holding}"


def _value_at(document: dict[Any, Any], path: str) -> Any:
    node: Any = document
    for part in _split(path):
        if part.startswith("["):
            node = node[int(part[1:-1])] if isinstance(node, list) else None
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


def _meant_paths(prefix: Path, value: Any) -> Iterator[Path]:
    """The setting paths a misspelled key aimed at: its suggestion, or for a mapping every key inside it
    read under the suggestion (exact or the closest guarded name)."""
    whole = any(len(g.path) <= len(prefix) and _related(prefix, g.path) for g in GUARDS)
    if whole or not isinstance(value, dict) or not value:
        yield prefix
        return
    for key in value:
        if not isinstance(key, str):
            continue
        under = [
            g.path[len(prefix)] for g in GUARDS if len(g.path) > len(prefix) and _related(prefix, g.path)
        ]
        exact = next((name for name in under if _same_key(key, name)), None)
        close = exact or next(iter(difflib.get_close_matches(key, under, n=1, cutoff=0.6)), None)
        if close is not None:
            yield from _meant_paths((*prefix, close), value[key])


def misspellings(document: object) -> list[Misspelling]:
    """Unknown keys of ``document`` whose closest known setting is (or holds) a guarded one."""
    if not isinstance(document, dict):
        return []
    found: list[Misspelling] = []
    for key in unknown_keys(document):
        if key.suggestion is None or "[" in key.suggestion:
            continue
        suggestion = tuple(key.suggestion.split("."))
        for meant in _meant_paths(suggestion, _value_at(document, key.path)):
            if any(g.closes and _related(meant, g.path) for g in GUARDS):
                found.append(Misspelling(key, meant))
                break
    return found


def advisories(document: object) -> list[str]:
    """Valid but likely mistaken guarded values: an explicit empty allow-list (everyone, as if unset) and
    entries that no GitHub login can equal (`@alice`, `alice smith`), which silently match nobody."""
    mention = document.get("mention") if isinstance(document, dict) else None
    users = mention.get("allowedUsers") if isinstance(mention, dict) else None
    if not isinstance(users, list):
        return []
    if not users:
        return ["mention.allowedUsers is an empty list: everyone may mention the bot (as when it is unset)"]
    odd = [u for u in users if isinstance(u, str) and not _LOGIN.fullmatch(u)]
    return [f"mention.allowedUsers: `{u}` is not a GitHub login, it matches nobody" for u in odd]


_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\[bot\])?")


__all__ = [
    "GUARDED_SECTIONS",
    "GUARDS",
    "NOBODY",
    "Guard",
    "Misspelling",
    "advisories",
    "guards_hit",
    "misspellings",
]
