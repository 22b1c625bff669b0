"""The sweeper (spec "Requeue of expired leases"): requeues stages whose lease expired and
re-sends hand-offs that were lost, and reports the backlog. Safe to run twice at once: the
requeue is a conditional write on the lease it observed, and a duplicate stage message is
acknowledged by the claim without work."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from p4review.clock import parse_iso, utc_now
from p4review.dal.ports import StageQueues
from p4review.models.job import STAGE_ORDER, StageName, StageState, StageStatus
from p4review.models.messages import StageMessage

# Longer than any scheduled redelivery (backoff <= 60 s, Retry-After <= 300 s, lease-held delay
# <= a lease): a pending stage untouched for this long has no message coming.
STRANDED_AFTER = timedelta(minutes=15)
SWEEPER_ACTOR = "sweeper"


class ActiveJobLike(Protocol):
    job_id: str
    stages: dict[StageName, StageState]
    updated_at: str


class SweepStore(Protocol):
    def active_jobs(self) -> Iterable[ActiveJobLike]: ...

    def requeue_expired(self, job_id: str, stage: StageName, observed: StageState, actor: str) -> bool: ...

    def mark_handoff_resent(self, job_id: str, stage: StageName, observed_updated_at: str, actor: str) -> bool: ...


@dataclass
class SweepReport:
    active_jobs: int = 0
    expired_requeued: int = 0
    stranded_resent: int = 0
    running: dict[str, int] = field(default_factory=lambda: {stage.value: 0 for stage in STAGE_ORDER})
    pending: dict[str, int] = field(default_factory=lambda: {stage.value: 0 for stage in STAGE_ORDER})
    oldest_active_seconds: float = 0.0


def current_stage(stages: dict[StageName, StageState]) -> StageName | None:
    """The first stage that has not completed (None when all have)."""
    return next((stage for stage in STAGE_ORDER if stages[stage].status != StageStatus.COMPLETED), None)


def sweep(store: SweepStore, queues: StageQueues, *, stranded_after: timedelta = STRANDED_AFTER) -> SweepReport:
    now = utc_now()
    report = SweepReport()
    for job in store.active_jobs():
        report.active_jobs += 1
        report.oldest_active_seconds = max(
            report.oldest_active_seconds, (now - parse_iso(job.updated_at)).total_seconds()
        )
        stage = current_stage(job.stages)
        if stage is None:
            continue
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
