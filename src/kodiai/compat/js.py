"""JavaScript semantics that the original relies on, reproduced for parity.

The original ran on a JS engine; several of its observable outputs depend on JS rules that differ from
Python's: the whitespace set of ``String.prototype.trim`` and regex ``\\s`` (no ``u`` flag), ``Math.round``
(ties up), ``Number.prototype.toFixed`` (half-up on the exact binary value), ``parseInt`` prefixes and
``String(number)``. Everything here is pure.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

#: Characters JS treats as whitespace (``trim`` and regex ``\s`` without the ``u`` flag).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: A regex character class equal to JS ``\s``; use it instead of Python's ``\s``.
JS_S = "[\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
#: A regex character class equal to JS ``\S``.
JS_NOT_S = "[^\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
#: JS line terminators: what ``.`` refuses and after which a multiline ``^`` matches.
JS_LINE_TERMINATORS = "\n\r\u2028\u2029"
#: A regex class equal to JS ``.`` (anything but a line terminator).
JS_DOT = "[^\\n\\r\\u2028\\u2029]"


def js_trim(s: str) -> str:
    """``String.prototype.trim``."""
    return s.strip(JS_WHITESPACE)


def js_trim_start(s: str) -> str:
    """``String.prototype.trimStart``."""
    return s.lstrip(JS_WHITESPACE)


def js_trim_end(s: str) -> str:
    """``String.prototype.trimEnd``."""
    return s.rstrip(JS_WHITESPACE)


def js_round(x: float) -> int | float:
    """``Math.round``: ties go towards +infinity (``Math.round(-2.5) == -2``). NaN/inf pass through."""
    if math.isnan(x) or math.isinf(x):
        return x
    floor = math.floor(x)
    return floor + 1 if x - floor >= 0.5 else floor


def to_fixed(x: float, digits: int) -> str:
    """``Number.prototype.toFixed``: half-up on the exact binary value (``13.125`` → ``"13.13"``)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if abs(x) >= 1e21:
        return js_number_to_string(x)
    quantum = Decimal(1).scaleb(-digits)
    value = Decimal(abs(x)).quantize(quantum, rounding=ROUND_HALF_UP)
    text = f"{value:.{digits}f}"
    if x < 0 and value != 0:
        return "-" + text
    if x < 0 and value == 0:
        # JS: (-0.001).toFixed(2) === "-0.00"; (-0).toFixed(2) === "0.00"
        return "-" + text if x != 0 else text
    return text


def fixed_number(x: float, digits: int) -> float:
    """``Number(x.toFixed(digits))``."""
    return float(to_fixed(x, digits))


_PARSE_INT_RE = re.compile(r"[+-]?[0-9]+")


def js_parse_int(s: str) -> int | float:
    """``parseInt(s, 10)``: leading JS whitespace skipped, digits read until the first non-digit.

    Returns ``math.nan`` when no digit is found. Values beyond 2**53 are returned as exact ints of the
    float JS would produce (``99999999999999999999`` → ``100000000000000000000``).
    """
    m = _PARSE_INT_RE.match(js_trim_start(s))
    if not m:
        return math.nan
    value = int(m.group(0))
    if abs(value) > 2**53:
        return int(float(value))
    return value


def js_number_to_string(x: float | int) -> str:
    """``String(number)`` for finite and special numbers."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        if abs(x) < 10**21:
            return str(x)
        x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    r = repr(x)
    if "e" not in r:
        return r
    mantissa, exp_text = r.split("e")
    exp = int(exp_text)
    if -7 < exp < 21:
        return format(Decimal(r), "f")
    sign = "+" if exp > 0 else "-"
    mantissa = mantissa.removesuffix(".0")
    return f"{mantissa}e{sign}{abs(exp)}"


def utf16_len(s: str) -> int:
    """``String.prototype.length``: UTF-16 code units."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def utf16_slice(s: str, start: int, end: int | None = None) -> str:
    """``String.prototype.slice`` with UTF-16 indices (a split surrogate pair keeps a lone surrogate)."""
    encoded = s.encode("utf-16-le", "surrogatepass")
    n = len(encoded) // 2
    if start < 0:
        start = max(n + start, 0)
    stop = n if end is None else (max(n + end, 0) if end < 0 else min(end, n))
    if start >= stop:
        return ""
    return encoded[start * 2 : stop * 2].decode("utf-16-le", "surrogatepass")
