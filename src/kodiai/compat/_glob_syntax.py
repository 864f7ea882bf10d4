"""Regex building blocks and small helpers of the picomatch translation (see :mod:`kodiai.compat.glob`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kodiai.compat.js import JS_DOT, JS_NOT_S, JS_S

_END = r"\Z"
_SLASH = r"\/"
_DOT_LITERAL = r"\."
_ONE_CHAR = f"(?={JS_DOT})"
_QMARK = "[^/]"
_STAR = "[^/]*?"
_NO_DOT = r"(?!\.)"
_DOTS_SLASH = rf"\.{{1,2}}(?:\/|{_END})"
_NO_DOTS = rf"(?!(?:^|\/){_DOTS_SLASH})"
_NO_DOTS_SLASH = f"(?!{_DOTS_SLASH})"
_NO_DOT_SLASH = rf"(?!\.{{0,1}}(?:\/|{_END}))"
_GLOBSTAR = rf"(?:(?:(?!(?:^|\/){_DOTS_SLASH}){JS_DOT})*?)"  # picomatch's text, outer group included
_NEVER = re.compile(r"(?!)")
_MAX_LENGTH = 65536

_EXTGLOB = {
    "!": ("negate", "(?:(?!(?:", f")){_STAR})"),
    "?": ("qmark", "(?:", ")?"),
    "+": ("plus", "(?:", ")+"),
    "*": ("star", "(?:", ")*"),
    "@": ("at", "(?:", ")"),
}
_REPLACEMENTS = {"***": "*", "**/**": "**", "**/**/**": "**"}
_NON_SPECIAL = re.compile(r"[^@!\[\].,$*+?^{}()|\\/]+")
_REGEX_CHARS = re.compile(r"[-*+?.^${}(|)\[\]]")
_FASTPATH_BLOCKERS = re.compile(r"(^[*!]|[/()\[\]{}\"])")
_SPECIAL_RUN = re.compile(r"(\\?)((\W)(\3*))", re.ASCII)
_EXT_RE = re.compile(r"^(.*?)\.(\w+)$", re.ASCII)
_JS_ESCAPES = set("dDwWsSbBnrtfv0")


class GlobError(ValueError):
    """The glob pattern is not usable (empty, or longer than picomatch allows)."""


@dataclass
class _Tok:
    type: str
    value: str
    output: str | None = None
    prev: _Tok | None = None
    star: bool = False
    posix: bool = False
    extra: dict[str, object] = field(default_factory=dict)
    #: False when picomatch pushed this token without an ``output`` (its value is used instead).
    explicit: bool = True
    #: picomatch's JS ``value`` when it differs from :attr:`value` (e.g. ``\\$`` for ``$``).
    pm_value: str | None = None
    #: picomatch's token output as its backtrack rebuild sees it, when it differs from the live output.
    rebuild: str | None = None

    def out(self) -> str:
        return self.output if self.output is not None else self.value

    def js_value(self) -> str:
        return self.pm_value if self.pm_value is not None else self.value


@dataclass
class _Extglob:
    type: str
    open: str
    close: str
    parens: int
    prev: _Tok
    inner: str = ""


@dataclass
class _Brace:
    tok: _Tok
    tokens_index: int
    comma: bool = False
    dots: bool = False


def _escape_literal(text: str) -> str:
    return re.escape(text)


def _js_escape(char: str) -> str:
    """A JS (non-``u``) regex escape ``\\c`` in Python terms."""
    if char in _JS_ESCAPES:
        return "\\" + char
    return re.escape(char)


def _remove_prefix(text: str) -> str:
    return text[2:] if text.startswith("./") else text


def _fastpath_create(text: str) -> str | None:
    """picomatch's ``parse.fastpaths`` for the commonest patterns (``*``, ``**/*.ext`` ...)."""
    if text == "*":
        return f"{_NO_DOTS}{_ONE_CHAR}{_STAR}"
    if text == ".*":
        return f"{_DOT_LITERAL}{_ONE_CHAR}{_STAR}"
    if text == "*.*":
        return f"{_NO_DOTS}{_STAR}{_DOT_LITERAL}{_ONE_CHAR}{_STAR}"
    if text == "*/*":
        return f"{_NO_DOTS}{_STAR}{_SLASH}{_ONE_CHAR}{_NO_DOTS_SLASH}{_STAR}"
    if text == "**":
        return _NO_DOTS + _GLOBSTAR
    if text == "**/*":
        return f"(?:{_NO_DOTS}{_GLOBSTAR}{_SLASH})?{_NO_DOTS_SLASH}{_ONE_CHAR}{_STAR}"
    if text == "**/*.*":
        return f"(?:{_NO_DOTS}{_GLOBSTAR}{_SLASH})?{_NO_DOTS_SLASH}{_STAR}{_DOT_LITERAL}{_ONE_CHAR}{_STAR}"
    if text == "**/.*":
        return f"(?:{_NO_DOTS}{_GLOBSTAR}{_SLASH})?{_DOT_LITERAL}{_ONE_CHAR}{_STAR}"
    match = _EXT_RE.match(text)
    if not match:
        return None
    source = _fastpath_create(match.group(1))
    if source is None:
        return None
    return source + _DOT_LITERAL + match.group(2)


