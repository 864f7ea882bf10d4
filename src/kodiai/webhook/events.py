"""The event record the router dispatches, and the fields derived from a raw payload (P3.1 step 6)."""

from __future__ import annotations

from typing import Any

from kodiai.webhook.body import parse_json


class WebhookEvent:
    """One delivery: id (``X-GitHub-Delivery``), name (``X-GitHub-Event``), payload, installation id.

    The payload may be given parsed, or as the raw body plus its :func:`~kodiai.webhook.routing.routing_view`:
    then routing reads the view and the body is parsed on the first read of :attr:`payload` (the ingress
    acknowledges without building the whole payload).
    """

    __slots__ = ("_payload", "_raw", "_routing", "id", "installation_id", "name")

    def __init__(
        self,
        id: str,
        name: str,
        payload: dict[str, Any] | None = None,
        installation_id: int = 0,
        *,
        raw: bytes | None = None,
        routing: dict[str, Any] | None = None,
    ) -> None:
        if payload is None and (raw is None or routing is None):
            payload = {}
        self.id = id
        self.name = name
        self.installation_id = installation_id
        self._payload = payload
        self._raw = raw
        self._routing = routing

    @property
    def payload(self) -> dict[str, Any]:
        """The parsed payload (parsed from the raw body on first use)."""
        if self._payload is None:
            parsed = parse_json(self._raw or b"")
            if not isinstance(parsed, dict):  # the routing view vouched for an object; never expected
                raise ValueError(f"delivery {self.id}: payload is not a JSON object")
            self._payload = parsed
        return self._payload

    @property
    def routing(self) -> dict[str, Any]:
        """What routing and logs read (``action``, ``installation``, ``sender``, ``repository``): the
        payload itself once parsed, else the routing view."""
        return self._payload if self._payload is not None else self._routing or {}

    @property
    def action(self) -> str | None:
        return payload_action(self.routing)

    @property
    def specific_key(self) -> str | None:
        action = self.routing.get("action")
        return f"{self.name}.{action}" if action else None

    def __repr__(self) -> str:
        return f"WebhookEvent(id={self.id!r}, name={self.name!r}, installation_id={self.installation_id!r})"


def payload_action(payload: dict[str, Any]) -> str | None:
    """``payload.action`` when it is a string of real text: JSON may carry a lone surrogate
    (``"\\ud800"``), which no UTF-8 store (the job journal's SQLite) can hold, so such an action counts
    as absent instead of failing every attempt to journal the delivery."""
    action = payload.get("action")
    if not isinstance(action, str):
        return None
    if not action.isascii():
        try:
            action.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return action


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
    """The event for a parsed delivery."""
    return WebhookEvent(delivery_id, event_name, payload, installation_id(payload))


def build_lazy_event(delivery_id: str, event_name: str, raw: bytes, routing: dict[str, Any]) -> WebhookEvent:
    """The event for a body read through its routing view; the payload is parsed on first use."""
    return WebhookEvent(delivery_id, event_name, None, installation_id(routing), raw=raw, routing=routing)
