"""The sweeper's report and its metrics, on a fake store and an injected clock: backlog per
stage and state, and the age of the oldest active job per current stage (from `created_at`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from p4review.clock import set_time_source, to_iso
from p4review.metric_names import Dimension, MetricName, dimension_names
from p4review.models.job import STAGE_ORDER, StageName, StageState, StageStatus
from p4review.observability import metrics
from p4review.ops.sweeper import publish_sweep_metrics, sweep
from p4review_dev.support.emf import data_points

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
DONE = StageState(status=StageStatus.COMPLETED)


@dataclass
class Job:
    job_id: str
    stages: dict[StageName, StageState]
    created_at: str
    updated_at: str


def job(job_id: str, *, created: timedelta, updated: timedelta, at: StageName | None, status=StageStatus.PENDING):
    """A job `created` ago, last written `updated` ago, whose current stage is `at` (None: all done)."""
    stages, reached = {}, False
    for stage in STAGE_ORDER:
        reached = reached or stage == at
        if stage == at:
            lease = to_iso(NOW + timedelta(minutes=5)) if status == StageStatus.RUNNING else None
            stages[stage] = StageState(status=status, claimed_by="w" if lease else None, lease_expires_at=lease)
        else:
            stages[stage] = StageState() if reached else DONE
    return Job(job_id, stages, to_iso(NOW - created), to_iso(NOW - updated))


class Store:
    def __init__(self, *jobs: Job):
        self.jobs = jobs

    def active_jobs(self) -> Iterator[Job]:
        return iter(self.jobs)

    def requeue_expired(self, *args) -> bool:
        raise AssertionError("no lease has expired")

    def mark_handoff_resent(self, *args) -> bool:
        return False


class Queues:
    def send(self, message) -> None:
        raise AssertionError("nothing to send")


@pytest.fixture(autouse=True)
def clock():
    set_time_source(lambda: NOW)
    yield
    set_time_source(None)


STORE = Store(
    job("fetch-new", created=timedelta(minutes=2), updated=timedelta(minutes=2), at=StageName.FETCH),
    # Rewritten a minute ago (a retry released it), accepted 40 minutes ago: 40 minutes old.
    job("review-retrying", created=timedelta(minutes=40), updated=timedelta(minutes=1), at=StageName.REVIEW),
    job(
        "review-running",
        created=timedelta(minutes=25),
        updated=timedelta(minutes=25),
        at=StageName.REVIEW,
        status=StageStatus.RUNNING,
    ),
    # Every stage completed, the job not yet finished: counted as active, in no stage.
    job("all-done", created=timedelta(hours=2), updated=timedelta(seconds=1), at=None),
)


@pytest.mark.spec("OPS-2")
def test_the_oldest_job_per_stage_is_its_age_since_it_was_accepted():
    report = sweep(STORE, Queues(), stranded_after=timedelta(hours=1))
    assert report.active_jobs == 4
    assert report.pending == {"fetch": 1, "review": 1, "notify": 0}
    assert report.running == {"fetch": 0, "review": 1, "notify": 0}
    assert report.oldest_by_stage == {"fetch": 120.0, "review": 2400.0, "notify": 0.0}
    assert report.oldest_active_seconds == 7200.0


@pytest.mark.spec("OPS-2")
def test_an_idle_sweep_reports_every_stage_at_zero():
    report = sweep(Store(), Queues())
    assert report.oldest_by_stage == {"fetch": 0.0, "review": 0.0, "notify": 0.0}
    assert report.active_jobs == 0 and report.oldest_active_seconds == 0.0


@pytest.mark.spec("OPS-2")
def test_backlog_and_oldest_job_are_published_per_stage_and_state(capsys):
    report = sweep(STORE, Queues(), stranded_after=timedelta(hours=1))
    capsys.readouterr()
    metrics.clear_metrics()
    publish_sweep_metrics(report)
    points = data_points(capsys.readouterr().out)
    # The totals have `service` alone: they ride on the invocation's shared metrics.
    totals = {name: entry["Value"] for name, entry in metrics.metric_set.items()}
    metrics.clear_metrics()
    assert totals[MetricName.ACTIVE_JOBS] == [4.0] and totals[MetricName.OLDEST_ACTIVE_JOB_AGE] == [7200.0]
    backlog = {
        (p.dimensions[Dimension.STAGE], p.dimensions[Dimension.STATE]): p.values
        for p in points
        if p.name == MetricName.BACKLOG
    }
    assert backlog == {
        ("fetch", "pending"): (1.0,),
        ("review", "pending"): (1.0,),
        ("notify", "pending"): (0.0,),
        ("fetch", "running"): (0.0,),
        ("review", "running"): (1.0,),
        ("notify", "running"): (0.0,),
    }
    oldest = {p.dimensions[Dimension.STAGE]: p.values for p in points if p.name == MetricName.OLDEST_JOB_AGE}
    assert oldest == {"fetch": (120.0,), "review": (2400.0,), "notify": (0.0,)}
    # Each with exactly its declared dimensions (what the dashboard and alarms name).
    for point in points:
        assert set(point.dimensions) == dimension_names(MetricName(point.name)), point
    assert {p.unit for p in points if p.name == MetricName.OLDEST_JOB_AGE} == {"Seconds"}
