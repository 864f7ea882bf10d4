"""Finding identity: the title fingerprint used everywhere findings are matched (behaviour R0.1).

One fingerprint form is used throughout the port (``fp-`` + 8 lowercase hex digits). Rows written by an older
database in the bare 8-hex form still match through :func:`fingerprint_variants` / :func:`normalize_fingerprint`
(PARITY.md, review Q1).
"""

from __future__ import annotations

import re

from kodiai.compat.js import js_trim

_FNV_OFFSET_BASIS = 2166136261
_FNV_PRIME = 16777619
_NON_ALNUM_RUN = re.compile(r"[^a-z0-9]+")
_SPACE_RUN = re.compile(r" +")
_BARE_FP = re.compile(r"[0-9a-f]{8}")
FINGERPRINT_PREFIX = "fp-"


def _normalise_title(title: str) -> str:
    """Trim (JS whitespace), lowercase, turn each run outside ``[a-z0-9]`` into one space; no second trim."""
    text = _NON_ALNUM_RUN.sub(" ", js_trim(title).lower())
    return _SPACE_RUN.sub(" ", text)


def _fnv1a_32(text: str) -> int:
    """32-bit FNV-1a over the UTF-16 code units of ``text``."""
    h = _FNV_OFFSET_BASIS
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * _FNV_PRIME) & 0xFFFFFFFF
    return h


def fingerprint_finding_title(title: str) -> str:
    """The title fingerprint ``fp-xxxxxxxx`` (R0.1): FNV-1a of the normalised title, 8 lowercase hex digits."""
    return f"{FINGERPRINT_PREFIX}{_fnv1a_32(_normalise_title(title)):08x}"


def bare_fingerprint_finding_title(title: str) -> str:
    """The same hash without the ``fp-`` prefix: the original knowledge store's prior-finding form."""
    return fingerprint_finding_title(title).removeprefix(FINGERPRINT_PREFIX)


def normalize_fingerprint(fingerprint: str) -> str:
    """Map a stored fingerprint of either form to the ``fp-`` form (a bare 8-hex value gains the prefix).

    Anything that is neither form is returned unchanged, so unrelated keys never collide.
    """
    if _BARE_FP.fullmatch(fingerprint):
        return FINGERPRINT_PREFIX + fingerprint
    return fingerprint


def fingerprint_variants(fingerprint: str) -> tuple[str, str]:
    """Both stored forms of one fingerprint, ``(fp-form, bare-form)``, for lookups against older rows."""
    full = normalize_fingerprint(fingerprint)
    return full, full.removeprefix(FINGERPRINT_PREFIX)
