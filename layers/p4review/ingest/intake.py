"""Job creation rules (spec "Notification processing flow" step 1-2 and "Idempotency" 1, 4):
what a create request becomes, given what the conditional write learned. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from p4review.clock import parse_iso
from p4review.models.api import CreateReviewRequest
from p4review.models.job import (
    AuditEvent,
    JobStatus,
    ReviewJob,
    StageName,
    StageStatus,
    SwarmTestRef,
    job_id_for,
    request_fingerprint,
)
from p4review.ports import CreateConflict, CreateOutcome

# A queued job whose fetch never started this long after creation lost its hand-off
# (ingest died between the write and the enqueue): a replayed request re-enqueues it.
STRANDED_AFTER = timedelta(seconds=10)


class IntakeOutcome(StrEnum):
    """What a create request became. ingest/http_answers.py maps each to its HTTP answer."""

    CREATED = "created"
    # The same request again: the original job, nothing new (`replay` says which key matched).
    REPLAYED = "replayed"
    # The same idempotency_key with a different request.
    KEY_REUSED = "idempotency_key_reused"
    # A version at or below the latest accepted one.
    STALE_VERSION = "stale_review_version"
    # The latest accepted version itself, whose job and claim passed the retention period and
    # were deleted (SEC-23): the changelist head still refuses it, and nothing is sent again.
    RECORDS_EXPIRED = "review_records_expired"
    # A higher version without rerun=true.
    RERUN_NOT_REQUESTED = "rerun_not_requested"
    # A Swarm workflow test's (changelist, review_version) already belongs to a job that does
    # not answer that test (ingest/swarm_intake.py).
    VERSION_TAKEN = "review_version_taken"
    # The conditional write said "exists" but the read found nothing: retry.
    STORAGE_INCONSISTENT = "storage_inconsistent"


class Replay(StrEnum):
    IDEMPOTENCY_KEY = "idempotency-key"  # the same key and body
    SAME_VERSION = "same-version"  # the same (changelist, review_version) under another key


@dataclass(frozen=True)
class IntakeAnswer:
    outcome: IntakeOutcome
    job: ReviewJob | None = None
    replay: Replay | None = None
    message: str = ""
    details: Any = None
    enqueue_fetch: bool = False

    @property
    def error_code(self) -> str | None:
        """The reason code of a refusal (None when the answer is a job)."""
        return None if self.outcome in (IntakeOutcome.CREATED, IntakeOutcome.REPLAYED) else self.outcome.value


def new_job(request: CreateReviewRequest, now: str, actor: str, swarm_test: SwarmTestRef | None = None) -> ReviewJob:
    """`swarm_test`: the Swarm workflow test run the job answers (not part of the request's
    fingerprint: a repeated test call for the same version is a replay)."""
    return ReviewJob(
        job_id=job_id_for(request.idempotency_key),
        idempotency_key=request.idempotency_key,
        request_fingerprint=fingerprint_of(request),
        changelist_id=request.changelist_id,
        review_version=request.review_version,
        kind=request.kind,
        rerun=request.rerun,
        follows_shelf=request.shelf_ref(),
        swarm_test=swarm_test,
        created_at=now,
        updated_at=now,
        audit=[
            AuditEvent(
                at=now,
                actor=actor,
                event="job_created",
                to_status=JobStatus.QUEUED,
                detail=_created_detail(request, swarm_test),
            )
        ],
    )


def _created_detail(request: CreateReviewRequest, swarm_test: SwarmTestRef | None = None) -> str | None:
    parts = ["versioned rerun"] if request.rerun else []
    if request.follows_shelf:
        parts.append(
            f"follows shelf v{request.follows_shelf.review_version} of CL {request.follows_shelf.changelist_id}"
        )
    if swarm_test is not None:
        parts.append(f"Swarm workflow test of review {swarm_test.review_id} v{swarm_test.version}")
    return "; ".join(parts) or None


def fingerprint_of(request: CreateReviewRequest) -> str:
    return request_fingerprint(
        request.changelist_id, request.review_version, request.kind.value, request.rerun, request.shelf_ref()
    )


def is_stranded(job: ReviewJob, now: str) -> bool:
    fetch = job.stages[StageName.FETCH]
    return (
        job.status == JobStatus.QUEUED
        and fetch.status == StageStatus.PENDING
        and parse_iso(now) - parse_iso(job.created_at) >= STRANDED_AFTER
    )


def decide(request: CreateReviewRequest, outcome: CreateOutcome, now: str) -> IntakeAnswer:
    if outcome.created:
        return IntakeAnswer(IntakeOutcome.CREATED, job=outcome.job, enqueue_fetch=True)
    if outcome.conflict == CreateConflict.IDEMPOTENCY_KEY:
        return _repeated_key(request, outcome.existing_job, now)
    if outcome.conflict == CreateConflict.CHANGELIST_VERSION and outcome.existing_job is not None:
        # Same (changelist, version) under a new key: never a second job or a second send.
        return IntakeAnswer(
            IntakeOutcome.REPLAYED,
            job=outcome.existing_job,
            replay=Replay.SAME_VERSION,
            enqueue_fetch=is_stranded(outcome.existing_job, now),
        )
    latest = outcome.head_latest_version
    details = {
        "changelist_id": request.changelist_id,
        "requested_version": request.review_version,
        "latest_version": latest,
    }
    # The head accepted exactly this version, yet its claim is gone (or past its time): expired.
    if outcome.conflict == CreateConflict.RECORDS_EXPIRED or (
        outcome.conflict == CreateConflict.CHANGELIST_HEAD and request.review_version == latest
    ):
        return IntakeAnswer(
            IntakeOutcome.RECORDS_EXPIRED,
            message=(
                "this changelist version was reviewed and its records have passed the retention period; "
                "it is not reviewed or notified again (a new review needs a higher review_version with rerun=true)"
            ),
            details=details,
        )
    if latest is not None and request.review_version <= latest:
        return IntakeAnswer(
            IntakeOutcome.STALE_VERSION,
            message="a newer review_version of this changelist was already accepted",
            details=details,
        )
    return IntakeAnswer(
        IntakeOutcome.RERUN_NOT_REQUESTED,
        message="this changelist was already reviewed; a higher review_version needs rerun=true",
        details=details,
    )


def _repeated_key(request: CreateReviewRequest, existing: ReviewJob | None, now: str) -> IntakeAnswer:
    if existing is None:
        return IntakeAnswer(IntakeOutcome.STORAGE_INCONSISTENT, message="try again")
    if existing.request_fingerprint != fingerprint_of(request):
        differing = [
            name
            for name, ours, theirs in (
                ("changelist_id", request.changelist_id, existing.changelist_id),
                ("review_version", request.review_version, existing.review_version),
                ("kind", request.kind, existing.kind),
                ("rerun", request.rerun, existing.rerun),
                ("follows_shelf", request.shelf_ref(), existing.follows_shelf),
            )
            if ours != theirs
        ]
        return IntakeAnswer(
            IntakeOutcome.KEY_REUSED,
            message="idempotency_key was already used for a different request",
            details={"job_id": existing.job_id, "differing_fields": differing},
        )
    return IntakeAnswer(
        IntakeOutcome.REPLAYED, job=existing, replay=Replay.IDEMPOTENCY_KEY, enqueue_fetch=is_stranded(existing, now)
    )
