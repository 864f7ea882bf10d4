"""The event record the router dispatches, and the fields derived from a raw payload (§3.1 step 6)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class WebhookEvent(BaseModel):
    """One delivery: id (``X-GitHub-Delivery``), name (``X-GitHub-Event``), payload, installation id."""

    id: str
    name: str
    payload: dict[str, Any] = Field(default_factory=dict)
    installation_id: int = 0

    @property
    def action(self) -> str | None:
        return payload_action(self.payload)

    @property
    def specific_key(self) -> str | None:
        action = self.payload.get("action")
        return f"{self.name}.{action}" if action else None


def payload_action(payload: dict[str, Any]) -> str | None:
    action = payload.get("action")
    return action if isinstance(action, str) else None


def sender_login(payload: dict[str, Any]) -> str | None:
    sender = payload.get("sender")
    login = sender.get("login") if isinstance(sender, dict) else None
    return login if isinstance(login, str) else None


def repository_name(payload: dict[str, Any]) -> str | None:
    """``repository.full_name``, else ``owner.login/name``."""
    repo = payload.get("repository")
    if not isinstance(repo, dict):
        return None
    full = repo.get("full_name")
    if isinstance(full, str) and full:
        return full
    owner = repo.get("owner")
    login = owner.get("login") if isinstance(owner, dict) else None
    name = repo.get("name")
    if isinstance(login, str) and isinstance(name, str):
        return f"{login}/{name}"
    return None


def installation_id(payload: dict[str, Any]) -> int:
    """``installation.id`` when it is a (64-bit, non-negative) integer, else 0 (the shared lane)."""
    inst = payload.get("installation")
    value = inst.get("id") if isinstance(inst, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
        return value
    return 0


def build_event(delivery_id: str, event_name: str, payload: dict[str, Any]) -> WebhookEvent:
    """The event for a parsed delivery. Built without re-validation (every field already has its type):
    validating ``payload`` would copy a dict of a few hundred keys on the ack path for nothing."""
    return WebhookEvent.model_construct(
        id=delivery_id, name=event_name, payload=payload, installation_id=installation_id(payload)
    )
