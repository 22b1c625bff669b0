"""The jobs table's sparse active-jobs index and its retention (issue 17, SEC-23), against the
moto server: the index holds exactly the active jobs through every transition, a sweep reads only
them, job items and claims expire while the changelist head stays, and a request for a version
whose records expired gets a clear 409."""

from __future__ import annotations

from datetime import timedelta

import pytest

from benchmarks.sweep_reads import measure_sweep_reads
from p4review.clock import parse_iso
from p4review.errors import NotFoundError
from p4review.ingest.intake import IntakeOutcome, decide, new_job
from p4review.models.api import CreateReviewRequest
from p4review.models.job import AuditEvent, JobStatus, StageName, StageStatus
from p4review.ops.sweep_store import DynamoSweepRepository
from p4review.resources import ACTIVE_JOBS_INDEX, RETENTION_TTL_ATTRIBUTE
from p4review.stores.dynamo_jobs import DynamoJobRepository, head_pk, job_pk, version_pk
from p4review.stores.job_replay import DynamoJobReplay
from p4review_dev.support.harness import ingest_api

NOW = "2026-11-25T10:00:00.000000Z"


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        provisioned.ddb = provisioned.client("dynamodb")
        provisioned.table = provisioned.resources.tables["jobs"]
        yield provisioned


def _repo(service, retention_days=400):
    return DynamoJobRepository(service.ddb, service.table, retention_days=retention_days)


def _request(key="k-1", changelist_id=77, version=1, rerun=False):
    return CreateReviewRequest(
        idempotency_key=key, changelist_id=changelist_id, review_version=version, kind="submitted", rerun=rerun
    )


def _create(repo, key="k-1", changelist_id=77, version=1, now=NOW):
    job = new_job(_request(key, changelist_id, version), now, "test")
    assert repo.create_job(job).created
    return job


def _indexed(service) -> set[str]:
    page = service.ddb.scan(TableName=service.table, IndexName=ACTIVE_JOBS_INDEX.name)
    return {item[ACTIVE_JOBS_INDEX.partition_key]["S"] for item in page["Items"]}


def _raw(service, pk):
    return service.ddb.get_item(TableName=service.table, Key={"pk": {"S": pk}}).get("Item")


def _event(target):
    return AuditEvent(at=NOW, actor="test", event="moved", to_status=target)


def _run_stage(repo, job_id, stage, finish=None):
    assert repo.claim_stage(job_id, stage, "w", lease_seconds=60).state.value == "claimed"
    return repo.complete_stage(job_id, stage, "w", updates={}, finish_job=finish)


@pytest.mark.spec("WQ-14", "OPS-4")
def test_a_job_is_indexed_while_active_and_leaves_the_index_with_its_end_state(service):
    repo = _repo(service)
    succeeded, failed, dead, retrying = (_create(repo, f"k-{n}", 100 + n) for n in range(4))
    assert _indexed(service) == {succeeded.job_id, failed.job_id, dead.job_id, retrying.job_id}

    _run_stage(repo, succeeded.job_id, StageName.FETCH)
    _run_stage(repo, succeeded.job_id, StageName.REVIEW)
    assert succeeded.job_id in _indexed(service)  # in progress: still active
    _run_stage(repo, succeeded.job_id, StageName.NOTIFY, finish=JobStatus.SUCCEEDED)

    repo.transition(failed.job_id, JobStatus.FAILED, _event(JobStatus.FAILED))

    for job, stage_status, job_status in (
        (dead, StageStatus.FAILED, JobStatus.DEAD_LETTERED),
        (retrying, StageStatus.PENDING, JobStatus.RETRYABLE_FAILED),
    ):
        repo.claim_stage(job.job_id, StageName.FETCH, "w", lease_seconds=60)
        repo.release_stage(
            job.job_id,
            StageName.FETCH,
            "w",
            error_class="P4Timeout",
            error="timed out",
            stage_status=stage_status,
            job_status=job_status,
        )
    assert _indexed(service) == {retrying.job_id}

    # An operator replay brings a dead-lettered job back: it is active, so indexed, again.
    replayed = DynamoJobReplay(service.ddb, service.table).replay_stage(
        dead.job_id, StageName.FETCH, actor="op", ticket="OPS-1", note=None, from_start=False
    )
    assert replayed.status == JobStatus.IN_PROGRESS
    assert _indexed(service) == {retrying.job_id, dead.job_id}
    # The index key is storage bookkeeping, never part of the record read back.
    assert repo.get_job(dead.job_id).model_dump().keys().isdisjoint({"active_job", RETENTION_TTL_ATTRIBUTE})


@pytest.mark.spec("WQ-14", "OPS-4")
def test_a_sweep_reads_only_the_active_jobs(service):
    repo = _repo(service)
    for n in range(30):
        job = _create(repo, f"done-{n}", 1000 + n)
        repo.transition(job.job_id, JobStatus.FAILED, _event(JobStatus.FAILED))
    active = {_create(repo, f"live-{n}", 2000 + n).job_id for n in range(3)}
    store = DynamoSweepRepository(service.ddb, service.table)
    assert {job.job_id for job in store.active_jobs()} == active
    assert store.items_read == 3  # not the 99 items (jobs, claims, heads) in the table


