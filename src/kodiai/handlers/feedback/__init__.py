"""Feedback sync (spec/review.md §1 step 55): human 👍/👎 on finding comments into the knowledge store
and the learned memory. Gates and the job in :mod:`.sync`, the pure filter in :mod:`.reactions`, the
memory outcome rows in :mod:`.memory`."""

from kodiai.handlers.feedback.sync import FEEDBACK_SYNC_EVENT_KEYS, register

__all__ = ["FEEDBACK_SYNC_EVENT_KEYS", "register"]
