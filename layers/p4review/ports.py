"""Data-access interfaces. Logic depends on these; only dal/*_dynamo|sqs|s3|secrets talk to AWS."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from p4review.models.job import AuditEvent, JobStatus, ReviewJob, StageName, StageStatus
from p4review.models.messages import StageMessage

if TYPE_CHECKING:  # in annotations only: the functions that never touch the outbox do not build its models
    from p4review.models.outbox import DeliveryStatus, OutboxListing, OutboxRow


class CreateConflict(StrEnum):
    """Which uniqueness rule refused a job creation (first failing rule wins)."""

    IDEMPOTENCY_KEY = "idempotency_key"
    CHANGELIST_VERSION = "changelist_version"
    CHANGELIST_HEAD = "changelist_head"
    # The idempotency key's job or the version's claim exists only past its retention (SEC-23).
    RECORDS_EXPIRED = "records_expired"


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

    def defer_stage(self, job_id: str, stage: StageName, worker_id: str, *, reason: str) -> ReviewJob:
        """The owner gives the stage back (pending) without counting its attempt: the work stopped
        before its next side effect to wait for shared capacity (the LLM's token budget), which is
        not a failure. Raises StaleWriteError when `worker_id` no longer owns the stage."""
        ...


@dataclass(frozen=True)
class DeliveryStart:
    """OutboxRepository.start_delivery's answer: the row as stored, and whether this call counted
    an attempt and took the row's send lock (only then may the provider be called)."""

    row: OutboxRow
    attempted: bool


class OutboxRepository(Protocol):
    def ensure_row(self, row: OutboxRow) -> OutboxRow: ...

    def start_delivery(self, intent: OutboxRow, *, owner: str, fence: int, locked_until: str) -> DeliveryStart:
        """ensure_row + record_attempt in one write for a row no attempt has touched; any other row
        is answered as stored (attempted False), or DeliveryInFlight while another claim holds it."""
        ...

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
    def send(self, message: StageMessage, *, delay_seconds: int = 0) -> None: ...

    def send_dead_letter(self, stage: StageName, envelope: dict[str, Any]) -> None: ...

    def delay(self, stage: StageName, receipt_handle: str, seconds: float) -> None: ...


@dataclass(frozen=True)
class TokenGrant:
    """A reservation's answer: granted, the tokens are there in `wait_seconds` (0: now); refused
    (they would not be there within the caller's maximum wait), nothing was reserved and
    `wait_seconds` is how much longer the caller would have to be prepared to wait."""

    granted: bool
    wait_seconds: float


class TokenBudget(Protocol):
    """The LLM provider's tokens-per-minute limit, shared by every review worker
    (p4review.review.token_budget; docs/capacity.md)."""

    def reserve(self, tokens: int, max_wait_seconds: float) -> TokenGrant: ...

    def settle(self, reserved: int, used: int) -> None:
        """A granted request used `used` tokens of the `reserved`: charge or give back the difference."""
        ...

    def hold_off(self, seconds: float) -> None:
        """The provider refused a request and said when to come back: nobody starts one before then."""
        ...


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
