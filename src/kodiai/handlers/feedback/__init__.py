"""Feedback sync (spec/review.md §1 step 55): human 👍/👎 on finding comments into the knowledge store
and the learned memory. Gates and the job in :mod:`.sync`, the pure filter in :mod:`.reactions`, the
memory outcome rows in :mod:`.memory`; whose word counts (writers only) and the held-back findings of
untrusted authors in :mod:`.trust` and :mod:`.closed` (issue 23)."""

from kodiai.handlers.deps import HandlerDeps
from kodiai.handlers.feedback import closed, sync
from kodiai.handlers.feedback.sync import FEEDBACK_SYNC_EVENT_KEYS
from kodiai.webhook.router import EventRouter


def register(router: EventRouter, deps: HandlerDeps) -> None:
    """Feedback sync on PR activity, and the held-back findings' decision when a PR closes."""
    sync.register(router, deps)
    closed.register(router, deps)


__all__ = ["FEEDBACK_SYNC_EVENT_KEYS", "register"]
