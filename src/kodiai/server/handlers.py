"""Which features answer which webhook events, in dispatch order.

Each feature package has a ``register(router, deps)`` naming its event keys; this module composes them.
Registration order is dispatch order, the original's: review, mention, feedback sync, dep-bump history.
So a ``pull_request.opened`` reviews, and an ``@kodiai`` comment is answered, before the feedback sync
that the same event starts on the installation's lane.
"""

from __future__ import annotations

from kodiai.feedback.entry import register as register_feedback
from kodiai.handler_kit.deps import HandlerDeps
from kodiai.mention.deps import MentionDeps
from kodiai.mention.entry import register as register_mention
from kodiai.mention.state import MentionState
from kodiai.review.dep_bumps import history as dep_bump_history
from kodiai.review.entry import register as register_review
from kodiai.webhook.router import EventRouter

BUILTIN = (register_review, register_feedback, dep_bump_history.register)


def register_builtin_handlers(
    router: EventRouter, deps: HandlerDeps, mention_state: MentionState | None = None
) -> None:
    """Every built-in handler; the mention handler needs the persisted mention state (none: left out)."""
    register_review(router, deps)
    if mention_state is not None:
        register_mention(router, MentionDeps(review=deps, state=mention_state))
    for register in BUILTIN[1:]:
        register(router, deps)
