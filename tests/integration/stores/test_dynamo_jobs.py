"""The jobs table's conditional writes, raced from real threads, against the moto server
(DynamoDB served one request at a time, so conditions are atomic as in DynamoDB) and against AWS's
DynamoDB Local (each test runs on both: `dynamo_backend`, tests/integration/conftest.py)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from p4review.errors import IllegalTransitionError, StaleWriteError
from p4review.ingest.intake import new_job
from p4review.models.api import CreateReviewRequest
from p4review.models.job import AuditEvent, JobStatus, StageName, StageStatus
from p4review.models.outbox import DeliveryStatus, OutboxRow
from p4review.ports import ClaimState, CreateConflict
from p4review.stores.dynamo_jobs import DynamoJobRepository
from p4review.stores.dynamo_outbox import DynamoOutboxRepository

NOW = "2026-11-21T10:00:00.000000Z"


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        yield provisioned


def _repo(service):
    return DynamoJobRepository(service.client("dynamodb"), service.resources.tables["jobs"])


def _job(key="key-1", changelist_id=10, version=1, rerun=False):
    request = CreateReviewRequest(
        idempotency_key=key, changelist_id=changelist_id, review_version=version, kind="submitted", rerun=rerun
    )
    return new_job(request, NOW, "test")


@pytest.mark.spec("NOT-2", "IDEM-1", "IDEM-2")
def test_create_then_duplicate_key_returns_the_winner_from_the_failed_write(service):
    repo = _repo(service)
    assert repo.create_job(_job()).created
    outcome = repo.create_job(_job())
    assert not outcome.created
    assert outcome.conflict == CreateConflict.IDEMPOTENCY_KEY
    assert outcome.existing_job.job_id == _job().job_id
    assert outcome.existing_job.audit[0].event == "job_created"


def test_one_job_per_changelist_version(service):
    repo = _repo(service)
    repo.create_job(_job("a"))
    outcome = repo.create_job(_job("b"))
    assert outcome.conflict == CreateConflict.CHANGELIST_VERSION
    assert outcome.existing_job_id == _job("a").job_id


@pytest.mark.spec("NOT-5")
def test_rerun_rules_are_one_conditional_transaction(service):
    repo = _repo(service)
    repo.create_job(_job("a", version=1))
    assert repo.create_job(_job("b", version=2)).conflict == CreateConflict.CHANGELIST_HEAD
    assert repo.create_job(_job("c", version=2, rerun=True)).created
    stale = repo.create_job(_job("d", version=1, rerun=True))
    assert stale.conflict == CreateConflict.CHANGELIST_VERSION
    assert repo.create_job(_job("e", version=3, rerun=True)).created
    refused = repo.create_job(_job("f", version=2, rerun=True))
    assert refused.conflict == CreateConflict.CHANGELIST_VERSION
    older = repo.create_job(_job("g", changelist_id=10, version=1, rerun=False))
    assert older.conflict == CreateConflict.CHANGELIST_VERSION
    # Nothing half-written: the refused keys never became jobs.
    assert repo.get_job(_job("b", version=2).job_id) is None
    assert repo.get_job(_job("f", version=2, rerun=True).job_id) is None


@pytest.mark.spec("ERR-5", "NOT-2", "IDEM-3")
def test_fifty_concurrent_creates_make_exactly_one_job(service):
    barrier = threading.Barrier(50)

    def create(_):
        repo = _repo(service)  # a client per thread, as separate Lambda instances would have
        barrier.wait()
        return repo.create_job(_job("raced"))

    with ThreadPoolExecutor(max_workers=50) as pool:
        outcomes = list(pool.map(create, range(50)))
    assert sum(outcome.created for outcome in outcomes) == 1
    losers = [outcome for outcome in outcomes if not outcome.created]
    assert {outcome.existing_job.job_id for outcome in losers} == {_job("raced").job_id}


@pytest.mark.spec("G-1")
def test_illegal_transition_is_refused_and_not_applied(service):
    repo = _repo(service)
    job = _job()
    repo.create_job(job)
    event = AuditEvent(at=NOW, actor="test", event="forced", to_status=JobStatus.SUCCEEDED)
    with pytest.raises(IllegalTransitionError):
        repo.transition(job.job_id, JobStatus.SUCCEEDED, event)
    stored = repo.get_job(job.job_id)
    assert stored.status == JobStatus.QUEUED
    assert [entry.event for entry in stored.audit] == ["job_created"]


def test_a_transition_nothing_may_make_is_refused_before_any_call(service):
    """Nothing moves to QUEUED: the condition would be `#status IN ()`, which AWS rejects as a
    ValidationException (and moto as a ValueError). The repository refuses it itself."""
    repo = _repo(service)
    job = _job("requeue")
    repo.create_job(job)
    calls = []
    repo._client.meta.events.register("before-call.dynamodb.UpdateItem", lambda **kwargs: calls.append(kwargs))
    event = AuditEvent(at=NOW, actor="test", event="forced", to_status=JobStatus.QUEUED)
    with pytest.raises(IllegalTransitionError, match="no status may move to queued"):
        repo.transition(job.job_id, JobStatus.QUEUED, event)
    assert calls == []


@pytest.mark.spec("WQ-2", "WQ-15", "WQ-16", "WQ-17", "WQ-19")
def test_only_one_of_many_workers_claims_a_stage(service):
    repo = _repo(service)
    job = _job()
    repo.create_job(job)
    barrier = threading.Barrier(8)

    def claim(index):
        worker_repo = _repo(service)
        barrier.wait()
        return worker_repo.claim_stage(job.job_id, StageName.FETCH, f"worker-{index}", lease_seconds=60)

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(claim, range(8)))
    assert [outcome.state for outcome in outcomes].count(ClaimState.CLAIMED) == 1
    assert {outcome.state for outcome in outcomes} == {ClaimState.CLAIMED, ClaimState.LEASE_HELD}
    stored = repo.get_job(job.job_id)
    assert stored.status == JobStatus.IN_PROGRESS
    assert stored.stages[StageName.FETCH].attempts == 1


@pytest.mark.spec("G-3", "WQ-1", "WQ-3", "WQ-4", "WQ-8", "WQ-12", "WQ-18", "WQP-4", "WQP-6")
def test_owner_predicate_stops_a_stale_worker(service):
    repo = _repo(service)
    job = _job()
    repo.create_job(job)
    assert repo.claim_stage(job.job_id, StageName.FETCH, "slow-worker", lease_seconds=1).state == ClaimState.CLAIMED
    time.sleep(1.2)
    taken = repo.claim_stage(job.job_id, StageName.FETCH, "new-worker", lease_seconds=60)
    assert taken.state == ClaimState.CLAIMED
    assert "took over expired lease of slow-worker" in taken.job.audit[-1].detail
    with pytest.raises(StaleWriteError):
        repo.complete_stage(job.job_id, StageName.FETCH, "slow-worker", updates={})
    done = repo.complete_stage(job.job_id, StageName.FETCH, "new-worker", updates={})
    assert done.stages[StageName.FETCH].status == StageStatus.COMPLETED
    assert done.stages[StageName.FETCH].claimed_by is None
    assert repo.claim_stage(job.job_id, StageName.FETCH, "late", 60).state == ClaimState.ALREADY_COMPLETED


def test_a_stage_cannot_start_before_its_predecessor_completes(service):
    repo = _repo(service)
    job = _job()
    repo.create_job(job)
    assert repo.claim_stage(job.job_id, StageName.REVIEW, "w", 60).state == ClaimState.NOT_READY


@pytest.mark.spec("WQP-8", "NOT-8", "NOT-9", "NOT-12", "NOT-13", "IDEM-4", "IDEM-6", "IDEM-9")
def test_outbox_row_is_unique_per_delivery_tuple_and_sent_once(service):
    outbox = DynamoOutboxRepository(service.client("dynamodb"), service.resources.tables["outbox"])
    row = OutboxRow(
        changelist_id=10,
        recipient="dev@example.test",
        review_version=1,
        job_id="j",
        provider_token="t",
        created_at=NOW,
        updated_at=NOW,
    )
    assert outbox.ensure_row(row) == row
    outbox.mark_sent(
        outbox.record_attempt(row, owner="test", fence=1, locked_until="2000-01-01T00:00:00.000000Z"), "queue-1"
    )
    again = outbox.ensure_row(row.model_copy(update={"job_id": "other"}))
    assert again.job_id == "j" and again.notified_at and again.status == DeliveryStatus.SENT
    with pytest.raises(StaleWriteError):
        outbox.mark_sent(again, "queue-2")
    assert outbox.get_row(10, "dev@example.test", 1).notification_id == "queue-1"
    other_version = row.model_copy(update={"review_version": 2})
    assert outbox.ensure_row(other_version).notified_at is None


@pytest.mark.spec("RV-11")
def test_the_changelist_version_claim_names_its_job(service):
    """A versioned rerun finds the previous version's job through its claim (CLV#cl#v)."""
    repo = _repo(service)
    first = _job("v1", changelist_id=77, version=1)
    repo.create_job(first)
    assert repo.job_id_for_version(77, 1) == first.job_id
    assert repo.job_id_for_version(77, 2) is None
    assert repo.job_id_for_version(78, 1) is None
