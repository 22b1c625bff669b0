"""Ingest API request and response bodies."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from p4review.models.job import ChangeKind, JobStatus, ReviewJob, ShelfRef, StageName, StageState
from p4review.models.policy import PolicyDiagnostic

# Printable ASCII only: no control characters, no whitespace-only surprises in logs or keys.
IdempotencyKey = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")]
# Perforce changelist numbers are positive 32-bit integers.
ChangelistId = Annotated[StrictInt, Field(ge=1, le=2_147_483_647)]
ReviewVersion = Annotated[StrictInt, Field(ge=1, le=1_000_000)]


class FollowsShelf(BaseModel):
    """The shelf version a submit follows: `{"changelist_id", "review_version"}`."""

    model_config = ConfigDict(extra="forbid")

    changelist_id: ChangelistId
    review_version: ReviewVersion


class CreateReviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idempotency_key: IdempotencyKey
    changelist_id: ChangelistId
    review_version: ReviewVersion
    kind: ChangeKind
    rerun: StrictBool = False
    # Set by the trigger when a shelved (and reviewed) change is submitted: the submit is the
    # next version of the same counter, and the email says which shelf version it follows.
    follows_shelf: FollowsShelf | None = None

    @field_validator("follows_shelf")
    @classmethod
    def _follows_a_lower_shelf_version(cls, value: FollowsShelf | None, info: ValidationInfo) -> FollowsShelf | None:
        if value is None:
            return None
        if info.data.get("kind") != ChangeKind.SUBMITTED:
            raise ValueError("only a submitted change follows a shelf")
        version = info.data.get("review_version")
        if version is not None and version <= value.review_version:
            raise ValueError("review_version must be higher than the shelf version it follows")
        return value

    def shelf_ref(self) -> ShelfRef | None:
        return ShelfRef(**self.follows_shelf.model_dump()) if self.follows_shelf else None


class DeliveryView(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipient: str
    status: str
    notified_at: str | None = None
    attempts: int = 0


class SwarmTestView(BaseModel):
    """The Swarm workflow test a job answers, as the API shows it: never the callback URLs (they
    carry Swarm's tokens)."""

    model_config = ConfigDict(extra="forbid")

    review_id: int
    version: int
    change: int
    status: str


class JobView(BaseModel):
    """What the API returns for a job: never artifacts' content, never secrets."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    idempotency_key: str
    changelist_id: int
    review_version: int
    kind: ChangeKind
    rerun: bool
    follows_shelf: ShelfRef | None = None
    status: JobStatus
    stages: dict[StageName, StageState]
    summary: dict[str, Any] | None = None
    redactions: dict[str, int] | None = None  # secrets redacted per class before review (counts only)
    opted_out: str | None = None  # the description's opt-out keyword: the change was not reviewed
    policy_changes: list[str] | None = None  # policy files the change modifies (in force for later changes)
    policy_diagnostics: list[PolicyDiagnostic] | None = None  # policy files not used, reviewers not emailed
    swarm_test: SwarmTestView | None = None
    deliveries: list[DeliveryView] | None = None
    created_at: str
    updated_at: str
    audit: list[dict[str, Any]] | None = None

    @classmethod
    def from_job(
        cls, job: ReviewJob, deliveries: list[DeliveryView] | None = None, with_audit: bool = False
    ) -> JobView:
        return cls(
            job_id=job.job_id,
            idempotency_key=job.idempotency_key,
            changelist_id=job.changelist_id,
            review_version=job.review_version,
            kind=job.kind,
            rerun=job.rerun,
            follows_shelf=job.follows_shelf,
            status=job.status,
            stages=job.stages,
            summary=job.summary.model_dump() if job.summary else None,
            redactions=job.redactions,
            opted_out=job.opted_out,
            policy_changes=job.policy_changes,
            policy_diagnostics=job.policy_diagnostics,
            swarm_test=SwarmTestView(
                review_id=job.swarm_test.review_id,
                version=job.swarm_test.version,
                change=job.swarm_test.change,
                status=job.swarm_test.status,
            )
            if job.swarm_test
            else None,
            deliveries=deliveries,
            created_at=job.created_at,
            updated_at=job.updated_at,
            audit=[event.model_dump(exclude_none=True) for event in job.audit] if with_audit else None,
        )


class PingResponse(BaseModel):
    """`GET /v1/ping`: the trigger's self-test. Proves the URL, the secret and the clock."""

    model_config = ConfigDict(extra="forbid")

    service: str = "p4review"
    server_time: int
    signed_with: str  # "current" or "previous" (the trigger holds the pre-rotation secret)
    max_signature_age_seconds: int


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error: ErrorBody
