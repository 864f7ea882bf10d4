"""A ruamel.yaml scanner that treats tabs as in-line white space, as YAML 1.2 and js-yaml do."""

from __future__ import annotations

from typing import Any

from ruamel.yaml.scanner import Scanner

_LINE_BREAKS = "\r\n\x85\u2028\u2029"


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
