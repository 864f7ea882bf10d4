"""The handlers layer: where a webhook becomes work on GitHub. One module per behaviour, each with a
``register(router, deps)`` naming its event keys; :func:`register_builtin_handlers` composes them.

Registration order is dispatch order (spec/platform.md §3.3), the original's: review, mention, feedback
sync, dep-bump history. So a ``pull_request.opened`` reviews, and an ``@kodiai`` comment is answered,
before the feedback sync that the same event starts on the installation's lane.
"""

from __future__ import annotations

from kodiai.handlers import dep_bump_history, feedback, mention, review
from kodiai.handlers.deps import HandlerDeps, LearnedMemory
from kodiai.handlers.mention import MentionDeps
from kodiai.jobs.mention_state import MentionState
from kodiai.webhook.router import EventRouter

BUILTIN = (review.register, feedback.register, dep_bump_history.register)


def register_builtin_handlers(
    router: EventRouter, deps: HandlerDeps, mention_state: MentionState | None = None
) -> None:
    """Every built-in handler; the mention handler needs the persisted mention state (none: left out)."""
    review.register(router, deps)
    if mention_state is not None:
        mention.register(router, MentionDeps(review=deps, state=mention_state))
    for register in BUILTIN[1:]:
        register(router, deps)


__all__ = ["HandlerDeps", "LearnedMemory", "register_builtin_handlers"]
