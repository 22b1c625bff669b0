"""The one place that maps domain outcomes and failures to HTTP: status codes, the answer
headers, and the error body {"error": {code, message, details}}."""

from __future__ import annotations

from enum import IntEnum
from http import HTTPStatus
from typing import Any

from p4review.errors import P4ReviewError
from p4review.ingest.intake import IntakeAnswer, IntakeOutcome

REPLAY_HEADER = "X-P4Review-Replay"
INTAKE_STATUS: dict[IntakeOutcome, HTTPStatus] = {
    IntakeOutcome.CREATED: HTTPStatus.CREATED,
    IntakeOutcome.REPLAYED: HTTPStatus.OK,
    IntakeOutcome.KEY_REUSED: HTTPStatus.UNPROCESSABLE_ENTITY,
    IntakeOutcome.STALE_VERSION: HTTPStatus.CONFLICT,
    IntakeOutcome.RECORDS_EXPIRED: HTTPStatus.CONFLICT,
    IntakeOutcome.RERUN_NOT_REQUESTED: HTTPStatus.CONFLICT,
    IntakeOutcome.VERSION_TAKEN: HTTPStatus.CONFLICT,
    IntakeOutcome.STORAGE_INCONSISTENT: HTTPStatus.SERVICE_UNAVAILABLE,
}


class ApiStatus(IntEnum):
    """The status of every other answer of the API, named by what happened."""

    OK = HTTPStatus.OK  # a ping, a job's view, a Swarm test's call taken
    INVALID_REQUEST = HTTPStatus.BAD_REQUEST  # a body, form, job id or callback URL the API cannot take
    UNAUTHENTICATED = HTTPStatus.UNAUTHORIZED  # a signature or a Swarm test token refused
    NOT_FOUND = HTTPStatus.NOT_FOUND  # no such route or job; Swarm workflow tests not enabled
    METHOD_NOT_ALLOWED = HTTPStatus.METHOD_NOT_ALLOWED  # with `Allow`
    BODY_TOO_LARGE = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    INTERNAL_ERROR = HTTPStatus.INTERNAL_SERVER_ERROR
    UNAVAILABLE = HTTPStatus.SERVICE_UNAVAILABLE  # retry, with the same idempotency_key


def failure_status(exc: P4ReviewError) -> ApiStatus:
    """A domain failure's status: retryable ones (the caller may try again) are 503, the rest 500."""
    return ApiStatus.UNAVAILABLE if exc.retryable else ApiStatus.INTERNAL_ERROR


def intake_headers(answer: IntakeAnswer) -> dict[str, str]:
    if answer.outcome is IntakeOutcome.CREATED and answer.job is not None:
        return {"Location": f"/v1/reviews/{answer.job.job_id}"}
    if answer.replay is not None:
        return {REPLAY_HEADER: answer.replay.value}
    return {}


class ApiError(Exception):
    def __init__(
        self,
        status_code: ApiStatus,
        code: str,
        message: str,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}


def field_errors(exc: Any) -> list[dict[str, str]]:
    """Pydantic errors as {field, problem}; the offending input is never echoed back."""
    return [
        {"field": ".".join(str(part) for part in error["loc"]) or "body", "problem": error["msg"]}
        for error in exc.errors(include_url=False, include_input=False)
    ]
