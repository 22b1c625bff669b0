"""A stand-in for the review API on loopback, for tests of the Perforce trigger as a process:
real HTTP, signatures verified with the service's own `signing.verify`, one job per idempotency
key (201, then 200 replays), and switches for the failures a trigger must survive."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from p4review.logic import signing


class ReviewApiStub:
    def __init__(self, secret: str, previous_secret: str | None = None):
        self.secrets = [secret] + ([previous_secret] if previous_secret else [])
        self.requests: list[dict[str, Any]] = []
        self.jobs: dict[str, dict[str, Any]] = {}  # idempotency key -> body of the first request
        self.forced: list[tuple[int, dict[str, Any], dict[str, str]]] = []  # answers for the next requests
        self.hang = threading.Event()  # set: hold every answer until cleared
        self.arrivals = 0  # requests received, counted before any hang
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/test"

    def start(self, port: int = 0) -> "ReviewApiStub":
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                stub._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                stub._handle(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.hang.clear()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "ReviewApiStub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def accepted_keys(self) -> list[str]:
        with self.lock:
            return [r["body"]["idempotency_key"] for r in self.requests if r["status"] == 201]

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        route = handler.path[len("/test"):] if handler.path.startswith("/test") else handler.path
        with self.lock:
            self.arrivals += 1
        while self.hang.is_set():
            time.sleep(0.02)
        status, answer, headers = self._answer(handler, method, route, body)
        data = json.dumps(answer).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _answer(self, handler: BaseHTTPRequestHandler, method: str, route: str,
                body: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        try:
            matched = signing.verify(secrets=self.secrets, timestamp=handler.headers.get(signing.TIMESTAMP_HEADER),
                                     signature=handler.headers.get(signing.SIGNATURE_HEADER), method=method,
                                     path=route, body=body, now=time.time(), max_age_seconds=300)
        except signing.SignatureProblem as problem:
            return self._record(method, route, None, 401, {"error": {"code": problem.code, "message": problem.message,
                                                                     "details": problem.details}})
        with self.lock:
            if self.forced:
                status, answer, headers = self.forced.pop(0)
                return self._record(method, route, body, status, answer, headers)
        if method == "GET" and route == "/v1/ping":
            return self._record(method, route, None, 200, {
                "service": "p4review", "server_time": int(time.time()), "max_signature_age_seconds": 300,
                "signed_with": "previous" if matched == 1 else "current"})
        if method != "POST" or route != "/v1/reviews":
            return self._record(method, route, None, 404, {"error": {"code": "route_not_found", "message": "no"}})
        request = json.loads(body)
        with self.lock:
            if request["idempotency_key"] in self.jobs:
                return self._record(method, route, body, 200, {"job_id": request["idempotency_key"]},
                                    {"X-P4Review-Replay": "idempotency-key"})
            self.jobs[request["idempotency_key"]] = request
        return self._record(method, route, body, 201, {"job_id": request["idempotency_key"]})

    def _record(self, method: str, route: str, body: bytes | None, status: int, answer: dict[str, Any],
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self.lock:
            self.requests.append({"method": method, "route": route, "status": status,
                                  "body": json.loads(body) if body else None})
        return status, answer, headers or {}
