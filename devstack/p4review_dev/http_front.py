"""API Gateway (REST API, Lambda proxy integration) in front of a handler, on loopback.

Every HTTP request becomes an API Gateway v1 proxy event; the handler's proxy response
becomes the HTTP response. Like API Gateway:

* the invoke URL carries the stage (``url`` is ``http://host:port/<stage>``); requests without
  the stage prefix are accepted too, and ``path`` in the event never contains the stage;
* ``resource`` is ``/v1/reviews``, ``/v1/ping`` or ``/v1/reviews/{job_id}`` when the path matches, else
  ``/{proxy+}``;
* bodies over ``max_body_bytes`` get ``413 {"message": "Request Too Large"}`` without
  invoking the handler;
* a handler exception or a malformed proxy response gets
  ``502 {"message": "Internal server error"}``: the trace goes to the log, never the client.

The Lambda context object each invocation gets is ``local.lambda_context.FakeLambdaContext``.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from p4review_dev.background import BackgroundServer
from p4review_dev.lambda_context import DEFAULT_ACCOUNT_ID, FakeLambdaContext

log = logging.getLogger(__name__)

__all__ = ["LocalApiGateway", "build_proxy_event", "match_resource"]

# API Gateway's default integration timeout.
API_GATEWAY_TIMEOUT_SECONDS = 29.0
# A client that stops sending (a Content-Length longer than its body, a stalled chunk) is
# answered 408 and disconnected after this long instead of holding a thread for ever.
READ_TIMEOUT_SECONDS = 30.0
# A too-large body is read and discarded (so the client sees the 413) up to this many bytes;
# beyond it the connection is simply closed.
_DRAIN_LIMIT = 64 * 1024 * 1024


_JOB_PATH = re.compile(r"^/v1/reviews/(?P<job_id>[^/]+)/?$")


def match_resource(path: str) -> tuple[str, dict[str, str] | None]:
    """(resource, pathParameters) for a request path, as the REST API's resources would."""
    if path.rstrip("/") in ("/v1/reviews", "/v1/ping"):
        return path.rstrip("/"), None
    match = _JOB_PATH.match(path)
    if match:
        return "/v1/reviews/{job_id}", {"job_id": unquote(match.group("job_id"))}
    return "/{proxy+}", {"proxy": unquote(path.lstrip("/"))}


def build_proxy_event(
    *,
    method: str,
    raw_path: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str,
    stage: str,
    protocol: str = "HTTP/1.1",
    account_id: str = DEFAULT_ACCOUNT_ID,
    api_id: str = "local",
) -> dict[str, Any]:
    """An API Gateway REST API (v1) Lambda proxy event for one request."""
    split = urlsplit(raw_path)
    path = unquote(split.path) or "/"
    stage_prefix = f"/{stage}"
    if path == stage_prefix or path.startswith(stage_prefix + "/"):
        path = path[len(stage_prefix) :] or "/"
    resource, path_parameters = match_resource(path)

    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        single[name] = value  # API Gateway keeps the last value of a repeated header
        multi.setdefault(name, []).append(value)

    query_single: dict[str, str] = {}
    query_multi: dict[str, list[str]] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        query_single[name] = value
        query_multi.setdefault(name, []).append(value)

    if body:
        try:
            body_text: str | None = body.decode("utf-8")
            is_base64 = False
        except UnicodeDecodeError:
            body_text = base64.b64encode(body).decode("ascii")
            is_base64 = True
    else:
        body_text, is_base64 = None, False

    now = time.time()
    header_lookup = {name.lower(): value for name, value in headers}
    request_id = str(uuid.uuid4())
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": query_single or None,
        "multiValueQueryStringParameters": query_multi or None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "accountId": account_id,
            "apiId": api_id,
            "resourceId": resource,
            "resourcePath": resource,
            "stage": stage,
            "requestId": request_id,
            "extendedRequestId": request_id,
            "httpMethod": method,
            "path": f"/{stage}{path}",
            "protocol": protocol,
            "domainName": header_lookup.get("host", "localhost"),
            "domainPrefix": header_lookup.get("host", "localhost").split(".", 1)[0],
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "requestTimeEpoch": int(now * 1000),
            "identity": {
                "sourceIp": source_ip,
                "userAgent": header_lookup.get("user-agent"),
                "accountId": None,
                "apiKey": None,
                "caller": None,
                "user": None,
                "userArn": None,
                "accessKey": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
            },
            "authorizer": None,
        },
        "body": body_text,
        "isBase64Encoded": is_base64,
    }


class _BadResponse(Exception):
    pass


