"""Pure texts and keys of write mode: the write-output key and branch, the commit message, the bot PR's
title and body, the policy-refusal reply, and the "someone already pushed there" error classifier."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Literal

from kodiai.execution.write.policy import WritePolicyError
from kodiai.text.js import js_trim

__all__ = [
    "WriteKeyword",
    "build_bot_pr_body",
    "build_bot_pr_title",
    "build_commit_message",
    "format_policy_refusal",
    "has_write_output_marker",
    "is_branch_conflict_error",
    "write_branch_name",
    "write_output_key",
    "write_output_marker",
]

WriteKeyword = Literal["apply", "change"]

_CONFLICT_HINTS = ("non-fast-forward", "fetch first", "rejected", "already exists")


def write_output_key(
    *,
    installation_id: int,
    owner: str,
    repo: str,
    pr_number: int,
    comment_id: int,
    keyword: str,
) -> str:
    """``kodiai-write-output:v1:inst-<id>:<owner>/<repo>:pr-<n>:comment-<commentId>:keyword-<keyword>``
    with owner, repo and keyword trimmed and lower-cased: one key per triggering comment."""
    o, r, k = (js_trim(part).lower() for part in (owner, repo, keyword))
    return f"kodiai-write-output:v1:inst-{installation_id}:{o}/{r}:pr-{pr_number}:comment-{comment_id}:keyword-{k}"


def write_branch_name(*, pr_number: int, comment_id: int, write_key: str) -> str:
    """The deterministic bot branch: ``kodiai/apply/pr-<n>-comment-<id>-<first 12 hex of sha256(key)>``."""
    digest = hashlib.sha256(write_key.encode("utf-8")).hexdigest()[:12]
    return f"kodiai/apply/pr-{pr_number}-comment-{comment_id}-{digest}"


def write_output_marker(write_key: str) -> str:
    """The commit-message line that marks a commit as the output of ``write_key``."""
    return f"kodiai-write-output-key: {write_key}"


def has_write_output_marker(commit_messages: Iterable[str], write_key: str) -> bool:
    """Whether any commit message carries ``write_key``'s marker (the same-repo idempotency check)."""
    marker = write_output_marker(write_key)
    return any(marker in message for message in commit_messages)


def build_commit_message(*, pr_number: int, write_key: str, delivery_id: str) -> str:
    """``kodiai: apply requested changes (pr #<n>)``, a blank line, the marker, ``deliveryId: <id>``."""
    return "\n".join(
        (
            f"kodiai: apply requested changes (pr #{pr_number})",
            "",
            write_output_marker(write_key),
            f"deliveryId: {delivery_id}",
        )
    )


def build_bot_pr_title(pr_number: int) -> str:
    return f"kodiai: apply changes for PR #{pr_number}"


def build_bot_pr_body(
    *, keyword: str, request: str, pr_number: int, delivery_id: str, commit_sha: str
) -> str:
    """The bot PR's body: where the request came from and which commit carries it."""
    return "\n".join(
        (
            "Requested via mention write intent.",
            "",
            f"Keyword: {keyword}",
            "",
            f"Request: {request}",
            "",
            f"Source PR: #{pr_number}",
            f"Delivery: {delivery_id}",
            f"Commit: {commit_sha}",
        )
    )


def is_branch_conflict_error(error: BaseException | str) -> bool:
    """Whether a failed branch push/create means the branch is already there (a previous or concurrent
    run of the same request): the lower-cased message mentions ``non-fast-forward``, ``fetch first``,
    ``rejected`` or ``already exists``. A policy refusal never is."""
    if isinstance(error, WritePolicyError):
        return False
    text = (error if isinstance(error, str) else str(error)).lower()
    return any(hint in text for hint in _CONFLICT_HINTS)


def _yaml_single_quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def format_policy_refusal(error: WritePolicyError, allow_paths: Sequence[str] = ()) -> str:
    """The refusal reply for a policy error (unwrapped; the caller wraps it in details and sanitises)."""
    lines = ["Write request refused.", "", f"Reason: {error.code}"]
    for label, value in (
        ("Rule", error.rule),
        ("File", error.path),
        ("Matched pattern", error.pattern),
        ("Detector", error.detector),
    ):
        if value:
            lines.append(f"{label}: {value}")
    lines += ["", error.message]
    if error.code == "write-policy-not-allowed" and error.path:
        lines += [
            "",
            "Smallest config change (if intended):",
            "```yml",
            "write:",
            "  allowPaths:",
            f"    - {_yaml_single_quoted(error.path)}",
            "```",
        ]
        if allow_paths:
            current = ", ".join(_yaml_single_quoted(p) for p in allow_paths)
            lines += ["", f"Current allowPaths: {current}"]
    elif error.code == "write-policy-denied-path":
        lines += [
            "",
            "This path is blocked by denyPaths because changes to it are potentially risky.",
            "If the change is intended, narrow or remove the matching denyPaths entry in .kodiai.yml.",
        ]
    elif error.code == "write-policy-secret-detected":
        lines += [
            "",
            "No safe config bypass suggested.",
            "Remove or redact the secret-like content from the requested change and retry.",
            "(Secret scanning can be turned off with write.secretScan.enabled: false, at reduced safety.)",
        ]
    elif error.code == "write-policy-no-changes":
        lines += [
            "",
            "No file changes were produced.",
            "Restate the request with a concrete file and the edit you want made.",
        ]
    return "\n".join(lines)
