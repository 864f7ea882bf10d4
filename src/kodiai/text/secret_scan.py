"""The one secret scanner for everything the server sends out (pure: no I/O, no global state).

A model that read hostile content can be talked into pasting a credential into a comment, a review, a
commit message or a file it writes. Every outbound surface passes the detectors here:

- **token detectors** (high precision): the write policy's six regexes (private-key header, AWS access
  key, ``ghp_`` PAT, Slack token, ``gho_/ghp_/ghs_/ghu_`` token, ``x-access-token`` URL) and the port's
  additions (``ghr_`` and ``github_pat_`` tokens, Anthropic ``sk-ant-`` keys, AWS temporary keys and
  assigned AWS secret keys);
- **known values**: the server's own secrets by exact match (:class:`KnownSecrets`, filled by
  :mod:`kodiai.outbound`), each line of a multi-line secret, base64 forms, and every 32-character piece
  of a long secret's base64 text (a PEM body re-wrapped or cut still matches);
- **entropy** (Shannon ≥ 4.5 bits/char on 32+ token-like characters): only for staged files under
  ``write.secretScan.enabled``. On prose and code in comments it would redact ordinary identifiers and
  hashes, so text bodies use the first two only.

Nothing here returns or logs a matched value: hits carry the detector name and a position.
"""

from __future__ import annotations

import base64
import bisect
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENTROPY_MIN_LENGTH",
    "ENTROPY_THRESHOLD",
    "EXTRA_DETECTORS",
    "FRAGMENT_LENGTH",
    "MIN_KNOWN_SECRET_LENGTH",
    "NO_KNOWN_SECRETS",
    "REDACTION_MARKER",
    "SECRET_DETECTORS",
    "SERVER_SECRET",
    "TOKEN_DETECTORS",
    "EntropyHit",
    "KnownSecrets",
    "SecretDetector",
    "SecretHit",
    "contains_known_secret",
    "find_high_entropy_token",
    "first_secret_detector",
    "is_entropy_candidate",
    "redact_strings",
    "redact_text",
    "scan_text",
    "secret_forms",
    "shannon_entropy",
]

REDACTION_MARKER = "[secret redacted]"
#: The detector name of a known server secret (which one is never said: that would confirm a guess).
SERVER_SECRET = "server-secret"
#: Shorter known values are ignored: an empty or short setting must not redact ordinary words.
MIN_KNOWN_SECRET_LENGTH = 12
#: Long secrets (a PEM, its base64) are also matched by any piece of this many base64 characters.
FRAGMENT_LENGTH = 32
_FRAGMENT_SOURCE_MIN = 64


@dataclass(frozen=True)
class SecretDetector:
    """One regex detector; ``name`` appears as ``regex:<name>`` in a write refusal."""

    name: str
    regex: re.Pattern[str] = field(repr=False)


# The write policy's six, unchanged and in its order (ASCII classes: JS regexes without the ``u`` flag).
SECRET_DETECTORS: tuple[SecretDetector, ...] = (
    SecretDetector(
        "private-key", re.compile(r"-----BEGIN (?:(?:RSA|DSA|EC|OPENSSH|PGP) )?PRIVATE KEY(?: BLOCK)?-----")
    ),
    SecretDetector("aws-access-key", re.compile(r"AKIA[0-9A-Z]{16}")),
    SecretDetector("github-pat", re.compile(r"ghp_[A-Za-z0-9]{36}")),
    SecretDetector("slack-token", re.compile(r"xox[baprs]-[A-Za-z0-9-]{10,}")),
    SecretDetector("github-token", re.compile(r"gh[opsu]_[A-Za-z0-9]{36,}")),
    SecretDetector(
        "github-x-access-token-url", re.compile(r"https?://x-access-token:[^\s@/]+@", re.IGNORECASE)
    ),
)

#: The port's additions: credentials the server itself holds or that a GitHub App commonly meets.
EXTRA_DETECTORS: tuple[SecretDetector, ...] = (
    SecretDetector("github-refresh-token", re.compile(r"ghr_[A-Za-z0-9]{36,}")),
    SecretDetector("github-fine-grained-pat", re.compile(r"github_pat_[A-Za-z0-9_]{40,}")),
    SecretDetector("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}")),
    SecretDetector("aws-temporary-access-key", re.compile(r"ASIA[0-9A-Z]{16}")),
    SecretDetector(
        "aws-secret-access-key",
        re.compile(
            r"(?i:aws_?secret_?(?:access_?)?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
        ),
    ),
)

#: Every regex detector, always on for every surface (the write policy's six first, in their order).
TOKEN_DETECTORS: tuple[SecretDetector, ...] = SECRET_DETECTORS + EXTRA_DETECTORS

