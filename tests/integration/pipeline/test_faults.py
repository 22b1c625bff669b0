"""Injected faults against real DynamoDB/SQS semantics (moto server) and a real SMTP server:
every crash point leaves the job recoverable, and every other point takes the same path as the
real failure it models."""

from __future__ import annotations

import json
import time

import pytest

from p4review import faults
from p4review.errors import ErrorClass
from p4review.faults import FaultPoint, InjectedCrash
from p4review.fetch.settings import FetchSettings
from p4review.fetch.stage import FetchWork
from p4review.ingest.service import create_review
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, StageName, StageStatus
from p4review.models.messages import StageMessage
from p4review.models.outbox import DeliveryStatus
from p4review.notify.settings import NotifySettings
from p4review.notify.stage import NotifyWork
from p4review.ops.stores import ops_stores
from p4review.pipeline.stage_runner import StageOutput, run_stage
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.stores.factory import get_data_access
from p4review_dev.lambda_context import FakeLambdaContext
from p4review_dev.smtp_server import LocalMailServer
from p4review_dev.stack import load_function
from p4review_dev.support.harness import drain, provisioned_service

LEASE = 60  # seconds of the manual clock: a crashed worker's lease lapses when the test moves time on


class CountingWork:
    stage = StageName.FETCH

    def __init__(self):
        self.calls = 0

    def run(self, job, lease):
        self.calls += 1
        return StageOutput(updates={"artifacts": {"change_key": f"changes/{job.job_id}.json", "result_key": None}})


def _inject(spec: str) -> None:
    faults.load({"P4REVIEW_ENV": "test", "P4REVIEW_FAULTS": spec})


@pytest.fixture(autouse=True)
def _no_faults_after():
    yield
    faults.reset()


@pytest.fixture
def mail(tmp_path):
    server = LocalMailServer(tmp_path / "mailbox")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def service(moto_endpoint, aws_reset, mail):
    with provisioned_service(
        moto_endpoint,
        smtp={"host": "127.0.0.1", "port": mail.port, "tls_mode": "none", "from_address": "p4review@example.test"},
    ) as provisioned:
        provisioned.sqs = provisioned.client("sqs")
        faults.refuse_outside_test_environments()  # cold start: installs the (empty) fault plan
        yield provisioned


def _new_job(service, key="faults", review_version=1):
    dal = get_data_access()
    answer = create_review(
        CreateReviewRequest(
            idempotency_key=key, changelist_id=48213 + review_version - 1, review_version=1, kind="submitted"
        ),
        jobs=dal.jobs,
        queues=dal.queues,
        request_id="r",
    )
    drain(service.sqs, service.resources.queue_for_stage(StageName.FETCH).url)
    return answer.job


def _run(work, job, worker, lease_seconds=LEASE):
    dal = get_data_access()
    return run_stage(
        StageMessage(job_id=job.job_id, stage=work.stage),
        work,
        jobs=dal.jobs,
        queues=dal.queues,
        worker_id=worker,
        lease_seconds=lease_seconds,
    )


def _messages(service, stage):
    return [json.loads(m["Body"]) for m in drain(service.sqs, service.resources.queue_for_stage(stage).url)]


def _dlq(service, stage):
    return [json.loads(m["Body"]) for m in drain(service.sqs, service.resources.queue_for_stage(stage).dlq_url)]


def _fetch_stage(job):
    return get_data_access().jobs.get_job(job.job_id).stages[StageName.FETCH]


@pytest.mark.spec("IDEM-5")
@pytest.mark.parametrize(
    "point, work_calls_before_recovery",
    [
        (FaultPoint.AFTER_CLAIM, 0),
        (FaultPoint.AFTER_SIDE_EFFECT, 1),
    ],
)
def test_a_crash_before_completion_is_recovered_by_a_later_delivery(
    service, manual_clock, point, work_calls_before_recovery
):
    job = _new_job(service)
    work = CountingWork()
    _inject(f"{point.value}=1")
    with pytest.raises(InjectedCrash):
        _run(work, job, "crashed")
    assert faults.fired() == {point.value: 1}
    # A killed process: nothing released, nothing dead-lettered, nothing handed off.
    stage = _fetch_stage(job)
    assert (stage.status, stage.claimed_by) == (StageStatus.RUNNING, "crashed")
    assert work.calls == work_calls_before_recovery
    assert _messages(service, StageName.REVIEW) == [] and _dlq(service, StageName.FETCH) == []
    faults.load({})
    # The redelivery meets a live lease and backs off; after the lease lapses it takes over.
    early = _run(work, job, "early", lease_seconds=60)
    assert not early.ack and early.reason == "lease held by another worker"
    manual_clock.advance(LEASE + 1)
    assert _run(work, job, "recovered", lease_seconds=60).ack
    assert work.calls == work_calls_before_recovery + 1
    stored = _fetch_stage(job)
    assert stored.status == StageStatus.COMPLETED and stored.attempts == 2
    assert len(_messages(service, StageName.REVIEW)) == 1
    # Further duplicates do no work again.
    assert _run(work, job, "late").ack and work.calls == work_calls_before_recovery + 1


