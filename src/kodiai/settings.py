"""Process settings from the environment and an optional `.env` file (behaviour P1.1).

The original's variables keep their names, defaults and parsing (`GITHUB_PRIVATE_KEY` as inline PEM, a
`/` or `./` path, or base64 with the browser `atob` rules; `PORT` through JavaScript `Number()`;
`BOT_ALLOW_LIST` trimmed and lower-cased). `GITHUB_PRIVATE_KEY_BASE64` is accepted too (the original's
`.env.example` named it but the app never read it). The port's own variables have working defaults.

`Settings.load()` raises one `SettingsError` listing every problem, including every missing GitHub App
setting. `Settings.load(require_github_app=False)` tolerates missing GitHub App settings ("setup mode");
`missing_github_app_settings()` then names them. Secrets are `SecretStr`: never in repr or logs.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from kodiai.storage.db_path import (
    DEFAULT_TELEMETRY_DB_PATH,
    resolve_knowledge_db_path,
)

LogLevel = Literal["trace", "debug", "info", "warn", "error", "fatal", "silent"]
EmbeddingProvider = Literal["auto", "voyage", "local", "none"]

DEFAULT_PORT = 3000
DEFAULT_JOBS_DB_PATH = "./data/kodiai-jobs.db"
DEFAULT_LEARNING_MEMORY_URI = "./data/kodiai-memory.lance"
DEFAULT_GITHUB_API_URL = "https://api.github.com"
#: Shorter webhook secrets are refused at start-up: a short secret can be guessed and then signs anything.
MIN_WEBHOOK_SECRET_LENGTH = 16

#: The GitHub App settings the webhook server cannot run without.
GITHUB_APP_SETTINGS = ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET")

_ASCII_WS = re.compile(r"[\t\n\f\r ]")
_B64_CHARS = re.compile(r"^[A-Za-z0-9+/]*$")
# JavaScript StrWhiteSpaceChar: what Number() trims.
_JS_NUM_WS = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_DECIMAL = re.compile(
    r"^[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|Infinity)$"
)


class SettingsError(ValueError):
    """Invalid or missing process settings. `problems` holds one line per problem; `missing` the names
    of the required variables that are unset."""

    def __init__(self, problems: list[str], missing: list[str] | None = None) -> None:
        self.problems = problems
        self.missing = missing or []
        super().__init__("Invalid configuration:\n" + "\n".join(f"  {p}" for p in problems))


def js_number(text: str) -> float:
    """JavaScript `Number(text)` for a string: trimmed, `""` is 0, hex/octal/binary literals, else NaN."""
    s = text.strip(_JS_NUM_WS)
    if s == "":
        return 0.0
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", s):
        return float(int(s[2:], 16))
    if re.fullmatch(r"0[oO][0-7]+", s):
        return float(int(s[2:], 8))
    if re.fullmatch(r"0[bB][01]+", s):
        return float(int(s[2:], 2))
    if _JS_DECIMAL.match(s):
        return float(s.replace("Infinity", "inf"))
    return math.nan


def atob(value: str) -> bytes:
    """Decode base64 with the browser `atob` (forgiving-base64) rules; `ValueError` when it would throw."""
    data = _ASCII_WS.sub("", value)
    if len(data) % 4 == 0:
        if data.endswith("=="):
            data = data[:-2]
        elif data.endswith("="):
            data = data[:-1]
    if len(data) % 4 == 1 or not _B64_CHARS.match(data):
        raise ValueError("not base64")
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4))
    except (binascii.Error, ValueError) as exc:  # pragma: no cover - excluded by the checks above
        raise ValueError("not base64") from exc


def resolve_private_key(value: str, name: str = "GITHUB_PRIVATE_KEY", cwd: Path | None = None) -> str:
    """The PEM text of a private-key setting: inline PEM, a `/` or `./` file path, or base64.

    Raises `ValueError` with the original's messages.
    """
    if value.startswith("-----BEGIN"):
        return value
    if value.startswith("/") or value.startswith("./"):
        path = Path(value) if cwd is None or value.startswith("/") else cwd / value
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ValueError(f'Failed to read private key from file "{value}": {reason}') from exc
    try:
        return atob(value).decode("latin-1")
    except ValueError as exc:
        raise ValueError(f"{name} is not a valid PEM string, file path, or base64-encoded value") from exc


@dataclass(frozen=True)
class KnowledgeDbPath:
    """The resolved knowledge DB path and where it came from: `arg`, `env` or `default`."""

    path: str
    source: Literal["arg", "env", "default"]


def _blank_to_none(value: Any) -> Any:
    if isinstance(value, str) and value.strip() == "":
        return None
    return value


class Settings(BaseSettings):
    """Kodiai's process settings. Field `x_y` is read from the environment variable `X_Y`."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False
    )

    # GitHub App (required to serve webhooks)
    github_app_id: str | None = Field(None, description="GitHub App id.")
    github_private_key: SecretStr | None = Field(
        None, description="App private key: inline PEM, a `/` or `./` path, or base64."
    )
    github_private_key_base64: SecretStr | None = Field(
        None, description="Base64 private key (used when GITHUB_PRIVATE_KEY is unset)."
    )
    github_webhook_secret: SecretStr | None = Field(None, description="Webhook HMAC secret.")
    github_webhook_secret_previous: SecretStr | None = Field(
        None, description="The old webhook secret, also accepted during a rotation window (then remove it)."
    )
    github_api_url: str = Field(DEFAULT_GITHUB_API_URL, description="GitHub REST API base URL.")
    # Server
    host: str | None = Field(
        None, description="Interface to listen on (unset: 0.0.0.0, or 127.0.0.1 in setup mode); --host wins."
    )
    port: int = Field(DEFAULT_PORT, description="HTTP port (JavaScript Number() parsing; empty means 0).")
    log_level: LogLevel = Field("info", description="Log level.")
    kodiai_role: str | None = Field(
        None, description="What kodiai serve runs: web, worker or all (unset: all); --role wins."
    )
    bot_allow_list: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated bot logins (without [bot]) allowed to trigger."
    )
    # Storage
    telemetry_db_path: str = Field(DEFAULT_TELEMETRY_DB_PATH, description="Telemetry SQLite file.")
    knowledge_db_path: str | None = Field(None, description="Knowledge SQLite file.")
    jobs_db_path: str = Field(DEFAULT_JOBS_DB_PATH, description="Webhook dedup + job journal SQLite file.")
    database_url: SecretStr | None = Field(
        None,
        description="postgresql://… : every store in PostgreSQL (job journal and queue, mention state, "
        "telemetry, knowledge; unset: the SQLite files). May carry a password: never logged.",
    )
    learning_memory_uri: str = Field(DEFAULT_LEARNING_MEMORY_URI, description="LanceDB learning memory URI.")
    workspace_root: str = Field(default_factory=tempfile.gettempdir, description="Where clones are made.")
    # Models and embeddings
    voyage_api_key: SecretStr | None = Field(None, description="Voyage AI API key.")
    embedding_provider: EmbeddingProvider = Field("auto", description="auto, voyage, local or none.")
    claude_code_oauth_token: SecretStr | None = Field(None, description="Claude Code OAuth token.")
    anthropic_api_key: SecretStr | None = Field(None, description="Anthropic API key.")
    # Model endpoint of the Claude Code CLI (a gateway, Bedrock or Vertex); passed to the CLI only
    anthropic_base_url: str | None = Field(None, description="Messages API base URL (e.g. a LiteLLM proxy).")
    anthropic_auth_token: SecretStr | None = Field(None, description="Bearer token for a gateway.")
    claude_code_use_bedrock: str | None = Field(None, description="`1`: the CLI calls Amazon Bedrock.")
    claude_code_use_vertex: str | None = Field(None, description="`1`: the CLI calls Google Vertex AI.")
    aws_region: str | None = Field(None, description="Bedrock region.")
    cloud_ml_region: str | None = Field(None, description="Vertex region.")
    anthropic_vertex_project_id: str | None = Field(None, description="Vertex project id.")
    # The Claude Code CLI's OS sandbox (bubblewrap); `off` only where it cannot run (warned at every start)
    agent_sandbox: Literal["on", "off"] = Field(
        "on", description="`off` runs the CLI without its bubblewrap sandbox (unsafe with untrusted PRs)."
    )
    # Jobs
    job_timeout_seconds: float = Field(3600, gt=0, description="Hard limit of one job.")
    max_lane_length: int = Field(100, ge=1, description="Queued jobs per installation before rejecting.")
    shutdown_grace_seconds: float = Field(30, ge=0, description="Drain time on SIGTERM.")
    review_concurrency: int | None = Field(
        None, ge=1, description="Reviews running at once across installations (default: 2 per CPU, 2–16)."
    )
    # The queue on PostgreSQL (DATABASE_URL): `kodiai serve --role worker|all`
    worker_concurrency: int | None = Field(
        None, ge=1, description="Jobs one worker runs at once (default: REVIEW_CONCURRENCY's value)."
    )
    worker_heartbeat_seconds: float = Field(
        10, gt=0, description="How often a worker marks itself alive (and checks for stalled jobs)."
    )
    worker_stalled_seconds: float = Field(
        30, gt=0, description="A worker silent this long is dead: its running jobs are retried."
    )
    worker_poll_seconds: float = Field(
        5, gt=0, description="Fallback poll for new jobs (they are normally announced at once)."
    )
    # HTTP limits (issue 15: hostile clients); see kodiai.server.http_limits
    http_max_header_bytes: int = Field(
        16 * 1024, ge=1024, le=1024 * 1024, description="Request line + headers, in bytes (else 400)."
    )
    http_max_headers: int = Field(100, ge=8, le=10_000, description="Header fields per request (else 431).")
    http_request_timeout_seconds: float = Field(
        20,
        gt=0,
        description="Deadline to receive a whole request (headers and body); then the connection closes.",
    )
    http_keep_alive_seconds: int = Field(5, ge=1, description="Idle keep-alive connections close after this.")
    http_max_connections: int = Field(
        1000, ge=1, description="Open connections (or running requests) before new requests get 503."
    )
    webhook_body_timeout_seconds: float = Field(
        10, gt=0, description="Deadline to read a webhook body (GitHub gives up after 10 s); then 408."
    )
    webhook_max_inflight_bodies: int = Field(
        64, ge=1, description="Webhook bodies being read at once; more get 503 without being read."
    )
    webhook_inflight_body_bytes: int = Field(
        128 * 1024 * 1024,
        ge=25 * 1024 * 1024,
        description="Bytes of webhook bodies held at once before verification; more get 503.",
    )
    # Spend cap (kodiai.spend_cap.policy): new runs are refused once an installation's spend today (UTC)
    # reaches its cap; 0 = no cap
    spend_cap_usd_per_day: float = Field(
        0, ge=0, allow_inf_nan=False, description="Daily spend cap per installation in USD (0 = none)."
    )
    spend_cap_usd_per_day_overrides: Annotated[dict[int, float], NoDecode] = Field(
        default_factory=dict,
        description="Per-installation caps: `installation_id:usd` pairs, comma-separated (0 = none).",
    )
    # Metrics
    metrics_token: SecretStr | None = Field(
        None, description="Bearer token required by GET /metrics (unset: /metrics is open)."
    )
    metrics_installation_ids: bool = Field(
        False, description="Label metrics with raw installation ids (default: a keyed hash of each id)."
    )
    # Operator dashboard (/dashboard): GitHub sign-in through the App's own OAuth client, or an operator token
    github_client_id: str | None = Field(None, description="The GitHub App's client id (dashboard sign-in).")
    github_client_secret: SecretStr | None = Field(
        None, description="The GitHub App's client secret (dashboard sign-in)."
    )
    dashboard_token: SecretStr | None = Field(
        None, description="Operator token for /dashboard: sees every repository (unset: GitHub sign-in only)."
    )
    dashboard_session_secret: SecretStr | None = Field(
        None, description="Key that signs dashboard session cookies (unset: derived from the App's secrets)."
    )

    _private_key_pem: str | None = PrivateAttr(None)

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        number = js_number(value)
        if math.isnan(number):
            raise ValueError("Invalid input: expected number, received NaN")
        if not number.is_integer() or not 0 <= number <= 65535:
            raise ValueError(f"expected an integer between 0 and 65535, received {value.strip()}")
        return int(number)

    @field_validator("github_webhook_secret", "github_webhook_secret_previous", mode="after")
    @classmethod
    def _webhook_secret(cls, value: SecretStr | None) -> SecretStr | None:
        """A guessable secret lets anyone sign deliveries; empty still means unset (setup mode)."""
        if value is not None and 0 < len(value.get_secret_value()) < MIN_WEBHOOK_SECRET_LENGTH:
            raise ValueError(
                f"must be at least {MIN_WEBHOOK_SECRET_LENGTH} characters (generate one with "
                "`openssl rand -hex 32` and set the same value in the GitHub App's webhook settings)"
            )
        return value

    @field_validator(
        "metrics_token",
        "github_webhook_secret_previous",
        "github_client_id",
        "github_client_secret",
        "dashboard_token",
        "dashboard_session_secret",
        mode="before",
    )
    @classmethod
    def _optional_secret(cls, value: Any) -> Any:
        return _blank_to_none(value)

    @field_validator("host", mode="before")
    @classmethod
    def _host(cls, value: Any) -> Any:
        value = _blank_to_none(value)
        return value.strip() if isinstance(value, str) else value

    @field_validator("spend_cap_usd_per_day", mode="before")
    @classmethod
    def _spend_cap(cls, value: Any) -> Any:
        return 0 if _blank_to_none(value) is None else value

    @field_validator("spend_cap_usd_per_day_overrides", mode="before")
    @classmethod
    def _spend_cap_overrides(cls, value: Any) -> Any:
        return parse_spend_cap_overrides(value) if isinstance(value, str) else value

    @field_validator("bot_allow_list", mode="before")
    @classmethod
    def _allow_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [e.strip().lower() for e in value.split(",") if e.strip()]
        return value

    @field_validator("voyage_api_key", "knowledge_db_path", mode="before")
    @classmethod
    def _trimmed(cls, value: Any) -> Any:
        value = _blank_to_none(value)
        return value.strip() if isinstance(value, str) else value

    @field_validator("database_url", mode="before")
    @classmethod
    def _database_url(cls, value: Any) -> Any:
        """Blank is unset; anything else must be a PostgreSQL URL. The message never repeats the value (it
        may carry a password)."""
        value = _blank_to_none(value.get_secret_value() if isinstance(value, SecretStr) else value)
        if value is None:
            return None
        text = str(value).strip()
        if text.split("://", 1)[0] not in ("postgresql", "postgres") or "://" not in text:
            raise ValueError("must be a postgresql://user:password@host:port/database URL (unset: SQLite files)")
        from psycopg.conninfo import conninfo_to_dict  # here: only a PostgreSQL deployment imports psycopg

        try:  # libpq's own parse: its errors quote the bad token (a password with a bare '%'), so not shown
            conninfo_to_dict(text)
        except Exception:
            raise ValueError(
                "is not a URL libpq can read (a '%' in the password must be written %25, other reserved "
                "characters percent-encoded too; query options must be libpq connection parameters)"
            ) from None
        return text

    @field_validator(
        "github_private_key",
        "github_private_key_base64",
        "claude_code_oauth_token",
        "anthropic_api_key",
        mode="before",
    )
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_to_none(value)

    @classmethod
    def load(
        cls,
        *,
        env_file: str | Path | None = ".env",
        require_github_app: bool = True,
        cwd: Path | None = None,
    ) -> Settings:
        """Read the environment (and `env_file` if it exists) and check it. Raises `SettingsError`."""
        problems: list[str] = []
        try:
            settings = cls(_env_file=env_file)
        except ValidationError as exc:
            for err in exc.errors():
                name = str(err["loc"][0]).upper() if err["loc"] else "settings"
                problems.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
            raise SettingsError(problems) from exc
        try:
            settings._private_key_pem = settings._resolve_key(cwd)
        except ValueError as exc:
            problems.append(str(exc))
        previous, current = settings.github_webhook_secret_previous, settings.github_webhook_secret
        if previous is not None and current is not None and previous == current:  # SecretStr compares values
            problems.append(
                "GITHUB_WEBHOOK_SECRET_PREVIOUS: must differ from GITHUB_WEBHOOK_SECRET (it is the old "
                "secret accepted during a rotation; remove it when the rotation is over)"
            )
        if settings.worker_stalled_seconds < 2 * settings.worker_heartbeat_seconds:
            # a live worker between two heartbeats would look dead: its running jobs retried on another
            # worker while they still run (one delivery twice at once, the installation's order broken)
            problems.append(
                "WORKER_STALLED_SECONDS: must be at least twice WORKER_HEARTBEAT_SECONDS (got "
                f"{settings.worker_stalled_seconds:g} and {settings.worker_heartbeat_seconds:g}); a live "
                "worker would otherwise be taken for dead and its running jobs run again elsewhere"
            )
        missing = settings.missing_github_app_settings()
        if require_github_app and missing:
            problems[:0] = [_missing_message(name) for name in missing]
        if problems:
            raise SettingsError(problems, missing if require_github_app else [])
        return settings

    def database(self) -> str | None:
        """``DATABASE_URL`` (with its password), or None for the SQLite files. Log :meth:`database_description`."""
        return self.database_url.get_secret_value() if self.database_url is not None else None

    def database_description(self) -> str | None:
        """``postgresql://host:port/database`` without user or password, for logs; None without one."""
        from kodiai.storage.database import safe_url

        url = self.database()
        return safe_url(url) if url else None

    def _resolve_key(self, cwd: Path | None) -> str | None:
        if self.github_private_key is not None:
            return resolve_private_key(self.github_private_key.get_secret_value(), "GITHUB_PRIVATE_KEY", cwd)
        if self.github_private_key_base64 is not None:
            raw = self.github_private_key_base64.get_secret_value()
            return resolve_private_key(raw, "GITHUB_PRIVATE_KEY_BASE64", cwd)
        return None

    def model_endpoint_env(self) -> dict[str, str]:
        """The CLI's endpoint variables that are set (``ANTHROPIC_BASE_URL``, Bedrock, Vertex), by name."""
        names = (
            "anthropic_base_url",
            "anthropic_auth_token",
            "claude_code_use_bedrock",
            "claude_code_use_vertex",
            "aws_region",
            "cloud_ml_region",
            "anthropic_vertex_project_id",
        )
        env: dict[str, str] = {}
        for name in names:
            value = getattr(self, name)
            text = value.get_secret_value() if isinstance(value, SecretStr) else value
            if text:
                env[name.upper()] = text
        return env

    def missing_github_app_settings(self) -> list[str]:
        """Names of the unset GitHub App variables (empty when the webhook server can run)."""
        missing = []
        if not (self.github_app_id or "").strip():
            missing.append("GITHUB_APP_ID")
        if self.github_private_key is None and self.github_private_key_base64 is None:
            missing.append("GITHUB_PRIVATE_KEY")
        if self.github_webhook_secret is None or not self.github_webhook_secret.get_secret_value():
            missing.append("GITHUB_WEBHOOK_SECRET")
        return missing

    @property
    def private_key_pem(self) -> SecretStr | None:
        """The resolved App private key (PEM text), or `None` when unset (setup mode).

        Resolved by `load()`; on a directly constructed `Settings` it is resolved on first use and a bad
        value raises `SettingsError`.
        """
        if self._private_key_pem is None:
            try:
                self._private_key_pem = self._resolve_key(None)
            except ValueError as exc:
                raise SettingsError([str(exc)]) from exc
        return SecretStr(self._private_key_pem) if self._private_key_pem is not None else None

    def knowledge_db(self, arg: str | None = None, cwd: str | Path | None = None) -> KnowledgeDbPath:
        """The knowledge DB path with its source (`arg` > `KNOWLEDGE_DB_PATH` > default)."""
        env = {"KNOWLEDGE_DB_PATH": self.knowledge_db_path or ""}
        return KnowledgeDbPath(*resolve_knowledge_db_path(arg, env, cwd))

    def resolved_embedding_provider(self) -> Literal["voyage", "local", "none"]:
        """`auto` is Voyage when `VOYAGE_API_KEY` is set, else the local MiniLM model."""
        if self.embedding_provider == "auto":
            return "voyage" if self.voyage_api_key is not None else "local"
        return self.embedding_provider


def parse_spend_cap_overrides(text: str) -> dict[int, float]:
    """``12345:50,678:10`` → ``{12345: 50.0, 678: 10.0}``; ``ValueError`` naming the first bad pair."""
    caps: dict[int, float] = {}
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            continue
        ident, sep, amount = (part.strip() for part in pair.partition(":"))
        try:
            if not sep or not ident.isdigit():
                raise ValueError
            cap = float(amount)
        except ValueError:
            raise ValueError(
                f"expected installation_id:usd pairs separated by commas (e.g. 12345:50,678:10), got {pair!r}"
            ) from None
        if not math.isfinite(cap) or cap < 0:
            raise ValueError(f"the cap of installation {ident} must be a number >= 0, got {amount!r}")
        caps[int(ident)] = cap
    return caps


def _missing_message(name: str) -> str:
    if name == "GITHUB_PRIVATE_KEY":
        return "GITHUB_PRIVATE_KEY environment variable is required (or GITHUB_PRIVATE_KEY_BASE64)"
    return f"{name} is required"
