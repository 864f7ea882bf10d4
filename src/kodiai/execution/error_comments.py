"""Posting the user-visible error comment (behaviour E4 ``postOrUpdateErrorComment``).

The text comes from :func:`kodiai.execution.errors.format_error_comment`; this module only delivers it:
edit the tracking comment when one is given, else create a new issue/PR comment. It never raises — a
failure to report a failure is logged ("Failed to post/update error comment") and swallowed.
"""

from __future__ import annotations

from collections.abc import Sequence

from kodiai.github.rest import RestApi
from kodiai.log import Logger, get_logger, redact
from kodiai.text.formatting import wrap_in_details
from kodiai.text.sanitizer import sanitize_outgoing_mentions

MENTION_ERROR_SUMMARY = "Kodiai encountered an error"


def mention_error_body(comment: str, bot_handles: Sequence[str]) -> str:
    """Mentions wrap the error comment in ``<details>`` (summary ``Kodiai encountered an error``)."""
    return sanitize_outgoing_mentions(wrap_in_details(comment, MENTION_ERROR_SUMMARY), bot_handles)


async def post_or_update_error_comment(
    rest: RestApi,
    *,
    issue_number: int,
    body: str,
    bot_handles: Sequence[str] = (),
    tracking_comment_id: int | None = None,
    log: Logger | None = None,
) -> int | None:
    """Edit ``tracking_comment_id`` or create a comment on ``issue_number``; return its id, None on failure."""
    logger = log or get_logger("kodiai.execution.error_comments")
    text = sanitize_outgoing_mentions(body, bot_handles)
    try:
        if tracking_comment_id is not None:
            await rest.patch(f"/issues/comments/{tracking_comment_id}", {"body": text})
            return tracking_comment_id
        created = await rest.post(f"/issues/{issue_number}/comments", {"body": text})
        return int(created["id"])
    except Exception as exc:  # reporting an error must never raise
        logger.error(
            "Failed to post/update error comment",
            issue_number=issue_number,
            tracking_comment_id=tracking_comment_id,
            error=redact(str(exc)),
        )
        return None
