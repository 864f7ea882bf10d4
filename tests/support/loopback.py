"""Run an ASGI app with uvicorn in a background thread on 127.0.0.1 and a free port (tests only)."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from starlette.types import ASGIApp


class LoopbackServer:
    """``with LoopbackServer(app) as server: httpx.get(server.url + "/health")``."""

    def __init__(self, app: ASGIApp, *, lifespan: str = "on", name: str = "server") -> None:
        self.app = app
        self.name = name
        self._lifespan = lifespan
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> LoopbackServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan=self._lifespan, access_log=False)
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        self._server = None
        self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
