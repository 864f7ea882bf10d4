"""picomatch-compatible glob matching (``picomatch(pattern, {dot: true})``, picomatch 4).

The original matches every glob (skipPaths, file categories, risk paths, write deny/allow lists,
``glob:`` suppressions) with picomatch and ``dot: true``. This module translates a glob into a Python
regex with the same semantics, including picomatch's own corners:

- ``*`` never crosses ``/``; ``**`` crosses only as a whole path segment (``a**`` is just ``a*``);
- a leading ``**/`` also matches zero directories, ``a/**`` also matches ``a`` itself;
- a pattern without a slash matches only at the root (no basename matching);
- ``?`` is one non-``/`` character; ``[a-c]``, ``[^a]`` (never matches ``/``), ``{a,b}``;
  extglobs ``*(x)``, ``+(x)``, ``?(x)``, ``@(x)``, ``!(x)``;
- a leading ``!`` negates (an odd number of them); ``./`` is stripped;
- a pattern ending in ``*`` or a class also accepts one trailing ``/``;
- the input ``""`` never matches, and an input equal to the pattern text always does;
- a pattern that yields an invalid regex never matches (picomatch falls back to ``/$^/``);
- an empty pattern raises ``ValueError``.

JS ``.`` (used in picomatch's lookaheads) refuses line terminators and JS ``$`` is the end of the input,
so the regexes here use :data:`kodiai.compat.js.JS_DOT` and ``\\Z``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from kodiai.compat._glob_parser import _Parser
from kodiai.compat._glob_syntax import (
    _END,
    _GLOBSTAR,
    _MAX_LENGTH,
    _NEVER,
    _NO_DOT_SLASH,
    _NO_DOTS,
    _NO_DOTS_SLASH,
    _REPLACEMENTS,
    _SLASH,
    GlobError,
    _fastpath_create,
    _remove_prefix,
)
from kodiai.compat.js import JS_DOT, js_trim

__all__ = [
    "GlobError",
    "GlobSet",
    "any_glob_match",
    "compile_glob",
    "compile_glob_set",
    "glob_match",
    "glob_source",
]


def glob_source(pattern: str) -> str:
    """The Python regex source picomatch (``dot: true``) would build for ``pattern``."""
    if not isinstance(pattern, str) or pattern == "":
        raise GlobError("Expected pattern to be a non-empty string")
    if len(pattern) > _MAX_LENGTH:
        raise GlobError(f"Input length: {len(pattern)}, exceeds maximum allowed length: {_MAX_LENGTH}")
    output: str | None = None
    negated = False
    if pattern[0] in ".*":
        text = _remove_prefix(_REPLACEMENTS.get(pattern, pattern))
        created = _fastpath_create(text)
        if created is not None:
            output = created + f"{_SLASH}?"
    if output is None:
        text = _remove_prefix(_REPLACEMENTS.get(pattern, pattern))
        parser = _Parser(text)
        output = parser.parse()
        negated = parser.negated
    source = f"^(?:{output}){_END}"
    if negated:
        source = f"^(?!{source}){JS_DOT}*{_END}"
    return source


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` as picomatch would (cached). An empty pattern raises :class:`GlobError`."""
    source = glob_source(pattern)
    if _js_rejects(source):
        return _NEVER
    try:
        return re.compile(source)
    except re.error:
        return _NEVER


_ESCAPE = re.compile(r"\\.", re.DOTALL)
_CLASS = re.compile(r"\[(?:[^\]\\]|\\.)*\]")
_POSSESSIVE = re.compile(r"(?:[*+?]|\{\d+(?:,\d*)?\})\+")


def _js_rejects(source: str) -> bool:
    """Whether JS would reject a source Python accepts: a quantified quantifier (Python's possessive ``*+``).

    picomatch hands such regexes to ``new RegExp``, which throws, and then matches nothing.
    """
    neutral = _CLASS.sub("x", _ESCAPE.sub("x", source))
    return _POSSESSIVE.search(neutral) is not None


