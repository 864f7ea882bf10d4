"""A structlog logger resolved once per owner, on first use (the hot path's loggers).

``kodiai.log.get_logger`` returns structlog's lazy proxy, which builds a new bound logger on *every*
call (``cache_logger_on_first_use`` is off): about 10 µs per log call, 20 µs per ``bind``, even for a
filtered-out level (measured under benchmarks/webhook.py). The webhook path logs several lines per
delivery, so its owners (ingress, router, dispatcher, lanes) keep one :class:`CachedLogger` each. The
concrete logger is built at the first log call, after logging is configured; it shares structlog's
processor list, so ``structlog.testing.capture_logs`` still sees every line.
"""

from __future__ import annotations

from typing import Any

from kodiai.log import get_logger


class CachedLogger:
    """Behaves as the logger ``get_logger(name, **bound)`` returns, resolved once on first use."""

    __slots__ = ("_bound", "_proxy")

    def __init__(self, name: str, **bound: Any) -> None:
        self._proxy = get_logger(name, **bound)
        self._bound: Any = None

    def __getattr__(self, attr: str) -> Any:
        bound = self._bound
        if bound is None:
            bound = self._bound = self._proxy.bind()
        return getattr(bound, attr)
