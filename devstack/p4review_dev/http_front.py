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

The HTTP side is werkzeug's: its threaded WSGI server (``werkzeug.serving``, the request line
and headers parsed by ``http.server`` under it), a ``werkzeug.Request`` per request whose
``max_content_length`` enforces the body cap and which reads ``Content-Length`` and chunked
bodies, a ``werkzeug.Response`` per answer. Like werkzeug's server, every response closes its
connection. The front's own refusals are JSON like API Gateway's: 400 (malformed chunked
framing), 408 (a body stalled past ``read_timeout_seconds``), 413, 414/431 (http.server's
limits) and 501 (a method API Gateway's REST API does not have, e.g. TRACE).

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
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from werkzeug.exceptions import ClientDisconnected, RequestEntityTooLarge
from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler
from werkzeug.wrappers import Request, Response

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
        status = int(result.get("statusCode", HTTPStatus.OK))
    except (TypeError, ValueError) as exc:
        raise _BadResponse("statusCode is not an integer") from exc
    if not HTTPStatus.CONTINUE <= status < 600:  # three digits, 1xx to 5xx
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
# The methods the front serves; http.server answered any other 501 (werkzeug's handler would
# pass TRACE or CONNECT to the application, so the application answers it).
_METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"})
# The request target and header list exactly as received (werkzeug's WSGI environ folds repeated
# headers into one comma-joined value, drops names containing "_" and re-encodes the target;
# API Gateway's event keeps the client's names, order and repeats).
_RAW_REQUEST = "p4review.raw_request"


class _Response(Response):
    default_mimetype = None  # the handler's headers as given: no Content-Type werkzeug made up


def _status_line(status: int) -> str:
    """``"413 Request Entity Too Large"``: http.server's reason phrase, not werkzeug's upper-cased one."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def _json_response(status: int, payload: dict[str, Any]) -> Response:
    headers = [
        ("Content-Type", "application/json"),
        ("x-amzn-RequestId", str(uuid.uuid4())),
        (
            "x-amzn-ErrorType",
            "InternalServerErrorException"
            if status >= HTTPStatus.INTERNAL_SERVER_ERROR
            else "RequestTooLargeException"
            if status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
            else "BadRequestException",
        ),
    ]
    return _Response(json.dumps(payload).encode("utf-8"), status=_status_line(status), headers=headers)


def _proxy_response(result: Any, request_id: str) -> Response:
    """The HTTP response for a Lambda proxy response, or raise _BadResponse."""
    status, headers, raw = _render_response(result)
    headers = [(name, value) for name, value in headers if name.lower() not in _HOP_BY_HOP]
    headers.append(("x-amzn-RequestId", request_id))
    try:
        return _Response(raw, status=_status_line(status), headers=headers)
    except ValueError as exc:  # werkzeug refuses a header value containing a newline
        raise _BadResponse(str(exc)) from exc


def _message_response(status: HTTPStatus, message: str | None = None) -> Response:
    return _json_response(status, {"message": message or status.phrase})


def _drain(stream: Any, remaining: int) -> None:
    """Read and discard a refused body, so the client reads the 413 instead of a reset."""
    while remaining > 0:
        chunk = stream.read(min(remaining, 1 << 16))
        if not chunk:
            break
        remaining -= len(chunk)


class _RequestHandler(WSGIRequestHandler):
    """werkzeug's handler with the front's name, log, read timeout and JSON refusals."""

    protocol_version = "HTTP/1.1"
    sys_version = ""
    timeout = READ_TIMEOUT_SECONDS  # StreamRequestHandler sets it on the socket

    @property
    def server_version(self) -> str:  # type: ignore[override]
        return "p4review-local-apigw"

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        environ[_RAW_REQUEST] = (self.path, list(self.headers.items()))
        return environ

    def handle_expect_100(self) -> bool:
        return True  # werkzeug's run_wsgi sends the interim 100 itself; http.server would send a second

    def log(self, type: str, message: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), message % args if args else message)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a URI or header too long, a malformed request line, a
        bad HTTP version) in the API's JSON shape, not its HTML page."""
        self.close_connection = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "Error"
        response = _json_response(code, {"message": phrase})
        self.send_response(code)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.get_data())


class _BindError(Exception):
    """An OSError from bind/listen, carried past werkzeug (which would print it and sys.exit(1))."""