# In a text body a private key is redacted as a whole block: through its END line, or (cut off) through
# the base64 lines and ``Proc-Type``-style headers that follow the BEGIN line.
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(
    r"[ \t]*[A-Za-z0-9+/=]*"
    r"(?:\r?\n[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z-]*:[^\r\n]*)?[ \t]*(?=\r?\n|\Z))*"
)
_B64_RUN = re.compile(rf"[A-Za-z0-9+/=]{{{FRAGMENT_LENGTH},}}")
_WHITESPACE = re.compile(r"\s+")


# ------------------------------------------------------------------------------------- known values
def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret_forms(value: str, *, access_token: bool = False) -> list[str]:
    """The forms of one secret worth matching: itself, each line of a multi-line value, its base64, and
    for an installation token the base64 of ``x-access-token:<token>`` (git's Basic auth header).
    A value shorter than :data:`MIN_KNOWN_SECRET_LENGTH` has no forms, and shorter lines are dropped."""
    if len(value.strip()) < MIN_KNOWN_SECRET_LENGTH:
        return []
    forms = [value, value.strip(), _b64(value)]
    forms += [line.strip() for line in value.splitlines()]
    if access_token:
        forms.append(_b64(f"x-access-token:{value}"))
    seen: dict[str, None] = {}
    for form in forms:
        if len(form) >= MIN_KNOWN_SECRET_LENGTH:
            seen.setdefault(form, None)
    return list(seen)


def _fragments(form: str) -> Iterable[str]:
    """Every :data:`FRAGMENT_LENGTH`-character window of a long form's base64 runs, whitespace removed."""
    if len(form) < _FRAGMENT_SOURCE_MIN:
        return ()
    joined = _WHITESPACE.sub("", form)
    return (
        run[i : i + FRAGMENT_LENGTH]
        for run in _B64_RUN.findall(joined)
        for i in range(len(run) - FRAGMENT_LENGTH + 1)
    )


@dataclass(frozen=True)
class KnownSecrets:
    """An immutable snapshot of the values to match exactly (already expanded by :func:`secret_forms`)."""

    values: frozenset[str] = frozenset()
    fragments: frozenset[str] = frozenset()
    #: One alternation of every value, longest first: a single pass over a text finds them all.
    pattern: re.Pattern[str] | None = field(default=None, compare=False)

    @classmethod
    def of(cls, forms: Iterable[str]) -> KnownSecrets:
        values = frozenset(f for f in forms if len(f) >= MIN_KNOWN_SECRET_LENGTH)
        fragments = frozenset(piece for form in values for piece in _fragments(form))
        ordered = sorted(values, key=lambda v: (-len(v), v))
        pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        return cls(values, fragments, pattern)

    def __bool__(self) -> bool:
        return bool(self.values)

    def __repr__(self) -> str:  # never print the values
        return f"KnownSecrets(values={len(self.values)}, fragments={len(self.fragments)})"


#: The empty snapshot (the default: only the regex detectors apply).
NO_KNOWN_SECRETS = KnownSecrets()


# ------------------------------------------------------------------------------------- scanning
@dataclass(frozen=True)
class SecretHit:
    """Where a detector matched (``start``/``end`` into the scanned text); the text itself is not kept."""

    detector: str
    start: int
    end: int


def _known_hits(text: str, known: KnownSecrets) -> list[SecretHit]:
    hits: list[SecretHit] = []
    if known.pattern is not None:
        hits += [SecretHit(SERVER_SECRET, m.start(), m.end()) for m in known.pattern.finditer(text)]
    if known.fragments:
        for run in _B64_RUN.finditer(text):
            piece = run.group(0)
            if any(
                piece[i : i + FRAGMENT_LENGTH] in known.fragments
                for i in range(len(piece) - FRAGMENT_LENGTH + 1)
            ):
                hits.append(SecretHit(SERVER_SECRET, run.start(), run.end()))
    return hits


def _pem_block_end(text: str, header_end: int, pem_ends: list[int]) -> int:
    """Where the block that starts at a BEGIN header ends: its END line, else (a cut-off key) the end of
    the base64 and ``Proc-Type``-style header lines that follow."""
    i = bisect.bisect_right(pem_ends, header_end)
    if i < len(pem_ends):
        return pem_ends[i]
    body = _PEM_BODY.match(text, header_end)
    return body.end() if body else header_end