def test_a_crash_before_the_handoff_is_repaired_by_the_redelivery(service):
    job = _new_job(service)
    work = CountingWork()
    _inject("before_handoff=1;seed=7")
    with pytest.raises(InjectedCrash):
        _run(work, job, "crashed")
    assert _fetch_stage(job).status == StageStatus.COMPLETED
    assert _messages(service, StageName.REVIEW) == []  # the hand-off was lost
    faults.load({})
    # The redelivery (no lease wait needed: the stage is completed) takes the ALREADY_COMPLETED path.
    again = _run(work, job, "redelivery")
    assert again.ack and again.reason == "duplicate delivery of a completed stage"
    assert work.calls == 1
    assert _messages(service, StageName.REVIEW) == [{"schema_version": "1", "job_id": job.job_id, "stage": "review"}]


def test_the_sweeper_requeues_a_crashed_stage(service, manual_clock):
    job = _new_job(service)
    _inject("after_claim=1")
    with pytest.raises(InjectedCrash):
        _run(CountingWork(), job, "crashed")
    faults.load({})
    manual_clock.advance(LEASE + 1)
    from p4review.ops import sweeper

    dal = get_data_access()
    assert sweeper.sweep(ops_stores(dal).sweep_store, dal.queues).expired_requeued == 1
    assert [m["job_id"] for m in _messages(service, StageName.FETCH)] == [job.job_id]
    work = CountingWork()
    assert _run(work, job, "after-sweep").ack and work.calls == 1
    assert _fetch_stage(job).status == StageStatus.COMPLETED


def test_an_injected_crash_escapes_the_lambda_handler_and_the_poller_deletes_nothing(service):
    job = _new_job(service)
    handler = load_function("fetch").lambda_handler
    event = {
        "Records": [
            {
                "messageId": "m-1",
                "receiptHandle": "rh-1",
                "body": json.dumps({"job_id": job.job_id, "stage": "fetch"}),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q",
                "awsRegion": "us-east-1",
            }
        ]
    }
    _inject("after_claim=1")
    with pytest.raises(InjectedCrash):
        handler(event, FakeLambdaContext("p4review-test-fetch"))
    assert _dlq(service, StageName.FETCH) == []

    from p4review_dev.sqs_poller import SqsPoller

    queue = service.resources.queue_for_stage(StageName.FETCH)
    fresh = _new_job(service, key="poller", review_version=2)  # the first job's stage is held by the crashed invocation
    service.sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps({"job_id": fresh.job_id, "stage": "fetch"}))
    poller = SqsPoller(
        lambda: service.client("sqs"),
        queue.url,
        queue.arn,
        handler,
        batch_size=1,
        concurrency=1,
        wait_seconds=0,
        function_name="p4review-test-fetch",
    )
    with poller:
        deadline = time.monotonic() + 20
        while poller.errors < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert poller.errors >= 1, poller.counters()
        assert poller.deleted == 0
        assert poller.running and all(thread.is_alive() for thread in poller._threads)  # workers survived
    assert _fetch_stage(fresh).status == StageStatus.RUNNING  # claimed, crashed, left for redelivery


# -- notify ----------------------------------------------------------------------------------------


def _reviewed_job(service):
    dal = get_data_access()
    answer = create_review(
        CreateReviewRequest(idempotency_key="notify-faults", changelist_id=48213, review_version=1, kind="submitted"),
        jobs=dal.jobs,
        queues=dal.queues,
        request_id=None,
    )
    for work in (
        FetchWork(FetchSettings.from_env(), dal.raw_artifacts, dal.redacted_artifacts, dal.secrets),
        build_review_work(ReviewSettings.from_env(), dal),
    ):
        assert _run(work, answer.job, "setup", lease_seconds=60).ack
    for stage in StageName:
        drain(service.sqs, service.resources.queue_for_stage(stage).url)
    return dal.jobs.get_job(answer.job.job_id)


