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
from functools import cache, lru_cache

import regex

from kodiai.text.js import JS_WHITESPACE

__all__ = [
    "JsMatch",
    "JsRegExp",
    "JsRegexSyntaxError",
    "JsRegexUnsupported",
    "compile_js_regex",
    "translate_js_regex",
]

_MAX_UNIT = 0xFFFF
_LINE_TERMINATORS = "\n\r\u2028\u2029"
_WORD = "A-Za-z0-9_"
_MAX_REPEAT = 4_000_000_000


class JsRegexSyntaxError(ValueError):
    """JS would throw ``SyntaxError: Invalid regular expression`` for this source/flags."""


class JsRegexUnsupported(ValueError):
    """Valid JS, but outside what this translator reproduces (the ``u``/``v`` flags, huge counts)."""


Ranges = list[tuple[int, int]]


def _to_units(text: str) -> str:
    """Split astral characters into their two UTF-16 surrogates (JS non-``u`` strings are code units)."""
    if all(ord(ch) <= _MAX_UNIT for ch in text):
        return text
    out = []
    for ch in text:
        cp = ord(ch)
        if cp > _MAX_UNIT:
            cp -= 0x10000
            out.append(chr(0xD800 + (cp >> 10)))
            out.append(chr(0xDC00 + (cp & 0x3FF)))
        else:
            out.append(ch)
    return "".join(out)


def _from_units(units: str) -> str:
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _canonicalize_unit(cu: int) -> int:
    """ES ``Canonicalize`` for ``/i`` without ``u``: one-unit ``toUpperCase`` that never maps non-ASCII → ASCII."""
    if 0xD800 <= cu <= 0xDFFF:
        return cu
    upper = chr(cu).upper()
    if len(upper) != 1 or ord(upper) > _MAX_UNIT:
        return cu
    if cu >= 128 and ord(upper) < 128:
        return cu
    return ord(upper)


@cache
def _canon_table() -> tuple[int, ...]:
    return tuple(_canonicalize_unit(cu) for cu in range(_MAX_UNIT + 1))


@cache
def _canon_translation() -> dict[int, int]:
    return {cu: c for cu, c in enumerate(_canon_table()) if c != cu}


def _complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    nxt = 0
    for lo, hi in _normalise(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAX_UNIT:
        out.append((nxt, _MAX_UNIT))
    return out


def _normalise(ranges: Ranges) -> Ranges:
    merged: Ranges = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _from_points(points: set[int]) -> Ranges:
    return _normalise([(p, p) for p in points])


def _canonical_ranges(ranges: Ranges) -> Ranges:
    table = _canon_table()
    return _from_points({table[cu] for lo, hi in ranges for cu in range(lo, hi + 1)})


_DIGIT: Ranges = [(0x30, 0x39)]
_WORD_RANGES: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_SPACE: Ranges = _from_points({ord(c) for c in JS_WHITESPACE})
_CLASS_ESCAPES: dict[str, Ranges] = {
    "d": _DIGIT,
    "D": _complement(_DIGIT),
    "w": _WORD_RANGES,
    "W": _complement(_WORD_RANGES),
    "s": _SPACE,
    "S": _complement(_SPACE),
}
_CONTROL_ESCAPES = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}


def _unit(cu: int) -> str:
    return f"\\u{cu:04x}"


def _class_source(ranges: Ranges, negated: bool) -> str:
    ranges = _normalise(ranges)
    if not ranges:
        return "[\\u0000-\\uffff]" if negated else "(?!)"
    body = "".join(_unit(lo) if lo == hi else f"{_unit(lo)}-{_unit(hi)}" for lo, hi in ranges)
    return f"[{'^' if negated else ''}{body}]"


@dataclass
class _Scan:
    """Facts the grammar needs before parsing: the number of capturing groups and the group names."""

    group_count: int
    names: set[str]


