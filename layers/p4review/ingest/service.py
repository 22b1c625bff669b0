"""Ingest use cases on top of the data-access ports: create a review job, read one."""

from __future__ import annotations

from p4review.clock import now_iso
from p4review.errors import NotFoundError
from p4review.ingest import swarm_intake
from p4review.ingest.intake import IntakeAnswer, decide, new_job
from p4review.models.api import CreateReviewRequest, DeliveryView, JobView
from p4review.models.job import StageName, SwarmTestRef
from p4review.models.messages import StageMessage
from p4review.models.swarm_test import SwarmTestCall
from p4review.ports import JobRepository, OutboxRepository, StageQueues

INGEST_ACTOR = "ingest"


def create_review(
    request: CreateReviewRequest,
    *,
    jobs: JobRepository,
    queues: StageQueues,
    request_id: str | None,
    swarm_test: SwarmTestRef | None = None,
) -> IntakeAnswer:
    """`swarm_test`: set by the Swarm workflow test route; stored on a new job (never on a message)."""
    now = now_iso()
    outcome = jobs.create_job(new_job(request, now, INGEST_ACTOR, swarm_test))
    answer = decide(request, outcome, now)
    if answer.enqueue_fetch and answer.job is not None:
        # After the job write: a crash here leaves a queued job that a replayed request
        # (or the sweeper) re-enqueues; the fetch stage's claim makes duplicates harmless.
        queues.send(StageMessage(job_id=answer.job.job_id, stage=StageName.FETCH, request_id=request_id))
    return answer


def create_swarm_test_review(
    call: SwarmTestCall, *, jobs: JobRepository, queues: StageQueues, request_id: str | None
) -> tuple[CreateReviewRequest, IntakeAnswer]:
    """A Swarm workflow test call (already authenticated, callback URLs checked) through the same
    creation path as the trigger's requests: the same idempotency and version rules."""
    request = swarm_intake.review_request_for(call)
    ref = swarm_intake.swarm_ref_for(call)
    answer = create_review(request, jobs=jobs, queues=queues, request_id=request_id, swarm_test=ref)
    return request, swarm_intake.answer_for_swarm(answer, ref)


def describe_review(job_id: str, *, jobs: JobRepository, outbox: OutboxRepository) -> JobView:
    job = jobs.get_job(job_id)
    if job is None:
        raise NotFoundError(f"job {job_id} not found")
    rows = outbox.rows_for_version(job.changelist_id, job.review_version)
    deliveries = [
        DeliveryView(
            recipient=row.recipient, status=row.status.value, notified_at=row.notified_at, attempts=row.attempts
        )
        for row in rows
        if row.job_id == job.job_id
    ]
    return JobView.from_job(job, deliveries=deliveries, with_audit=True)