def _notify(job, worker):
    dal = get_data_access()
    return _run(
        NotifyWork(NotifySettings.from_env(), dal.redacted_artifacts, dal.outbox, dal.secrets),
        job,
        worker,
        lease_seconds=60,
    )


def _rows(job):
    return get_data_access().outbox.rows_for_version(job.changelist_id, job.review_version)


@pytest.mark.spec("WQP-8", "NE-4")
def test_db_write_after_provider_leaves_an_unconfirmed_row_and_the_retry_backfills(service, mail):
    """Failure matrix "email sent but DB write failed": the retry looks the delivery up by its
    deterministic Message-ID, finds it and marks the row sent without a second email."""
    job = _reviewed_job(service)
    _inject("db_write_after_provider=1")
    first = _notify(job, "first")
    assert not first.ack and first.delay_seconds is not None  # StorageError: retryable
    (row,) = _rows(job)
    assert row.attempts == 1 and row.notified_at is None
    assert mail.count() == 1
    faults.load({})
    assert _notify(job, "second").ack
    (row,) = _rows(job)
    (stored,) = mail.messages()
    assert row.status == DeliveryStatus.SENT and row.notified_at and row.attempts == 1
    assert row.notification_id == stored.queue_id
    assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED


def test_provider_transient_takes_the_retryable_path(service, mail):
    job = _reviewed_job(service)
    _inject("provider_transient=1")
    first = _notify(job, "first")
    assert not first.ack and first.delay_seconds is not None
    (row,) = _rows(job)
    assert (row.status, row.attempts, row.notified_at) == (DeliveryStatus.PENDING, 1, None)
    assert "451" in row.last_error
    assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.RETRYABLE_FAILED
    assert mail.count() == 0
    faults.load({})
    assert _notify(job, "second").ack and mail.count() == 1


def test_provider_permanent_fails_the_row_and_dead_letters(service, mail):
    job = _reviewed_job(service)
    _inject("provider_permanent=1")
    assert _notify(job, "first").ack
    (row,) = _rows(job)
    assert row.status == DeliveryStatus.FAILED and row.notified_at is None and "550" in row.last_error
    (envelope,) = _dlq(service, StageName.NOTIFY)
    assert envelope["error_class"] == "POLICY_DENIED"
    assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.DEAD_LETTERED
    assert mail.count() == 0


def test_p4_timeout_is_a_retryable_network_timeout(service):
    job = _new_job(service)
    dal = get_data_access()
    _inject("p4_timeout=1")
    disposition = _run(
        FetchWork(FetchSettings.from_env(), dal.raw_artifacts, dal.redacted_artifacts, dal.secrets),
        job,
        "fetcher",
        lease_seconds=60,
    )
    assert not disposition.ack and disposition.reason == ErrorClass.NETWORK_TIMEOUT.value
    stored = dal.jobs.get_job(job.job_id)
    assert stored.status == JobStatus.RETRYABLE_FAILED
    assert stored.stages[StageName.FETCH].last_error_class == "NETWORK_TIMEOUT"
    assert _dlq(service, StageName.FETCH) == []
    faults.load({})
    assert _run(
        FetchWork(FetchSettings.from_env(), dal.raw_artifacts, dal.redacted_artifacts, dal.secrets),
        job,
        "fetcher-2",
        lease_seconds=60,
    ).ack


class SlowWork(CountingWork):
    """Waits for the heartbeat to renew (or fail to), then checks the lease before its side effect."""

    def run(self, job, lease):
        deadline = time.monotonic() + 10
        while not lease.lost and time.monotonic() < deadline:
            time.sleep(0.05)
        lease.check()
        return super().run(job, lease)


def test_heartbeat_loss_stops_the_worker_with_lease_lost(service):
    job = _new_job(service)
    work = SlowWork()
    _inject("heartbeat_loss=1")
    disposition = _run(work, job, "worker", lease_seconds=6)  # renews every ~2 s
    assert not disposition.ack and disposition.reason == "lease lost"
    assert work.calls == 0  # stopped before its side effect
    assert faults.fired() == {"heartbeat_loss": 1}
    # Neither released nor dead-lettered: the stage stays RUNNING under the (now presumed lost) lease.
    assert _fetch_stage(job).status == StageStatus.RUNNING
    assert _dlq(service, StageName.FETCH) == []
