"""Local HTTP servers that speak an LLM provider's wire format, for provider and review-stage
tests: each POST gets the next scripted reply (the last repeats), and every request is recorded."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    status: int = HTTPStatus.OK
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedServer:
    """Answers each POST with the next scripted reply (the last repeats) and records the requests."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = server.replies.pop(0) if len(server.replies) > 1 else server.replies[0]
                time.sleep(reply.delay)
                payload = json.dumps(reply.body).encode() if not isinstance(reply.body, bytes) else reply.body
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class Keys:
    """A KeySource: `keys[0]` until a forced re-read moves to the next one."""

    def __init__(self, *keys: str) -> None:
        self.keys = list(keys)
        self.calls: list[bool] = []

    def __call__(self, force_refresh: bool) -> str:
        self.calls.append(force_refresh)
        if force_refresh and len(self.keys) > 1:
            self.keys.pop(0)
        return self.keys[0]


def chat_completion(content: str, *, model: str, prompt_tokens: int, completion_tokens: int) -> Reply:
    """A chat completions answer holding `content`, with its usage: the `chat.completion` object of
    OpenAI's API reference (POST /v1/chat/completions), as the openai SDK's `ChatCompletion` model
    (openai/types/chat/chat_completion.py) reads it; the SDK validates it in the tests that use it."""
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


@pytest.fixture(name="server")
def scripted_server() -> Iterator[ScriptedServer]:
    """A started ScriptedServer, stopped after the test (import it into a test module to use it)."""
    scripted = ScriptedServer()
    scripted.start()
    try:
        yield scripted
    finally:
        scripted.stop()
