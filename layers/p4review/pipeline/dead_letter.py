"""Sanitized dead-letter envelopes: IDs, classes and counts only (never content or addresses)."""

from __future__ import annotations

import hashlib
import re
import traceback
from typing import Any

from p4review.clock import now_iso
from p4review.errors import ErrorClass
from p4review.models.job import ReviewJob, StageName

_SECRETISH = re.compile(
    r"(?i)(password|passwd|secret|token|api[_-]?key|authorization)\s*[=:]\s*\S+|AKIA[0-9A-Z]{16}|"
    r"[\w.+-]+@[\w-]+(\.[\w-]+)+"
)


def redact(text: str) -> str:
    return _SECRETISH.sub("[REDACTED]", text)


def sanitized_stack(exc: BaseException) -> str:
    """Frames (file, line, function) and the exception type: no local values, no message text
    beyond the domain message, which is written to be safe."""
    frames = traceback.extract_tb(exc.__traceback__)
    lines = [f'  File "{frame.filename.rsplit("/", 1)[-1]}", line {frame.lineno}, in {frame.name}' for frame in frames]
    message = getattr(exc, "message", "") or ""
    lines.append(f"{type(exc).__name__}: {redact(message)[:300]}")
    return redact("\n".join(lines))


def envelope(
    *,
    job: ReviewJob | None,
    job_id: str,
    stage: StageName,
    error_class: ErrorClass | str,
    exc: BaseException | None,
    request_id: str | None,
    message_id: str | None,
    body_sha256: str | None = None,
    first_failure_at: str | None = None,
    escalated: bool = False,
) -> dict[str, Any]:
    now = now_iso()
    context: dict[str, Any] = {
        "job_id": job_id,
        "stage": stage.value,
        "request_id": request_id,
        "message_id": message_id,
        "message_body_sha256": body_sha256,
    }
    if job is not None:
        context.update(
            changelist_id=job.changelist_id,
            review_version=job.review_version,
            replays=job.replays,
            attempts={name.value: state.attempts for name, state in job.stages.items()},
        )
    return {
        "envelope_version": "1",
        "error_class": str(error_class),
        "stage": stage.value,
        "last_stack": sanitized_stack(exc) if exc is not None else "",
        "sanitized_context": context,
        "first_failure_at": first_failure_at or now,
        "last_failure_at": now,
        "escalated": escalated,
    }


def body_hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "replace")).hexdigest()
