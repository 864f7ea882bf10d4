"""The two ways a JS pattern can fail to translate."""

from __future__ import annotations


class JsRegexSyntaxError(ValueError):
    """JS would throw ``SyntaxError: Invalid regular expression`` for this source/flags."""


class JsRegexUnsupported(ValueError):
    """Valid JS, but outside what this translator reproduces (the ``u``/``v`` flags, huge counts)."""
