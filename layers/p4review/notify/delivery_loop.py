"""The exactly-once delivery loop notify's channels share: one outbox row per delivery, keyed
(changelist_id, recipient, review_version), sent once (spec "Send-and-mark exact sequence";
docs/notify.md "Send, then mark"). Email rows (notify/stage.py: EmailDelivery) and Swarm
comment rows (notify/swarm/channel.py: CommentDelivery) go through it; the channel is a plug-in
(`DeliveryChannel`): its provider calls, and a `ChannelProfile` of what it logs, counts and
raises.

For one row, in this order:

0. **Start** (`begin`): the intent and its first attempt, with the row's send lock, in one
   conditional write (outbox_rows.start_attempt). Created: straight to the send (3).
1. **A row an earlier run left**, answered as stored (that is the retry's re-read): marked sent
   without evidence -> reconcile by lookup first; sent or skipped -> done; failed -> an
   operator's, raised.
2. **An earlier attempt** (counted, not marked) may have reached the provider: look it up.
   Found -> mark it sent with the provider's id, send nothing. Not found -> send.
3. **Count the attempt and take the send lock** (outbox_rows.lock_attempt), **send**, then
   **mark sent** (fault point `db_write_after_provider` between the two). A refusal the provider
   answered is recorded on the row (noted, or failed) and raised; a channel whose provider raises
   instead leaves the row to its caller.

`lease.check()` guards every step that starts something (the row, an attempt, the send). The
writes that only record what a send already did (mark_sent, note_error, mark_failed) are
deliberately not gated: skipping mark_sent after a lease loss would make the new owner send the
same thing again.

The Swarm notification row and a Swarm test's verdict row do not come here: Swarm can say
neither whether a notification went out nor which status a test run last got, so there is
nothing to look up, and a failed one is sent again on the next attempt rather than left for an
operator (notify/swarm/channel.py: _notify_once, notify/stage.py: _swarm_test_verdict)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Generic, NoReturn, Protocol, TypeVar

from p4review.errors import AuthError, DeliveryInFlight, ErrorClass, NonRetryableError, RetryableError
from p4review.faults import FaultPoint, fault
from p4review.metric_names import MetricName
from p4review.models.job import ReviewJob
from p4review.models.outbox import DeliveryStatus, LookupOutcome, LookupResult, OutboxRow, SendOutcome, SendResult
from p4review.notify.outbox_rows import delivery_intent, lock_attempt, start_attempt
from p4review.observability import logger, metrics
from p4review.pipeline.heartbeat import Lease
from p4review.ports import DeliveryStart, OutboxRepository

P = TypeVar("P")


@dataclass(frozen=True)
class ChannelProfile:
    """What differs between channels besides their provider calls: the log events the loop
    writes, the metrics it counts and the message of a failed row's error. None: the channel
    logs or counts nothing there."""

    sent_metric: MetricName
    failed_row: str  # NonRetryableError (POLICY_DENIED) for a row an operator must look at
    evidence_recorded: str  # warning: a row marked sent without evidence that the provider has
    reopened: str  # error: one the provider has no record of, reopened to be sent once
    earlier_found: str  # info: an earlier attempt found by the lookup, marked without sending
    already_delivered: str | None = None  # info: the row is sent
    skipped: str | None = None  # info: an operator skipped the row
    unevidenced_metric: MetricName | None = None  # counted for every row marked sent without evidence
    backfilled_metric: MetricName | None = None  # counted for every earlier attempt found
    # An earlier attempt is `attempts > 0`; True: also a notification_id without notified_at
    # (a state only a manual edit makes; the spec's "send may have happened").
    evidence_means_attempt: bool = True


class DeliveryChannel(Protocol[P]):
    """One channel's provider side. `P` is what `prepare` makes and `send` sends."""

    profile: ChannelProfile

    @property
    def provider(self) -> str:
        """The provider's name in the errors a refusal raises ("smtp", "ses")."""
        ...

    def prepare(self, row: OutboxRow) -> P:
        """What `row`'s send carries; made before the attempt is counted, again for each attempt."""
        ...

    def send(self, row: OutboxRow, payload: P, commit_by: datetime) -> SendResult:
        """One provider call, which must not hand the delivery over after `commit_by`. SENT, or
        the provider's refusal as a result (the loop records it and raises); a channel may raise
        instead (its caller records the failure)."""
        ...

    def send_again(self, result: SendResult) -> bool:
        """After a send: True to make one more attempt (counted and locked anew) in this run."""
        ...

    def identity(self, row: OutboxRow) -> str:
        """What the provider knows `row`'s delivery by (a Message-ID, a comment's marker): what
        `lookup` asks about, and the evidence recorded when the provider's answer names none."""
        ...

    def lookup(self, identity: str) -> LookupResult:
        """Whether the provider holds the delivery; a channel may raise when it cannot ask."""
        ...

    def in_flight(self, row: OutboxRow, busy: DeliveryInFlight) -> NoReturn:
        """Another worker holds `row`'s send lock: raise (a retryable CONFLICT)."""
        ...


