"""Regex building blocks and small helpers of the picomatch translation (see :mod:`kodiai.text.glob`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kodiai.text.js import JS_DOT

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
_GLOBSTAR = rf"(?:(?!(?:^|\/){_DOTS_SLASH}){JS_DOT})*?"
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

    def out(self) -> str:
        return self.output if self.output is not None else self.value


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
    """picomatch's in-parser fast path for patterns without ``/ ( ) [ ] { } "`` and no leading ``*``/``!``."""
    backslashes = False

    def repl(m: re.Match[str]) -> str:
        nonlocal backslashes
        esc, chars, first, rest = m.group(1), m.group(2), m.group(3), m.group(4)
        if first == "\\":
            backslashes = True
            return m.group(0)
        if first == "?":
            if esc:
                return re.escape(first) + _QMARK * len(rest)
            return _QMARK * len(chars)
        if first == ".":
            return _DOT_LITERAL * len(chars)
        if first == "*":
            if esc:
                return re.escape(first) + (_STAR if rest else "")
            return _STAR
        return re.escape(m.group(0)[1:]) if esc else re.escape(m.group(0))

    output = _SPECIAL_RUN.sub(repl, text)
    if backslashes:
        output = re.sub(r"\\+", lambda m: "\\\\" if len(m.group(0)) % 2 == 0 else "", output)
    return output


def _py_class_body(inner: str, close: str) -> str:
    """The body of a JS character class, made safe for Python's ``re`` (no nested-set warnings)."""
    body = inner
    for seq in ("&&", "~~", "||", "--"):
        body = body.replace(seq, seq[0] + "\\" + seq[1])
    if body.startswith("[") or (body.startswith("^[")):
        body = body.replace("[", "\\[", 1)
    return body + close


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
