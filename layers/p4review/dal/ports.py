"""Data-access interfaces. Logic depends on these; only dal/*_dynamo|sqs|s3|secrets talk to AWS."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, BinaryIO, Protocol

from p4review.models.job import AuditEvent, JobStatus, ReviewJob, StageName, StageStatus
from p4review.models.messages import StageMessage
from p4review.models.outbox import DeliveryStatus, OutboxListing, OutboxRow


class CreateConflict(StrEnum):
    """Which uniqueness rule refused a job creation (first failing rule wins)."""

    IDEMPOTENCY_KEY = "idempotency_key"
    CHANGELIST_VERSION = "changelist_version"
    CHANGELIST_HEAD = "changelist_head"


@dataclass(frozen=True)
class CreateOutcome:
    created: bool
    job: ReviewJob | None = None
    conflict: CreateConflict | None = None
    # What the losing write learned from the winner's record (ALL_OLD).
    existing_job: ReviewJob | None = None
    existing_job_id: str | None = None
    head_latest_version: int | None = None


class ClaimState(StrEnum):
    CLAIMED = "claimed"
    ALREADY_COMPLETED = "already_completed"
    LEASE_HELD = "lease_held"
    JOB_CLOSED = "job_closed"
    # The previous stage has not completed: it will enqueue this stage when it does.
    NOT_READY = "not_ready"
    MISSING = "missing"


@dataclass(frozen=True)
class ClaimOutcome:
    state: ClaimState
    job: ReviewJob | None = None


class JobRepository(Protocol):
    def create_job(self, job: ReviewJob) -> CreateOutcome: ...

    def get_job(self, job_id: str) -> ReviewJob | None: ...

    def job_id_for_version(self, changelist_id: int, review_version: int) -> str | None:
        """The job that holds (changelist_id, review_version)'s claim, if any."""
        ...

    def transition(self, job_id: str, target: JobStatus, event: AuditEvent) -> ReviewJob: ...

    def claim_stage(self, job_id: str, stage: StageName, worker_id: str, lease_seconds: int) -> ClaimOutcome: ...

    def renew_lease(self, job_id: str, stage: StageName, worker_id: str, lease_seconds: int) -> str:
        """Heartbeat: extend the owner's lease to now + lease_seconds and return the new
        `lease_expires_at`. Raises LeaseLostError when `worker_id` no longer owns the stage."""
        ...

    def complete_stage(
        self,
        job_id: str,
        stage: StageName,
        worker_id: str,
        *,
        updates: dict[str, Any],
        finish_job: JobStatus | None = None,
    ) -> ReviewJob: ...

    def release_stage(
        self,
        job_id: str,
        stage: StageName,
        worker_id: str,
        *,
        error_class: str,
        error: str,
        stage_status: StageStatus,
        job_status: JobStatus,
    ) -> ReviewJob: ...


class OutboxRepository(Protocol):
    def ensure_row(self, row: OutboxRow) -> OutboxRow: ...

    def get_row(self, changelist_id: int, recipient: str, review_version: int) -> OutboxRow | None: ...

    def record_attempt(self, row: OutboxRow, *, owner: str, fence: int, locked_until: str) -> OutboxRow: ...

    def mark_sent(self, row: OutboxRow, notification_id: str) -> OutboxRow: ...

    def mark_failed(self, row: OutboxRow, error: str) -> OutboxRow: ...

    def backfill_evidence(self, row: OutboxRow, notification_id: str) -> OutboxRow: ...

    def reopen_unconfirmed(self, row: OutboxRow, actor: str) -> OutboxRow: ...

    def note_error(self, row: OutboxRow, error: str) -> OutboxRow: ...

    def rows_for_version(self, changelist_id: int, review_version: int) -> list[OutboxRow]: ...

    # Operator tooling (`p4review deliveries`). A lost condition raises StaleWriteError.
    def list_rows(self, status: DeliveryStatus | None, limit: int) -> OutboxListing:
        """Newest `updated_at` first; an item that is not a valid row is named, not fatal."""
        ...

    def retry_row(self, row: OutboxRow, actor: str, ticket: str, note: str) -> OutboxRow:
        """failed -> pending (attempts 0, last_error cleared, audit appended); never a delivered row."""
        ...

    def skip_row(self, row: OutboxRow, actor: str, ticket: str, note: str) -> OutboxRow:
        """failed|pending -> skipped (audit appended); never a sent row."""
        ...


class StageQueues(Protocol):
    def send(self, message: StageMessage) -> None: ...

    def send_dead_letter(self, stage: StageName, envelope: dict[str, Any]) -> None: ...

    def delay(self, stage: StageName, receipt_handle: str, seconds: float) -> None: ...


class ArtifactStore(Protocol):
    def put_json(self, key: str, document: dict[str, Any]) -> None: ...

    def json_writer(self, key: str) -> AbstractContextManager[BinaryIO]: ...

    def get_json(self, key: str) -> dict[str, Any]: ...


class SecretReader(Protocol):
    def get_json(self, secret_id: str) -> dict[str, Any]: ...

    def invalidate(self, secret_id: str) -> None: ...

    def get_versions(self, secret_id: str) -> list[str]:
        """AWSCURRENT first, then AWSPREVIOUS when it exists (rotation overlap)."""
        ...
