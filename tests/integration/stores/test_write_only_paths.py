"""The job path's writes without reads (issue 17, the cost benchmark's savings), against the
serialized moto server, with the calls each one makes counted at the client:

- a stage claim is one conditional UpdateItem, no GetItem; a claim of another state than the
  usual one (a lease that ran out, a retryable_failed job) is a second write whose audit event
  says what it replaced;
- a delivery's intent and first attempt are one write (start_delivery), whose refusal answers
  the row as stored; of concurrent starters exactly one attempts;
- every outbox row carries its retention (`expires_at`), from the repository's retention_days."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from benchmarks.cost import BENCHMARK, SERVICE, CallCounter
from p4review.clock import parse_iso, to_iso, utc_now
from p4review.errors import DeliveryInFlight
from p4review.ingest.intake import new_job
from p4review.models.api import CreateReviewRequest
from p4review.models.job import STAGE_ORDER, JobStatus, StageName, StageStatus
from p4review.models.outbox import DeliveryStatus, OutboxRow
from p4review.notify.delivery import delivery_token
from p4review.ports import ClaimState
from p4review.resources import RETENTION_TTL_ATTRIBUTE
from p4review.stores.dynamo_jobs import DynamoJobRepository, job_pk
from p4review.stores.dynamo_outbox import DynamoOutboxRepository, outbox_key
from p4review.stores.factory import get_data_access
from p4review.stores.record_retention import expires_at_epoch
from p4review_dev.support.aws import moto_client
from p4review_dev.support.harness import provisioned_service

LEASE = 60


@pytest.fixture
def service(moto_endpoint, aws_reset, manual_clock):
    with provisioned_service(moto_endpoint, extra_env={"P4REVIEW_RETENTION_DAYS": "45"}) as provisioned:
        yield provisioned


@pytest.fixture
def counted(moto_endpoint):
    """A DynamoDB client whose calls are counted (the cost benchmark's counter)."""
    counter = CallCounter(exclude_origins=(BENCHMARK,))
    return counter, counter.attach(moto_client("dynamodb", moto_endpoint), SERVICE)


def _calls(counter: CallCounter) -> dict[str, int]:
    calls = {operation: n for (_, operation), n in counter.snapshot(SERVICE).calls.items()}
    counter.reset()
    return calls


def _created_job(service, key="key-1"):
    request = CreateReviewRequest(idempotency_key=key, changelist_id=10, review_version=1, kind="submitted")
    job = new_job(request, to_iso(utc_now()), "test")
    DynamoJobRepository(service.client("dynamodb"), service.resources.tables["jobs"]).create_job(job)
    return job


# ---- claims -----------------------------------------------------------------------------------


@pytest.mark.spec("WQ-2", "OPS-8")
def test_each_stage_is_claimed_with_one_write_and_no_read(service, counted):
    counter, client = counted
    jobs = DynamoJobRepository(client, service.resources.tables["jobs"])
    job = _created_job(service)
    for stage, from_status in zip(
        STAGE_ORDER, (JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.IN_PROGRESS), strict=True
    ):
        claim = jobs.claim_stage(job.job_id, stage, f"{stage}-worker", LEASE)
        assert claim.state == ClaimState.CLAIMED
        assert _calls(counter) == {"UpdateItem": 1}
        event = claim.job.audit[-1]
        assert (event.event, event.from_status, event.detail) == (
            "stage_claimed",
            from_status,
            f"worker={stage}-worker",
        )
        jobs.complete_stage(job.job_id, stage, f"{stage}-worker", updates={})
        counter.reset()


@pytest.mark.spec("WQ-15")
def test_a_refused_claim_is_one_write_whose_old_item_is_the_verdict(service, counted):
    counter, client = counted
    jobs = DynamoJobRepository(client, service.resources.tables["jobs"])
    job = _created_job(service)
    assert jobs.claim_stage(job.job_id, StageName.REVIEW, "early", LEASE).state == ClaimState.NOT_READY
    assert _calls(counter) == {"UpdateItem": 1}
    assert jobs.claim_stage(job.job_id, StageName.FETCH, "first", LEASE).state == ClaimState.CLAIMED
    counter.reset()
    held = jobs.claim_stage(job.job_id, StageName.FETCH, "second", LEASE)
    assert held.state == ClaimState.LEASE_HELD and held.job.stages[StageName.FETCH].claimed_by == "first"
    assert _calls(counter) == {"UpdateItem": 1}
    assert jobs.claim_stage("no-such-job", StageName.FETCH, "w", LEASE).state == ClaimState.MISSING


@pytest.mark.spec("WQ-8")
def test_taking_over_a_lease_that_ran_out_names_its_holder_in_the_audit(service, counted, manual_clock):
    counter, client = counted
    jobs = DynamoJobRepository(client, service.resources.tables["jobs"])
    job = _created_job(service)
    jobs.claim_stage(job.job_id, StageName.FETCH, "crashed", LEASE)
    manual_clock.advance(LEASE + 1)
    counter.reset()
    taken = jobs.claim_stage(job.job_id, StageName.FETCH, "rescuer", LEASE)
    assert taken.state == ClaimState.CLAIMED
    # The usual state (pending, queued) refused, then the state the refusal showed, claimed.
    assert _calls(counter) == {"UpdateItem": 2}
    event = taken.job.audit[-1]
    assert event.from_status == JobStatus.IN_PROGRESS
    assert event.detail == "worker=rescuer took over expired lease of crashed"
    assert taken.job.stages[StageName.FETCH].attempts == 2


def test_a_retryable_failed_job_is_claimed_from_that_status(service, counted):
    counter, client = counted
    jobs = DynamoJobRepository(client, service.resources.tables["jobs"])
    job = _created_job(service)
    jobs.claim_stage(job.job_id, StageName.FETCH, "w1", LEASE)
    jobs.release_stage(
        job.job_id,
        StageName.FETCH,
        "w1",
        error_class="NETWORK_TIMEOUT",
        error="timeout",
        stage_status=StageStatus.PENDING,
        job_status=JobStatus.RETRYABLE_FAILED,
    )
    counter.reset()
    claim = jobs.claim_stage(job.job_id, StageName.FETCH, "w2", LEASE)
    assert claim.state == ClaimState.CLAIMED and _calls(counter) == {"UpdateItem": 2}
    assert claim.job.audit[-1].from_status == JobStatus.RETRYABLE_FAILED
    assert "took over" not in (claim.job.audit[-1].detail or "")


def test_a_job_past_its_retention_cannot_be_claimed(service, manual_clock):
    jobs = DynamoJobRepository(service.client("dynamodb"), service.resources.tables["jobs"])
    job = _created_job(service)
    manual_clock.advance(timedelta(days=400).total_seconds() + 1)
    assert jobs.claim_stage(job.job_id, StageName.FETCH, "late", LEASE).state == ClaimState.MISSING
    item = service.client("dynamodb").get_item(
        TableName=service.resources.tables["jobs"], Key={"pk": {"S": job_pk(job.job_id)}}
    )["Item"]
    assert item["stages"]["M"]["fetch"]["M"]["status"]["S"] == StageStatus.PENDING.value


# ---- deliveries -------------------------------------------------------------------------------


def _intent(recipient="dev@example.test"):
    now = to_iso(utc_now())
    return OutboxRow(
        changelist_id=10,
        recipient=recipient,
        review_version=1,
        job_id="job-1",
        provider_token=delivery_token(10, recipient, 1),
        created_at=now,
        updated_at=now,
    )


def _until(minutes=5):
    return to_iso(utc_now() + timedelta(minutes=minutes))


def _stored_item(service, row):
    key = outbox_key(row.changelist_id, row.recipient, row.review_version)
    return service.client("dynamodb").get_item(TableName=service.resources.tables["outbox"], Key=key)["Item"]


@pytest.mark.spec("OPS-8")
def test_a_delivery_starts_with_one_write_that_creates_the_row_with_its_attempt(service, counted):
    counter, client = counted
    outbox = DynamoOutboxRepository(client, service.resources.tables["outbox"])
    start = outbox.start_delivery(_intent(), owner="w", fence=1, locked_until=_until())
    assert start.attempted and _calls(counter) == {"UpdateItem": 1}
    assert (start.row.attempts, start.row.locked_by, start.row.lock_fence) == (1, "w", 1)
    assert start.row.status == DeliveryStatus.PENDING and start.row.notified_at is None
    sent = outbox.mark_sent(start.row, "message-1")
    # Once delivered, a new start writes nothing and answers the row as stored.
    again = outbox.start_delivery(_intent(), owner="w2", fence=2, locked_until=_until())
    assert not again.attempted and again.row == sent and again.row.attempts == 1


def test_a_row_an_earlier_run_left_untouched_is_started_like_a_new_one(service):
    outbox = DynamoOutboxRepository(service.client("dynamodb"), service.resources.tables["outbox"])
    created = outbox.ensure_row(_intent())
    start = outbox.start_delivery(_intent(), owner="w", fence=1, locked_until=_until())
    assert start.attempted and start.row.created_at == created.created_at and start.row.attempts == 1


def test_a_row_another_claim_holds_is_in_flight_and_one_from_an_earlier_claim_is_answered(service):
    outbox = DynamoOutboxRepository(service.client("dynamodb"), service.resources.tables["outbox"])
    assert outbox.start_delivery(_intent(), owner="a", fence=3, locked_until=_until()).attempted
    with pytest.raises(DeliveryInFlight):
        outbox.start_delivery(_intent(), owner="b", fence=3, locked_until=_until())
    # A later claim outranks the lock: it gets the row (an earlier attempt to reconcile), unchanged.
    later = outbox.start_delivery(_intent(), owner="c", fence=4, locked_until=_until())
    assert not later.attempted and later.row.attempts == 1 and later.row.locked_by == "a"


@pytest.mark.spec("NOT-8", "OPS-8")
def test_of_concurrent_starters_exactly_one_attempts(service):
    outbox = DynamoOutboxRepository(service.client("dynamodb"), service.resources.tables["outbox"])
    barrier = threading.Barrier(8)

    def start(index):
        barrier.wait(timeout=30)
        try:
            return outbox.start_delivery(_intent(), owner=f"w{index}", fence=1, locked_until=_until()).attempted
        except DeliveryInFlight:
            return False

    with ThreadPoolExecutor(max_workers=8) as pool:
        attempted = list(pool.map(start, range(8)))
    assert attempted.count(True) == 1
    assert outbox.get_row(10, "dev@example.test", 1).attempts == 1


@pytest.mark.spec("SEC-23")
def test_every_created_outbox_row_carries_its_retention(service):
    """From the factory (P4REVIEW_RETENTION_DAYS=45 here), both ways a row is created."""
    outbox = get_data_access().outbox
    started = outbox.start_delivery(_intent("a@example.test"), owner="w", fence=1, locked_until=_until()).row
    ensured = outbox.ensure_row(_intent("b@example.test"))
    for row in (started, ensured):
        expected = expires_at_epoch(parse_iso(row.created_at), 45)
        assert int(_stored_item(service, row)[RETENTION_TTL_ATTRIBUTE]["N"]) == expected
    # The attribute is storage bookkeeping: the rows read back as rows.
    assert outbox.get_row(10, "a@example.test", 1).attempts == 1
