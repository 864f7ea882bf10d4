"""Memory governance from GitHub (issue 14, a port addition): the ``@kodiai forget`` and ``@kodiai remember:``
commands and the texts the bot answers them with. Pure: parsing and wording only.

``forget`` (the whole question, case-insensitive, optionally followed by "this" and punctuation) in the
review thread of one of the bot's findings retires that finding's learned memory. ``remember: <text>`` on a
pull request adds ``<text>`` as a repo-level memory. Any other question is not a command and keeps the
original's mention behaviour.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kodiai.github.permissions import has_write_access

REMEMBER_MAX_CHARS = 1000

_FORGET = re.compile(r"forget(?:\s+(?:this|it|that))?[\s.!]*", re.IGNORECASE)
_REMEMBER = re.compile(r"remember:(.*)", re.IGNORECASE | re.DOTALL)


class MemoryCommand(BaseModel):
    model_config = ConfigDict(frozen=True)

    action: Literal["forget", "remember"]
    text: str = ""


def parse_memory_command(question: str) -> MemoryCommand | None:
    """The governance command in a mention's question (after the handle is stripped), or None."""
    text = question.strip()
    if _FORGET.fullmatch(text):
        return MemoryCommand(action="forget")
    match = _REMEMBER.match(text)
    if match:
        return MemoryCommand(action="remember", text=match.group(1).strip())
    return None


def is_maintainer(permission: str | None) -> bool:
    """Write access or above: the one rule every trust decision uses (:func:`has_write_access`)."""
    return has_write_access(permission)


def refused_reply(action: str, actor: str) -> str:
    return (
        f"Sorry @{actor}, only people with write access to this repository can ask me to `{action}` "
        "learned memories. Nothing was changed."
    )


def permission_unknown_reply(action: str) -> str:
    return (
        f"I couldn't check your permission on this repository, so I did not `{action}` anything. "
        "Please try again in a moment."
    )


def forget_outside_thread_reply() -> str:
    return (
        "`forget` works as a reply in the review thread of one of my findings: reply there with "
        "`@kodiai forget` and I will stop using that finding in future reviews."
    )


def not_a_finding_reply() -> str:
    return "This thread is not one of my review findings, so there is no learned memory to forget."


def already_forgotten_reply(actor: str, when: str) -> str:
    return f"This finding was already forgotten (by @{actor} at {when}); nothing more to do."


def forgotten_reply(repo: str, actor: str, removed: int) -> str:
    rows = "memory" if removed == 1 else "memories"
    return (
        f"Forgotten. I retired this finding ({removed} learned {rows}) for `{repo}`: future reviews will not "
        f"retrieve it or use it as a precedent, and new reactions to it are ignored. Requested by @{actor}."
    )


def remember_usage_reply() -> str:
    return (
        "Tell me what to remember after the colon, for example: "
        "`@kodiai remember: we validate all inputs at the API boundary, not in helpers`."
    )


def remember_too_long_reply(length: int) -> str:
    return f"That note is {length} characters; I can remember up to {REMEMBER_MAX_CHARS}. Please shorten it."


def remember_needs_pr_reply() -> str:
    return "`remember:` works on a pull request of this repository; nothing was stored."


def no_memory_reply(action: str) -> str:
    return f"Learned memory is not enabled on this installation, so I cannot `{action}` anything."


def remembered_reply(repo: str, actor: str, text: str, memory_id: int) -> str:
    quoted = "\n".join(f"> {line}" for line in text.splitlines() or [text])
    return (
        f"Remembered for `{repo}` (memory #{memory_id}, added by @{actor}). I will take this into account in "
        f"future reviews of this repository:\n\n{quoted}"
    )