def _simple_fastpath(text: str) -> str:
    """picomatch's in-parser fast path for patterns without ``/ ( ) [ ] { } "`` and no leading ``*``/``!``.

    The JS regex source is built exactly as picomatch builds it (escapes, ``\\`` run collapsing) and then
    translated to Python, so backslash corner cases (``\\*|\\.``) behave as in JS.
    """
    backslashes = False

    def repl(m: re.Match[str]) -> str:
        nonlocal backslashes
        esc, chars, first, rest = m.group(1), m.group(2), m.group(3), m.group(4)
        if first == "\\":
            backslashes = True
            return m.group(0)
        if first == "?":
            return esc + first + _QMARK * len(rest) if esc else _QMARK * len(chars)
        if first == ".":
            return _DOT_LITERAL * len(chars)
        if first == "*":
            return esc + first + (_STAR if rest else "") if esc else _STAR
        return m.group(0) if esc else "\\" + m.group(0)

    output = _SPECIAL_RUN.sub(repl, text)
    if backslashes:
        output = re.sub(r"\\+", lambda m: "\\\\" if len(m.group(0)) % 2 == 0 else "\\", output)
    return _js_escapes_to_python(output)


_ASCII_WORD = "[A-Za-z0-9_]"
_JS_CLASS_ESCAPES = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": _ASCII_WORD,
    "W": "[^A-Za-z0-9_]",
    "s": JS_S,
    "S": JS_NOT_S,
    "b": f"(?:(?<={_ASCII_WORD})(?!{_ASCII_WORD})|(?<!{_ASCII_WORD})(?={_ASCII_WORD}))",
    "B": f"(?:(?<={_ASCII_WORD})(?={_ASCII_WORD})|(?<!{_ASCII_WORD})(?!{_ASCII_WORD}))",
    "t": "\\t",
    "n": "\\n",
    "r": "\\r",
    "f": "\\f",
    "v": "\\v",
}
_HEX = re.compile(r"[0-9A-Fa-f]+")


def _js_escapes_to_python(source: str) -> str:
    """Translate the backslash escapes of a (non-``u``) JS regex source to Python; other text is kept."""
    out: list[str] = []
    i = 0
    while i < len(source):
        ch = source[i]
        if ch != "\\" or i + 1 >= len(source):
            out.append(ch)
            i += 1
            continue
        nxt = source[i + 1]
        i += 2
        if nxt in _JS_CLASS_ESCAPES:
            out.append(_JS_CLASS_ESCAPES[nxt])
        elif nxt in "xu" and _HEX.fullmatch(source[i : i + (2 if nxt == "x" else 4)] or "-"):
            width = 2 if nxt == "x" else 4
            if len(source[i : i + width]) == width:
                out.append(re.escape(chr(int(source[i : i + width], 16))))
                i += width
            else:
                out.append(nxt)
        elif nxt == "c" and i < len(source) and source[i].isascii() and source[i].isalpha():
            out.append(re.escape(chr(ord(source[i]) % 32)))
            i += 1
        elif nxt == "0":
            out.append("\\x00")
        elif nxt in "1234567":
            out.append(re.escape(chr(int(nxt, 8))))
        else:
            out.append(re.escape(nxt))
    return "".join(out)


def _py_class_body(inner: str, close: str) -> str:
    """The body of a JS character class, made safe for Python's ``re`` (literal ``[``, no set operators)."""
    out: list[str] = []
    i = 0
    while i < len(inner):
        ch = inner[i]
        if ch == "\\" and i + 1 < len(inner):
            out.append(inner[i : i + 2])
            i += 2
            continue
        if ch == "[" or (ch in "&~|-" and i + 1 < len(inner) and inner[i + 1] == ch):
            out.append("\\" + ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out) + close


def _js_text(text: str) -> str:
    """Raw JS regex text from picomatch token values, in Python terms (a bare ``.`` is JS's dot)."""
    parts = re.split(r"(\\.|\.)", _js_escapes_to_python(text), flags=re.DOTALL)
    return "".join(JS_DOT if part == "." else part for part in parts)


POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "ascii": "\\x00-\\x7F",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1F\\x7F",
    "digit": "0-9",
    "graph": "\\x21-\\x7E",
    "lower": "a-z",
    "print": "\\x20-\\x7E ",
    "punct": "\\-!\"#$%&'()\\*+,./:;<=>?@[\\]^_`{|}~",
    "space": " \\t\\r\\n\\v\\f",
    "upper": "A-Z",
    "word": "A-Za-z0-9_",
    "xdigit": "A-Fa-f0-9",
}


def _escape_last(tokens: list[_Tok], char: str) -> None:
    """picomatch ``escapeLast``: escape the last unescaped opener in the output."""
    for tok in reversed(tokens):
        out = tok.out()
        idx = out.rfind(char)
        while idx > 0 and out[idx - 1] == "\\":
            idx = out.rfind(char, 0, idx - 1)
        if idx >= 0:
            tok.output = out[:idx] + "\\" + out[idx:]
            return
