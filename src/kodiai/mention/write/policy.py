"""The write policy: which staged changes write mode may commit (pure).

Trusted code, never the model, decides whether a mention's edits may be committed. In order:

1. nothing staged → ``write-policy-no-changes``;
2. any staged path matching a deny glob → ``write-policy-denied-path`` (deny wins over allow);
3. a non-empty allow list that some staged path matches no entry of → ``write-policy-not-allowed``;
4. the *added* lines of each file's staged diff are checked against the token detectors of
   :mod:`kodiai.text.secret_scan` (the original's six first; detector by detector, the first file that
   hits wins), then against the server's own secret values, and — only when ``write.secretScan.enabled``
   — against a Shannon entropy test for token-like strings → ``write-policy-secret-detected``. The
   original let the flag turn off the regexes too; here it governs only the entropy heuristic, so a
   model can never commit a token or the App's key (see docs/parity.md).

Globs are picomatch with dot files (:mod:`kodiai.compat.glob`), anchored at the repository root: a
pattern without a slash matches only a root-level path (``README.md``, ``*.md``), ``**/*.pem`` also
matches at the root, and a pattern ending in ``/`` covers everything below that directory.

Messages never contain the matched text, so a secret is not echoed back into a comment or a log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kodiai.compat.glob import GlobError, compile_glob, glob_match, normalize_write_paths
from kodiai.compat.js import to_fixed
from kodiai.config.models import DEFAULT_DENY_PATHS
from kodiai.text.secret_scan import (
    ENTROPY_MIN_LENGTH,
    ENTROPY_THRESHOLD,
    NO_KNOWN_SECRETS,
    SECRET_DETECTORS,
    SERVER_SECRET,
    TOKEN_DETECTORS,
    EntropyHit,
    KnownSecrets,
    SecretDetector,
    contains_known_secret,
    find_high_entropy_token,
    first_secret_detector,
    is_entropy_candidate,
    shannon_entropy,
)

__all__ = [
    "DEFAULT_DENY_PATHS",
    "ENTROPY_MIN_LENGTH",
    "ENTROPY_THRESHOLD",
    "SECRET_DETECTORS",
    "TOKEN_DETECTORS",
    "EntropyHit",
    "KnownSecrets",
    "SecretDetector",
    "WritePolicy",
    "WritePolicyCode",
    "WritePolicyError",
    "added_lines",
    "check_commit_message",
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


def added_lines(diff: str) -> list[str]:
    """The added lines of a unified diff, without their ``+``: lines starting ``+`` but not ``+++``.

    Removed and context lines are ignored, so deleting a secret-like line is never refused. (Like the
    original, an added line whose own text starts with ``++`` is skipped along with the file header.)
    """
    return [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


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


def _secret_refusal(
    name: str, path: str | None, detector: str, where: str = "staged additions"
) -> WritePolicyError:
    return WritePolicyError(
        "write-policy-secret-detected",
        f"Write blocked: suspected secret detected ({name}) in {where}",
        rule="secretScan",
        path=path,
        detector=detector,
    )


def find_write_policy_violation(
    staged_paths: Sequence[str],
    added_lines_by_path: Mapping[str, Sequence[str]],
    deny_paths: Sequence[str],
    allow_paths: Sequence[str],
    secret_scan: bool,
    *,
    known: KnownSecrets = NO_KNOWN_SECRETS,
) -> WritePolicyError | None:
    """The policy's verdict on a staged change set: the refusal, or ``None`` when the write may go ahead.

    ``staged_paths`` are repo-relative, in ``git diff --cached --name-only`` order; ``added_lines_by_path``
    maps each to its added lines (see :func:`added_lines`); a path missing from it has none. ``known``:
    the server's own secret values (:func:`kodiai.outbound.known_secrets`), matched whatever
    ``secret_scan`` says.
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
    texts = [(path, "\n".join(added_lines_by_path.get(path, ()))) for path in staged_paths]
    for detector in TOKEN_DETECTORS:
        for path, text in texts:
            if text and detector.regex.search(text):
                return _secret_refusal(detector.name, path, f"regex:{detector.name}")
    for path, text in texts:
        if text and contains_known_secret(text, known):
            return _secret_refusal(SERVER_SECRET, path, SERVER_SECRET)
    if not secret_scan:
        return None
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
    *,
    known: KnownSecrets = NO_KNOWN_SECRETS,
) -> None:
    """Raise the :class:`WritePolicyError` of :func:`find_write_policy_violation`, if any."""
    violation = find_write_policy_violation(
        staged_paths, added_lines_by_path, deny_paths, allow_paths, secret_scan, known=known
    )
    if violation is not None:
        raise violation


def check_commit_message(message: str, known: KnownSecrets = NO_KNOWN_SECRETS) -> None:
    """Refuse a commit message that carries a token or a server secret (whatever ``secretScan`` says)."""
    name = first_secret_detector(message, known)
    if name is not None:
        detector = SERVER_SECRET if name == SERVER_SECRET else f"regex:{name}"
        raise _secret_refusal(name, None, detector, "the commit message")
