"""The ``@kodiai`` mention handler (spec/exec.md §3): Phase A gates and enqueues (``entry``), Phase B
answers or applies the request (``job``, with write-mode publishing in ``publish``)."""

from __future__ import annotations

from kodiai.handlers.mention.deps import MentionDeps
from kodiai.handlers.mention.entry import register

__all__ = ["MentionDeps", "register"]
