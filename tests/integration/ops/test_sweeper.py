"""The sweeper against the moto server: expired leases requeued exactly once (even with two
sweepers racing), lost hand-offs re-sent, live leases left alone, backlog reported."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest

from p4review.ingest.service import create_review
from p4review.models.api import CreateReviewRequest
from p4review.models.job import StageName, StageStatus
from p4review.ops.sweep_store import DynamoSweepRepository
from p4review.ops.sweeper import sweep
from p4review.stores.factory import get_data_access
from p4review_dev.lambda_context import FakeLambdaContext
from p4review_dev.stack import load_function
from p4review_dev.support.harness import drain


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        provisioned.sqs = provisioned.client("sqs")
        yield provisioned


def _jobs(service, count, prefix="sweep"):
    dal = get_data_access()
    created = [
        create_review(
            CreateReviewRequest(
                idempotency_key=f"{prefix}-{index}", changelist_id=9000 + index, review_version=1, kind="submitted"
            ),
            jobs=dal.jobs,
            queues=dal.queues,
            request_id=None,
        ).job
        for index in range(count)
    ]
    drain(service.sqs, service.resources.queue_for_stage(StageName.FETCH).url)
    return created


def _store(service):
    return DynamoSweepRepository(service.client("dynamodb"), service.resources.tables["jobs"])


def _two_racing_sweeps(service, **options):
    """Two sweepers in real threads, released together, each with its own clients."""
    barrier = threading.Barrier(2)
    reports = []

    def run():
        store, queues = _store(service), get_data_access().queues
        barrier.wait()
        reports.append(sweep(store, queues, **options))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return reports


def _messages(service, stage):
    return [json.loads(m["Body"]) for m in drain(service.sqs, service.resources.queue_for_stage(stage).url)]


@pytest.mark.spec("WQ-9", "WQ-11", "WQ-14", "WQP-1", "WQP-7")
def test_expired_lease_is_requeued_once_and_handed_out_again(service):
    (job,) = _jobs(service, 1)
    jobs = get_data_access().jobs
    jobs.claim_stage(job.job_id, StageName.FETCH, "crashed-worker", lease_seconds=0)
    report = sweep(_store(service), get_data_access().queues)
    assert report.expired_requeued == 1
    stored = jobs.get_job(job.job_id)
    assert stored.stages[StageName.FETCH].status == StageStatus.PENDING
    assert stored.stages[StageName.FETCH].claimed_by is None
    assert stored.audit[-1].event == "lease_expired_requeued"
    assert [m["job_id"] for m in _messages(service, StageName.FETCH)] == [job.job_id]
    again = sweep(_store(service), get_data_access().queues)
    assert (again.expired_requeued, again.stranded_resent) == (0, 0)


@pytest.mark.spec("WQ-14")
def test_a_live_lease_is_left_alone_and_counted_as_running(service):
    (job,) = _jobs(service, 1)
    get_data_access().jobs.claim_stage(job.job_id, StageName.FETCH, "busy-worker", lease_seconds=300)
    report = sweep(_store(service), get_data_access().queues, stranded_after=timedelta(0))
    assert report.expired_requeued == 0 and report.running["fetch"] == 1
    assert get_data_access().jobs.get_job(job.job_id).stages[StageName.FETCH].claimed_by == "busy-worker"
    assert _messages(service, StageName.FETCH) == []


@pytest.mark.spec("WQ-10")
def test_two_sweepers_racing_requeue_each_expired_lease_exactly_once(service):
    created = _jobs(service, 12)
    jobs = get_data_access().jobs
    for job in created:
        jobs.claim_stage(job.job_id, StageName.FETCH, "crashed", lease_seconds=0)
    reports = _two_racing_sweeps(service)
    assert sum(report.expired_requeued for report in reports) == 12
    for job in created:
        audit = [event.event for event in jobs.get_job(job.job_id).audit]
        assert audit.count("lease_expired_requeued") == 1
    assert sorted(m["job_id"] for m in _messages(service, StageName.FETCH)) == sorted(j.job_id for j in created)


def test_a_lost_hand_off_is_resent_to_the_stage_that_is_next(service):
    queued, half_done = _jobs(service, 2)
    jobs = get_data_access().jobs
    jobs.claim_stage(half_done.job_id, StageName.FETCH, "w", 60)
    jobs.complete_stage(half_done.job_id, StageName.FETCH, "w", updates={})
    drain(service.sqs, service.resources.queue_for_stage(StageName.REVIEW).url)  # the hand-off was lost
    fresh = sweep(_store(service), get_data_access().queues)
    assert fresh.stranded_resent == 0  # recent: a message may still be on its way
    report = sweep(_store(service), get_data_access().queues, stranded_after=timedelta(0))
    assert report.stranded_resent == 2
    assert [m["job_id"] for m in _messages(service, StageName.FETCH)] == [queued.job_id]
    assert [m["job_id"] for m in _messages(service, StageName.REVIEW)] == [half_done.job_id]
    assert report.pending == {"fetch": 1, "review": 1, "notify": 0}


def test_a_stranded_hand_off_is_resent_once_per_stranded_period_even_by_racing_sweepers(service, manual_clock):
    """The re-send is recorded on the job (updated_at + audit), so later sweeps wait a full
    stranded period again instead of adding a message every run; two racing sweepers send one.
    The clock is frozen past one period: a sweeper that reads a job after the other re-sent it
    sees it fresh, whatever the threads' interleaving (with a zero period it would be stranded
    again at once, and DynamoDB Local's speed made that interleaving happen)."""
    period = timedelta(minutes=1)
    created = _jobs(service, 6)
    manual_clock.advance(period.total_seconds())
    reports = _two_racing_sweeps(service, stranded_after=period)
    assert sum(report.stranded_resent for report in reports) == 6
    assert sorted(m["job_id"] for m in _messages(service, StageName.FETCH)) == sorted(j.job_id for j in created)
    later = sweep(_store(service), get_data_access().queues, stranded_after=period)
    assert later.stranded_resent == 0 and _messages(service, StageName.FETCH) == []
    jobs = get_data_access().jobs
    for job in created:
        audit = [event.event for event in jobs.get_job(job.job_id).audit]
        assert audit.count("stranded_handoff_resent") == 1


