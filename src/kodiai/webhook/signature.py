"""Webhook signature verification (pure): ``X-Hub-Signature-256`` over the exact body bytes."""

from __future__ import annotations

import hashlib
import hmac
import re

PREFIX = "sha256="
_WELL_FORMED = re.compile(r"sha256=[0-9a-f]{64}")


def sign(secret: str | bytes, body: bytes) -> str:
    """The header value GitHub sends for ``body``: ``sha256=`` + lower-case hex HMAC-SHA256."""
    key = secret.encode() if isinstance(secret, str) else secret
    return PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify_signature(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """True only for the exact ``sha256=<lower hex>`` of ``body``, compared in constant time.

    As the original: a missing header, an empty body, upper-case hex, a bare digest without the
    prefix, or a digest of a different length all fail; the legacy sha1 header is never consulted.
    """
    if not header or not body:
        return False
    key = secret.encode() if isinstance(secret, str) else secret
    expected = b"sha256=" + hmac.digest(key, body, "sha256").hex().encode()  # one-shot C HMAC
    try:
        given = header.encode("ascii")
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(expected, given)


def well_formed(header: str | None) -> bool:
    """True when ``header`` could be a valid signature (``sha256=`` + 64 lower-case hex digits).

    Checked before the body is read: anything else can never verify (see :func:`verify_signature`), so
    such a request is refused without buffering its body.
    """
    return header is not None and _WELL_FORMED.fullmatch(header) is not None
