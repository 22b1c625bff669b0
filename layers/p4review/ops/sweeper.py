"""The sweeper (spec "Requeue of expired leases"): requeues stages whose lease expired and
re-sends hand-offs that were lost, and reports the backlog. Safe to run twice at once: the
requeue is a conditional write on the lease it observed, and a duplicate stage message is
acknowledged by the claim without work."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from aws_lambda_powertools.metrics import MetricUnit

from p4review.clock import parse_iso, utc_now
from p4review.metric_names import BacklogState, Dimension, MetricName
from p4review.models.job import STAGE_ORDER, StageName, StageState, StageStatus
from p4review.models.messages import StageMessage
from p4review.observability import metrics, publish_metric
from p4review.ports import StageQueues

# Longer than any scheduled redelivery (backoff <= 60 s, Retry-After <= 300 s, lease-held delay
# <= a lease): a pending stage untouched for this long has no message coming.
STRANDED_AFTER = timedelta(minutes=15)
SWEEPER_ACTOR = "sweeper"


class ActiveJobLike(Protocol):
    job_id: str
    stages: dict[StageName, StageState]
    created_at: str
    updated_at: str


class SweepStore(Protocol):
    def active_jobs(self) -> Iterable[ActiveJobLike]: ...

    def requeue_expired(self, job_id: str, stage: StageName, observed: StageState, actor: str) -> bool: ...

    def mark_handoff_resent(self, job_id: str, stage: StageName, observed_updated_at: str, actor: str) -> bool: ...


@dataclass
class SweepReport:
    """What one sweep saw and did. Ages are seconds since the job was accepted (`created_at`),
    not since its last write (`updated_at`): every claim, retry, requeue and re-sent hand-off
    rewrites `updated_at`, so a job looping through retries would look young for ever, while
    its age since `created_at` is what its author has waited. Each stage is present, 0 when idle."""

    active_jobs: int = 0
    expired_requeued: int = 0
    stranded_resent: int = 0
    running: dict[str, int] = field(default_factory=lambda: {stage.value: 0 for stage in STAGE_ORDER})
    pending: dict[str, int] = field(default_factory=lambda: {stage.value: 0 for stage in STAGE_ORDER})
    oldest_active_seconds: float = 0.0
    # The oldest active job per current stage (the first stage not completed).
    oldest_by_stage: dict[str, float] = field(default_factory=lambda: {stage.value: 0.0 for stage in STAGE_ORDER})


def current_stage(stages: dict[StageName, StageState]) -> StageName | None:
    """The first stage that has not completed (None when all have)."""
    return next((stage for stage in STAGE_ORDER if stages[stage].status != StageStatus.COMPLETED), None)


def sweep(store: SweepStore, queues: StageQueues, *, stranded_after: timedelta = STRANDED_AFTER) -> SweepReport:
    now = utc_now()
    report = SweepReport()
    for job in store.active_jobs():
        report.active_jobs += 1
        age = max(0.0, (now - parse_iso(job.created_at)).total_seconds())
        report.oldest_active_seconds = max(report.oldest_active_seconds, age)
        stage = current_stage(job.stages)
        if stage is None:
            continue
        report.oldest_by_stage[stage.value] = max(report.oldest_by_stage[stage.value], age)
        state = job.stages[stage]
        if state.status == StageStatus.RUNNING:
            report.running[stage.value] += 1
            if state.lease_expires_at and parse_iso(state.lease_expires_at) <= now:
                # Expired leases no longer count as capacity: free the stage and hand it out again.
                if store.requeue_expired(job.job_id, stage, state, SWEEPER_ACTOR):
                    queues.send(StageMessage(job_id=job.job_id, stage=stage))
                    report.expired_requeued += 1
        elif state.status == StageStatus.PENDING:
            report.pending[stage.value] += 1
            # Marked first: a crash before the send only delays the re-send by one period.
            if now - parse_iso(job.updated_at) >= stranded_after and store.mark_handoff_resent(
                job.job_id, stage, job.updated_at, SWEEPER_ACTOR
            ):
                queues.send(StageMessage(job_id=job.job_id, stage=stage))
                report.stranded_resent += 1
    return report


def publish_sweep_metrics(report: SweepReport) -> None:
    """The report as metrics (docs/runbook.md, "Dashboard"). Every stage gets a data point, 0
    when idle, so a dashboard line drops to 0 instead of ending."""
    metrics.add_metric(name=MetricName.ACTIVE_JOBS, unit=MetricUnit.Count, value=report.active_jobs)
    metrics.add_metric(
        name=MetricName.OLDEST_ACTIVE_JOB_AGE, unit=MetricUnit.Seconds, value=report.oldest_active_seconds
    )
    metrics.add_metric(
        name=MetricName.SWEEPER_EXPIRED_LEASES_REQUEUED, unit=MetricUnit.Count, value=report.expired_requeued
    )
    metrics.add_metric(
        name=MetricName.SWEEPER_STRANDED_HANDOFFS_RESENT, unit=MetricUnit.Count, value=report.stranded_resent
    )
    for state, counts in ((BacklogState.PENDING, report.pending), (BacklogState.RUNNING, report.running)):
        for stage, count in counts.items():
            publish_metric(MetricName.BACKLOG, count, {Dimension.STAGE: stage, Dimension.STATE: state})
    for stage, age in report.oldest_by_stage.items():
        publish_metric(MetricName.OLDEST_JOB_AGE, age, {Dimension.STAGE: stage}, unit=MetricUnit.Seconds)
