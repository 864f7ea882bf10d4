"""A ruamel.yaml scanner that treats tabs as in-line white space, as YAML 1.2 and js-yaml do."""

from __future__ import annotations

from typing import Any

from ruamel.yaml import tokens
from ruamel.yaml.scanner import Scanner

_LINE_BREAKS = "\r\n\x85\u2028\u2029"
_END_SPACE_TAB = " \n\0\t\r\x85\u2028\u2029"


class TabTolerantScanner(Scanner):
    """ruamel's scanner, but tabs count as in-line white space as in YAML 1.2 and js-yaml.

    ruamel rejects a tab anywhere outside flow collections ("found character '\\t' that cannot start any
    token"), so `key:<TAB>value`, a trailing tab or a tab before a comment would fail where the original
    accepts them. Tabs in indentation stay errors, as in js-yaml.
    """

    def _skippable_tab(self) -> bool:
        """A tab outside indentation, or in a line holding only white space or a comment."""
        reader = self.reader
        if self.flow_level > 0:
            return True
        line = reader.buffer[reader.pointer - reader.column : reader.pointer]
        if line.strip(" \t") != "":
            return True
        length = 0
        while reader.peek(length) in " \t":
            length += 1
        return reader.peek(length) in "#\0" + _LINE_BREAKS

    def scan_to_next_token(self) -> Any:
        srp, srf = self.reader.peek, self.reader.forward
        if self.reader.index == 0 and srp() == "\ufeff":
            srf()
        while True:
            while srp() == " " or (srp() == "\t" and self._skippable_tab()):
                srf()
            if srp() == "#":
                while srp() not in "\0" + _LINE_BREAKS:
                    srf()
            if self.scan_line_break():
                if not self.flow_level:
                    self.allow_simple_key = True
            else:
                return None

    def scan_plain_spaces(self, indent: Any, start_mark: Any) -> Any:
        srp = self.reader.peek
        length = 0
        while srp(length) in " \t":
            length += 1
        run = self.reader.prefix(length)
        if "\t" not in run:
            return super().scan_plain_spaces(indent, start_mark)
        self.reader.forward(length)
        if srp() in "\0" + _LINE_BREAKS:  # trailing white space: dropped, as ruamel does for spaces
            return super().scan_plain_spaces(indent, start_mark)
        return [run]

    def fetch_more_tokens(self) -> Any:
        """Remember the kind of the last token scanned: the parser may already have taken it from the
        buffer, and ruamel's ``check_value`` looks only at the buffer (see :meth:`check_value`)."""
        result = super().fetch_more_tokens()
        if self.tokens:
            self._last_token = self.tokens[-1]
        return result

    def check_value(self) -> Any:
        """In a flow mapping, ``:`` followed by a non-space right after a value indicator starts a plain
        scalar (``{a: :0}``: the value ``:0``, as YAML 1.2 and js-yaml read it). ruamel decides this from
        its token buffer, which the parser may have emptied, and then read ``:`` as a second value
        indicator: a syntax error on a document its own dumper wrote."""
        if (
            self.flow_level
            and self.flow_context[-1] == "{"
            and not self.tokens
            and isinstance(getattr(self, "_last_token", None), tokens.ValueToken)
            and self.reader.peek(1) not in _END_SPACE_TAB
        ):
            return False
        return super().check_value()
