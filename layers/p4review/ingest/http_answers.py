"""The one place that maps domain outcomes and failures to HTTP: status codes, the answer
headers, and the error body {"error": {code, message, details}}."""

from __future__ import annotations

from typing import Any

from p4review.ingest.intake import IntakeAnswer, IntakeOutcome

REPLAY_HEADER = "X-P4Review-Replay"
INTAKE_STATUS = {
    IntakeOutcome.CREATED: 201,
    IntakeOutcome.REPLAYED: 200,
    IntakeOutcome.KEY_REUSED: 422,
    IntakeOutcome.STALE_VERSION: 409,
    IntakeOutcome.RECORDS_EXPIRED: 409,
    IntakeOutcome.RERUN_NOT_REQUESTED: 409,
    IntakeOutcome.VERSION_TAKEN: 409,
    IntakeOutcome.STORAGE_INCONSISTENT: 503,
}


def intake_headers(answer: IntakeAnswer) -> dict[str, str]:
    if answer.outcome is IntakeOutcome.CREATED and answer.job is not None:
        return {"Location": f"/v1/reviews/{answer.job.job_id}"}
    if answer.replay is not None:
        return {REPLAY_HEADER: answer.replay.value}
    return {}


class ApiError(Exception):
    def __init__(
        self, status_code: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
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
