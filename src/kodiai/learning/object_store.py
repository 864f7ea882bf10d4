"""The learned memory on object storage (``LEARNING_MEMORY_URI=s3://bucket/prefix``).

The standard AWS variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``) become LanceDB storage options; a plain ``http://`` endpoint is refused
unless ``AWS_ALLOW_HTTP=true``, so credentials never cross the network in clear by accident.

Several processes commit to one table, and LanceDB makes each commit with a conditional PUT
(``If-None-Match: *``): a store that ignores that header lets two commits overwrite each other and lose
memories silently. :func:`probe_conditional_put` writes one probe object twice and refuses to start unless the
second write is rejected. Secrets are never logged: only the bucket, the prefix and the endpoint's host.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlsplit

if TYPE_CHECKING:
    import httpx

REMOTE_SCHEMES = ("s3", "s3+ddb", "gs", "az", "abfs")
SKIP_PROBE_ENV = "LEARNING_MEMORY_SKIP_PUT_PROBE"
_TRUE = {"1", "true", "yes", "on"}


class MemoryStoreRefused(ValueError):
    """The memory store must not be opened (unsafe or misconfigured object store): start-up stops."""


def is_remote(uri: str) -> bool:
    """Whether ``uri`` names an object store (several processes may write it) rather than a directory."""
    scheme = urlsplit(str(uri)).scheme.lower()
    return scheme in REMOTE_SCHEMES


def env_flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in _TRUE


@dataclass(frozen=True)
class S3Target:
    """Where an ``s3://`` memory lives and how to reach it (credentials optional: role-based access)."""

    bucket: str
    prefix: str
    region: str
    endpoint: str | None
    allow_http: bool
    access_key: str | None
    secret_key: str | None
    session_token: str | None

    def describe(self) -> str:
        """Bucket, prefix and endpoint host: safe to log."""
        where = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        host = urlsplit(self.endpoint).netloc if self.endpoint else "AWS"
        return f"{where} at {host}"

    def storage_options(self) -> dict[str, str]:
        """LanceDB ``storage_options`` (lower-case keys, as LanceDB documents them)."""
        options = {"aws_region": self.region, "allow_http": "true" if self.allow_http else "false"}
        if self.endpoint:
            options["aws_endpoint"] = self.endpoint
        if self.access_key and self.secret_key:
            options["aws_access_key_id"] = self.access_key
            options["aws_secret_access_key"] = self.secret_key
        if self.session_token:
            options["aws_session_token"] = self.session_token
        return options


