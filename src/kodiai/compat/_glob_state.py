"""Tokenizer state of the picomatch translation: cursor, token list, extglobs and stars."""

from __future__ import annotations

import re

from kodiai.compat._glob_syntax import (
    _END,
    _EXTGLOB,
    _GLOBSTAR,
    _NO_DOT_SLASH,
    _NO_DOTS_SLASH,
    _ONE_CHAR,
    _SLASH,
    _STAR,
    _Brace,
    _Extglob,
    _js_text,
    _Tok,
)


class _ParserState:
    """Cursor, tokens and the rules shared by every character class (picomatch ``parse`` internals)."""

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
        #: picomatch rebuilds its output from the tokens after ``***``, a POSIX class or a brace range.
        self.backtrack = False

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
                prev.type, prev.value, prev.output, prev.rebuild = "star", "*", _STAR, None
        if self.extglobs and tok.type != "paren":
            self.extglobs[-1].inner += tok.value
        if prev.type == "text" and tok.type == "text":
            # picomatch: ``prev.output = (prev.output || prev.value) + tok.value`` (seen only on rebuild).
            base = (
                prev.rebuild
                if prev.rebuild is not None
                else (prev.out() if prev.explicit else _js_text(prev.js_value()))
            )
            prev.rebuild = base + _js_text(tok.js_value())
            prev.pm_value = prev.js_value() + tok.js_value()
            prev.value += tok.value
            prev.output = prev.out() + tok.out()
            return
        tok.prev = prev
        self.tokens.append(tok)
        self.prev = tok

    def _clear_before(self, tok: _Tok) -> None:
        """picomatch resets ``state.output`` to one token's output: blank everything before it."""
        for t in self.tokens:
            if t is tok:
                break
            if t.rebuild is None:
                t.rebuild = t.out()  # the token itself keeps its output for a backtrack rebuild
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
                expression = self._sub_parse(rest)
                output = token.close = f"){expression}){ext_star})"
        tok = _Tok("paren", ")", output)
        tok.extra["extglob"] = True
        self.push(tok)
        self.decrement("parens")

    def _sub_parse(self, text: str) -> str:
        raise NotImplementedError

    def _expand_range(self, brace: _Brace) -> str:
        self.backtrack = True
        parts: list[str] = []
        while len(self.tokens) > 1:
            tok = self.tokens.pop()
            if tok.type == "brace":
                break
            if tok.type != "dots":
                parts.insert(0, tok.value)
        self.prev = self.tokens[-1]
        parts.sort()
        candidate = "[" + "-".join(parts) + "]"
        try:
            re.compile(candidate)
        except re.error:
            return r"\.\.".join(re.escape(p) for p in parts)
        return candidate

    def _star(self, value: str) -> None:
        prev = self.prev
        if prev.type == "globstar" or prev.star:
            prev.type, prev.star = "star", True
            prev.value += value
            prev.output = _STAR
            prev.rebuild = None
            self.backtrack = True
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