def scan_text(text: str, known: KnownSecrets = NO_KNOWN_SECRETS) -> list[SecretHit]:
    """Every hit of the token detectors and the known values in ``text`` (no entropy), in text order.

    A private-key hit spans the whole PEM block, so redacting it removes the key body too."""
    hits: list[SecretHit] = []
    pem_ends: list[int] | None = None
    for detector in TOKEN_DETECTORS:
        for match in detector.regex.finditer(text):
            end = match.end()
            if detector.name == "private-key":
                if pem_ends is None:
                    pem_ends = [m.end() for m in _PEM_END.finditer(text)]
                end = _pem_block_end(text, end, pem_ends)
            hits.append(SecretHit(detector.name, match.start(), end))
    hits += _known_hits(text, known)
    return sorted(hits, key=lambda h: (h.start, -h.end))


def contains_known_secret(text: str, known: KnownSecrets) -> bool:
    """Whether ``text`` carries one of the server's own secret values (or a piece of a long one)."""
    return bool(known) and bool(_known_hits(text, known))


def first_secret_detector(text: str, known: KnownSecrets = NO_KNOWN_SECRETS) -> str | None:
    """The first token detector (in :data:`TOKEN_DETECTORS` order) that matches, then
    :data:`SERVER_SECRET`; ``None`` when the text is clean. For refusals, where only the name matters."""
    for detector in TOKEN_DETECTORS:
        if detector.regex.search(text):
            return detector.name
    return SERVER_SECRET if contains_known_secret(text, known) else None


def redact_text(
    text: str, known: KnownSecrets = NO_KNOWN_SECRETS, marker: str = REDACTION_MARKER
) -> tuple[str, tuple[str, ...]]:
    """``text`` with every hit of :func:`scan_text` replaced by ``marker`` (overlapping hits merged),
    and the names of the detectors that hit (sorted, unique; empty when nothing was found)."""
    hits = scan_text(text, known)
    if not hits:
        return text, ()
    parts: list[str] = []
    cursor = 0
    span_start, span_end = hits[0].start, hits[0].end
    for hit in hits[1:]:
        if hit.start <= span_end:
            span_end = max(span_end, hit.end)
            continue
        parts += [text[cursor:span_start], marker]
        cursor, span_start, span_end = span_end, hit.start, hit.end
    parts += [text[cursor:span_start], marker, text[span_end:]]
    return "".join(parts), tuple(sorted({h.detector for h in hits}))


def redact_strings(value: Any, known: KnownSecrets = NO_KNOWN_SECRETS) -> tuple[Any, tuple[str, ...]]:
    """A JSON value with every string redacted by :func:`redact_text` (dict keys are left alone: they are
    the API's field names), and the detectors that hit. Unchanged parts keep their identity."""
    if isinstance(value, str):
        return redact_text(value, known)
    if isinstance(value, dict):
        found: set[str] = set()
        out: dict[Any, Any] = {}
        for key, item in value.items():
            out[key], names = redact_strings(item, known)
            found.update(names)
        return (out, tuple(sorted(found))) if found else (value, ())
    if isinstance(value, list | tuple):
        found = set()
        items = []
        for item in value:
            redacted, names = redact_strings(item, known)
            items.append(redacted)
            found.update(names)
        return (type(value)(items), tuple(sorted(found))) if found else (value, ())
    return value, ()


# ------------------------------------------------------------------------------------- entropy
ENTROPY_MIN_LENGTH = 32
ENTROPY_THRESHOLD = 4.5
_TOKEN = re.compile(rf"[A-Za-z0-9_\-=+/]{{{ENTROPY_MIN_LENGTH},}}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_HEX_DIGEST_LENGTHS = frozenset({32, 40, 64})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE)
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"[0-9]")


def shannon_entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (0 for the empty string)."""
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    length = len(text)
    entropy = 0.0
    for count in counts.values():
        p = count / length
        entropy -= p * math.log2(p)
    return entropy


@dataclass(frozen=True)
class EntropyHit:
    """A token-like string that looks random enough to be a secret (the token itself is not kept)."""

    entropy: float
    length: int


def is_entropy_candidate(token: str) -> bool:
    """Whether a token is tested for entropy: not a hex digest (32/40/64), not a UUID, has a letter and a digit."""
    if len(token) in _HEX_DIGEST_LENGTHS and _HEX.fullmatch(token):
        return False  # md5/sha1/sha256 digests, git object ids
    if _UUID.fullmatch(token):
        return False
    return _LETTER.search(token) is not None and _DIGIT.search(token) is not None


def find_high_entropy_token(lines: Sequence[str] | Iterable[str]) -> EntropyHit | None:
    """The first token of ≥32 chars of ``[A-Za-z0-9_-=+/]`` (not a hex digest or UUID, with a letter
    and a digit) whose entropy is ≥ 4.5 bits per character."""
    for line in lines:
        for match in _TOKEN.finditer(line):
            token = match.group(0)
            if not is_entropy_candidate(token):
                continue
            entropy = shannon_entropy(token)
            if entropy >= ENTROPY_THRESHOLD:
                return EntropyHit(entropy, len(token))
    return None