def s3_target(uri: str, env: Mapping[str, str]) -> S3Target:
    """Parse ``s3://bucket/prefix`` and the AWS variables; a clear :class:`MemoryStoreRefused` when they
    cannot work (no bucket, a plain-HTTP endpoint without ``AWS_ALLOW_HTTP=true``)."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "s3" or not parts.netloc:
        raise MemoryStoreRefused(
            f"LEARNING_MEMORY_URI must look like s3://bucket/prefix, got {parts.scheme}://…"
        )
    _check_location(parts.netloc, parts.path, parts.query or parts.fragment or "?" in uri or "#" in uri)
    endpoint = (env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT") or "").strip() or None
    allow_http = env_flag(env, "AWS_ALLOW_HTTP")
    if endpoint is not None:
        scheme = urlsplit(endpoint).scheme.lower()
        if scheme not in ("http", "https"):
            raise MemoryStoreRefused(
                f"AWS_ENDPOINT_URL must start with https:// (or http://), got {scheme}://…"
            )
        if scheme == "http" and not allow_http:
            raise MemoryStoreRefused(
                f"AWS_ENDPOINT_URL {urlsplit(endpoint).netloc} is plain http://: the memory's data and "
                "request signatures would cross the network unencrypted; use https://, or set "
                "AWS_ALLOW_HTTP=true for a store on a trusted network"
            )
    region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1").strip()
    return S3Target(
        bucket=parts.netloc,
        prefix=parts.path.strip("/"),
        region=region,
        endpoint=endpoint.rstrip("/") if endpoint else None,
        allow_http=allow_http,
        access_key=env.get("AWS_ACCESS_KEY_ID") or None,
        secret_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
        session_token=env.get("AWS_SESSION_TOKEN") or None,
    )


_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,254}")


def _check_location(bucket: str, path: str, extra: object) -> None:
    """Refuse a bucket or prefix the memory would not live at as written: LanceDB resolves ``.``/``..``
    segments (also percent-encoded) and drops a query or fragment, so ``s3://b/team-a/../team-b`` would
    write team-b's memory while the log names team-a's. The bucket is never echoed (``key:secret@bucket``)."""
    if not _BUCKET.fullmatch(bucket):
        raise MemoryStoreRefused(
            "LEARNING_MEMORY_URI: what follows s3:// is not a bucket name (letters, digits, '.', '-', '_'; "
            "no credentials or port: those go in the AWS_* variables)"
        )
    if extra:
        raise MemoryStoreRefused("LEARNING_MEMORY_URI must not carry a query (?) or fragment (#)")
    inner = path.strip("/")
    if inner and any(seg in ("", ".", "..") for seg in unquote(inner).split("/")):
        raise MemoryStoreRefused(
            f"LEARNING_MEMORY_URI prefix {inner!r} has an empty, '.' or '..' segment: the memory would be "
            "stored under another prefix than the one named; write the prefix as it should be"
        )


# ---- SigV4 (the probe's two PUTs and one DELETE; no AWS SDK needed) --------------------------------------


def object_url(target: S3Target, key: str) -> str:
    """Path-style on a custom endpoint (as LanceDB addresses it), virtual-hosted on AWS."""
    path = quote(key, safe="/-_.~")
    if target.endpoint:
        return f"{target.endpoint}/{target.bucket}/{path}"
    return f"https://{target.bucket}.s3.{target.region}.amazonaws.com/{path}"


def sign_v4(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
    region: str,
    now: datetime,
    session_token: str | None = None,
) -> dict[str, str]:
    """``headers`` plus the AWS Signature Version 4 headers for an S3 request (query-less URLs only)."""
    parts = urlsplit(url)
    amz_date = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload_hash = hashlib.sha256(body).hexdigest()
    signed = {k.lower(): v.strip() for k, v in headers.items()}
    signed.update({"host": parts.netloc, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash})
    if session_token:
        signed["x-amz-security-token"] = session_token
    names = sorted(signed)
    canonical = "\n".join(
        [
            method,
            parts.path or "/",
            parts.query,
            "".join(f"{n}:{signed[n]}\n" for n in names),
            ";".join(names),
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret_key}".encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out = {k: v for k, v in signed.items() if k != "host"}
    out["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, "
        f"Signature={signature}"
    )
    return out


def signed_request(
    client: httpx.Client, target: S3Target, method: str, key: str, headers: dict[str, str], data: bytes
) -> httpx.Response:
    """One SigV4-signed request on object ``key`` (the target must carry key credentials)."""
    url = object_url(target, key)
    signed = sign_v4(
        method,
        url,
        headers,
        data,
        access_key=target.access_key or "",
        secret_key=target.secret_key or "",
        region=target.region,
        now=datetime.now(UTC),
        session_token=target.session_token,
    )
    return client.request(method, url, headers=signed, content=data)


def probe_conditional_put(target: S3Target, env: Mapping[str, str], *, timeout: float = 10.0) -> str:
    """Put one probe object twice with ``If-None-Match: *``; the second must be refused (412/409).

    Returns a one-line outcome for the log. Raises :class:`MemoryStoreRefused` when the store accepted
    both writes (concurrent commits could overwrite each other: lost memories) or the probe could not run.
    ``LEARNING_MEMORY_SKIP_PUT_PROBE=true`` skips it (for stores checked by other means).
    """
    if env_flag(env, SKIP_PROBE_ENV):
        return f"conditional-PUT probe skipped ({SKIP_PROBE_ENV}=true)"
    if not (target.access_key and target.secret_key):
        if target.endpoint is None:
            return (
                "conditional-PUT probe skipped (AWS S3 with role credentials: conditional writes supported)"
            )
        raise MemoryStoreRefused(
            f"cannot check that the object store at {target.describe()} honours conditional writes "
            "without AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; set them, or set "
            f"{SKIP_PROBE_ENV}=true once you have verified the store rejects a second PUT with If-None-Match: *"
        )
    import httpx  # here: only a process opening an object-store memory pays for it

    key = f"{target.prefix}/_kodiai/put-probe-{uuid.uuid4().hex}".lstrip("/")
    body = b"kodiai conditional-put probe\n"
    try:
        with httpx.Client(timeout=timeout) as client:
            first = signed_request(client, target, "PUT", key, {"if-none-match": "*"}, body)
            if first.status_code >= 300:
                raise MemoryStoreRefused(
                    f"object store at {target.describe()} refused the start-up probe write "
                    f"(HTTP {first.status_code}): check the bucket, the credentials and their write permission"
                )
            second = signed_request(client, target, "PUT", key, {"if-none-match": "*"}, body)
            with contextlib.suppress(httpx.HTTPError):  # a leftover probe object is harmless
                signed_request(client, target, "DELETE", key, {}, b"")
    except httpx.HTTPError as exc:
        raise MemoryStoreRefused(
            f"object store at {target.describe()} unreachable for the start-up probe: {type(exc).__name__}"
        ) from None
    if second.status_code in (409, 412):
        return f"conditional-PUT probe passed (second write refused with HTTP {second.status_code})"
    if second.status_code < 300:
        raise MemoryStoreRefused(
            f"object store at {target.describe()} ignores conditional writes (a second PUT with "
            "If-None-Match: * succeeded): concurrent memory writers would overwrite each other's commits "
            "and lose memories; use a store that supports conditional writes (AWS S3, recent MinIO)"
        )
    raise MemoryStoreRefused(
        f"object store at {target.describe()} answered the conditional-write probe with HTTP "
        f"{second.status_code} (expected 412)"
    )


def remote_storage_options(uri: str, env: Mapping[str, str]) -> dict[str, str]:
    """LanceDB storage options for an object-store ``uri``, after the checks that make several writers
    safe (``s3://``: the endpoint's scheme and the conditional-PUT probe). Logs where, never credentials.
    Other schemes (``gs://``, ``az://``) pass through: LanceDB reads their own variables."""
    from kodiai.log import get_logger

    if urlsplit(uri).scheme.lower() != "s3":
        return {}
    target = s3_target(uri, env)
    outcome = probe_conditional_put(target, env)
    get_logger("kodiai.learning").info(
        "Learning memory on object storage", where=target.describe(), probe=outcome
    )
    return target.storage_options()


def refresh_seconds(env: Mapping[str, str], default: float) -> float:
    """``LEARNING_MEMORY_REFRESH_SECONDS``: how stale another writer's memories may look here (> 0)."""
    raw = env.get("LEARNING_MEMORY_REFRESH_SECONDS", "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise MemoryStoreRefused(
            f"LEARNING_MEMORY_REFRESH_SECONDS must be a number of seconds in (0, 86400], got {raw!r}"
        )
    return value


def target_from_storage_options(uri: str, options: Mapping[str, str] | None) -> S3Target | None:
    """The :class:`S3Target` an ``s3://`` URI and its LanceDB storage options name, or ``None`` (another scheme,
    or no key credentials to sign a request with)."""
    parts = urlsplit(str(uri))
    opts = {k.lower(): v for k, v in (options or {}).items()}
    if parts.scheme.lower() != "s3" or not parts.netloc:
        return None
    if not (opts.get("aws_access_key_id") and opts.get("aws_secret_access_key")):
        return None
    endpoint = opts.get("aws_endpoint") or opts.get("endpoint")
    return S3Target(
        bucket=parts.netloc,
        prefix=parts.path.strip("/"),
        region=opts.get("aws_region") or opts.get("region") or "us-east-1",
        endpoint=endpoint.rstrip("/") if endpoint else None,
        allow_http=opts.get("allow_http", "false") == "true",
        access_key=opts["aws_access_key_id"],
        secret_key=opts["aws_secret_access_key"],
        session_token=opts.get("aws_session_token") or None,
    )
