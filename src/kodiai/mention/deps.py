"""What the mention handler is given: the shared handler dependencies plus the persisted mention state.

Kept apart from :class:`~kodiai.handler_kit.deps.HandlerDeps` so the review handler does not depend on the
jobs database; the composition root builds one :class:`MentionDeps` next to the ``HandlerDeps``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kodiai.handler_kit.deps import HandlerDeps
from kodiai.mention.state import MentionState


@dataclass(frozen=True)
class MentionDeps:
    review: HandlerDeps
    """The shared dependencies (clients, workspaces, executor, queue, knowledge and telemetry stores)."""
    state: MentionState
    """In-flight write keys, write rate limits and conversation turns (synchronous SQLite)."""
