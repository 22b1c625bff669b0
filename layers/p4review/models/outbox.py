"""Outbox / delivery-log rows, one per (changelist_id, recipient, review_version)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"
    # An operator decided not to deliver (`p4review deliveries skip`): never sent, not required.
    SKIPPED = "skipped"


class DeliveryAction(StrEnum):
    RETRY = "retry"
    SKIP = "skip"
    # notify reopened a row marked sent without provider evidence that the provider does not have
    RECONCILE = "reconcile"


class DeliveryAuditEvent(BaseModel):
    """One operator decision on a delivery row (append-only, like the job's audit trail)."""

    model_config = ConfigDict(extra="forbid")

    at: str  # UTC ISO-8601 (p4review.clock)
    actor: str
    action: DeliveryAction
    ticket: str
    note: str
    from_status: DeliveryStatus
    to_status: DeliveryStatus


class OutboxRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    changelist_id: int
    recipient: str
    review_version: int
    job_id: str
    status: DeliveryStatus = DeliveryStatus.PENDING
    provider_token: str
    notification_id: str | None = None
    notified_at: str | None = None
    attempts: int = 0
    last_error: str | None = None
    # The send lock (reference mail-worker contract's locked_by/locked_at): set by record_attempt,
    # cleared by the write that records the attempt's outcome. While it is live no other worker
    # may start an attempt on this row, unless it holds a later claim of the notify stage
    # (`lock_fence`, the stage's claim count, is lower than its own): the holder's claim has
    # ended then. A crashed holder's lock also simply runs out.
    locked_by: str | None = None
    locked_until: str | None = None  # UTC ISO-8601
    lock_fence: int | None = None
    created_at: str
    updated_at: str
    # Rows written before the audit trail existed have no such attribute: they load as [].
    audit: list[DeliveryAuditEvent] = Field(default_factory=list)


class UnreadableRow(BaseModel):
    """A stored outbox item that is not a valid OutboxRow: its key and which fields are wrong
    (names only, never values), so an operator can find and fix it."""

    model_config = ConfigDict(frozen=True)

    pk: str
    sk: str
    fields: list[str]


class OutboxListing(BaseModel):
    """`deliveries list`: the readable rows (newest first) and the items that were not."""

    rows: list[OutboxRow]
    unreadable: list[UnreadableRow] = Field(default_factory=list)


class SendOutcome(StrEnum):
    SENT = "sent"
    RETRYABLE = "retryable"
    FAILED = "failed"


class SendResult(BaseModel):
    """Structured provider answer: never an exception for an expected failure."""

    model_config = ConfigDict(extra="forbid")

    outcome: SendOutcome
    notification_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    retry_after: float | None = None


class LookupOutcome(StrEnum):
    FOUND = "found"  # the provider holds the delivery: backfill, never resend
    NOT_FOUND = "not_found"  # the provider has no record: the earlier attempt never arrived
    UNSUPPORTED = "unsupported"  # the provider cannot look deliveries up (plain SMTP relays)
    UNAVAILABLE = "unavailable"  # the lookup itself failed: retry later, decide nothing now


class LookupResult(BaseModel):
    """Answer to "did an earlier attempt with this deterministic id reach the provider?"."""

    model_config = ConfigDict(extra="forbid")

    outcome: LookupOutcome
    notification_id: str | None = None
    error_code: str | None = None
