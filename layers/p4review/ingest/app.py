"""API Gateway routes of the ingest function. Parse and authenticate here; rules live in
logic/, storage behind dal/. Every answer is JSON; errors never carry a stack trace."""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
import urllib.parse
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from pydantic import ValidationError as PydanticValidationError

from p4review import swarm_urls
from p4review.errors import AuthError, ConfigError, NotFoundError, P4ReviewError
from p4review.ingest import signing, swarm_intake
from p4review.ingest.http_answers import (
    INTAKE_STATUS,
    ApiError,
    ApiStatus,
    failure_status,
    field_errors,
    intake_headers,
)
from p4review.ingest.intake import STRANDED_AFTER, IntakeAnswer
from p4review.ingest.service import create_review, create_swarm_test_review, describe_review
from p4review.ingest.settings import IngestSettings
from p4review.metric_names import Dimension, MetricName
from p4review.models.api import CreateReviewRequest, ErrorBody, ErrorResponse, JobView, PingResponse
from p4review.models.swarm_test import SwarmTestCall
from p4review.observability import logger, metrics, publish_metric
from p4review.stores.factory import get_data_access

app = APIGatewayRestResolver()

# The ingest handler parses IngestSettings at import (cold start) and passes them for each event in
# the resolver's context (cleared after each event); called without (tests), the environment's.
SETTINGS_CONTEXT_KEY = "settings"


def _settings() -> IngestSettings:
    settings = app.context.get(SETTINGS_CONTEXT_KEY)
    return settings if isinstance(settings, IngestSettings) else IngestSettings.from_env()


_JOB_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # fullmatch only
_JOB_PATH = re.compile(r"/v1/reviews/(?P<job_id>[^/]+)/?")
# Each route's path and its methods, matched whole (`re.fullmatch`: a `$` would also match before
# a trailing newline). HEAD is not offered: every route is a signed call of the trigger or the
# CLI, or a Swarm workflow test's call carrying its token.
_ROUTE_METHODS = (
    (re.compile(r"/v1/reviews/?"), ("POST",)),
    (_JOB_PATH, ("GET",)),
    (re.compile(r"/v1/ping/?"), ("GET",)),
    (re.compile(r"/v1/swarm/tests/?"), ("POST",)),
)
_FORM_FIELDS_MAX = 32


def _json_response(status_code: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=int(status_code),  # a plain int in the proxy response, not the enum that named it
        content_type="application/json",
        body=json.dumps(payload, sort_keys=True),
        headers=headers or {},
    )


