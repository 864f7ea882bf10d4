"""Where feedback sync meets the router: PR activity syncs reactions, a closed PR settles held-back findings."""

from __future__ import annotations

from kodiai.feedback import closed, sync
from kodiai.handler_kit.deps import HandlerDeps
from kodiai.webhook.router import EventRouter


def register(router: EventRouter, deps: HandlerDeps) -> None:
    """Feedback sync on PR activity, and the held-back findings' decision when a PR closes."""
    sync.register(router, deps)
    closed.register(router, deps)
