"""The routing fields of a webhook body, read without building the whole payload (pure).

Acknowledging a delivery needs only a few fields: ``action``, ``installation``, ``sender`` (bot filter)
and ``repository`` (the log line). msgspec decodes exactly those into a small dict shaped like the
payload (so the same field helpers work on it) while it checks the syntax of the whole document and skips
the rest, at about a third of the cost of a full parse (benchmarks/webhook.py). The full payload is parsed
later, when a handler reads it.

The fast path only answers when it can vouch that :func:`kodiai.webhook.body.parse_json` accepts the
same body: anything msgspec refuses or cannot type (a non-object document, NaN, a BOM, lone surrogates,
very deep nesting, a ``repository`` that is not an object), and any body that is not valid UTF-8
(msgspec does not check the strings it skips), returns ``None`` and the caller parses in full.
"""

from __future__ import annotations

from typing import Any

import msgspec


class _Repository(msgspec.Struct):
    full_name: Any = None
    name: Any = None
    owner: Any = None


class _Routing(msgspec.Struct):
    action: Any = None
    installation: Any = None
    sender: Any = None
    repository: _Repository | None = None


_DECODER = msgspec.json.Decoder(_Routing)


def routing_view(body: bytes) -> dict[str, Any] | None:
    """``{"action", "installation", "sender", "repository"}`` of a JSON object body (absent keys are
    ``None``, as ``dict.get`` gives on the full payload), or ``None`` when the body needs a full parse."""
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        fields = _DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    repo = fields.repository
    return {
        "action": fields.action,
        "installation": fields.installation,
        "sender": fields.sender,
        "repository": None
        if repo is None
        else {"full_name": repo.full_name, "name": repo.name, "owner": repo.owner},
    }
