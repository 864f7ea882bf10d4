"""structlog set-up: JSON lines (console renderer on a TTY), level from ``LOG_LEVEL``, bound context.

JSON lines carry pino's field names where the original's operators rely on them: ``msg`` for the message
and ``time`` in epoch milliseconds. They go to stderr, so a command's ``--json`` output on stdout stays
machine-readable. Rendering is on the webhook hot path, so it uses orjson and a plain epoch timestamp.

Bind a delivery id for the length of a request or job with :func:`bind_delivery`; every log line written
inside carries it. Secrets never belong in an event: :func:`redact` masks tokens in free text.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, Protocol

import orjson
import structlog

_LEVELS = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "fatal": logging.CRITICAL,
    "critical": logging.CRITICAL,
    "silent": logging.CRITICAL + 10,
}

_TOKEN_PATTERNS = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255}|sk-ant-[A-Za-z0-9_\-]{10,}"
    r"|x-access-token:[^@\s]+|Bearer\s+[A-Za-z0-9._\-]+|pa-[A-Za-z0-9_\-]{20,})"
)


#: Every token form above contains one of these; a value without any of them needs no regex pass.
_TOKEN_HINTS = ("gh", "github_pat_", "sk-ant-", "x-access-token:", "Bearer", "pa-")


def redact(text: str) -> str:
    """Mask anything that looks like a GitHub/Anthropic/Voyage token or a bearer credential."""
    if not any(hint in text for hint in _TOKEN_HINTS):
        return text
    return _TOKEN_PATTERNS.sub("[REDACTED]", text)


class Logger(Protocol):
    """What the code calls on a logger: structlog's bound loggers (and :class:`CachedLogger`) satisfy it.

    A protocol rather than structlog's own types so a test can hand in any recorder with these methods.
    """

    def debug(self, event: str, *args: object, **kw: object) -> object: ...
    def info(self, event: str, *args: object, **kw: object) -> object: ...
    def warning(self, event: str, *args: object, **kw: object) -> object: ...
    def error(self, event: str, *args: object, **kw: object) -> object: ...
    def exception(self, event: str, *args: object, **kw: object) -> object: ...
    def bind(self, **new_values: object) -> Logger: ...


def _redact_processor(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in event.items():
        if isinstance(value, str):
            masked = redact(value)
            if masked is not value:
                event[key] = masked
    return event


def _epoch_ms(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """pino's ``time`` field: milliseconds since the epoch."""
    event["time"] = int(time.time() * 1000)
    return event


def _orjson_dumps(obj: Any, **_kw: Any) -> str:
    try:
        return orjson.dumps(obj, default=repr).decode()
    except TypeError:
        # What orjson refuses and a request can carry (a lone surrogate from a JSON escape, an integer
        # beyond 64 bits): the standard library writes both as valid JSON. A log line must never raise.
        return json.dumps(obj, default=repr, skipkeys=True)


def level_from_env(value: str | None = None) -> int:
    """Map a pino-style level name to a logging level; unknown names raise ``ValueError``."""
    name = (value if value is not None else os.environ.get("LOG_LEVEL", "info")).strip().lower() or "info"
    if name not in _LEVELS:
        raise ValueError(f"Unknown LOG_LEVEL {name!r}; expected one of {', '.join(sorted(_LEVELS))}")
    return _LEVELS[name]


def configure_logging(level: str | None = None, *, json: bool | None = None) -> None:
    """Configure structlog once for the process (idempotent)."""
    lvl = level_from_env(level)
    use_json = (not sys.stderr.isatty()) if json is None else json
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _epoch_ms if use_json else structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        _redact_processor,
    ]
    if use_json:
        processors += [
            structlog.processors.EventRenamer("msg"),
            structlog.processors.JSONRenderer(serializer=_orjson_dumps),
        ]
    else:
        processors.append(structlog.dev.ConsoleRenderer())
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str | None = None, **bound: object) -> Logger:
    """A structlog logger, optionally with bound key/values."""
    log: Logger = structlog.get_logger(name) if name else structlog.get_logger()
    return log.bind(**bound) if bound else log


def stderr_logger(level: str = "warn", **bound: object) -> Logger:
    """A logger of its own for a command's progress lines: stderr, console format, its own level, and the
    process-wide configuration untouched (so a command run in-process leaves other loggers as they were)."""
    # Annotated so mypy checks that structlog's bound logger satisfies :class:`Logger`.
    logger: structlog.typing.FilteringBoundLogger = structlog.wrap_logger(
        structlog.PrintLogger(file=sys.stderr),
        processors=[
            structlog.processors.add_log_level,
            _redact_processor,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level_from_env(level)),
    )
    return logger.bind(**bound) if bound else logger


@contextmanager
def bind_delivery(delivery_id: str, **extra: Any) -> Iterator[None]:
    """Bind ``delivery_id`` (and extra keys) to every log line written inside the block."""
    with structlog.contextvars.bound_contextvars(delivery_id=delivery_id, **extra):
        yield


class CachedLogger:
    """Behaves as the logger ``get_logger(name, **bound)`` returns, resolved once on first use.

    ``get_logger`` returns structlog's lazy proxy, which builds a new bound logger on *every* call
    (``cache_logger_on_first_use`` is off): about 10 µs per log call, 20 µs per ``bind``, even for a
    filtered-out level (measured under benchmarks/webhook.py). Hot-path owners (ingress, router,
    dispatcher, lanes) keep one each. The concrete logger is built at the first log call, after logging is
    configured; it shares structlog's processors, so ``structlog.testing.capture_logs`` sees every line.
    """

    __slots__ = ("_bound", "_proxy")

    def __init__(self, name: str, **bound: Any) -> None:
        self._proxy = get_logger(name, **bound)
        self._bound: Any = None

    def __getattr__(self, attr: str) -> Any:
        bound = self._bound
        if bound is None:
            bound = self._bound = self._proxy.bind()
        return getattr(bound, attr)
