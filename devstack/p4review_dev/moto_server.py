"""AWS on loopback: moto's server app on a threaded werkzeug server, with atomic services.

Why not in-process ``mock_aws``: moto's backends are plain Python objects with no locking,
so conditional writes raced from several threads let duplicates through. Here every request
runs through :class:`SerializingMiddleware`, which gives each AWS service one lock:

* DynamoDB (``X-Amz-Target: DynamoDB_20120810.*``) requests are served one at a time, which
  makes ``ConditionExpression`` and ``TransactWriteItems`` atomic as they are in AWS.
* SQS requests are served one at a time too (moto's ReceiveMessage scan is not atomic either:
  two concurrent receives can both take the same message). A long poll
  (``ReceiveMessage`` with ``WaitTimeSeconds > 0``) is emulated *outside* the lock as a
  series of short polls (each under the lock) until a message arrives or the wait ends, so
  long polls never block other callers.
* Every other signed request is serialized per service (S3, Secrets Manager, ...). Different
  services never wait on each other.

Moto keeps its state in module globals: all servers in one process share it. ``reset()``
clears *all* moto state in the process (it is the orchestrator's job to run one server).

Usage::

    with LocalAwsServer() as aws:
        client = boto3.client("dynamodb", endpoint_url=aws.endpoint_url, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from werkzeug.serving import make_server

from p4review_dev.background import BackgroundServer

log = logging.getLogger(__name__)

__all__ = ["LocalAwsServer", "SerializingMiddleware", "service_of"]

# Long-poll emulation: a waiting ReceiveMessage re-scans the queue when moto signals a new
# message, and at least this often (messages whose visibility timeout ended signal nothing).
DEFAULT_LONG_POLL_INTERVAL = 0.2
# After a "has messages" signal whose scan found none deliverable (FIFO groups in flight, ...),
# never re-scan more often than this; a signal that finds a message is answered at once.
_MIN_RESCAN_SECONDS = 0.02


def service_of(environ: dict[str, Any]) -> str | None:
    """The AWS service a request is for, from ``X-Amz-Target`` or the SigV4 credential scope.

    ``None`` for unsigned requests (moto's own ``/moto-api`` endpoints, for instance)."""
    target = environ.get("HTTP_X_AMZ_TARGET") or ""
    if target.startswith("DynamoDB"):  # DynamoDB_20120810.* and DynamoDBStreams_20120810.*
        return "dynamodb"
    if target.startswith("AmazonSQS."):
        return "sqs"
    auth = environ.get("HTTP_AUTHORIZATION") or ""
    # AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/s3/aws4_request, SignedHeaders=..., Signature=...
    marker = "Credential="
    start = auth.find(marker)
    if start < 0:
        return None
    scope = auth[start + len(marker) :].split(",", 1)[0].strip().split("/")
    if len(scope) >= 5:
        return scope[3].lower()
    return None


class _Captured:
    """A fully buffered WSGI response (so a lock can cover the whole request)."""

    __slots__ = ("status", "headers", "body", "exc_info")

    def __init__(self) -> None:
        self.status = "500 INTERNAL SERVER ERROR"
        self.headers: list[tuple[str, str]] = []
        self.body = b""
        self.exc_info: Any = None

    @property
    def status_code(self) -> int:
        return int(self.status.split(" ", 1)[0])


class SerializingMiddleware:
    """WSGI middleware: one lock per AWS service; SQS long polls emulated outside the lock.

    ``serialized_services``: the services to serialize, or ``None`` for every signed request
    (the default). ``request_counts()`` tells how many requests each lock served (tests use it
    to prove the lock was engaged)."""

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        *,
        serialized_services: Iterable[str] | None = None,
        long_poll_interval: float = DEFAULT_LONG_POLL_INTERVAL,
    ) -> None:
        self.app = app
        self._only = None if serialized_services is None else frozenset(serialized_services)
        self._long_poll_interval = long_poll_interval
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._counts: Counter[str] = Counter()

    # -- locks -------------------------------------------------------------------------------
    def lock_for(self, service: str) -> threading.Lock:
        with self._locks_guard:
            lock = self._locks.get(service)
            if lock is None:
                lock = self._locks[service] = threading.Lock()
            return lock

    def request_counts(self) -> dict[str, int]:
        """Requests served under each service lock so far."""
        with self._locks_guard:
            return dict(self._counts)

    def _serialized(self, service: str | None) -> bool:
        return service is not None and (self._only is None or service in self._only)

    # -- WSGI --------------------------------------------------------------------------------
    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/moto-api/reset"):
            return self._with_all_locks(environ, start_response)
        service = service_of(environ)
        if not self._serialized(service):
            return self.app(environ, start_response)
        assert service is not None
        if service == "sqs" and environ.get("HTTP_X_AMZ_TARGET") == "AmazonSQS.ReceiveMessage":
            return self._receive_message(environ, start_response)
        body = self._read_body(environ)
        with self.lock_for(service):
            captured = self._call(environ, body)
            with self._locks_guard:
                self._counts[service] += 1
        return self._replay(captured, start_response)

    def _with_all_locks(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = self._read_body(environ)
        with self._locks_guard:
            locks = [self._locks[name] for name in sorted(self._locks)]
        for lock in locks:
            lock.acquire()
        try:
            captured = self._call(environ, body)
        finally:
            for lock in reversed(locks):
                lock.release()
        return self._replay(captured, start_response)

    def _receive_message(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = self._read_body(environ)
        lock = self.lock_for("sqs")
        wait = 0.0
        request: dict[str, Any] | None = None
        queue: Any = None
        try:
            request = json.loads(body or b"{}")
            if not isinstance(request, dict):
                request = None
        except ValueError:
            request = None
        if request is not None:
            queue = _moto_queue(environ, request)
            try:
                if "WaitTimeSeconds" in request:
                    wait = float(request["WaitTimeSeconds"])
                elif queue is not None:  # the queue's ReceiveMessageWaitTimeSeconds applies
                    wait = float(queue.receive_message_wait_time_seconds or 0)
            except (TypeError, ValueError):
                request = None
        if request is None or not 0 < wait <= 20:
            # Short poll, or a request moto should judge (bad parameters, unknown queue, which
            # fail at once): one call under the lock.
            with lock:
                captured = self._call(environ, body)
                with self._locks_guard:
                    self._counts["sqs"] += 1
            return self._replay(captured, start_response)

        short = dict(request, WaitTimeSeconds=0)
        short_body = json.dumps(short).encode("utf-8")
        deadline = time.monotonic() + wait
        signalled = False  # the last wait ended because the queue said it held messages
        while True:
            scanned = time.monotonic()
            with lock:
                captured = self._call(environ, short_body)
                with self._locks_guard:
                    self._counts["sqs"] += 1
            if captured.status_code != HTTPStatus.OK or _has_messages(captured.body):
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            pause = rescan_pause(signalled, time.monotonic() - scanned)
            if pause > 0:
                time.sleep(min(pause, remaining))
            signalled = _wait_for_messages(queue, min(self._long_poll_interval, max(0.0, deadline - time.monotonic())))
            if time.monotonic() >= deadline:
                # One last scan at the end of the wait, as SQS returns what arrived.
                with lock:
                    captured = self._call(environ, short_body)
                    with self._locks_guard:
                        self._counts["sqs"] += 1
                break
        return self._replay(captured, start_response)

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _read_body(environ: dict[str, Any]) -> bytes:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        stream = environ.get("wsgi.input")
        if stream is None:
            return b""
        if length > 0:
            return stream.read(length)
        if environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked" or environ.get("wsgi.input_terminated"):
            return stream.read()
        return b""

    def _call(self, environ: dict[str, Any], body: bytes) -> _Captured:
        env = dict(environ)
        env["wsgi.input"] = io.BytesIO(body)
        env["CONTENT_LENGTH"] = str(len(body))
        env.pop("HTTP_TRANSFER_ENCODING", None)
        captured = _Captured()

        def capture_start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            captured.status = status
            captured.headers = list(headers)
            captured.exc_info = exc_info
            return chunks.append

        chunks: list[bytes] = []
        result = self.app(env, capture_start)
        try:
            for chunk in result:
                chunks.append(chunk)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        captured.body = b"".join(chunks)
        return captured

    @staticmethod
    def _replay(captured: _Captured, start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers = [(k, v) for k, v in captured.headers if k.lower() != "content-length"]
        headers.append(("Content-Length", str(len(captured.body))))
        start_response(captured.status, headers)
        return [captured.body]


def _moto_queue(environ: dict[str, Any], request: dict[str, Any]) -> Any:
    """moto's Queue object for a ReceiveMessage request, or None (then the wait is a sleep).

    Used only to wait on the queue's "message added" condition; never to change it."""
    try:
        from moto.sqs.models import sqs_backends

        url = str(request.get("QueueUrl", ""))
        parts = url.rstrip("/").split("/")
        name, account = parts[-1], parts[-2] if len(parts) >= 2 else ""
        auth = environ.get("HTTP_AUTHORIZATION") or ""
        scope = auth.split("Credential=", 1)[1].split(",", 1)[0].split("/")
        region = scope[2]
        if account not in sqs_backends:
            return None
        backend = sqs_backends[account][region]
        return backend.queues.get(name)
    except Exception:  # noqa: BLE001 - best effort; the fallback is a plain sleep
        return None


def rescan_pause(signalled: bool, since_scan: float) -> float:
    """How long a long poll whose scan came back empty pauses before it waits again. Only after a
    signal that found nothing (moto's "has messages" can hold while none is deliverable, and would
    wake the wait at once again) is the rescan paced; a message that arrives is scanned for at
    once, as SQS's long poll returns as soon as one is there."""
    return max(0.0, _MIN_RESCAN_SECONDS - since_scan) if signalled else 0.0


def _wait_for_messages(queue: Any, timeout: float) -> bool:
    """Wait until moto says the queue holds visible messages (True) or `timeout` ends (False)."""
    if timeout <= 0:
        return False
    condition = getattr(queue, "_messages_lock", None)
    if condition is None:
        time.sleep(timeout)
        return False
    try:
        with condition:
            return bool(condition.wait_for(lambda: queue.messages, timeout=timeout))
    except Exception:  # noqa: BLE001 - moto's private lock changed shape: fall back to polling
        time.sleep(timeout)
        return False


def _has_messages(body: bytes) -> bool:
    try:
        return bool(json.loads(body or b"{}").get("Messages"))
    except (ValueError, AttributeError):
        return True  # not what we expected: hand it back to the client as is


def _quiet_handler_class() -> type:
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class QuietMotoRequestHandler(MotoRequestHandler):  # type: ignore[misc, valid-type]
        """moto's request handler without a log line per request."""

        def log_request(self, code: Any = "-", size: Any = "-") -> None:
            log.debug("%s %s %s", self.command, self.path, code)

    return QuietMotoRequestHandler


class LocalAwsServer(BackgroundServer):
    """moto's AWS emulation on ``http://host:port``, with per-service serialization.

    ``start()`` returns the endpoint URL (the real port when ``port=0``); ``stop()`` shuts the
    server down and joins its thread; ``reset()`` clears all moto state (every service, every
    region, every account in this process). Usable as a context manager (``__enter__`` starts
    and returns the server).

    ``serialized_services``: ``None`` (default) serializes every AWS service with its own lock;
    pass e.g. ``{"dynamodb", "sqs"}`` to serialize only those, or ``()`` for none (moto as is).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        serialized_services: Iterable[str] | None = None,
        long_poll_interval: float = DEFAULT_LONG_POLL_INTERVAL,
    ) -> None:
        self.host = host
        self.port = port
        self._serialized_services = serialized_services
        self._long_poll_interval = long_poll_interval
        super().__init__()
        self.middleware: SerializingMiddleware | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> str:
        """Bind, start serving in a daemon thread and return the endpoint URL."""
        if self._server is not None:
            return self.endpoint_url
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        from p4review_dev import moto_transactions

        # moto's TransactWriteItems deep-copies whole tables; with DynamoDB serialized here the
        # item-level version is as atomic and keeps a transaction's cost independent of table size.
        if self._serialized_services is None or "dynamodb" in self._serialized_services:
            moto_transactions.install()
        app = DomainDispatcherApplication(create_backend_app)
        self.middleware = SerializingMiddleware(
            app,
            serialized_services=self._serialized_services,
            long_poll_interval=self._long_poll_interval,
        )
        server = make_server(
            self.host,
            self.port,
            self.middleware,
            threaded=True,
            request_handler=_quiet_handler_class(),
        )
        server.daemon_threads = True  # type: ignore[attr-defined]
        self.port = server.server_port
        self._serve(server, f"moto-server-{self.port}")
        return self.endpoint_url

    # -- state -------------------------------------------------------------------------------
    @property
    def endpoint_url(self) -> str:
        if self._server is None:
            raise RuntimeError("LocalAwsServer is not started")
        return f"http://{self.host}:{self.port}"

    def reset(self) -> None:
        """Clear all moto state (POST /moto-api/reset, taken under every service lock)."""
        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status != HTTPStatus.OK:
                raise RuntimeError(f"moto reset failed: HTTP {response.status}")

    def request_counts(self) -> dict[str, int]:
        """Requests served under each service lock since start (empty before start)."""
        return {} if self.middleware is None else self.middleware.request_counts()
