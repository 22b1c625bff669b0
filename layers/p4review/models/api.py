"""Ingest API request and response bodies."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints

from p4review.models.job import ChangeKind, JobStatus, ReviewJob, StageName, StageState

# Printable ASCII only: no control characters, no whitespace-only surprises in logs or keys.
IdempotencyKey = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")]
# Perforce changelist numbers are positive 32-bit integers.
ChangelistId = Annotated[StrictInt, Field(ge=1, le=2_147_483_647)]
ReviewVersion = Annotated[StrictInt, Field(ge=1, le=1_000_000)]


class CreateReviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idempotency_key: IdempotencyKey
    changelist_id: ChangelistId
    review_version: ReviewVersion
    kind: ChangeKind
    rerun: StrictBool = False


class DeliveryView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipient: str
    status: str
    notified_at: str | None = None
    attempts: int = 0


class JobView(BaseModel):
    """What the API returns for a job: never artifacts' content, never secrets."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    idempotency_key: str
    changelist_id: int
    review_version: int
    kind: ChangeKind
    rerun: bool
    status: JobStatus
    stages: dict[StageName, StageState]
    summary: dict[str, Any] | None = None
    redactions: dict[str, int] | None = None  # secrets redacted per class before review (counts only)
    deliveries: list[DeliveryView] | None = None
    created_at: str
    updated_at: str
    audit: list[dict[str, Any]] | None = None

    @classmethod
    def from_job(cls, job: ReviewJob, deliveries: list[DeliveryView] | None = None, with_audit: bool = False) -> "JobView":
        return cls(
            job_id=job.job_id,
            idempotency_key=job.idempotency_key,
            changelist_id=job.changelist_id,
            review_version=job.review_version,
            kind=job.kind,
            rerun=job.rerun,
            status=job.status,
            stages=job.stages,
            summary=job.summary.model_dump() if job.summary else None,
            redactions=job.redactions,
            deliveries=deliveries,
            created_at=job.created_at,
            updated_at=job.updated_at,
            audit=[event.model_dump(exclude_none=True) for event in job.audit] if with_audit else None,
        )


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error: ErrorBody
