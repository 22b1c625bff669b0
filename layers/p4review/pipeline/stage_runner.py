"""Run one stage for one job under a DynamoDB lease (spec "WorkQueue processing flow").

claim -> side effect (idempotent) -> complete (owner predicate) -> enqueue next -> ack.
A crash between any two steps is recovered by redelivery: a completed stage re-sends its
hand-off when the next stage has not started, so no job is stranded.

While the work runs, a heartbeat renews the lease (and the SQS message's visibility). The work
gets the `Lease` and calls `lease.check()` before each side effect; once the lease is lost the
worker stops, neither releases nor dead-letters the stage (it belongs to its new owner), and
leaves the message to SQS."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from p4review.errors import AwaitingCapacity, ErrorClass, LeaseLostError, P4ReviewError, StaleWriteError
from p4review.faults import FaultPoint, fault
from p4review.metric_names import Dimension, MetricName
from p4review.models.job import JobStatus, ReviewJob, StageName, StageStatus, next_stage
from p4review.models.messages import StageMessage
from p4review.observability import logger, metrics, publish_metric
from p4review.pipeline import dead_letter
from p4review.pipeline.backoff import RETRY_AFTER_CEILING, backoff_delay
from p4review.pipeline.heartbeat import Heartbeat, Lease
from p4review.ports import ClaimState, JobRepository, StageQueues
from p4review.resources import QUEUE_FOR_STAGE

MAX_ATTEMPTS_PER_STAGE = 5
# The default lease outlives the longest possible run (function timeout + margin). The heartbeat
# (pipeline/heartbeat.py) makes this unnecessary for safety; it is kept so that slow or transiently
# failing heartbeats can never cost a healthy worker its lease within one function run.
LEASE_MARGIN_SECONDS = 30


def lease_for(stage: StageName, configured: int | None = None) -> int:
    return configured or QUEUE_FOR_STAGE[stage].function_timeout_seconds + LEASE_MARGIN_SECONDS


@dataclass(frozen=True)
class StageOutput:
    """What a stage's work hands back: job attributes to set, and whether the job is done."""

    updates: dict[str, Any] = field(default_factory=dict)
    finish_job: JobStatus | None = None


class StageWork(Protocol):
    stage: StageName

    def run(self, job: ReviewJob, lease: Lease) -> StageOutput:
        """Do the stage's side effects, calling `lease.check()` immediately before each one."""
        ...


@dataclass(frozen=True)
class Disposition:
    """ack: delete the message. Otherwise retry after `delay_seconds` (None = queue default)."""

    ack: bool
    delay_seconds: float | None = None
    reason: str = ""


ACK = Disposition(ack=True)


