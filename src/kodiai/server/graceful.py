"""uvicorn's server, ending with exit status 0 after a graceful stop on SIGINT or SIGTERM.

uvicorn re-raises the signal once it has shut down, so the process died of it: status 130/143 for
whoever started it, which ``make serve`` reports as ``make: *** [serve] Interrupt`` / ``Error 143``, and a
supervisor counts as a failure unless told otherwise. A stop that drained (or left its unfinished jobs to
the journal's replay) is the normal end of the server, so it ends normally.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

import uvicorn
from uvicorn.server import HANDLED_SIGNALS


class GracefulServer(uvicorn.Server):
    """``uvicorn.Server`` whose signal handling does not re-raise the signal after the shutdown."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)