class _Server(ThreadedWSGIServer):
    request_queue_size = 256

    def server_bind(self) -> None:
        try:
            super().server_bind()
        except OSError as exc:
            raise _BindError() from exc

    def server_activate(self) -> None:
        try:
            super().server_activate()
        except OSError as exc:
            raise _BindError() from exc

    def log(self, type: str, message: str, *args: Any) -> None:
        # Only an exception escaping the application reaches here (the application catches them all).
        log.error(message.rstrip(), *args)


class LocalApiGateway(BackgroundServer):
    """A threaded HTTP server that invokes ``handler(event, context)`` per request.

    ``handler``: a Lambda handler taking an API Gateway REST proxy event.
    ``url`` (after ``start()``): ``http://host:port/<stage>``, the invoke URL;
    ``base_url``: without the stage. ``counters()``: invocations, errors (502s) and
    rejected_too_large (413s). Start/stop are idempotent; usable as a context manager.

    The server is werkzeug's threaded WSGI server (``werkzeug.serving``); each request is a
    werkzeug ``Request`` whose ``max_content_length`` is ``max_body_bytes``, each answer a
    werkzeug ``Response``. Like werkzeug's server, it closes the connection after each response."""

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
        handler_class = type("BoundRequestHandler", (_RequestHandler,), {"timeout": self.read_timeout_seconds})
        try:
            server = _Server(self.host, self.port, self._wsgi_app, handler_class)
        except _BindError as exc:
            raise exc.__cause__ from None  # type: ignore[misc]
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

    def _wsgi_app(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self._respond(Request(environ))(environ, start_response)

    def _read_body(self, request: Request) -> bytes | None:
        """The request body, or None when it is over ``max_body_bytes``."""
        chunked = bool(request.environ.get("wsgi.input_terminated"))
        # werkzeug refuses a Content-Length over max_content_length before reading anything; a
        # chunked body it stops reading at max_content_length, so one byte more tells an
        # over-long body from one of exactly max_body_bytes.
        request.max_content_length = self.max_body_bytes + 1 if chunked else self.max_body_bytes
        try:
            body = request.get_data(cache=False)
        except RequestEntityTooLarge:
            self._count("rejected_too_large")
            length = request.content_length
            if length is not None and length <= _DRAIN_LIMIT:
                _drain(request.environ["wsgi.input"], length)
            return None
        if len(body) > self.max_body_bytes:
            self._count("rejected_too_large")
            return None
        return body

    def _respond(self, request: Request) -> Response:
        method = request.environ["REQUEST_METHOD"]
        if method not in _METHODS:  # TRACE, CONNECT, a lower-case `get`...
            return _message_response(HTTPStatus.NOT_IMPLEMENTED)
        try:
            body = self._read_body(request)
        except ClientDisconnected as exc:
            # werkzeug raises it while handling the read's error (a stalled socket's TimeoutError)
            if isinstance(exc.__cause__ or exc.__context__, TimeoutError):  # more body promised than sent
                return _message_response(HTTPStatus.REQUEST_TIMEOUT)
            return _message_response(HTTPStatus.BAD_REQUEST)  # malformed chunked framing, a body cut short
        except TimeoutError:  # stalled while a refused body was drained
            return _message_response(HTTPStatus.REQUEST_TIMEOUT)
        if body is None:
            return _message_response(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "Request Too Large")
        raw_target, raw_headers = request.environ[_RAW_REQUEST]
        event = build_proxy_event(
            method=method,
            raw_path=raw_target,
            headers=raw_headers,
            body=body,
            source_ip=request.remote_addr or "",
            stage=self.stage,
            protocol=request.environ["SERVER_PROTOCOL"],
        )
        context = FakeLambdaContext(
            self.function_name, timeout_seconds=self.timeout_seconds, aws_request_id=str(uuid.uuid4())
        )
        self._count("invocations")
        try:
            result = self.handler(event, context)
            return _proxy_response(result, event["requestContext"]["requestId"])
        except _BadResponse as exc:
            self._count("errors")
            log.error("local API Gateway: malformed Lambda proxy response: %s", exc)
            return _message_response(HTTPStatus.BAD_GATEWAY, "Internal server error")
        except Exception:
            self._count("errors")
            log.exception("local API Gateway: handler raised (request %s)", context.aws_request_id)
            return _message_response(HTTPStatus.BAD_GATEWAY, "Internal server error")
