"""The picomatch ``parse`` rules, character by character (with ``dot: true``)."""

from __future__ import annotations

import re

from kodiai.compat._glob_state import _ParserState
from kodiai.compat._glob_syntax import (
    _DOT_LITERAL,
    _FASTPATH_BLOCKERS,
    _NON_SPECIAL,
    _ONE_CHAR,
    _QMARK,
    _REGEX_CHARS,
    _SLASH,
    POSIX_CLASSES,
    _Brace,
    _escape_last,
    _js_escape,
    _py_class_body,
    _simple_fastpath,
    _Tok,
)


class _Parser(_ParserState):
    """A tokenizer that follows picomatch's ``parse`` rule by rule."""

    def _sub_parse(self, text: str) -> str:
        return _Parser(text).parse(fastpaths=False)

    def parse(self, *, fastpaths: bool = True) -> str:
        text = self.input
        if fastpaths and not _FASTPATH_BLOCKERS.search(text):
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
                    self.push(_Tok("text", "\\\\", "\\\\", explicit=False))
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
                    self.push(
                        _Tok(
                            "text",
                            "\\" + char,
                            out,
                            explicit=False,
                            pm_value=("\\" if odd_extra else "") + "\\" + char,
                        )
                    )
                    continue
                value = "\\" + char
            if self._in_bracket(value):
                continue
            if self.quotes == 1 and value != '"':
                self._quoted(value)
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
                self.push(
                    _Tok("text", raw, out, explicit=False, pm_value=("\\" if value in "$^" else "") + raw)
                )
                continue
            self._star(value)
        return self._finish()

    def _in_bracket(self, value: str) -> bool:
        prev = self.prev
        if not (self.brackets > 0 and (value != "]" or prev.value in ("[", "[^"))):
            return False
        if value == ":" and self._posix_class(prev):
            return True
        if (value == "[" and self.peek() != ":") or (value == "-" and self.peek() == "]"):
            value = "\\" + value
        if value == "]" and prev.value in ("[", "[^"):
            value = "\\" + value
        prev.value += value
        prev.output = prev.value
        return True

    def _quoted(self, value: str) -> None:
        """A character inside ``"…"``: literal, appended to the previous token's value (picomatch)."""
        prev = self.prev
        js_escaped = re.sub(r"[-*+?.^${}(|)\[\]]", r"\\\g<0>", value)
        if prev.explicit or prev.rebuild is not None:
            if prev.rebuild is None:
                prev.rebuild = prev.out()  # a rebuild reads the token's output, which lacks the quoted text
        else:
            prev.pm_value = prev.js_value() + js_escaped
        prev.output = prev.out() + re.escape(value)
        prev.value += js_escaped

    def _posix_class(self, prev: _Tok) -> bool:
        """``[[:alpha:]]`` and friends: replace the class name by its ranges (picomatch then backtracks)."""
        inner = prev.value[1:]
        if "[" not in inner:
            return False
        prev.posix = True
        if ":" not in inner:
            return False
        idx = prev.value.rfind("[")
        ranges = POSIX_CLASSES.get(prev.value[idx + 2 :])
        if ranges is None:
            return False
        prev.value = prev.value[:idx] + ranges
        prev.output = prev.value
        self.backtrack = True
        self.advance()
        if not (self.bos.rebuild or self.bos.out()) and self.tokens.index(prev) == 1:
            self.bos.rebuild = _ONE_CHAR
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
                self.push(_Tok("bracket", "\\[", "\\[", explicit=False))
            else:
                self.increment("brackets")
                self.push(_Tok("bracket", "[", "[", explicit=False))
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
            self.push(_Tok("text", "|", "|", explicit=False))
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
            self.push(_Tok("text", value, "@", explicit=False))
            return True
        return False

    def _finish(self) -> str:
        for kind, char in (("brackets", "["), ("parens", "("), ("braces", "{")):
            while getattr(self, kind) > 0:
                if not self.backtrack:  # picomatch escapes its live output, which a rebuild discards
                    _escape_last(self.tokens, char)
                self.decrement(kind)
        if self.prev.type in ("star", "bracket"):
            self.push(_Tok("maybe_slash", "", f"{_SLASH}?"))
        if self.backtrack:
            return "".join(t.rebuild if t.rebuild is not None else t.out() for t in self.tokens)
        return self.output()
