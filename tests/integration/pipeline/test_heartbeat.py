"""Heartbeats and lease loss in the shared stage runtime (spec "WorkQueue" lease model, WQ-5..7):
a slow but healthy worker keeps its lease, a worker whose lease is taken over stops before its
next side effect and leaves the job alone, and the SQS message stays invisible while the lease
lives. Against the moto server: real conditional writes, real visibility timeouts."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from p4review.clock import to_iso
from p4review.errors import LeaseLostError
from p4review.ingest.service import create_review
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, StageName, StageStatus
from p4review.models.messages import StageMessage
from p4review.pipeline.heartbeat import CLOCK_SKEW_BUDGET_SECONDS, Heartbeat, Lease, heartbeat_interval
from p4review.pipeline.sqs_batch import handle_stage_batch
from p4review.pipeline.stage_runner import StageOutput, run_stage
from p4review.ports import ClaimState
from p4review.stores.dynamo_jobs import job_pk
from p4review.stores.factory import get_data_access
from p4review_dev.lambda_context import FakeLambdaContext
from p4review_dev.sqs_poller import build_sqs_event
from p4review_dev.support.harness import drain, provisioned_service

STAGE = StageName.FETCH


class StepWork:
    """A fetch-stage work of several steps, each a counted side effect guarded by
    `lease.check()`, with a pause (and an optional hook) after each one."""

    stage = STAGE

    def __init__(self, steps: int, pause: float, after_step=None):
        self.steps = steps
        self.pause = pause
        self.after_step = after_step or (lambda index, job, lease: None)
        self.side_effects = 0
        self.lease = None

    def run(self, job, lease):
        self.lease = lease
        for index in range(self.steps):
            lease.check()
            self.side_effects += 1
            self.after_step(index, job, lease)
            time.sleep(self.pause)
        return StageOutput(updates={"artifacts": {"change_key": f"changes/{job.job_id}.json", "result_key": None}})


@pytest.fixture
def service(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint) as provisioned:
        provisioned.sqs = provisioned.client("sqs")
        provisioned.dynamodb = provisioned.client("dynamodb")
        yield provisioned


def _new_job(service, *, keep_message=False):
    dal = get_data_access()
    answer = create_review(
        CreateReviewRequest(idempotency_key="hb-1", changelist_id=48213, review_version=1, kind="submitted"),
        jobs=dal.jobs,
        queues=dal.queues,
        request_id="r",
    )
    if not keep_message:
        drain(service.sqs, service.resources.queue_for_stage(STAGE).url)
    return answer.job


def _run(work, job, *, worker, lease_seconds, receipt_handle=None):
    dal = get_data_access()
    return run_stage(
        StageMessage(job_id=job.job_id, stage=STAGE),
        work,
        jobs=dal.jobs,
        queues=dal.queues,
        worker_id=worker,
        lease_seconds=lease_seconds,
        receipt_handle=receipt_handle,
    )


def _force_lease_into_the_past(service, job_id):
    service.dynamodb.update_item(
        TableName=service.resources.tables["jobs"],
        Key={"pk": {"S": job_pk(job_id)}},
        UpdateExpression="SET stages.#stage.lease_expires_at = :past",
        ExpressionAttributeNames={"#stage": STAGE.value},
        ExpressionAttributeValues={":past": {"S": "2000-01-01T00:00:00.000000Z"}},
    )


def _steal(service, job_id, thief="worker-b"):
    """Expire the owner's lease behind its back and claim the stage as `thief`. The owner's
    heartbeat may renew between the two writes; then try again."""
    jobs = get_data_access().jobs
    for _ in range(10):
        _force_lease_into_the_past(service, job_id)
        if jobs.claim_stage(job_id, STAGE, thief, lease_seconds=60).state == ClaimState.CLAIMED:
            return
    raise AssertionError("could not take the lease over")


@pytest.mark.spec("WQ-5", "WQP-3")
def test_a_worker_slower_than_its_lease_keeps_it_thanks_to_the_heartbeat(service):
    job = _new_job(service)
    jobs = get_data_access().jobs
    seen = {}

    def meanwhile(index, job, lease):
        if index == 3:  # ~10 s into a 9 s lease: without a heartbeat it would have expired
            seen["claim_by_b"] = jobs.claim_stage(job.job_id, STAGE, "worker-b", lease_seconds=9).state
            seen["stage"] = jobs.get_job(job.job_id).stages[STAGE]

    # 12.5 s of work under a 9 s lease (renewed every 3 s while 6 s remain: seconds of margin for
    # a busy machine before the 2 s skew budget is reached).
    work = StepWork(steps=5, pause=2.5, after_step=meanwhile)
    started = datetime.now(UTC)
    disposition = _run(work, job, worker="worker-a", lease_seconds=9)

    assert disposition.ack and work.side_effects == 5
    assert seen["claim_by_b"] == ClaimState.LEASE_HELD
    assert seen["stage"].claimed_by == "worker-a"
    assert seen["stage"].heartbeat_at is not None
    assert seen["stage"].lease_expires_at > to_iso(started + timedelta(seconds=9))
    stored = jobs.get_job(job.job_id)
    assert stored.stages[STAGE].status == StageStatus.COMPLETED
    assert stored.stages[STAGE].attempts == 1
    assert stored.stages[STAGE].heartbeat_at is None  # lease fields are cleared on completion
    # Heartbeats write no audit events: one claim, one completion.
    assert [event.event for event in stored.audit if event.stage == STAGE] == ["stage_claimed", "stage_completed"]


@pytest.mark.spec("WQ-7", "WQP-6")
def test_a_worker_whose_lease_is_stolen_stops_before_its_next_side_effect(service):
    job = _new_job(service)
    jobs = get_data_access().jobs

    def steal_after_the_second_step(index, job, lease):
        if index == 1:
            _steal(service, job.job_id)

    # Pauses (1.2 s) longer than the heartbeat interval (0.5 s for a 3 s lease): the heartbeat
    # finds out before the next step does.
    work = StepWork(steps=6, pause=1.2, after_step=steal_after_the_second_step)
    disposition = _run(work, job, worker="worker-a", lease_seconds=3)

    assert disposition.ack is False
    assert disposition.reason == "lease lost"
    assert disposition.delay_seconds is None
    assert work.side_effects == 2
    assert work.lease.lost
    with pytest.raises(LeaseLostError):
        work.lease.check()
    # The job is the thief's, untouched: no release, no completion, no dead letter, no hand-off.
    stored = jobs.get_job(job.job_id)
    state = stored.stages[STAGE]
    assert (stored.status, state.status, state.claimed_by) == (JobStatus.IN_PROGRESS, StageStatus.RUNNING, "worker-b")
    assert state.last_error_class is None and state.completed_at is None
    assert stored.audit[-1].event == "stage_claimed" and stored.audit[-1].actor == "worker-b"
    assert drain(service.sqs, service.resources.queue_for_stage(STAGE).dlq_url) == []
    assert drain(service.sqs, service.resources.queue_for_stage(StageName.REVIEW).url) == []


@pytest.mark.spec("WQ-6", "WQP-3")
def test_renew_lease_by_a_non_owner_is_refused_and_changes_nothing(service):
    job = _new_job(service)
    jobs = get_data_access().jobs
    assert jobs.claim_stage(job.job_id, STAGE, "owner", lease_seconds=60).state == ClaimState.CLAIMED
    before = jobs.get_job(job.job_id)

    with pytest.raises(LeaseLostError):
        jobs.renew_lease(job.job_id, STAGE, "intruder", lease_seconds=600)
    assert jobs.get_job(job.job_id) == before
    with pytest.raises(LeaseLostError):
        jobs.renew_lease(job.job_id, StageName.REVIEW, "owner", lease_seconds=600)  # a stage it does not hold
    with pytest.raises(LeaseLostError):
        jobs.renew_lease("no-such-job", STAGE, "owner", lease_seconds=600)
    assert jobs.get_job(job.job_id) == before


@pytest.mark.spec("WQ-6")
def test_renew_lease_by_the_owner_extends_the_lease_without_audit_or_updated_at(service):
    job = _new_job(service)
    jobs = get_data_access().jobs
    jobs.claim_stage(job.job_id, STAGE, "owner", lease_seconds=60)
    before = jobs.get_job(job.job_id)

    expires = jobs.renew_lease(job.job_id, STAGE, "owner", lease_seconds=600)

    after = jobs.get_job(job.job_id)
    assert after.stages[STAGE].lease_expires_at == expires > before.stages[STAGE].lease_expires_at
    assert after.stages[STAGE].heartbeat_at is not None
    assert (after.updated_at, after.audit) == (before.updated_at, before.audit)
    # Once the stage is completed nobody can renew it.
    jobs.complete_stage(job.job_id, STAGE, "owner", updates={})
    with pytest.raises(LeaseLostError):
        jobs.renew_lease(job.job_id, STAGE, "owner", lease_seconds=600)


@pytest.mark.spec("WQ-5")
def test_the_heartbeat_keeps_the_sqs_message_invisible_past_its_original_visibility(moto_endpoint, aws_reset):
    # A 5 s lease (the smallest the settings allow): a heartbeat every 1.5 s, each pushing the
    # message's visibility to 5 + 2 s.
    with provisioned_service(moto_endpoint, extra_env={"P4REVIEW_LEASE_SECONDS": "5"}) as service:
        service.sqs = service.client("sqs")
        job = _new_job(service, keep_message=True)
        queue = service.resources.queue_for_stage(STAGE)
        (message,) = service.sqs.receive_message(
            QueueUrl=queue.url, MaxNumberOfMessages=1, VisibilityTimeout=3, AttributeNames=["All"]
        )["Messages"]
        assert json.loads(message["Body"])["job_id"] == job.job_id
        seen = {}

        def look_again(index, job, lease):
            if index in (4, 6):  # ~5 s and ~7 s after the receive: the original 3 s visibility is over
                seen[index] = service.sqs.receive_message(
                    QueueUrl=queue.url, MaxNumberOfMessages=1, WaitTimeSeconds=0
                ).get("Messages", [])

        work = StepWork(steps=7, pause=1.0, after_step=look_again)  # 7 s of work under a 5 s lease
        event = build_sqs_event([message], queue.arn)
        # Through the SQS batch handler: it must hand the record's receipt handle to the runtime.
        answer = handle_stage_batch(event, FakeLambdaContext("p4review-test-fetch"), lambda: work)

        assert answer == {"batchItemFailures": []}
        assert work.side_effects == 7
        assert seen == {4: [], 6: []}
        assert get_data_access().jobs.get_job(job.job_id).stages[STAGE].status == StageStatus.COMPLETED


def test_run_stage_without_a_receipt_handle_leaves_the_message_visibility_alone(service):
    job = _new_job(service, keep_message=True)
    queue = service.resources.queue_for_stage(STAGE)
    service.sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=1, VisibilityTimeout=2)
    seen = {}

    def look_again(index, job, lease):
        if index == 2:
            seen["visible"] = drain(service.sqs, queue.url)

    assert _run(StepWork(steps=3, pause=1.1, after_step=look_again), job, worker="w", lease_seconds=3).ack
    assert len(seen["visible"]) == 1  # the control: the 2 s visibility did run out


class _FixedClock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.spec("T-3")
def test_lease_check_stops_the_worker_a_skew_budget_before_the_lease_ends():
    assert CLOCK_SKEW_BUDGET_SECONDS == 2
    end = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    clock = _FixedClock(end - timedelta(seconds=2.5))
    lease = Lease(to_iso(end), clock=clock)

    lease.check()  # 2.5 s left: still more than the 2 s budget
    assert lease.seconds_left() == pytest.approx(0.5)
    clock.now = end - timedelta(seconds=2)
    with pytest.raises(LeaseLostError, match="expired"):
        lease.check()  # exactly the budget left: stop now, another host's clock may be 2 s ahead
    clock.now = end + timedelta(seconds=1)
    with pytest.raises(LeaseLostError):
        lease.check()

    lease.renewed(to_iso(end + timedelta(seconds=60)))
    lease.check()  # a renewal reopens it...
    lease.renewed(to_iso(end))  # ...and a late, older renewal never shortens it
    lease.check()
    lease.mark_lost("heartbeat refused")
    with pytest.raises(LeaseLostError, match="heartbeat refused"):
        lease.check()  # known lost wins over time left
    lease.renewed(to_iso(end + timedelta(hours=1)))
    assert lease.lost


@pytest.mark.spec("T-3", "WQ-5")
def test_heartbeat_interval_is_a_third_of_the_lease_but_leaves_room_inside_the_skew_budget():
    assert heartbeat_interval(90) == 30
    assert heartbeat_interval(6) == 2
    assert heartbeat_interval(3) == 0.5  # renews while 2.5 s of a 3 s lease remain: check() still passes


class _Jobs:
    """A JobRepository stand-in for the heartbeat's failure handling (only renew_lease)."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.calls = 0

    def renew_lease(self, job_id, stage, worker_id, lease_seconds):
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if isinstance(outcome, Exception):
            raise outcome
        return to_iso(datetime.now(UTC) + timedelta(seconds=lease_seconds))


