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
from dataclasses import dataclass, field
from functools import lru_cache

from kodiai.text.js import JS_DOT

__all__ = ["GlobError", "any_glob_match", "compile_glob", "glob_match", "glob_source"]

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


class _Parser:
    """A tokenizer that follows picomatch's ``parse`` rule by rule (with ``dot: true``)."""

    def __init__(self, text: str) -> None:
        self.input = text
        self.index = -1
        self.start = 0
        self.negated = False
        self.brackets = 0
        self.braces = 0
        self.parens = 0
        self.quotes = 0
        self.stack: list[str] = []
        self.bos = _Tok("bos", "", "")
        self.tokens: list[_Tok] = [self.bos]
        self.prev = self.bos
        self.extglobs: list[_Extglob] = []
        self.brace_stack: list[_Brace] = []

    # -- helpers -----------------------------------------------------------------------------
    def eos(self) -> bool:
        return self.index == len(self.input) - 1

    def peek(self, n: int = 1) -> str:
        i = self.index + n
        return self.input[i] if 0 <= i < len(self.input) else ""

    def advance(self) -> str:
        self.index += 1
        return self.input[self.index] if self.index < len(self.input) else ""

    def remaining(self) -> str:
        return self.input[self.index + 1 :]

    def output(self) -> str:
        return "".join(t.out() for t in self.tokens)

    def push(self, tok: _Tok) -> None:
        prev = self.prev
        if prev.type == "globstar":
            is_brace = self.braces > 0 and tok.type in ("comma", "brace")
            is_ext = bool(tok.extra.get("extglob")) or (bool(self.extglobs) and tok.type in ("pipe", "paren"))
            if tok.type not in ("slash", "paren") and not is_brace and not is_ext:
                prev.type, prev.value, prev.output = "star", "*", _STAR
        if self.extglobs and tok.type != "paren":
            self.extglobs[-1].inner += tok.value
        if prev.type == "text" and tok.type == "text":
            prev.value += tok.value
            prev.output = prev.out() + (tok.output if tok.output is not None else tok.value)
            return
        tok.prev = prev
        self.tokens.append(tok)
        self.prev = tok

    def _clear_before(self, tok: _Tok) -> None:
        """picomatch resets ``state.output`` to one token's output: blank everything before it."""
        for t in self.tokens:
            if t is tok:
                break
            t.output = ""

    def increment(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        self.stack.append(kind)

    def decrement(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) - 1)
        if self.stack:
            self.stack.pop()

    def negate(self) -> None:
        count = 1
        while self.peek() == "!" and (self.peek(2) != "(" or self.peek(3) == "?"):
            self.advance()
            self.start += 1
            count += 1
        if count % 2 == 0:
            return
        self.negated = True
        self.start += 1

    def extglob_open(self, kind: str, value: str) -> None:
        ktype, opener, closer = _EXTGLOB[value]
        token = _Extglob(ktype, opener, closer, self.parens, self.prev)
        self.increment("parens")
        self.push(_Tok(kind, value, "" if self.output() else _ONE_CHAR))
        paren = _Tok("paren", self.advance(), opener)
        paren.extra["extglob"] = True
        self.push(paren)
        self.extglobs.append(token)

    def extglob_close(self, token: _Extglob) -> None:
        output = token.close
        if token.type == "negate":
            ext_star = _STAR
            if len(token.inner) > 1 and "/" in token.inner:
                ext_star = _GLOBSTAR
            rest = self.remaining()
            if ext_star != _STAR or self.eos() or re.fullmatch(r"\)+", rest):
                output = token.close = f"){_END})){ext_star}"
            if "*" in token.inner and rest and re.fullmatch(r"\.[^\\/.]+", rest):
                expression = _Parser(rest).parse(fastpaths=False)
                output = token.close = f"){expression}){ext_star})"
        tok = _Tok("paren", ")", output)
        tok.extra["extglob"] = True
        self.push(tok)
        self.decrement("parens")

    # -- main loop ---------------------------------------------------------------------------
    def parse(self, *, fastpaths: bool = True) -> str:
        text = self.input
        if fastpaths and "\\" not in text and not _FASTPATH_BLOCKERS.search(text):
            return _simple_fastpath(text)
        while not self.eos():
            value = self.advance()
            if value == "\x00":
                continue
            if value == "\\":
                nxt = self.peek()
                if nxt == "/" or nxt in (".", ";"):
                    continue
                if not nxt:
                    self.push(_Tok("text", "\\\\", "\\\\"))
                    continue
                run = re.match(r"\\+", self.remaining())
                odd_extra = ""
                if run and len(run.group(0)) > 2:
                    self.index += len(run.group(0))
                    if len(run.group(0)) % 2 != 0:
                        odd_extra = "\\"
                char = self.advance()
                if self.brackets == 0:
                    out = ("\\\\" if odd_extra else "") + _js_escape(char)
                    self.push(_Tok("text", "\\" + char, out))
                    continue
                value = "\\" + char
            if self._in_bracket(value):
                continue
            if self.quotes == 1 and value != '"':
                escaped = re.escape(value)
                self.prev.output = self.prev.out() + escaped
                self.prev.value += escaped
                continue
            if value == '"':
                self.quotes = 0 if self.quotes == 1 else 1
                continue
            if self._paren_or_bracket(value):
                continue
            if self._brace_or_separator(value):
                continue
            if self._qmark_bang_plus_at(value):
                continue
            if value != "*":
                out = "\\" + value if value in "$^" else re.escape(value)
                raw = value
                m = _NON_SPECIAL.match(self.remaining())
                if m:
                    raw += m.group(0)
                    out += re.escape(m.group(0))
                    self.index += len(m.group(0))
                self.push(_Tok("text", raw, out))
                continue
            self._star(value)
        return self._finish()

    def _in_bracket(self, value: str) -> bool:
        prev = self.prev
        if not (self.brackets > 0 and (value != "]" or prev.value in ("[", "[^"))):
            return False
        if (value == "[" and self.peek() != ":") or (value == "-" and self.peek() == "]"):
            value = "\\" + value
        if value == "]" and prev.value in ("[", "[^"):
            value = "\\" + value
        prev.value += value
        prev.output = prev.value
        return True

    def _paren_or_bracket(self, value: str) -> bool:
        if value == "(":
            self.increment("parens")
            self.push(_Tok("paren", "("))
            return True
        if value == ")":
            ext = self.extglobs[-1] if self.extglobs else None
            if ext is not None and self.parens == ext.parens + 1:
                self.extglob_close(self.extglobs.pop())
                return True
            self.push(_Tok("paren", ")", ")" if self.parens else "\\)"))
            self.decrement("parens")
            return True
        if value == "[":
            if "]" not in self.remaining():
                self.push(_Tok("bracket", "\\[", "\\["))
            else:
                self.increment("brackets")
                self.push(_Tok("bracket", "[", "["))
            return True
        if value == "]":
            prev = self.prev
            if (prev.type == "bracket" and len(prev.value) == 1) or self.brackets == 0:
                self.push(_Tok("text", "]", "\\]"))
                return True
            self.decrement("brackets")
            inner = prev.value[1:]
            close = "]"
            if not prev.posix and inner[:1] == "^" and "/" not in inner:
                close = "/]"
            prev.value += close
            cls = "[" + _py_class_body(inner, close)
            if _REGEX_CHARS.search(inner):
                prev.output = cls
            else:
                prev.output = f"(?:{re.escape(prev.value)}|{cls})"
            return True
        return False

    def _brace_or_separator(self, value: str) -> bool:
        if value == "{":
            self.increment("braces")
            tok = _Tok("brace", "{", "(")
            self.brace_stack.append(_Brace(tok, len(self.tokens)))
            self.push(tok)
            return True
        if value == "}":
            if not self.brace_stack:
                self.push(_Tok("text", "}", re.escape("}")))
                return True
            brace = self.brace_stack[-1]
            output = ")"
            if brace.dots:
                output = self._expand_range(brace)
            if not brace.comma and not brace.dots:
                brace.tok.value = brace.tok.output = "\\{"
                output = "\\}"
            self.push(_Tok("brace", "}", output))
            self.decrement("braces")
            self.brace_stack.pop()
            return True
        if value == "|":
            self.push(_Tok("text", "|", "|"))
            return True
        if value == ",":
            out = ","
            if self.brace_stack and self.stack and self.stack[-1] == "braces":
                self.brace_stack[-1].comma = True
                out = "|"
            self.push(_Tok("comma", ",", out))
            return True
        if value == "/":
            if self.prev.type == "dot" and self.index == self.start + 1:
                self.start = self.index + 1
                self.tokens.pop()
                self.prev = self.bos
                for t in self.tokens:
                    t.output = ""
                return True
            self.push(_Tok("slash", "/", _SLASH))
            return True
        if value == ".":
            prev = self.prev
            if self.braces > 0 and prev.type == "dot":
                if prev.value == ".":
                    prev.output = _DOT_LITERAL
                prev.type = "dots"
                prev.output = prev.out() + "."
                prev.value += "."
                self.brace_stack[-1].dots = True
                return True
            if self.braces + self.parens == 0 and prev.type not in ("bos", "slash"):
                self.push(_Tok("text", ".", _DOT_LITERAL))
                return True
            self.push(_Tok("dot", ".", _DOT_LITERAL))
            return True
        return False

    def _expand_range(self, brace: _Brace) -> str:
        parts: list[str] = []
        while len(self.tokens) > brace.tokens_index:
            tok = self.tokens.pop()
            if tok.type != "dots":
                parts.insert(0, tok.value)
        if self.tokens and self.tokens[-1] is brace.tok:
            self.tokens.pop()
        self.prev = self.tokens[-1]
        parts.sort()
        candidate = "[" + "-".join(parts) + "]"
        try:
            re.compile(candidate)
        except re.error:
            return r"\.\.".join(re.escape(p) for p in parts)
        return candidate

    def _qmark_bang_plus_at(self, value: str) -> bool:
        prev = self.prev
        if value == "?":
            is_group = prev.value == "("
            if not is_group and self.peek() == "(" and self.peek(2) != "?":
                self.extglob_open("qmark", value)
                return True
            if prev.type == "paren":
                nxt = self.peek()
                out = value
                if (prev.value == "(" and not re.match(r"[!=<:]", nxt or " ")) or (
                    nxt == "<" and not re.match(r"<([!=]|\w+>)", self.remaining())
                ):
                    out = "\\?"
                self.push(_Tok("text", value, out))
                return True
            self.push(_Tok("qmark", value, _QMARK))
            return True
        if value == "!":
            if self.peek() == "(" and (self.peek(2) != "?" or not re.match(r"[!=<:]", self.peek(3) or " ")):
                self.extglob_open("negate", value)
                return True
            if self.index == 0:
                self.negate()
                return True
            return False
        if value == "+":
            if self.peek() == "(" and self.peek(2) != "?":
                self.extglob_open("plus", value)
                return True
            if prev.value == "(":
                self.push(_Tok("plus", value, "\\+"))
            elif prev.type in ("bracket", "paren", "brace") or self.parens > 0:
                self.push(_Tok("plus", value, "+"))
            else:
                self.push(_Tok("plus", "\\+", "\\+"))
            return True
        if value == "@":
            if self.peek() == "(" and self.peek(2) != "?":
                tok = _Tok("at", value, "")
                tok.extra["extglob"] = True
                self.push(tok)
                return True
            self.push(_Tok("text", value, "@"))
            return True
        return False

    def _star(self, value: str) -> None:
        prev = self.prev
        if prev.type == "globstar" or prev.star:
            prev.type, prev.star = "star", True
            prev.value += value
            prev.output = _STAR
            return
        rest = self.remaining()
        if re.match(r"\([^?]", rest):
            self.extglob_open("star", value)
            return
        if prev.type == "star":
            self._double_star(prev, rest, value)
            return
        token = _Tok("star", value, _STAR)
        if self.index == self.start or prev.type in ("slash", "dot"):
            extra = _NO_DOT_SLASH if prev.type == "dot" else _NO_DOTS_SLASH
            if self.peek() != "*":
                extra += _ONE_CHAR
            prev.output = prev.out() + extra
        self.push(token)

    def _double_star(self, prev: _Tok, rest: str, value: str) -> None:
        prior = prev.prev
        assert prior is not None
        before = prior.prev
        is_start = prior.type in ("slash", "bos")
        after_star = before is not None and before.type in ("star", "globstar")
        is_brace = self.braces > 0 and prior.type in ("comma", "brace")
        is_ext = bool(self.extglobs) and prior.type in ("pipe", "paren")
        if not is_start and prior.type != "paren" and not is_brace and not is_ext:
            self.push(_Tok("star", value, ""))
            return
        while rest[:3] == "/**":
            after = self.input[self.index + 4] if self.index + 4 < len(self.input) else ""
            if after and after != "/":
                break
            rest = rest[3:]
            self.index += 3
        if prior.type == "bos" and self.eos():
            prev.type, prev.value, prev.output = "globstar", prev.value + value, _GLOBSTAR
            self._clear_before(prev)
            return
        if prior.type == "slash" and prior.prev is not None and prior.prev.type != "bos":
            if not after_star and self.eos():
                prior.output = "(?:" + prior.out()
                prev.type, prev.value = "globstar", prev.value + value
                prev.output = f"{_GLOBSTAR}|{_END})"
                return
            if rest[:1] == "/":
                end = f"|{_END}" if len(rest) > 1 else ""
                prior.output = "(?:" + prior.out()
                prev.type, prev.value = "globstar", prev.value + value
                prev.output = f"{_GLOBSTAR}{_SLASH}|{_SLASH}{end})"
                self.advance()
                self.push(_Tok("slash", "/", ""))
                return
        if prior.type == "bos" and rest[:1] == "/":
            prev.type, prev.value = "globstar", prev.value + value
            prev.output = f"(?:^|{_SLASH}|{_GLOBSTAR}{_SLASH})"
            self._clear_before(prev)
            self.advance()
            self.push(_Tok("slash", "/", ""))
            return
        prev.type, prev.value, prev.output = "globstar", prev.value + value, _GLOBSTAR

    def _finish(self) -> str:
        out_tokens = self.tokens
        for kind, char in (("brackets", "["), ("parens", "("), ("braces", "{")):
            while getattr(self, kind) > 0:
                _escape_last(out_tokens, char)
                self.decrement(kind)
        if self.prev.type in ("star", "bracket"):
            self.push(_Tok("maybe_slash", "", f"{_SLASH}?"))
        return self.output()


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