def glob_match(pattern: str, path: str) -> bool:
    """``picomatch(pattern, {dot: true})(path)``."""
    regex = compile_glob(pattern)
    if path == "":
        return False
    if path == pattern:
        return True
    return regex.match(path) is not None


# A ``.`` or ``..`` path segment: the only thing picomatch's dot lookaheads ever reject.
_DOT_SEGMENT = re.compile(r"(?:^|/)\.{1,2}(?:/|$)")


def _without_dot_lookaheads(source: str) -> str:
    """The same regex minus the ``.``/``..`` segment lookaheads (valid for paths without such segments).

    Every one of those lookaheads sits at position 0 or right after a ``/``, so on a path with no
    ``.``/``..`` segment it always succeeds and can be dropped; the globstar then needs no per-character
    lookahead. This is what keeps 200 files × 30 globs well inside the 50 ms analysis budget.
    """
    source = source.replace(_GLOBSTAR, f"{JS_DOT}*?")
    for lookahead in (_NO_DOTS, _NO_DOTS_SLASH, _NO_DOT_SLASH):
        source = source.replace(lookahead, "")
    return source


@dataclass(frozen=True)
class GlobSet:
    """A compiled pattern list: literal texts, the exact alternation, and its dot-segment-free variant."""

    literals: frozenset[str]
    exact: re.Pattern[str]
    fast: re.Pattern[str]

    def matches(self, path: str, dotted: bool | None = None) -> bool:
        """Whether any pattern matches; ``dotted`` (see :func:`has_dot_segment`) may be passed precomputed."""
        if path == "":
            return False
        if path in self.literals:
            return True
        if dotted is None:
            dotted = has_dot_segment(path)
        return (self.exact if dotted else self.fast).match(path) is not None


def has_dot_segment(path: str) -> bool:
    """Whether ``path`` has a ``.`` or ``..`` segment (the only paths needing picomatch's dot lookaheads)."""
    return _DOT_SEGMENT.search(path) is not None


@lru_cache(maxsize=1024)
def compile_glob_set(patterns: tuple[str, ...]) -> GlobSet:
    """Compile a pattern list into one :class:`GlobSet` (cached). Invalid patterns never match."""
    sources = [glob_source(p) for p in patterns if compile_glob(p) is not _NEVER]
    if not sources:
        return GlobSet(frozenset(patterns), _NEVER, _NEVER)
    exact = re.compile("|".join(f"(?:{s})" for s in sources))
    fast = re.compile("|".join(f"(?:{_without_dot_lookaheads(s)})" for s in sources))
    return GlobSet(frozenset(patterns), exact, fast)


def any_glob_match(patterns: Iterable[str], path: str) -> bool:
    """``picomatch(patterns, {dot: true})(path)``: true when any pattern matches."""
    return compile_glob_set(tuple(patterns)).matches(path)


def normalize_skip_paths(patterns: Iterable[str]) -> list[str]:
    """``review.skipPaths`` as the original normalises them (behaviour R1 step 26).

    Each entry is trimmed (JS whitespace); a trailing ``/`` gets ``**`` appended (``dist/`` → ``dist/**``);
    a leading ``*.`` gets ``**/`` prepended (``*.lock`` → ``**/*.lock``); empty entries are dropped.
    """
    out: list[str] = []
    for raw in patterns:
        pattern = js_trim(raw)
        if not pattern:
            continue
        if pattern.endswith("/"):
            pattern += "**"
        if pattern.startswith("*."):
            pattern = "**/" + pattern
        out.append(pattern)
    return out


def normalize_write_paths(patterns: Iterable[str]) -> list[str]:
    """``write.allowPaths``/``denyPaths`` (behaviour E3.14.7): trim, a trailing ``/`` becomes ``/**``, drop empties.

    Unlike skipPaths there is no ``*.ext`` rewrite: ``*.md`` matches root-level Markdown only.
    """
    out: list[str] = []
    for raw in patterns:
        pattern = js_trim(raw)
        if pattern:
            out.append(pattern + "**" if pattern.endswith("/") else pattern)
    return out