@dataclass(frozen=True)
class Begun(Generic[P]):
    """`begin`'s answer: the row as the start write left it, and the first attempt's payload and
    commit deadline (used only when `start.attempted`)."""

    start: DeliveryStart
    payload: P
    commit_by: datetime


def deliver(outbox: OutboxRepository, job: ReviewJob, key: str, lease: Lease, channel: DeliveryChannel[P]) -> OutboxRow:
    """Deliver `key`'s row once; the row as this run left it (sent, or skipped by an operator).
    Anything else raises."""
    return finish(outbox, job, begin(outbox, job, key, lease, channel), lease, channel)


def begin(outbox: OutboxRepository, job: ReviewJob, key: str, lease: Lease, channel: DeliveryChannel[P]) -> Begun[P]:
    """Step 0: the row's intent and first attempt in one write, or the stored row."""
    lease.check()
    intent = delivery_intent(job, key)
    payload = channel.prepare(intent)
    start, commit_by = start_attempt(outbox, job, intent, lease, channel.in_flight)
    return Begun(start, payload, commit_by)


def finish(
    outbox: OutboxRepository, job: ReviewJob, begun: Begun[P], lease: Lease, channel: DeliveryChannel[P]
) -> OutboxRow:
    """Steps 1-3 after `begin`."""
    row = begun.start.row
    if begun.start.attempted:
        row, result = _attempts(outbox, job, row, lease, channel, first=(begun.payload, begun.commit_by))
        return _settle(outbox, row, result, channel.identity(row), channel)
    identity = channel.identity(row)
    profile = channel.profile
    log = {"job_id": job.job_id, "token": row.provider_token}
    if row.notified_at and not row.notification_id:
        # Marked sent without provider evidence: reconcile before anything else is sent.
        row = _reconcile_unevidenced(outbox, row, identity, channel, log)
    if row.notified_at:
        if profile.already_delivered:
            logger.info(profile.already_delivered, extra=log)
        return row
    if row.status == DeliveryStatus.SKIPPED:
        if profile.skipped:
            logger.info(profile.skipped, extra=log)
        return row
    if row.status == DeliveryStatus.FAILED:
        raise NonRetryableError(profile.failed_row, error_class=ErrorClass.POLICY_DENIED)
    if row.attempts > 0 or (profile.evidence_means_attempt and row.notification_id):
        # An earlier attempt may have reached the provider: look before sending again.
        delivered = _reconcile_earlier_attempt(outbox, row, identity, channel, log)
        if delivered is not None:
            return delivered
    row, result = _attempts(outbox, job, row, lease, channel, first=None)
    return _settle(outbox, row, result, identity, channel)


def _attempts(
    outbox: OutboxRepository,
    job: ReviewJob,
    row: OutboxRow,
    lease: Lease,
    channel: DeliveryChannel[P],
    *,
    first: tuple[P, datetime] | None,
) -> tuple[OutboxRow, SendResult]:
    """One provider call, counted on the row first (`first`: counted already, by the start
    write); once more when the channel asks for it (`send_again`)."""
    for tries in range(2):
        if tries or first is None:
            payload = channel.prepare(row)
            row, commit_by = lock_attempt(outbox, job, row, lease, channel.in_flight)
        else:
            payload, commit_by = first
        result = channel.send(row, payload, commit_by)
        if not channel.send_again(result):
            break
    return row, result


