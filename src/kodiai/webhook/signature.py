"""Webhook signature verification (pure): ``X-Hub-Signature-256`` over the exact body bytes.

During a webhook secret rotation two secrets verify (``GITHUB_WEBHOOK_SECRET`` and
``GITHUB_WEBHOOK_SECRET_PREVIOUS``): :func:`matching_secret` says which one signed a delivery, so the
operator can see when the old one is no longer used and remove it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence

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
    return matching_secret((secret,), body, header) == 0


def matching_secret(secrets: Sequence[str | bytes], body: bytes, header: str | None) -> int | None:
    """The index in ``secrets`` of the secret that signed ``body``, or ``None`` when none did.

    Every secret is checked, each with a constant-time comparison, whichever matches (the time taken
    does not tell which secret, if any, a forged signature came close to). Same rules as
    :func:`verify_signature` for each secret.
    """
    if not header or not body:
        return None
    try:
        given = header.encode("ascii")
    except UnicodeEncodeError:
        return None
    found: int | None = None
    for index, secret in enumerate(secrets):
        key = secret.encode() if isinstance(secret, str) else secret
        expected = b"sha256=" + hmac.digest(key, body, "sha256").hex().encode()  # one-shot C HMAC
        if hmac.compare_digest(expected, given) and found is None:
            found = index
    return found


def well_formed(header: str | None) -> bool:
    """True when ``header`` could be a valid signature (``sha256=`` + 64 lower-case hex digits).

    Checked before the body is read: anything else can never verify (see :func:`verify_signature`), so
    such a request is refused without buffering its body.
    """
    return header is not None and _WELL_FORMED.fullmatch(header) is not None
