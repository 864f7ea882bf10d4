"""The write policy: which staged changes write mode may commit (pure).

Trusted code, never the model, decides whether a mention's edits may be committed. In order:

1. nothing staged → ``write-policy-no-changes``;
2. any staged path matching a deny glob → ``write-policy-denied-path`` (deny wins over allow);
3. a non-empty allow list that some staged path matches no entry of → ``write-policy-not-allowed``;
4. when secret scanning is on, the *added* lines of each file's staged diff are checked against six
   regex detectors (detector by detector, the first file that hits wins), then against a Shannon
   entropy test for token-like strings → ``write-policy-secret-detected``.

Globs are picomatch with dot files (:mod:`kodiai.text.glob`), anchored at the repository root: a
pattern without a slash matches only a root-level path (``README.md``, ``*.md``), ``**/*.pem`` also
matches at the root, and a pattern ending in ``/`` covers everything below that directory.

Messages never contain the matched text, so a secret is not echoed back into a comment or a log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kodiai.config.models import DEFAULT_DENY_PATHS
from kodiai.text.glob import GlobError, compile_glob, glob_match, normalize_write_paths
from kodiai.text.js import to_fixed

__all__ = [
    "DEFAULT_DENY_PATHS",
    "ENTROPY_MIN_LENGTH",
    "ENTROPY_THRESHOLD",
    "SECRET_DETECTORS",
    "EntropyHit",
    "SecretDetector",
    "WritePolicy",
    "WritePolicyCode",
    "WritePolicyError",
    "added_lines",
    "check_write_policy",
    "find_high_entropy_token",
    "find_write_policy_violation",
    "is_entropy_candidate",
    "shannon_entropy",
]

WritePolicyCode = Literal[
    "write-policy-denied-path",
    "write-policy-not-allowed",
    "write-policy-secret-detected",
    "write-policy-no-changes",
]


class WritePolicyError(Exception):
    """A write refused by policy. ``str(err)`` is the message; the other fields feed the refusal reply."""

    def __init__(
        self,
        code: WritePolicyCode,
        message: str,
        *,
        rule: str | None = None,
        path: str | None = None,
        pattern: str | None = None,
        detector: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code: WritePolicyCode = code
        self.message = message
        self.rule = rule
        self.path = path
        self.pattern = pattern
        self.detector = detector

    def __repr__(self) -> str:
        return f"WritePolicyError(code={self.code!r}, message={self.message!r})"


@dataclass(frozen=True)
class WritePolicy:
    """The policy of one repository (``write.denyPaths``, ``write.allowPaths``, ``write.secretScan.enabled``).

    The defaults are the config defaults: the twelve default deny globs, no allow list, scan on.
    """

    deny_paths: tuple[str, ...] = DEFAULT_DENY_PATHS
    allow_paths: tuple[str, ...] = ()
    secret_scan: bool = True

    @classmethod
    def from_config(cls, write: object) -> WritePolicy:
        """From a :class:`kodiai.config.models.WriteConfig` (anything with the same attributes)."""
        deny = getattr(write, "deny_paths", DEFAULT_DENY_PATHS)
        allow = getattr(write, "allow_paths", ())
        scan = getattr(getattr(write, "secret_scan", None), "enabled", True)
        return cls(tuple(deny), tuple(allow), bool(scan))


@dataclass(frozen=True)
class SecretDetector:
    """One regex detector; ``name`` appears as ``regex:<name>`` in a refusal."""

    name: str
    regex: re.Pattern[str] = field(repr=False)


# ASCII classes only (JS regexes without the ``u`` flag); searched anywhere in a file's added text.
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

ENTROPY_MIN_LENGTH = 32
ENTROPY_THRESHOLD = 4.5
_TOKEN = re.compile(rf"[A-Za-z0-9_\-=+/]{{{ENTROPY_MIN_LENGTH},}}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_HEX_DIGEST_LENGTHS = frozenset({32, 40, 64})
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE)
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"[0-9]")


def added_lines(diff: str) -> list[str]:
    """The added lines of a unified diff, without their ``+``: lines starting ``+`` but not ``+++``.

    Removed and context lines are ignored, so deleting a secret-like line is never refused. (Like the
    original, an added line whose own text starts with ``++`` is skipped along with the file header.)
    """
    return [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


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


def find_high_entropy_token(lines: Iterable[str]) -> EntropyHit | None:
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


@dataclass(frozen=True)
class _Glob:
    raw: str
    normalized: str


def _compile(patterns: Sequence[str]) -> list[_Glob]:
    """Normalise (trim, ``dir/`` → ``dir/**``, drop empties) and compile; a bad pattern is refused."""
    globs: list[_Glob] = []
    for raw in patterns:
        normalized = normalize_write_paths([raw])
        if not normalized:
            continue
        try:
            compile_glob(normalized[0])
        except GlobError as exc:
            raise WritePolicyError(
                "write-policy-not-allowed", f"Write blocked: invalid denyPaths/allowPaths pattern: {exc}"
            ) from None
        globs.append(_Glob(raw, normalized[0]))
    return globs


def _first_match(globs: Sequence[_Glob], path: str) -> _Glob | None:
    for glob in globs:
        if glob_match(glob.normalized, path):
            return glob
    return None


def find_write_policy_violation(
    staged_paths: Sequence[str],
    added_lines_by_path: Mapping[str, Sequence[str]],
    deny_paths: Sequence[str],
    allow_paths: Sequence[str],
    secret_scan: bool,
) -> WritePolicyError | None:
    """The policy's verdict on a staged change set: the refusal, or ``None`` when the write may go ahead.

    ``staged_paths`` are repo-relative, in ``git diff --cached --name-only`` order; ``added_lines_by_path``
    maps each to its added lines (see :func:`added_lines`); a path missing from it has none.
    """
    if not staged_paths:
        return WritePolicyError("write-policy-no-changes", "No staged changes to commit")
    try:
        deny = _compile(deny_paths)
        allow = _compile(allow_paths)
    except WritePolicyError as err:
        return err
    for path in staged_paths:
        hit = _first_match(deny, path)
        if hit is not None:
            return WritePolicyError(
                "write-policy-denied-path",
                f"Write blocked: denied path staged: {path}",
                rule="denyPaths",
                path=path,
                pattern=hit.raw,
            )
    if allow:
        for path in staged_paths:
            if _first_match(allow, path) is None:
                return WritePolicyError(
                    "write-policy-not-allowed",
                    f"Write blocked: path is not allowlisted: {path}",
                    rule="allowPaths",
                    path=path,
                )
    if not secret_scan:
        return None
    texts = [(path, "\n".join(added_lines_by_path.get(path, ()))) for path in staged_paths]
    for detector in SECRET_DETECTORS:
        for path, text in texts:
            if text and detector.regex.search(text):
                return WritePolicyError(
                    "write-policy-secret-detected",
                    f"Write blocked: suspected secret detected ({detector.name}) in staged additions",
                    rule="secretScan",
                    path=path,
                    detector=f"regex:{detector.name}",
                )
    for path in staged_paths:
        entropy_hit = find_high_entropy_token(added_lines_by_path.get(path, ()))
        if entropy_hit is not None:
            return WritePolicyError(
                "write-policy-secret-detected",
                "Write blocked: suspected secret detected (entropy): High-entropy token-like string "
                f"detected (entropy={to_fixed(entropy_hit.entropy, 2)}, length={entropy_hit.length})",
                rule="secretScan",
                path=path,
                detector="entropy",
            )
    return None


def check_write_policy(
    staged_paths: Sequence[str],
    added_lines_by_path: Mapping[str, Sequence[str]],
    deny_paths: Sequence[str],
    allow_paths: Sequence[str],
    secret_scan: bool,
) -> None:
    """Raise the :class:`WritePolicyError` of :func:`find_write_policy_violation`, if any."""
    violation = find_write_policy_violation(
        staged_paths, added_lines_by_path, deny_paths, allow_paths, secret_scan
    )
    if violation is not None:
        raise violation