def _prescan(src: str) -> _Scan:
    count, names, i, n = 0, set(), 0, len(src)
    in_class = False
    while i < n:
        ch = src[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            if not src.startswith("?", i + 1):
                count += 1
            elif src.startswith("?<", i + 1) and src[i + 3 : i + 4] not in ("=", "!"):
                count += 1
                end = src.find(">", i + 3)
                if end != -1:
                    names.add(src[i + 3 : end])
        i += 1
    return _Scan(count, names)


class _Parser:
    """Recursive-descent parser of the JS pattern grammar (Annex B), emitting ``regex`` source."""

    def __init__(self, src: str, ignore_case: bool, multiline: bool, dot_all: bool) -> None:
        self.src = src
        self.i = 0
        self.ignore_case = ignore_case
        self.multiline = multiline
        self.dot_all = dot_all
        scan = _prescan(src)
        self.total_groups = scan.group_count
        self.has_names = bool(scan.names)
        self.all_names = scan.names
        self.group_no = 0
        self.names: dict[str, str] = {}

    # -- helpers ---------------------------------------------------------------------------------
    def error(self, message: str) -> JsRegexSyntaxError:
        return JsRegexSyntaxError(f"Invalid regular expression: /{self.src}/: {message}")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def eat(self, text: str) -> bool:
        if self.src.startswith(text, self.i):
            self.i += len(text)
            return True
        return False

    def literal(self, cu: int) -> str:
        if self.ignore_case:
            cu = _canon_table()[cu]
        return _unit(cu)

    # -- grammar ---------------------------------------------------------------------------------
    def parse(self) -> str:
        out = self.disjunction()
        if self.i < len(self.src):  # only an unmatched ')' stops a top-level disjunction early
            raise self.error("Unmatched ')'")
        return out

    def disjunction(self) -> str:
        alternatives = [self.alternative()]
        while self.eat("|"):
            alternatives.append(self.alternative())
        return "|".join(alternatives)

    def alternative(self) -> str:
        parts = []
        while self.i < len(self.src) and self.peek() not in "|)":
            parts.append(self.term())
        return "".join(parts)

    def term(self) -> str:
        ch = self.peek()
        if ch == "^":
            self.i += 1
            return f"(?<![^{_LINE_TERMINATORS}])" if self.multiline else r"\A"
        if ch == "$":
            self.i += 1
            return f"(?![^{_LINE_TERMINATORS}])" if self.multiline else r"\Z"
        if ch == "\\" and self.peek(1) in ("b", "B") and self.peek(1):
            self.i += 2
            inside, outside = f"(?<=[{_WORD}])", f"(?<![{_WORD}])"
            ahead_in, ahead_out = f"(?=[{_WORD}])", f"(?![{_WORD}])"
            if self.peek(-1) == "b":
                return f"(?:{inside}{ahead_out}|{outside}{ahead_in})"
            return f"(?:{inside}{ahead_in}|{outside}{ahead_out})"
        if ch == "(" and (self.src.startswith("(?<=", self.i) or self.src.startswith("(?<!", self.i)):
            kind = self.src[self.i + 3]
            self.i += 4
            body = self.disjunction()
            if not self.eat(")"):
                raise self.error("Unterminated group")
            return f"(?:(?<{kind}{body}))"
        if ch in ("*", "+", "?"):
            raise self.error("Nothing to repeat")
        if ch == "{" and self.quantifier_bounds(peek_only=True) is not None:
            raise self.error("Nothing to repeat")
        atom = self.atom()
        return atom + self.quantifier()

    def quantifier_bounds(self, peek_only: bool = False) -> tuple[int, int | None] | None:
        """Parse ``{n}``, ``{n,}`` or ``{n,m}`` at the cursor; None (cursor unchanged) when it is not one."""
        m = regex.match(r"\{([0-9]+)(,([0-9]*))?\}", self.src[self.i :])
        if not m:
            return None
        low = int(m.group(1)) if len(m.group(1)) < 20 else _MAX_REPEAT + 1
        high: int | None
        if m.group(2) is None:
            high = low
        elif m.group(3) == "":
            high = None
        else:
            high = int(m.group(3)) if len(m.group(3)) < 20 else _MAX_REPEAT + 1
        if not peek_only:
            self.i += m.end()
        return low, high

    def quantifier(self) -> str:
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.i += 1
            text = ch
        elif ch == "{":
            bounds = self.quantifier_bounds()
            if bounds is None:
                return ""
            low, high = bounds
            if high is not None and high < low:
                raise self.error("numbers out of order in {} quantifier")
            if low > _MAX_REPEAT or (high is not None and high > _MAX_REPEAT):
                raise JsRegexUnsupported(f"repeat count too large in /{self.src}/")
            text = f"{{{low}}}" if high == low else f"{{{low},{'' if high is None else high}}}"
        else:
            return ""
        if self.eat("?"):
            text += "?"
        return text

    def atom(self) -> str:
        ch = self.peek()
        if ch == "(":
            return self.group()
        if ch == ")":
            raise self.error("Unmatched ')'")
        if ch == "[":
            return self.char_class()
        if ch == ".":
            self.i += 1
            return "[\\u0000-\\uffff]" if self.dot_all else f"[^{_LINE_TERMINATORS}]"
        if ch == "\\":
            return self.atom_escape()
        self.i += 1
        return self.literal(ord(ch))

    def group(self) -> str:
        self.i += 1  # "("
        if self.eat("?"):
            if self.eat(":"):
                prefix = "(?:"
            elif self.eat("=") or self.eat("!"):
                prefix = f"(?:(?{self.src[self.i - 1]}"
                body = self.disjunction()
                if not self.eat(")"):
                    raise self.error("Unterminated group")
                return f"{prefix}{body}))"
            elif self.eat("<"):
                end = self.src.find(">", self.i)
                name = self.src[self.i : end] if end != -1 else ""
                if not name or not name.replace("$", "_").isidentifier():
                    raise self.error("Invalid capture group name")
                if name in self.names:
                    raise self.error("Duplicate capture group name")
                self.i = end + 1
                self.group_no += 1
                py_name = f"g{self.group_no}"
                self.names[name] = py_name
                prefix = f"(?P<{py_name}>"
            else:
                raise self.error("Invalid group")
        else:
            self.group_no += 1
            prefix = f"(?P<g{self.group_no}>"
        body = self.disjunction()
        if not self.eat(")"):
            raise self.error("Unterminated group")
        return f"{prefix}{body})"

    def backreference(self, number: int) -> str:
        # JS: a group that has not participated matches the empty string.
        return f"(?:(?(g{number})(?P=g{number})|))"

    def atom_escape(self) -> str:
        self.i += 1  # "\"
        ch = self.peek()
        if ch == "":
            raise self.error("\\ at end of pattern")
        if ch.isdigit() and ch in "0123456789":
            m = regex.match(r"[0-9]+", self.src[self.i :])
            assert m is not None
            number = int(m.group(0)) if len(m.group(0)) < 12 else self.total_groups + 1
            if ch != "0" and number <= self.total_groups:
                self.i += m.end()
                return self.backreference(number)
            return self.literal(self.legacy_octal_or_identity())
        if ch == "k" and self.has_names:
            m = regex.match(r"k<([^>]*)>", self.src[self.i :])
            if not m or m.group(1) not in self.all_names:
                raise self.error("Invalid named reference")
            self.i += m.end()
            number = self.group_number_of(m.group(1))
            return self.backreference(number)
        if ch in _CLASS_ESCAPES:
            self.i += 1
            return _class_source(_CLASS_ESCAPES[ch], negated=False)
        return self.literal(self.character_escape(in_class=False))

    def group_number_of(self, name: str) -> int:
        """The 1-based number of the capturing group called ``name`` (counted over the whole pattern)."""
        count, i, n, in_class = 0, 0, len(self.src), False
        while i < n:
            c = self.src[i]
            if c == "\\":
                i += 2
                continue
            if in_class:
                in_class = c != "]"
            elif c == "[":
                in_class = True
            elif c == "(":
                if not self.src.startswith("?", i + 1):
                    count += 1
                elif self.src.startswith("?<", i + 1) and self.src[i + 3 : i + 4] not in ("=", "!"):
                    count += 1
                    if self.src.startswith(name + ">", i + 3):
                        return count
            i += 1
        raise self.error("Invalid named reference")

    def legacy_octal_or_identity(self) -> int:
        """Annex B ``\\0``, legacy octal ``\\12``/``\\377`` and identity ``\\8``/``\\9`` (cursor after ``\\``)."""
        m = regex.match(r"[0-3][0-7]{0,2}|[4-7][0-7]?", self.src[self.i :])
        if m:
            self.i += m.end()
            return int(m.group(0), 8)
        ch = self.src[self.i]
        self.i += 1
        return ord(ch)

    def character_escape(self, in_class: bool) -> int:
        """A CharacterEscape after ``\\`` (control, ``\\c``, ``\\x``, ``\\u``, identity); returns the code unit."""
        ch = self.peek()
        if ch in _CONTROL_ESCAPES:
            self.i += 1
            return _CONTROL_ESCAPES[ch]
        if ch == "c":
            nxt = self.peek(1)
            allowed = nxt.isascii() and (nxt.isalpha() or (in_class and (nxt.isdigit() or nxt == "_")))
            if nxt and allowed:
                self.i += 2
                return ord(nxt) % 32
            return ord("\\")  # Annex B: "\c" not followed by a control letter is a literal backslash
        if ch == "x":
            m = regex.match(r"x([0-9A-Fa-f]{2})", self.src[self.i :])
            if m:
                self.i += m.end()
                return int(m.group(1), 16)
        if ch == "u":
            m = regex.match(r"u([0-9A-Fa-f]{4})", self.src[self.i :])
            if m:
                self.i += m.end()
                return int(m.group(1), 16)
        self.i += 1
        return ord(ch)

    # -- character classes -----------------------------------------------------------------------
    def char_class(self) -> str:
        self.i += 1  # "["
        negated = self.eat("^")
        ranges: Ranges = []
        while True:
            if self.i >= len(self.src):
                raise self.error("Unterminated character class")
            if self.eat("]"):
                break
            left = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                right = self.class_atom()
                if isinstance(left, int) and isinstance(right, int):
                    if left > right:
                        raise self.error("Range out of order in character class")
                    ranges.append((left, right))
                    continue
                ranges.append((ord("-"), ord("-")))  # Annex B: a class escape next to "-" is a union
                for side in (left, right):
                    ranges.extend(side if isinstance(side, list) else [(side, side)])
                continue
            ranges.extend(left if isinstance(left, list) else [(left, left)])
        if self.ignore_case:
            ranges = _canonical_ranges(ranges)
        return _class_source(ranges, negated)

    def class_atom(self) -> int | Ranges:
        ch = self.peek()
        if ch != "\\":
            self.i += 1
            return ord(ch)
        self.i += 1
        esc = self.peek()
        if esc == "":
            raise self.error("\\ at end of pattern")
        if esc in _CLASS_ESCAPES:
            self.i += 1
            return _CLASS_ESCAPES[esc]
        if esc == "b":
            self.i += 1
            return 8
        if esc == "-":
            self.i += 1
            return ord("-")
        if esc in "0123456789":
            return self.legacy_octal_or_identity()
        if esc == "c" and not (self.peek(1).isascii() and (self.peek(1).isalnum() or self.peek(1) == "_")):
            return ord("\\")  # the "c" is read as the next class atom
        return self.character_escape(in_class=True)


_VALID_FLAGS = set("dgimsuvy")


def translate_js_regex(source: str, flags: str = "") -> tuple[str, dict[str, str]]:
    """Translate a JS pattern to ``regex`` source; returns ``(source, {js_group_name: python_group_name})``.

    Raises :class:`JsRegexSyntaxError` where JS throws and :class:`JsRegexUnsupported` for ``u``/``v``.
    """
    if any(f not in _VALID_FLAGS for f in flags) or len(set(flags)) != len(flags):
        raise JsRegexSyntaxError(f"Invalid flags supplied to RegExp constructor '{flags}'")
    if "u" in flags or "v" in flags:
        raise JsRegexUnsupported("the u and v flags are not supported by this translator")
    parser = _Parser(_to_units(source), "i" in flags, "m" in flags, "s" in flags)
    return parser.parse(), dict(parser.names)


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
        units = _to_units(text)
        return units, units.translate(_canon_translation()) if self._ignore_case else units

    def search(self, text: str) -> JsMatch | None:
        """The first match (``RegExp.prototype.exec`` from index 0), or None."""
        units, subject = self._prepare(text)
        m = self._pattern.match(subject) if self._sticky else self._pattern.search(subject)
        if m is None:
            return None
        count = self._pattern.groups
        groups = tuple(
            None if m.span(k)[0] < 0 else _from_units(units[m.span(k)[0] : m.span(k)[1]])
            for k in range(1, count + 1)
        )
        named = {js: groups[int(py[1:]) - 1] for js, py in self._names.items()}
        return JsMatch(m.start(), m.end(), _from_units(units[m.start() : m.end()]), groups, named)

    def test(self, text: str) -> bool:
        """``RegExp.prototype.test`` on a fresh regex."""
        _units, subject = self._prepare(text)
        m = self._pattern.match(subject) if self._sticky else self._pattern.search(subject)
        return m is not None


@lru_cache(maxsize=512)
def compile_js_regex(source: str, flags: str = "") -> JsRegExp | None:
    """``new RegExp(source, flags)``; ``None`` where JS would throw a SyntaxError."""
    try:
        return JsRegExp(source, flags)
    except JsRegexSyntaxError:
        return None
