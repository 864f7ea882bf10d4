"""A faithful translator from JavaScript ``RegExp`` (no ``u`` flag, Annex B) to the ``regex`` module.

The original compiles user patterns (``regex:`` suppressions) with ``new RegExp(src, "i")``. Python's
regex dialects differ in many places, so a pattern is parsed with the JS grammar and re-emitted with
explicit classes:

- JS-only syntax errors are reproduced (``(?i)``, ``a{2,1}``, ``a**``, ``[z-a]``, an unknown ``\\k<x>`` when
  the pattern has named groups): :func:`compile_js_regex` returns ``None`` where JS would throw;
- Annex B leniency is reproduced: ``\\p{L}`` is ``p{L}``, ``a{,3}`` and a lone ``{``/``}``/``]`` are literals,
  ``\\Z`` is ``Z``, ``\\k<x>`` without named groups is ``k<x>``, ``\\cJ`` is LF, ``\\8`` is ``8``, octal escapes;
- ``\\d``/``\\w``/``\\b`` are ASCII, ``\\s`` is the JS whitespace set, ``.`` refuses ``\\n \\r U+2028 U+2029``,
  ``$`` is the end of input, multiline ``^``/``$`` use the JS line terminators, ``[^]`` matches anything;
- variable-length lookbehind ``(?<=a+)`` works (the ``regex`` module supports it);
- a backreference to a group that has not participated matches the empty string, as in JS;
- ``/i`` uses JS's simple canonicalisation (``toUpperCase`` of one code unit, never mapping non-ASCII
  to ASCII), not Unicode case folding: ``ſ`` ≠ ``s``, ``K`` (U+212A) ≠ ``k``, ``İ`` ≠ ``i``.

Matching works on UTF-16 code units, like JS without ``u``: astral characters count as two units.
The ``u``/``v`` flags are not supported (:class:`JsRegexUnsupported`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import regex

from kodiai.compat.jsregex.errors import JsRegexSyntaxError, JsRegexUnsupported
from kodiai.compat.jsregex.parser import translate_js_regex
from kodiai.compat.jsregex.units import canon_translation, from_units, to_units

__all__ = [
    "JsMatch",
    "JsRegExp",
    "JsRegexSyntaxError",
    "JsRegexUnsupported",
    "compile_js_regex",
    "translate_js_regex",
]


@dataclass(frozen=True)
class JsMatch:
    """A match: ``start``/``end`` in UTF-16 units, captured groups (None when unset) and named groups."""

    start: int
    end: int
    text: str
    groups: tuple[str | None, ...]
    named: dict[str, str | None]


class JsRegExp:
    """A compiled JS regular expression with ``test`` and ``search`` (``lastIndex`` is not modelled)."""

    def __init__(self, source: str, flags: str) -> None:
        self.source = source
        self.flags = flags
        py_source, self._names = translate_js_regex(source, flags)
        try:
            self._pattern = regex.compile(py_source, regex.ASCII | regex.VERSION0)
        except (regex.error, OverflowError, RecursionError) as exc:  # pragma: no cover - translator bug guard
            raise JsRegexUnsupported(f"cannot compile translated /{source}/{flags}: {exc}") from exc
        self._ignore_case = "i" in flags
        self._sticky = "y" in flags

    def _prepare(self, text: str) -> tuple[str, str]:
        units = to_units(text)
        return units, units.translate(canon_translation()) if self._ignore_case else units

    def _run(self, subject: str, timeout: float | None) -> regex.Match[str] | None:
        """Match from index 0; ``timeout`` (seconds) bounds catastrophic backtracking (``TimeoutError``)."""
        if self._sticky:
            return self._pattern.match(subject, timeout=timeout)
        return self._pattern.search(subject, timeout=timeout)

    def search(self, text: str, timeout: float | None = None) -> JsMatch | None:
        """The first match (``RegExp.prototype.exec`` from index 0), or None.

        With ``timeout``, a search that runs longer raises ``TimeoutError`` (JS would simply hang).
        """
        units, subject = self._prepare(text)
        m = self._run(subject, timeout)
        if m is None:
            return None
        count = self._pattern.groups
        groups = tuple(
            None if m.span(k)[0] < 0 else from_units(units[m.span(k)[0] : m.span(k)[1]])
            for k in range(1, count + 1)
        )
        named = {js: groups[int(py[1:]) - 1] for js, py in self._names.items()}
        return JsMatch(m.start(), m.end(), from_units(units[m.start() : m.end()]), groups, named)

    def test(self, text: str, timeout: float | None = None) -> bool:
        """``RegExp.prototype.test`` on a fresh regex (``timeout`` as in :meth:`search`)."""
        _units, subject = self._prepare(text)
        return self._run(subject, timeout) is not None


@lru_cache(maxsize=512)
def compile_js_regex(source: str, flags: str = "") -> JsRegExp | None:
    """``new RegExp(source, flags)``; ``None`` where JS would throw a SyntaxError."""
    try:
        return JsRegExp(source, flags)
    except JsRegexSyntaxError:
        return None
