"""Scope coordination: scoped npm packages bumped together (behaviour R2.13)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import icu
from pydantic import BaseModel

__all__ = ["ScopeGroup", "detect_scope_coordination", "extract_scoped_packages", "locale_compare_key"]


#: ``@scope/name`` tokens in a PR body (JS regex, no ``u`` flag: ASCII ``\\w``).
_SCOPED_PACKAGE_RE = re.compile(r"@[\w-]+/[\w.-]+", re.ASCII)


def extract_scoped_packages(body: str | None) -> list[str]:
    """The ``@scope/name`` tokens of a PR body, de-duplicated in first-seen order (R1 step 25, X-35)."""
    return list(dict.fromkeys(_SCOPED_PACKAGE_RE.findall(body or "")))


class ScopeGroup(BaseModel):
    scope: str
    packages: list[str]


@lru_cache(maxsize=1)
def _collator() -> icu.Collator:
    """ICU collation for en-US: what V8's ``String.prototype.localeCompare`` uses."""
    return icu.Collator.createInstance(icu.Locale("en_US"))


def locale_compare_key(text: str) -> bytes:
    """A sort key ordering strings as JS ``a.localeCompare(b)`` does (``@a < @A < @a_x < @a-x < @b``)."""
    key: bytes = _collator().getSortKey(text)
    return key


def detect_scope_coordination(package_names: Sequence[str]) -> list[ScopeGroup]:
    """Group ``@scope/name`` packages by scope; keep groups of two or more, ordered by ``localeCompare``.

    Names not starting with ``@`` are ignored; a name without ``/`` is its own scope. Packages inside a
    group use the JS default sort (UTF-16 code-unit order).
    """
    groups: dict[str, list[str]] = {}
    for name in package_names:
        if not name.startswith("@"):
            continue
        scope = name.split("/", 1)[0]
        groups.setdefault(scope, []).append(name)
    kept = [
        ScopeGroup(scope=scope, packages=sorted(names, key=_utf16_key))
        for scope, names in groups.items()
        if len(names) >= 2
    ]
    kept.sort(key=lambda g: locale_compare_key(g.scope))
    return kept


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")