def test_scheduled_handler_reports_the_backlog(service):
    _jobs(service, 3)
    answer = load_function("sweeper").lambda_handler(
        {"source": "aws.events"}, FakeLambdaContext("p4review-test-sweeper")
    )
    assert answer["active_jobs"] == 3
    assert answer["pending"]["fetch"] == 3
    assert answer["expired_requeued"] == 0


@pytest.mark.spec("SEC-31")
def test_scheduled_handler_reports_artifacts_that_outlived_their_ttl(service):
    """S3 lifecycle deletes artifacts; the sweeper verifies it by listing the oldest day prefix."""
    from p4review.clock import now_iso
    from p4review.stores.s3_artifacts import change_key, result_key

    s3 = service.client("s3")
    raw, redacted = service.resources.buckets["raw"], service.resources.buckets["redacted"]
    s3.put_object(Bucket=raw, Key=change_key("fresh-job", now_iso()), Body=b"{}")
    s3.put_object(Bucket=redacted, Key=result_key("fresh-job", now_iso()), Body=b"{}")
    handler = load_function("sweeper").lambda_handler
    assert handler({"source": "aws.events"}, FakeLambdaContext("p4review-test-sweeper"))["ttl_violations"] == 0
    s3.put_object(Bucket=raw, Key=change_key("stale-job", "2020-01-01T00:00:00.000Z"), Body=b"{}")
    assert get_data_access().artifact_retention.oldest_day("raw", "changes/") == "2020/01/01"
    assert handler({"source": "aws.events"}, FakeLambdaContext("p4review-test-sweeper"))["ttl_violations"] == 1