@pytest.mark.spec("OPS-4")
def test_the_sweep_benchmark_measures_what_it_claims():
    """Small sizes of `make bench`'s figure: a benchmark that read nothing, or everything, fails here."""
    result = measure_sweep_reads(finished=200, active=4)
    assert result.active_found == 4
    assert result.index_items_read == 4
    assert result.full_scan_items_read == result.table_items == 3 * 204


@pytest.mark.spec("SEC-23")
def test_job_and_claim_expire_after_the_retention_period_and_the_head_never(service):
    repo = _repo(service, retention_days=30)
    job = _create(repo)
    expected = int((parse_iso(NOW) + timedelta(days=30)).timestamp())
    assert _raw(service, job_pk(job.job_id))[RETENTION_TTL_ATTRIBUTE] == {"N": str(expected)}
    assert _raw(service, version_pk(77, 1))[RETENTION_TTL_ATTRIBUTE] == {"N": str(expected)}
    assert RETENTION_TTL_ATTRIBUTE not in _raw(service, head_pk(77))


@pytest.mark.spec("SEC-23")
def test_a_job_past_its_retention_reads_as_gone_and_is_never_replayed(service, manual_clock):
    repo = _repo(service, retention_days=30)
    manual_clock.now = parse_iso(NOW)
    job = _create(repo)
    repo.claim_stage(job.job_id, StageName.FETCH, "w", lease_seconds=60)
    repo.release_stage(
        job.job_id,
        StageName.FETCH,
        "w",
        error_class="P4Timeout",
        error="timed out",
        stage_status=StageStatus.FAILED,
        job_status=JobStatus.DEAD_LETTERED,
    )
    manual_clock.advance(timedelta(days=30).total_seconds())
    assert repo.get_job(job.job_id) is None
    assert repo.job_id_for_version(77, 1) is None
    with pytest.raises(NotFoundError):
        DynamoJobReplay(service.ddb, service.table).replay_stage(
            job.job_id, StageName.FETCH, actor="op", ticket="OPS-1", note=None, from_start=False
        )
    # Not yet deleted by TTL, but a repeated request is answered as expired, not replayed.
    outcome = repo.create_job(new_job(_request(), NOW, "test"))
    assert decide(_request(), outcome, NOW).outcome == IntakeOutcome.RECORDS_EXPIRED


def _ttl_deletes(service, *pks):
    for pk in pks:
        service.ddb.delete_item(TableName=service.table, Key={"pk": {"S": pk}})


@pytest.mark.spec("SEC-23")
def test_after_ttl_deleted_the_rows_the_api_refuses_the_version_with_a_clear_code(service):
    with ingest_api(service) as api:
        submit = api.api.submit
        first = submit(changelist_id=4242, review_version=1, kind="submitted", idempotency_key="p4-4242-v1")
        rerun = submit(changelist_id=4242, review_version=2, kind="submitted", idempotency_key="p4-4242-v2", rerun=True)
        assert (first.status, rerun.status) == (201, 201)
        ids = [first.body["job_id"], rerun.body["job_id"]]
        _ttl_deletes(service, *(job_pk(job_id) for job_id in ids), version_pk(4242, 1), version_pk(4242, 2))

        # The latest version again (the same request, or under a new key): expired, said plainly.
        for key in ("p4-4242-v2", "another-host-4242-v2"):
            again = submit(changelist_id=4242, review_version=2, kind="submitted", idempotency_key=key, rerun=True)
            assert again.status == 409, again.body
            assert again.body["error"]["code"] == "review_records_expired"
            assert again.body["error"]["details"] == {
                "changelist_id": 4242,
                "requested_version": 2,
                "latest_version": 2,
            }
        # An older version is still what it was: stale.
        older = submit(changelist_id=4242, review_version=1, kind="submitted", idempotency_key="p4-4242-v1")
        assert (older.status, older.body["error"]["code"]) == (409, "stale_review_version")
        assert api.api.get_job(ids[0]).status == 404
        assert not _indexed(service)  # nothing was created, so nothing will be fetched or e-mailed


@pytest.mark.spec("OPS-5")
def test_a_job_written_before_the_index_existed_enters_it_on_its_next_claim(service):
    repo = _repo(service)
    job = _create(repo)
    service.ddb.update_item(  # as an item from before this index: no key
        TableName=service.table, Key={"pk": {"S": job_pk(job.job_id)}}, UpdateExpression="REMOVE active_job"
    )
    assert not _indexed(service)
    repo.claim_stage(job.job_id, StageName.FETCH, "w", lease_seconds=60)
    assert _indexed(service) == {job.job_id}


