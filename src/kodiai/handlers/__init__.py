"""The handlers layer: where a webhook becomes work on GitHub. One module per behaviour, each with a
``register(router, deps)`` naming its event keys; :func:`register_builtin_handlers` composes them.

Registration order is dispatch order (spec/platform.md §3.3): the review first, so a
``pull_request.opened`` reviews before its feedback sync on the installation's lane.
"""

from __future__ import annotations

from kodiai.handlers import dep_bump_history, feedback, review
from kodiai.handlers.deps import HandlerDeps, LearnedMemory
from kodiai.webhook.router import EventRouter

BUILTIN = (review.register, feedback.register, dep_bump_history.register)


def register_builtin_handlers(router: EventRouter, deps: HandlerDeps) -> None:
    for register in BUILTIN:
        register(router, deps)


__all__ = ["HandlerDeps", "LearnedMemory", "register_builtin_handlers"]
