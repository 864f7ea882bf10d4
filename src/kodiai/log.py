"""structlog set-up: JSON lines (console renderer on a TTY), level from ``LOG_LEVEL``, bound context.

Bind a delivery id for the length of a request or job with :func:`bind_delivery`; every log line written
inside carries it. Secrets never belong in an event: :func:`redact` masks tokens in free text.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

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


def redact(text: str) -> str:
    """Mask anything that looks like a GitHub/Anthropic/Voyage token or a bearer credential."""
    return _TOKEN_PATTERNS.sub("[REDACTED]", text)


def _redact_processor(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in list(event.items()):
        if isinstance(value, str):
            event[key] = redact(value)
    return event


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
    renderer: Any = structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str | None = None, **bound: Any) -> Any:
    """A structlog logger, optionally with bound key/values."""
    log = structlog.get_logger(name) if name else structlog.get_logger()
    return log.bind(**bound) if bound else log


@contextmanager
def bind_delivery(delivery_id: str, **extra: Any) -> Iterator[None]:
    """Bind ``delivery_id`` (and extra keys) to every log line written inside the block."""
    with structlog.contextvars.bound_contextvars(delivery_id=delivery_id, **extra):
        yield
