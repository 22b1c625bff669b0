"""The outbox row steps every notify channel shares (email, Swarm comments, a Swarm test's
verdict): the delivery intent and its first attempt in one conditional write, the attempt counted
with the row's send lock taken before the provider is called (send, then mark), and the same for
a row an earlier run left. The exactly-once loop over these steps: notify/delivery_loop.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import NoReturn

from p4review.clock import now_iso, to_iso
from p4review.errors import DeliveryInFlight, ErrorClass, RetryableError
from p4review.models.job import ReviewJob, StageName
from p4review.models.outbox import OutboxRow
from p4review.notify.delivery import delivery_token
from p4review.pipeline.heartbeat import Lease
from p4review.ports import DeliveryStart, OutboxRepository


def lock_holder(job: ReviewJob) -> tuple[str, int]:
    """Who takes a row's send lock: the worker that claimed the notify stage, and that claim's
    number (the stage's claim count, which every new claim raises)."""
    stage = job.stages[StageName.NOTIFY]
    return stage.claimed_by or "notify", stage.attempts


def delivery_intent(job: ReviewJob, recipient: str) -> OutboxRow:
    """The row `recipient`'s delivery starts from (not stored yet)."""
    now = now_iso()
    return OutboxRow(
        changelist_id=job.changelist_id,
        recipient=recipient,
        review_version=job.review_version,
        job_id=job.job_id,
        provider_token=delivery_token(job.changelist_id, recipient, job.review_version),
        created_at=now,
        updated_at=now,
    )


def ensure_delivery_row(outbox: OutboxRepository, job: ReviewJob, recipient: str, lease: Lease) -> OutboxRow:
    """The delivery intent for `recipient`: created once, or the persisted row as it is (for a row
    that is written without an attempt, e.g. a rejected recipient's failed row)."""
    lease.check()
    return outbox.ensure_row(delivery_intent(job, recipient))


# What a channel does when another worker holds the row's send lock: raise (a retryable CONFLICT).
InFlight = Callable[[OutboxRow, DeliveryInFlight], NoReturn]


def conflict(what: str) -> InFlight:
    """The plain answer to a live lock of another worker: a retryable CONFLICT naming `what`."""

    def raise_conflict(row: OutboxRow, busy: DeliveryInFlight) -> NoReturn:
        raise RetryableError(f"another worker is sending {what}", error_class=ErrorClass.CONFLICT) from busy

    return raise_conflict


def start_attempt(
    outbox: OutboxRepository, job: ReviewJob, intent: OutboxRow, lease: Lease, in_flight: InFlight
) -> tuple[DeliveryStart, datetime]:
    """The intent and its first attempt, locked until the lease's end, in one write; and the
    moment until which the provider may hand the delivery over (the lease's acting end, skew
    budget included: no send outlives this worker's right to make it). `attempted` False: the
    row was there already, answered as stored, for the channel to inspect (and then
    `lock_attempt`). A live lock of another worker goes to `in_flight`, which raises."""
    lease.check()
    locked_until, commit_by = lease.expires_at, lease.acts_until()
    owner, fence = lock_holder(job)
    try:
        start = outbox.start_delivery(intent, owner=owner, fence=fence, locked_until=to_iso(locked_until))
    except DeliveryInFlight as busy:
        in_flight(intent, busy)
    if start.attempted:
        lease.check()
    return start, commit_by


def lock_attempt(
    outbox: OutboxRepository, job: ReviewJob, row: OutboxRow, lease: Lease, in_flight: InFlight
) -> tuple[OutboxRow, datetime]:
    """Count the attempt and lock the row until the lease's end, before the provider is called;
    and the moment the provider must hand the delivery over by. A live lock of another worker
    goes to `in_flight`, which raises."""
    lease.check()
    locked_until, commit_by = lease.expires_at, lease.acts_until()
    owner, fence = lock_holder(job)
    try:
        row = outbox.record_attempt(row, owner=owner, fence=fence, locked_until=to_iso(locked_until))
    except DeliveryInFlight as busy:
        in_flight(row, busy)
    lease.check()
    return row, commit_by


def start_delivery(outbox: OutboxRepository, job: ReviewJob, recipient: str, lease: Lease, what: str) -> DeliveryStart:
    """`start_attempt` for `recipient`'s row; another worker's live lock is a retryable CONFLICT
    (`what` names the delivery)."""
    return start_attempt(outbox, job, delivery_intent(job, recipient), lease, conflict(what))[0]


def take_send_lock(outbox: OutboxRepository, job: ReviewJob, row: OutboxRow, lease: Lease, what: str) -> OutboxRow:
    """`lock_attempt`; another worker's live lock is a retryable CONFLICT (`what` names the
    delivery)."""
    return lock_attempt(outbox, job, row, lease, conflict(what))[0]
