"""The pull-request review handler (spec/review.md §1): Phase A in :mod:`.entry`, the job in :mod:`.job`."""

from kodiai.handlers.review.entry import REVIEW_EVENT_KEYS, register

__all__ = ["REVIEW_EVENT_KEYS", "register"]