def _error_response(
    status_code: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> Response:
    body = ErrorResponse(error=ErrorBody(code=code, message=message, details=details))
    return _json_response(status_code, body.model_dump(mode="json"), headers)


def _raw_body() -> bytes:
    event = app.current_event
    body = event.body or ""
    if event.is_base64_encoded:
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(ApiStatus.INVALID_REQUEST, "invalid_body", "body is not valid base64") from None
    return body.encode("utf-8")


def _authenticate(raw_body: bytes) -> int:
    """Size first (cheap), then the HMAC signature against the current and previous secret.
    Returns which one signed it (0 current, 1 previous)."""
    settings = _settings()
    if len(raw_body) > settings.max_body_bytes:
        raise ApiError(ApiStatus.BODY_TOO_LARGE, "body_too_large", f"body exceeds {settings.max_body_bytes} bytes")
    event = app.current_event
    secrets = get_data_access().secrets.get_versions(settings.signing_secret_id)
    if not secrets:
        raise ConfigError("no signing secret configured")
    try:
        return signing.verify(
            secrets=secrets,
            timestamp=event.headers.get(signing.TIMESTAMP_HEADER),
            signature=event.headers.get(signing.SIGNATURE_HEADER),
            method=event.http_method,
            path=event.path,
            body=raw_body,
            now=time.time(),
            max_age_seconds=settings.signature_max_age_seconds,
        )
    except signing.SignatureProblem as problem:
        metrics.add_metric(name=MetricName.SIGNATURE_REJECTED, unit="Count", value=1)
        logger.warning("signature rejected", extra={"reason_code": problem.code, "path": event.path})
        raise ApiError(ApiStatus.UNAUTHENTICATED, problem.code, problem.message, problem.details) from None


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ApiError(
            ApiStatus.INVALID_REQUEST, "invalid_json", "duplicate keys in JSON object", {"duplicate_keys": duplicates}
        )
    return dict(pairs)


def _json_object(raw_body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(raw_body.decode("utf-8"), object_pairs_hook=_reject_duplicate_keys)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ApiError(ApiStatus.INVALID_REQUEST, "invalid_json", "body is not a JSON object") from None
    if not isinstance(document, dict):
        raise ApiError(ApiStatus.INVALID_REQUEST, "invalid_json", "body is not a JSON object")
    return document


def _parse_create_request(raw_body: bytes) -> CreateReviewRequest:
    document = _json_object(raw_body)
    try:
        return CreateReviewRequest.model_validate(document)
    except PydanticValidationError as exc:
        raise ApiError(
            ApiStatus.INVALID_REQUEST, "invalid_request", "request has invalid fields", field_errors(exc)
        ) from None


@app.post("/v1/reviews")
def post_review() -> Response:
    raw_body = _raw_body()
    _authenticate(raw_body)
    request = _parse_create_request(raw_body)
    dal = get_data_access()
    answer = create_review(
        request, jobs=dal.jobs, queues=dal.queues, request_id=app.current_event.request_context.request_id
    )
    response = _intake_response(request, answer)
    publish_metric(MetricName.INGEST_RESPONSES, 1, {Dimension.STATUS_CODE: str(response.status_code)})
    return response


def _intake_response(
    request: CreateReviewRequest, answer: IntakeAnswer, *, log_extra: dict[str, Any] | None = None
) -> Response:
    status_code, headers = int(INTAKE_STATUS[answer.outcome]), intake_headers(answer)
    logger.info(
        "review request answered",
        extra={
            "status_code": status_code,
            "changelist_id": request.changelist_id,
            "review_version": request.review_version,
            "job_id": answer.job.job_id if answer.job else None,
            "reason_code": answer.error_code,
            **(log_extra or {}),
        },
    )
    if answer.error_code or answer.job is None:
        return _error_response(
            status_code, answer.error_code or answer.outcome.value, answer.message, answer.details, headers
        )
    return _json_response(status_code, JobView.from_job(answer.job).model_dump(mode="json", exclude_none=True), headers)


# --- Helix Swarm workflow tests (docs/swarm.md "Workflow test") ------------------------------------------
def _swarm_document(raw_body: bytes) -> dict[str, Any]:
    """The test's body as Swarm encodes it: a JSON object, or (Swarm's default) URL-encoded."""
    content_type = (app.current_event.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return _json_object(raw_body)
    try:
        pairs = urllib.parse.parse_qsl(
            raw_body.decode("utf-8"), keep_blank_values=True, strict_parsing=True, max_num_fields=_FORM_FIELDS_MAX
        )
    except (UnicodeDecodeError, ValueError):
        raise ApiError(ApiStatus.INVALID_REQUEST, "invalid_body", "body is not URL-encoded form data") from None
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ApiError(
            ApiStatus.INVALID_REQUEST,
            "invalid_body",
            "duplicate fields in the form data",
            {"duplicate_keys": duplicates},
        )
    return dict(pairs)


def _authenticate_swarm(token: Any) -> None:
    """The workflow test's shared token (Swarm cannot sign a body), from the header or the body,
    against the current and the previous secret value. The token itself is never logged."""
    settings = _settings()
    if not isinstance(token, str) or not token:
        code, message = "swarm_token_missing", "the request carries no Swarm test token"
    elif len(token) > swarm_intake.MAX_TOKEN_CHARS:
        code, message = "swarm_token_invalid", "the Swarm test token does not match"
    else:
        secrets = get_data_access().secrets.get_versions(settings.needed("swarm_test_secret_id"))
        if not secrets:
            raise ConfigError("no Swarm test token configured")
        if swarm_intake.token_matches(token, secrets):
            return
        code, message = "swarm_token_invalid", "the Swarm test token does not match"
    metrics.add_metric(name=MetricName.SWARM_TOKEN_REJECTED, unit="Count", value=1)
    logger.warning("swarm test token rejected", extra={"reason_code": code, "path": app.current_event.path})
    raise ApiError(ApiStatus.UNAUTHENTICATED, code, message)


def _parse_swarm_call(document: dict[str, Any], swarm_url: str) -> SwarmTestCall:
    try:
        call = SwarmTestCall.model_validate(document)
    except PydanticValidationError as exc:
        raise ApiError(
            ApiStatus.INVALID_REQUEST, "invalid_request", "request has invalid fields", field_errors(exc)
        ) from None
    problems = [
        {"field": name, "problem": problem}
        for name, url in (("pass", call.pass_url), ("fail", call.fail_url), ("update", call.update_url))
        if url is not None and (problem := swarm_urls.callback_url_problem(url, swarm_url)) is not None
    ]
    if problems:  # the URLs themselves are not echoed: they carry Swarm's tokens
        raise ApiError(
            ApiStatus.INVALID_REQUEST,
            "callback_url_not_allowed",
            "callback URLs must be on the configured Swarm",
            problems,
        )
    return call


@app.post("/v1/swarm/tests")
def post_swarm_test() -> Response:
    settings = _settings()
    if not settings.swarm_test_secret_id or not settings.swarm_url:
        raise ApiError(
            ApiStatus.NOT_FOUND, "swarm_tests_not_enabled", "Swarm workflow tests are not enabled on this service"
        )
    raw_body = _raw_body()
    if len(raw_body) > settings.max_body_bytes:
        raise ApiError(ApiStatus.BODY_TOO_LARGE, "body_too_large", f"body exceeds {settings.max_body_bytes} bytes")
    header_token = app.current_event.headers.get(swarm_intake.TOKEN_HEADER)
    if header_token is not None:
        _authenticate_swarm(header_token)
    document = _swarm_document(raw_body)
    body_token = document.pop(swarm_intake.TOKEN_FIELD, None)
    if header_token is None:
        _authenticate_swarm(body_token)
    call = _parse_swarm_call(document, settings.swarm_url)
    dal = get_data_access()
    request, answer = create_swarm_test_review(
        call, jobs=dal.jobs, queues=dal.queues, request_id=app.current_event.request_context.request_id
    )
    response = _intake_response(
        request,
        answer,
        log_extra={"swarm_review": call.review, "swarm_version": call.version, "swarm_status": call.status.value},
    )
    publish_metric(MetricName.SWARM_TEST_RESPONSES, 1, {Dimension.STATUS_CODE: str(response.status_code)})
    return response


@app.get("/v1/ping")
def ping() -> Response:
    """The trigger's signed self-test: a 200 proves URL, secret and clock; touches no table."""
    signed_with = _authenticate(_raw_body())
    metrics.add_metric(name=MetricName.INGEST_PING, unit="Count", value=1)
    answer = PingResponse(
        server_time=int(time.time()),
        signed_with="current" if signed_with == 0 else "previous",
        max_signature_age_seconds=_settings().signature_max_age_seconds,
    )
    return _json_response(ApiStatus.OK, answer.model_dump(mode="json"))


@app.get("/v1/reviews/<job_id>")
def get_review(job_id: str) -> Response:
    # The id comes from the whole path (checked by _route_refusal before this runs): the router's
    # `job_id` may lack what its pattern stops at (a trailing newline).
    _authenticate(_raw_body())
    job_id = _path_job_id(app.current_event.path or "")
    if not _JOB_ID.fullmatch(job_id):
        raise ApiError(ApiStatus.INVALID_REQUEST, "invalid_job_id", "job_id is not a job id")
    dal = get_data_access()
    view = describe_review(job_id, jobs=dal.jobs, outbox=dal.outbox)
    return _json_response(ApiStatus.OK, view.model_dump(mode="json", exclude_none=True))


def _path_job_id(path: str) -> str:
    match = _JOB_PATH.fullmatch(path)
    return match.group("job_id") if match else ""


def _route_refusal(method: str, path: str) -> Response | None:
    """The answer to a request no route may serve, decided on the whole path before any route
    runs (and before the signature: nothing here reads data): 404 for a path that is no route,
    405 with `Allow` for a method the route does not answer, 400 for a job route whose id is not
    a job id. The router itself cannot decide these: its pattern for `<job_id>` refuses some
    characters (NUL, tab, bidi controls, `"`, `\\`), so `GET /v1/reviews/{id}%00` would fall
    through to the not-found answer."""
    for pattern, methods in _ROUTE_METHODS:
        if not pattern.fullmatch(path):
            continue
        if method not in methods:
            return _error_response(
                ApiStatus.METHOD_NOT_ALLOWED,
                "method_not_allowed",
                f"this route answers {', '.join(methods)} only",
                headers={"Allow": ", ".join(methods)},
            )
        if pattern is _JOB_PATH and not _JOB_ID.fullmatch(_path_job_id(path)):
            return _error_response(ApiStatus.INVALID_REQUEST, "invalid_job_id", "job_id is not a job id")
        return None
    return _error_response(ApiStatus.NOT_FOUND, "route_not_found", "no such route")


def refuse_unroutable_requests(resolver: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response:
    """Runs before every route, and before the not-found answer."""
    refusal = _route_refusal(resolver.current_event.http_method, resolver.current_event.path or "")
    return refusal if refusal is not None else next_middleware(resolver)


app.use(middlewares=[refuse_unroutable_requests])


@app.not_found
def route_not_found(_: Exception) -> Response:
    # Only reached for a path _route_refusal let through that no route took: none should be.
    return _error_response(ApiStatus.NOT_FOUND, "route_not_found", "no such route")


@app.exception_handler(ApiError)
def handle_api_error(exc: ApiError) -> Response:
    return _error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)


@app.exception_handler(NotFoundError)
def handle_not_found(exc: NotFoundError) -> Response:
    return _error_response(ApiStatus.NOT_FOUND, "job_not_found", "no such review job")


@app.exception_handler(AuthError)
def handle_auth_error(exc: AuthError) -> Response:
    # The service's own credentials were refused (e.g. reading the signing secret): our fault.
    logger.error("service credentials refused", extra={"error_class": exc.error_class.value})
    return _error_response(ApiStatus.UNAVAILABLE, "service_unavailable", "the service cannot serve requests right now")


@app.exception_handler(P4ReviewError)
def handle_domain_error(exc: P4ReviewError) -> Response:
    logger.error("request failed", extra={"error_class": exc.error_class.value, "error": exc.message})
    status = failure_status(exc)
    # A job may already be committed with its hand-off lost; a replay re-enqueues it once it is
    # older than STRANDED_AFTER, so ask the trigger to wait at least that long.
    headers = {"Retry-After": str(int(STRANDED_AFTER.total_seconds()))} if exc.retryable else {}
    return _error_response(
        status,
        "service_unavailable" if exc.retryable else "internal_error",
        "the request could not be processed; retry with the same idempotency_key",
        None,
        headers,
    )


@app.exception_handler(Exception)
def handle_unexpected(exc: Exception) -> Response:
    # Type only: a message or traceback could carry request data into the logs.
    logger.error("unexpected error", extra={"error_type": type(exc).__name__})
    return _error_response(ApiStatus.INTERNAL_ERROR, "internal_error", "the request could not be processed")


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