def _render_response(result: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """Turn a Lambda proxy response into (status, headers, body) or raise _BadResponse."""
    if not isinstance(result, dict):
        raise _BadResponse(f"handler returned {type(result).__name__}, not a dict")
    try:
        status = int(result.get("statusCode", 200))
    except (TypeError, ValueError) as exc:
        raise _BadResponse("statusCode is not an integer") from exc
    if not 100 <= status <= 599:
        raise _BadResponse(f"statusCode {status} out of range")
    headers: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, values in (result.get("multiValueHeaders") or {}).items():
        if not isinstance(values, list):
            raise _BadResponse("multiValueHeaders values must be lists")
        for value in values:
            headers.append((str(name), str(value)))
        seen.add(str(name).lower())
    for name, value in (result.get("headers") or {}).items():
        if str(name).lower() not in seen:
            headers.append((str(name), str(value)))
    body = result.get("body")
    if body is None:
        raw = b""
    elif not isinstance(body, str):
        raise _BadResponse("body must be a string")
    elif result.get("isBase64Encoded"):
        try:
            raw = base64.b64decode(body, validate=True)
        except ValueError as exc:
            raise _BadResponse("body is not valid base64") from exc
    else:
        raw = body.encode("utf-8")
    return status, headers, raw


_HOP_BY_HOP = {"connection", "content-length", "transfer-encoding", "keep-alive"}


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "p4review-local-apigw"
    sys_version = ""
    gateway: LocalApiGateway  # set on the subclass LocalApiGateway builds

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def setup(self) -> None:
        self.timeout = self.gateway.read_timeout_seconds  # StreamRequestHandler sets it on the socket
        super().setup()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (unknown method such as TRACE or CONNECT, a URI or header
        too long, a malformed request line) in the API's JSON shape, not its HTML page."""
        self.close_connection = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "Error"
        self._send_json(code, {"message": phrase}, close=True)

    # Every method goes through the same path.
    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes, *, close: bool = False) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _send_json(self, status: int, payload: dict[str, Any], *, close: bool = False) -> None:
        headers = [
            ("Content-Type", "application/json"),
            ("x-amzn-RequestId", str(uuid.uuid4())),
            (
                "x-amzn-ErrorType",
                "InternalServerErrorException"
                if status >= 500
                else "RequestTooLargeException"
                if status == 413
                else "BadRequestException",
            ),
        ]
        self._send(status, headers, json.dumps(payload).encode("utf-8"), close=close)

    def _too_large(self, remaining: int | None) -> None:
        self.gateway._count("rejected_too_large")
        if remaining is not None and remaining <= _DRAIN_LIMIT:
            while remaining > 0:  # drain, so the client reads our 413 instead of a reset
                chunk = self.rfile.read(min(remaining, 1 << 16))
                if not chunk:
                    break
                remaining -= len(chunk)
        self._send_json(413, {"message": "Request Too Large"}, close=True)

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering 413."""
        limit = self.gateway.max_body_bytes
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size < 0:  # `-1` would make read() take everything up to the end of the stream
                    raise ValueError("negative chunk size")
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                total += size
                if total > limit:
                    self._too_large(None)
                    return None
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(parts)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if length > limit:
            self._too_large(length)
            return None
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self) -> None:
        try:
            body = self._read_body()
        except ValueError:  # malformed chunked framing
            self._send_json(400, {"message": "Bad Request"}, close=True)
            return
        except TimeoutError:  # the client promised more body than it sent
            self._send_json(408, {"message": "Request Timeout"}, close=True)
            return
        if body is None:
            return
        gateway = self.gateway
        event = build_proxy_event(
            method=self.command,
            raw_path=self.path,
            headers=list(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
            stage=gateway.stage,
            protocol=self.request_version,
        )
        context = FakeLambdaContext(
            gateway.function_name, timeout_seconds=gateway.timeout_seconds, aws_request_id=str(uuid.uuid4())
        )
        gateway._count("invocations")
        try:
            result = gateway.handler(event, context)
            status, headers, raw = _render_response(result)
        except _BadResponse as exc:
            gateway._count("errors")
            log.error("local API Gateway: malformed Lambda proxy response: %s", exc)
            self._send_json(502, {"message": "Internal server error"})
            return
        except Exception:
            gateway._count("errors")
            log.exception("local API Gateway: handler raised (request %s)", context.aws_request_id)
            self._send_json(502, {"message": "Internal server error"})
            return
        headers.append(("x-amzn-RequestId", event["requestContext"]["requestId"]))
        self._send(status, headers, raw)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


class LocalApiGateway(BackgroundServer):
    """A threaded HTTP server that invokes ``handler(event, context)`` per request.

    ``handler``: a Lambda handler taking an API Gateway REST proxy event.
    ``url`` (after ``start()``): ``http://host:port/<stage>``, the invoke URL;
    ``base_url``: without the stage. ``counters()``: invocations, errors (502s) and
    rejected_too_large (413s). Start/stop are idempotent; usable as a context manager."""

    def __init__(
        self,
        handler: Callable[[dict[str, Any], Any], dict[str, Any]],
        host: str = "127.0.0.1",
        port: int = 0,
        stage: str = "local",
        max_body_bytes: int = 10 * 1024 * 1024,
        *,
        function_name: str = "p4review-local-ingest",
        timeout_seconds: float = API_GATEWAY_TIMEOUT_SECONDS,
        read_timeout_seconds: float = READ_TIMEOUT_SECONDS,
    ) -> None:
        self.handler = handler
        self.host = host
        self.port = port
        self.stage = stage
        self.max_body_bytes = max_body_bytes
        self.function_name = function_name
        self.timeout_seconds = timeout_seconds
        self.read_timeout_seconds = read_timeout_seconds
        super().__init__()
        self._counts_lock = threading.Lock()
        self._counts = {"invocations": 0, "errors": 0, "rejected_too_large": 0}

    def start(self) -> str:
        """Bind, serve in a daemon thread, return ``url``."""
        if self._server is not None:
            return self.url
        handler_class = type("BoundRequestHandler", (_RequestHandler,), {"gateway": self})
        server = _Server((self.host, self.port), handler_class)
        self.port = int(server.server_address[1])
        self._serve(server, f"local-apigw-{self.port}")
        return self.url

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("LocalApiGateway is not started")
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/{self.stage}"

    def counters(self) -> dict[str, int]:
        with self._counts_lock:
            return dict(self._counts)

    def _count(self, name: str) -> None:
        with self._counts_lock:
            self._counts[name] += 1
