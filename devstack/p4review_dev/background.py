"""Serve a socketserver-style server from a daemon thread (shared by the local servers)."""

from __future__ import annotations

import threading
from typing import Any, Self


class BackgroundServer:
    """Start/stop/context-manager lifecycle around `serve_forever` in a daemon thread.

    Subclasses build their server in `start()` and hand it to `_serve`."""

    def __init__(self) -> None:
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def _serve(self, server: Any, thread_name: str) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=thread_name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, close the socket and join the thread (idempotent)."""
        server, thread = self._server, self._thread
        self._server = None
        self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._server is not None

    def __enter__(self) -> Self:
        self.start()  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