def _settle(
    outbox: OutboxRepository, row: OutboxRow, result: SendResult, identity: str, channel: DeliveryChannel[P]
) -> OutboxRow:
    """Mark a sent row; record a refusal on the row and raise it: refused credentials (AUTH) and
    a transient failure are noted (the row stays pending), anything else fails the row."""
    if result.outcome == SendOutcome.SENT:
        fault(FaultPoint.DB_WRITE_AFTER_PROVIDER)  # local/test only: sent, but the mark fails
        row = outbox.mark_sent(row, result.notification_id or identity)
        metrics.add_metric(name=channel.profile.sent_metric, unit="Count", value=1)
        return row
    error = f"{result.error_code}: {result.error_message or ''}"
    if result.error_code == "auth_failed":
        outbox.note_error(row, error)
        raise AuthError(f"{channel.provider} refused our credentials")
    provider = channel.provider
    if result.outcome == SendOutcome.RETRYABLE:
        outbox.note_error(row, error)
        raise RetryableError(f"{provider} delivery deferred ({result.error_code})", retry_after=result.retry_after)
    outbox.mark_failed(row, error)
    raise NonRetryableError(f"{provider} delivery refused ({result.error_code})", error_class=ErrorClass.POLICY_DENIED)


def _reconcile_unevidenced(
    outbox: OutboxRepository, row: OutboxRow, identity: str, channel: DeliveryChannel[P], log: dict[str, str]
) -> OutboxRow:
    """The ordering contract (send, then mark) makes a row marked sent without a notification_id
    impossible unless something went wrong (a bug, a manual edit). Ask the provider: found ->
    record the evidence; not found -> reopen the row (markers cleared, audited) so it is sent
    once; no answer possible (plain SMTP) -> keep it as sent rather than risk a duplicate. The
    profile's `unevidenced_metric` (SentWithoutEvidence, which alarms) counts every case."""
    profile = channel.profile
    if profile.unevidenced_metric:
        metrics.add_metric(name=profile.unevidenced_metric, unit="Count", value=1)
    found = channel.lookup(identity)
    if found.outcome == LookupOutcome.FOUND:
        logger.warning(profile.evidence_recorded, extra=log)
        return outbox.backfill_evidence(row, found.notification_id or identity)
    if found.outcome == LookupOutcome.UNAVAILABLE:
        raise RetryableError(f"cannot reconcile a delivery marked sent without evidence ({found.error_code})")
    if found.outcome == LookupOutcome.NOT_FOUND:
        logger.error(profile.reopened, extra=log)
        return outbox.reopen_unconfirmed(row, actor="notify")
    logger.error("row marked sent without evidence; the provider cannot confirm it: left as sent", extra=log)
    return row


def _reconcile_earlier_attempt(
    outbox: OutboxRepository, row: OutboxRow, identity: str, channel: DeliveryChannel[P], log: dict[str, str]
) -> OutboxRow | None:
    """The row, marked, when the earlier attempt is known to have arrived (nothing is sent). None
    means: send. Policy where the provider cannot say (plain SMTP, SES): resend with the same
    deterministic Message-ID, which receiving systems use to collapse the rare duplicate sent
    through an SMTP relay (SES replaces the Message-ID, so there a duplicate is a second email);
    counted by the UnconfirmedDeliveryRetried metric (docs/notify.md measures how rare)."""
    profile = channel.profile
    found = channel.lookup(identity)
    if found.outcome == LookupOutcome.FOUND:
        row = outbox.mark_sent(row, found.notification_id or identity)
        logger.info(profile.earlier_found, extra=log)
        if profile.backfilled_metric:
            metrics.add_metric(name=profile.backfilled_metric, unit="Count", value=1)
        return row
    if found.outcome == LookupOutcome.UNAVAILABLE:
        raise RetryableError(f"cannot confirm an earlier delivery attempt ({found.error_code})")
    if found.outcome == LookupOutcome.UNSUPPORTED:
        logger.warning("retrying a delivery whose earlier attempt is unconfirmed", extra=log)
        metrics.add_metric(name=MetricName.UNCONFIRMED_DELIVERY_RETRIED, unit="Count", value=1)
    return None
