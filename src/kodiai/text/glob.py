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
so the regexes here use :data:`kodiai.text.js.JS_DOT` and ``\\Z``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from kodiai.text._glob_parser import _Parser
from kodiai.text._glob_syntax import (
    _END,
    _MAX_LENGTH,
    _NEVER,
    _REPLACEMENTS,
    _SLASH,
    GlobError,
    _fastpath_create,
    _remove_prefix,
)
from kodiai.text.js import JS_DOT

__all__ = ["GlobError", "any_glob_match", "compile_glob", "glob_match", "glob_source"]


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
    try:
        return re.compile(source)
    except re.error:
        return _NEVER


def glob_match(pattern: str, path: str) -> bool:
    """``picomatch(pattern, {dot: true})(path)``."""
    regex = compile_glob(pattern)
    if path == "":
        return False
    if path == pattern:
        return True
    return regex.match(path) is not None


def any_glob_match(patterns: Iterable[str], path: str) -> bool:
    """``picomatch(patterns, {dot: true})(path)``: true when any pattern matches."""
    return any(glob_match(p, path) for p in patterns)
