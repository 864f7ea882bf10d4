"""The bot filter (behaviour P3.3): drop the app's own events and bots not on the allow list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict


def normalize_login(login: str) -> str:
    """Lower-case, then strip one trailing ``[bot]``."""
    lowered = login.lower()
    return lowered[: -len("[bot]")] if lowered.endswith("[bot]") else lowered


class FilterDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    process: bool
    reason: str


# The four possible answers, built once (the filter runs twice per delivery on the hot path).
_SELF = FilterDecision(process=False, reason="Filtered: event from app itself")
_USER = FilterDecision(process=True, reason="User sender")
_ALLOWED = FilterDecision(process=True, reason="Bot on allow-list, passing through")
_NOT_ALLOWED = FilterDecision(process=False, reason="Filtered: bot account not on allow-list")


class BotFilter:
    """``should_process(sender)`` in the original's order: self → User → allow list."""

    def __init__(self, app_slug: str, allow_list: Iterable[str] = ()) -> None:
        self.app_slug = app_slug.lower()
        self.allow_list = frozenset(a.strip().lower() for a in allow_list if a.strip())

    def decide(self, sender: dict[str, Any]) -> FilterDecision:
        login = sender.get("login")
        normalized = normalize_login(login) if isinstance(login, str) else ""
        if normalized == self.app_slug:
            return _SELF
        if sender.get("type") == "User":
            return _USER
        if normalized in self.allow_list:
            return _ALLOWED
        return _NOT_ALLOWED

    def should_process(self, sender: dict[str, Any]) -> bool:
        return self.decide(sender).process