def run_stage(
    message: StageMessage,
    work: StageWork,
    *,
    jobs: JobRepository,
    queues: StageQueues,
    worker_id: str,
    lease_seconds: int,
    message_id: str | None = None,
    receipt_handle: str | None = None,
) -> Disposition:
    """`receipt_handle`: the SQS message being processed; the heartbeat keeps it invisible
    while the lease lives."""
    stage = work.stage
    log = {"job_id": message.job_id, "stage": stage.value, "worker_id": worker_id}
    claim = jobs.claim_stage(message.job_id, stage, worker_id, lease_seconds)
    if claim.state == ClaimState.MISSING:
        logger.warning("message for an unknown job", extra=log)
        queues.send_dead_letter(
            stage,
            dead_letter.envelope(
                job=None,
                job_id=message.job_id,
                stage=stage,
                error_class=ErrorClass.NOT_FOUND,
                exc=None,
                request_id=message.request_id,
                message_id=message_id,
            ),
        )
        return ACK
    if claim.state == ClaimState.ALREADY_COMPLETED:
        _ensure_handoff(claim.job, stage, queues, message.request_id)
        return Disposition(ack=True, reason="duplicate delivery of a completed stage")
    if claim.state in (ClaimState.JOB_CLOSED, ClaimState.NOT_READY):
        logger.info("nothing to do", extra={**log, "claim": claim.state.value})
        return Disposition(ack=True, reason=claim.state.value)
    if claim.state == ClaimState.LEASE_HELD:
        # Another worker is on it: come back later without spending this stage's budget.
        return Disposition(ack=False, delay_seconds=float(lease_seconds), reason="lease held by another worker")

    job = claim.job
    fault(FaultPoint.AFTER_CLAIM)
    if job.stages[stage].attempts > MAX_ATTEMPTS_PER_STAGE:
        # Earlier claims never reported back (crash, function timeout): the budget is spent.
        exhausted = P4ReviewError(
            f"{stage.value} was started {MAX_ATTEMPTS_PER_STAGE} times without finishing",
            error_class=ErrorClass.ATTEMPTS_EXHAUSTED,
        )
        return _fail(job, stage, exhausted, ErrorClass.ATTEMPTS_EXHAUSTED, jobs, queues, worker_id, message, message_id)
    lease = Lease(job.stages[stage].lease_expires_at or "1970-01-01T00:00:00.000000Z")
    heartbeat = Heartbeat(
        lease,
        jobs=jobs,
        queues=queues,
        job_id=job.job_id,
        stage=stage,
        worker_id=worker_id,
        lease_seconds=lease_seconds,
        receipt_handle=receipt_handle,
    )
    try:
        with heartbeat:
            output = work.run(job, lease)
    except LeaseLostError:
        return _lease_lost(log, "lease lost during the stage's work")
    except Exception as exc:  # noqa: BLE001 - classified below
        if lease.lost:
            # The failure may well be a consequence of the takeover; either way it is not ours
            # to report: releasing or dead-lettering would overwrite the new owner's stage.
            return _lease_lost(log, "stage failed after its lease was lost")
        if isinstance(exc, AwaitingCapacity):
            return _defer(job, stage, exc, jobs, queues, worker_id, message)
        if isinstance(exc, P4ReviewError):
            return _fail(job, stage, exc, exc.error_class, jobs, queues, worker_id, message, message_id)
        # A bug: dead-letter it rather than retry forever.
        return _fail(job, stage, exc, ErrorClass.INTERNAL_BUG, jobs, queues, worker_id, message, message_id)

    if lease.lost:
        # Known lost (a heartbeat was refused). Only the known loss is checked here, not the skew
        # margin: the completion is itself fenced by the owner predicate in DynamoDB.
        return _lease_lost(log, "lease lost before completion")
    fault(FaultPoint.AFTER_SIDE_EFFECT)
    try:
        finished = jobs.complete_stage(
            job.job_id, stage, worker_id, updates=output.updates, finish_job=output.finish_job
        )
    except StaleWriteError:
        return _lease_lost(log, "lease lost before completion")
    publish_metric(MetricName.STAGE_COMPLETED, 1, {Dimension.STAGE: stage.value})
    fault(FaultPoint.BEFORE_HANDOFF)
    _ensure_handoff(finished, stage, queues, message.request_id)
    return ACK


def _lease_lost(log: dict[str, str], what: str) -> Disposition:
    """The stage belongs to another worker now: touch nothing, let SQS redeliver the message
    (a redelivery meets either the new owner's live lease or its completed stage)."""
    logger.warning(f"{what}; leaving the job to its new owner", extra=log)
    metrics.add_metric(name=MetricName.LEASE_LOST, unit="Count", value=1)
    return Disposition(ack=False, reason="lease lost")