@pytest.mark.spec("OPS-5")
def test_the_sweeper_neither_sees_nor_writes_a_job_past_its_retention(service, manual_clock):
    repo = _repo(service, retention_days=30)
    manual_clock.now = parse_iso(NOW)
    stranded = _create(repo, "stranded", 501)
    running = _create(repo, "running", 502)
    repo.claim_stage(running.job_id, StageName.FETCH, "w", lease_seconds=60)
    store = DynamoSweepRepository(service.ddb, service.table)
    observed = {job.job_id: job for job in store.active_jobs()}
    assert set(observed) == {stranded.job_id, running.job_id}

    manual_clock.advance(timedelta(days=30).total_seconds())
    assert list(store.active_jobs()) == []  # still in the index until TTL runs, but gone
    assert not store.mark_handoff_resent(stranded.job_id, StageName.FETCH, observed[stranded.job_id].updated_at, "s")
    lease = observed[running.job_id].stages[StageName.FETCH]
    assert not store.requeue_expired(running.job_id, StageName.FETCH, lease, "s")


@pytest.mark.spec("OPS-5")
def test_an_outbox_row_past_its_retention_reads_as_gone(service, manual_clock):
    from p4review.models.outbox import OutboxRow
    from p4review.stores.dynamo_outbox import DynamoOutboxRepository

    outbox = DynamoOutboxRepository(service.ddb, service.resources.tables["outbox"], retention_days=30)
    manual_clock.now = parse_iso(NOW)
    row = OutboxRow(
        changelist_id=77,
        review_version=1,
        recipient="dev@example.test",
        job_id="j-1",
        provider_token="t-1",
        created_at=NOW,
        updated_at=NOW,
    )
    outbox.ensure_row(row)
    assert outbox.get_row(77, "dev@example.test", 1) is not None
    manual_clock.advance(timedelta(days=30).total_seconds())
    assert outbox.get_row(77, "dev@example.test", 1) is None
    assert outbox.rows_for_version(77, 1) == []
    assert outbox.list_rows(None, 10).rows == []


@pytest.mark.spec("CAP-2")
def test_only_the_review_stage_may_be_deferred(service):
    """Notify's send locks are fenced by its attempt count, which a deferral would take back."""
    from p4review.errors import IllegalTransitionError

    repo = _repo(service)
    job = _create(repo)
    repo.claim_stage(job.job_id, StageName.FETCH, "w", lease_seconds=60)
    with pytest.raises(IllegalTransitionError):
        repo.defer_stage(job.job_id, StageName.FETCH, "w", reason="budget")


@pytest.mark.spec("OPS-5")
def test_the_backfill_gives_older_items_their_index_key_and_retention_once(service, tmp_path, capsys):
    """Items from before the index and retention: an active job without its key, a job, claim and
    outbox row without `expires_at`. `p4review retention backfill` adds exactly those, once."""
    import argparse
    import json

    from p4review.cli import retention as retention_cli
    from p4review.models.outbox import OutboxRow
    from p4review.stores.dynamo_outbox import DynamoOutboxRepository

    repo = _repo(service)
    active, ended = _create(repo, "old-active", 601), _create(repo, "old-ended", 602)
    repo.transition(ended.job_id, JobStatus.FAILED, _event(JobStatus.FAILED))
    outbox_table = service.resources.tables["outbox"]
    DynamoOutboxRepository(service.ddb, outbox_table).ensure_row(
        OutboxRow(
            changelist_id=601,
            review_version=1,
            recipient="dev@example.test",
            job_id=active.job_id,
            provider_token="t-1",
            created_at=NOW,
            updated_at=NOW,
        )
    )
    old_items = [(service.table, {"pk": {"S": pk}}) for pk in (job_pk(active.job_id), job_pk(ended.job_id))]
    old_items += [(service.table, {"pk": {"S": version_pk(cl, 1)}}) for cl in (601, 602)]
    old_items += [(outbox_table, item_key) for item_key in _keys(service, outbox_table)]
    for table, key in old_items:  # as written before issue 17
        service.ddb.update_item(TableName=table, Key=key, UpdateExpression="REMOVE active_job, expires_at")
    assert not _indexed(service)

    def backfill():
        parser = argparse.ArgumentParser()
        parser.add_argument("--state-dir", default=str(tmp_path))
        retention_cli.register(parser.add_subparsers(dest="command"))
        parsed = parser.parse_args(["retention", "backfill"])
        capsys.readouterr()
        assert parsed.func(parsed) == 0
        return json.loads(capsys.readouterr().out)

    assert backfill() == {"items_scanned": 7, "indexed": 1, "retention_set": 5, "skipped": 0}
    assert _indexed(service) == {active.job_id}  # the ended job stays out
    expected = str(int((parse_iso(NOW) + timedelta(days=400)).timestamp()))
    for table, key in old_items:
        item = service.ddb.get_item(TableName=table, Key=key)["Item"]
        assert item[RETENTION_TTL_ATTRIBUTE] == {"N": expected}
    assert RETENTION_TTL_ATTRIBUTE not in _raw(service, head_pk(601))  # heads are kept for ever
    assert backfill() == {"items_scanned": 7, "indexed": 0, "retention_set": 0, "skipped": 0}  # nothing twice


def _keys(service, table):
    return [{"pk": item["pk"], "sk": item["sk"]} for item in service.ddb.scan(TableName=table)["Items"]]
