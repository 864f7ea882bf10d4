"""UTF-16 code units, JS ``/i`` canonicalisation and character-set ranges for the JS regex translator."""

from __future__ import annotations

from functools import cache

from kodiai.compat.js import JS_WHITESPACE

MAX_UNIT = 0xFFFF
LINE_TERMINATORS = "\n\r\u2028\u2029"
WORD = "A-Za-z0-9_"

Ranges = list[tuple[int, int]]


def to_units(text: str) -> str:
    """Split astral characters into their two UTF-16 surrogates (JS non-``u`` strings are code units)."""
    if not text or max(text) <= "\uffff":  # the common case: nothing outside the BMP
        return text
    out = []
    for ch in text:
        cp = ord(ch)
        if cp > MAX_UNIT:
            cp -= 0x10000
            out.append(chr(0xD800 + (cp >> 10)))
            out.append(chr(0xDC00 + (cp & 0x3FF)))
        else:
            out.append(ch)
    return "".join(out)


def from_units(units: str) -> str:
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


#: Uppercase mappings of Unicode 16 that this Python's Unicode database predates (checked against node 20:
#: these are the only BMP code units where ``toUpperCase`` differs from ``str.upper``).
UNICODE_16_UPPER = {
    0x019B: 0xA7DC, 0x0264: 0xA7CB, 0x1C8A: 0x1C89, 0xA7CD: 0xA7CC,
    0xA7CF: 0xA7CE, 0xA7D3: 0xA7D2, 0xA7D5: 0xA7D4, 0xA7DB: 0xA7DA,
}  # fmt: skip


def canonicalize_unit(cu: int) -> int:
    """ES ``Canonicalize`` for ``/i`` without ``u``: one-unit ``toUpperCase`` that never maps non-ASCII → ASCII."""
    if 0xD800 <= cu <= 0xDFFF:
        return cu
    upper = chr(UNICODE_16_UPPER[cu]) if cu in UNICODE_16_UPPER else chr(cu).upper()
    if len(upper) != 1 or ord(upper) > MAX_UNIT:
        return cu
    if cu >= 128 and ord(upper) < 128:
        return cu
    return ord(upper)


@cache
def canon_table() -> tuple[int, ...]:
    return tuple(canonicalize_unit(cu) for cu in range(MAX_UNIT + 1))


@cache
def canon_translation() -> dict[int, int]:
    return {cu: c for cu, c in enumerate(canon_table()) if c != cu}


def complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    nxt = 0
    for lo, hi in normalise(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_UNIT:
        out.append((nxt, MAX_UNIT))
    return out


def normalise(ranges: Ranges) -> Ranges:
    merged: Ranges = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def from_points(points: set[int]) -> Ranges:
    return normalise([(p, p) for p in points])


def canonical_ranges(ranges: Ranges) -> Ranges:
    table = canon_table()
    return from_points({table[cu] for lo, hi in ranges for cu in range(lo, hi + 1)})


DIGIT: Ranges = [(0x30, 0x39)]
WORD_RANGES: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
SPACE: Ranges = from_points({ord(c) for c in JS_WHITESPACE})
CLASS_ESCAPES: dict[str, Ranges] = {
    "d": DIGIT,
    "D": complement(DIGIT),
    "w": WORD_RANGES,
    "W": complement(WORD_RANGES),
    "s": SPACE,
    "S": complement(SPACE),
}
CONTROL_ESCAPES = {"t": 9, "n": 10, "v": 11, "f": 12, "r": 13}


def unit(cu: int) -> str:
    return f"\\u{cu:04x}"


def class_source(ranges: Ranges, negated: bool) -> str:
    ranges = normalise(ranges)
    if not ranges:
        return "[\\u0000-\\uffff]" if negated else "(?!)"
    body = "".join(unit(lo) if lo == hi else f"{unit(lo)}-{unit(hi)}" for lo, hi in ranges)
    return f"[{'^' if negated else ''}{body}]"
