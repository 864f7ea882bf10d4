"""Pure texts of write mode: the commit message and its idempotency marker, the bot PR's title and body,
the "someone already pushed there" error classifier, and the bridge from a policy error to the refusal reply.

The write-output key and the bot branch name are built by :mod:`kodiai.mention.intent`
(``build_write_output_key``, ``build_write_branch_name``); the reply texts live in
:mod:`kodiai.mention.replies`."""

from __future__ import annotations

from collections.abc import Iterable

from kodiai.mention.replies import WritePolicyRefusal
from kodiai.mention.write.policy import WritePolicyError

__all__ = [
    "build_bot_pr_body",
    "build_bot_pr_title",
    "build_commit_message",
    "has_write_output_marker",
    "is_branch_conflict_error",
    "policy_refusal",
    "write_output_marker",
]

_CONFLICT_HINTS = ("non-fast-forward", "fetch first", "rejected", "already exists")


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


def policy_refusal(error: WritePolicyError) -> WritePolicyRefusal:
    """The R15 reply's view of a policy error: pass it to
    :func:`kodiai.mention.replies.write_refusal_reply` (with the repo's ``allowPaths``)."""
    return WritePolicyRefusal(
        code=error.code,
        message=error.message,
        rule=error.rule,
        path=error.path,
        pattern=error.pattern,
        detector=error.detector,
    )