class _Queues:
    def __init__(self):
        self.delays = []

    def delay(self, stage, receipt_handle, seconds):
        self.delays.append((stage, receipt_handle, seconds))


def _heartbeat(jobs, queues, lease_seconds=3, receipt_handle="rh-1"):
    lease = Lease(to_iso(datetime.now(UTC) + timedelta(seconds=lease_seconds)))
    return Heartbeat(
        lease,
        jobs=jobs,
        queues=queues,
        job_id="j",
        stage=STAGE,
        worker_id="w",
        lease_seconds=lease_seconds,
        receipt_handle=receipt_handle,
        interval_seconds=0.1,
    )


def _eventually(condition, timeout=30.0) -> bool:
    """Wait for `condition` (the heartbeat thread's doing) with seconds of margin, not a fixed
    sleep that a busy machine may not honour."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.spec("WQ-5")
def test_heartbeat_renews_and_extends_visibility_until_the_block_ends():
    jobs, queues = _Jobs([]), _Queues()
    heartbeat = _heartbeat(jobs, queues, lease_seconds=30)
    with heartbeat as lease:
        assert _eventually(lambda: jobs.calls >= 3)
        lease.check()
    calls = jobs.calls
    time.sleep(0.3)
    assert jobs.calls == calls >= 3  # stopped with the block
    assert queues.delays[0] == (STAGE, "rh-1", 30 + CLOCK_SKEW_BUDGET_SECONDS)
    assert len(queues.delays) == heartbeat.renewals == calls


@pytest.mark.spec("WQ-7")
def test_heartbeat_rides_out_transient_errors_but_gives_up_when_the_lease_runs_out():
    from p4review.errors import StorageError

    jobs = _Jobs([StorageError("throttled"), StorageError("throttled"), "ok"])
    with _heartbeat(jobs, _Queues(), lease_seconds=30) as lease:
        assert _eventually(lambda: jobs.calls >= 3)
        lease.check()  # two failures, then a renewal: still ours
    assert not lease.lost

    failing = _Jobs([StorageError("down")] * 1000)
    with _heartbeat(failing, _Queues(), lease_seconds=3) as lease:
        assert _eventually(lambda: lease.lost)  # the usable part of a 3 s lease is 1 s
        with pytest.raises(LeaseLostError):
            lease.check()


@pytest.mark.spec("WQ-7")
def test_heartbeat_stops_at_the_first_refusal():
    jobs, queues = _Jobs([LeaseLostError("taken over")]), _Queues()
    with _heartbeat(jobs, queues) as lease:
        assert _eventually(lambda: lease.lost)
    assert jobs.calls == 1 and queues.delays == []
