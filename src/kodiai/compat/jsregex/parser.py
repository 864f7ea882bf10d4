"""Recursive-descent parser of JS pattern syntax (no ``u`` flag, Annex B) that emits ``regex`` source."""

from __future__ import annotations

from dataclasses import dataclass

import regex

from kodiai.compat.jsregex.errors import JsRegexSyntaxError, JsRegexUnsupported
from kodiai.compat.jsregex.units import (
    CLASS_ESCAPES,
    CONTROL_ESCAPES,
    LINE_TERMINATORS,
    WORD,
    Ranges,
    canon_table,
    canonical_ranges,
    class_source,
    to_units,
    unit,
)

MAX_REPEAT = 4_000_000_000


@dataclass
class _Scan:
    """Facts the grammar needs before parsing: the number of capturing groups and the group names."""

    group_count: int
    names: dict[str, int]


def _prescan(src: str) -> _Scan:
    count, i, n = 0, 0, len(src)
    names: dict[str, int] = {}
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
                    names.setdefault(src[i + 3 : end], count)
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
        self.group_numbers = scan.names
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
            cu = canon_table()[cu]
        return unit(cu)

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
            return f"(?<![^{LINE_TERMINATORS}])" if self.multiline else r"\A"
        if ch == "$":
            self.i += 1
            return f"(?![^{LINE_TERMINATORS}])" if self.multiline else r"\Z"
        if ch == "\\" and self.peek(1) in ("b", "B") and self.peek(1):
            self.i += 2
            inside, outside = f"(?<=[{WORD}])", f"(?<![{WORD}])"
            ahead_in, ahead_out = f"(?=[{WORD}])", f"(?![{WORD}])"
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
        low = int(m.group(1)) if len(m.group(1)) < 20 else MAX_REPEAT + 1
        high: int | None
        if m.group(2) is None:
            high = low
        elif m.group(3) == "":
            high = None
        else:
            high = int(m.group(3)) if len(m.group(3)) < 20 else MAX_REPEAT + 1
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
            if low > MAX_REPEAT or (high is not None and high > MAX_REPEAT):
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
            return "[\\u0000-\\uffff]" if self.dot_all else f"[^{LINE_TERMINATORS}]"
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
            if not m or m.group(1) not in self.group_numbers:
                raise self.error("Invalid named reference")
            self.i += m.end()
            return self.backreference(self.group_numbers[m.group(1)])
        if ch in CLASS_ESCAPES:
            self.i += 1
            return class_source(CLASS_ESCAPES[ch], negated=False)
        return self.literal(self.character_escape(in_class=False))

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
        if ch in CONTROL_ESCAPES:
            self.i += 1
            return CONTROL_ESCAPES[ch]
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
            ranges = canonical_ranges(ranges)
        return class_source(ranges, negated)

    def class_atom(self) -> int | Ranges:
        ch = self.peek()
        if ch != "\\":
            self.i += 1
            return ord(ch)
        self.i += 1
        esc = self.peek()
        if esc == "":
            raise self.error("\\ at end of pattern")
        if esc in CLASS_ESCAPES:
            self.i += 1
            return CLASS_ESCAPES[esc]
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
    parser = _Parser(to_units(source), "i" in flags, "m" in flags, "s" in flags)
    return parser.parse(), dict(parser.names)