def _defer(
    job: ReviewJob,
    stage: StageName,
    exc: AwaitingCapacity,
    jobs: JobRepository,
    queues: StageQueues,
    worker_id: str,
    message: StageMessage,
) -> Disposition:
    """The work waited for shared capacity and its invocation ran out of time for it: no failure,
    so the stage goes back to pending without counting this attempt, and a fresh message, held back
    until the capacity should be there, replaces this one (docs/capacity.md): putting this one
    back would use up one of the queue's receives per wait, and a long burst would dead-letter a
    job that never failed. Work already done (stored chunk answers) is kept."""
    log = {"job_id": job.job_id, "stage": stage.value, "retry_after": exc.retry_after}
    try:
        jobs.defer_stage(job.job_id, stage, worker_id, reason=exc.message)
    except StaleWriteError:
        return Disposition(ack=False, reason="lease lost")
    logger.info("stage deferred until capacity frees up; the attempt is not counted", extra=log)
    delay = min(max(exc.retry_after or 0.0, 1.0), RETRY_AFTER_CEILING)
    try:
        resend = StageMessage(job_id=job.job_id, stage=stage, request_id=message.request_id)
        queues.send(resend, delay_seconds=round(delay))
    except P4ReviewError:
        # The stage is pending already: this message, put back, carries the job on instead.
        return Disposition(ack=False, delay_seconds=delay, reason="awaiting capacity")
    return Disposition(ack=True, reason="awaiting capacity: re-sent with a delay")


def _ensure_handoff(job: ReviewJob | None, stage: StageName, queues: StageQueues, request_id: str | None) -> None:
    following = next_stage(stage)
    if job is None or following is None:
        return
    if job.stages[following].status == StageStatus.PENDING:
        queues.send(StageMessage(job_id=job.job_id, stage=following, request_id=request_id))


def _fail(
    job: ReviewJob,
    stage: StageName,
    exc: BaseException,
    error_class: ErrorClass,
    jobs: JobRepository,
    queues: StageQueues,
    worker_id: str,
    message: StageMessage,
    message_id: str | None,
) -> Disposition:
    attempts = job.stages[stage].attempts
    retryable = isinstance(exc, P4ReviewError) and exc.retryable
    summary = getattr(exc, "message", type(exc).__name__)
    log = {"job_id": job.job_id, "stage": stage.value, "error_class": error_class.value, "attempts": attempts}

    def release(stage_status: StageStatus, job_status: JobStatus) -> bool:
        """The lease given up with the failure recorded; False when the lease was already lost."""
        try:
            jobs.release_stage(
                job.job_id,
                stage,
                worker_id,
                error_class=error_class.value,
                error=summary,
                stage_status=stage_status,
                job_status=job_status,
            )
        except StaleWriteError:
            return False
        return True

    if retryable and attempts < MAX_ATTEMPTS_PER_STAGE:
        logger.warning("stage failed; will retry", extra=log)
        if not release(StageStatus.PENDING, JobStatus.RETRYABLE_FAILED):
            return Disposition(ack=False, reason="lease lost")
        return Disposition(
            ack=False,
            delay_seconds=backoff_delay(attempts, getattr(exc, "retry_after", None)),
            reason=error_class.value,
        )
    # A replay that fails again the same non-retryable way needs engineering, not another replay.
    escalated = job.replays > 0 and job.stages[stage].last_dead_letter_class == error_class.value
    logger.error("stage dead-lettered", extra={**log, "escalated": escalated})
    publish_metric(MetricName.DEAD_LETTERED, 1, {Dimension.STAGE: stage.value})
    if escalated:
        metrics.add_metric(name=MetricName.DEAD_LETTER_ESCALATED, unit="Count", value=1)
    # Envelope first: a crash after it leaves a duplicate envelope at worst, never a silent loss.
    queues.send_dead_letter(
        stage,
        dead_letter.envelope(
            job=job,
            job_id=job.job_id,
            stage=stage,
            error_class=error_class,
            exc=exc,
            request_id=message.request_id,
            message_id=message_id,
            first_failure_at=job.stages[stage].first_failure_at,
            escalated=escalated,
        ),
    )
    if not release(StageStatus.FAILED, JobStatus.DEAD_LETTERED):
        return Disposition(ack=False, reason="lease lost")
    return ACK
