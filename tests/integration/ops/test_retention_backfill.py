"""`p4review retention backfill` against the moto server, on tables holding malformed items: each
is skipped, named by its key (escaped, never its content) and counted, and the rest is done."""

from __future__ import annotations

import argparse
import json

import pytest

from p4review.cli import retention as retention_cli
from p4review.ingest.intake import new_job
from p4review.models.api import CreateReviewRequest
from p4review.resources import ACTIVE_JOBS_INDEX, RETENTION_TTL_ATTRIBUTE
from p4review.stores.dynamo_codec import to_item
from p4review.stores.dynamo_jobs import DynamoJobRepository, job_pk
from tests.unit.cli.terminal import HOSTILE, assert_terminal_safe

NOW = "2026-11-25T10:00:00.000000Z"
# Each malformed item's content: none of it may be shown.
CONTENT = "UNSHOWN-CONTENT"


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        provisioned.ddb = provisioned.client("dynamodb")
        yield provisioned


def _put(service, table, item):
    service.ddb.put_item(TableName=service.resources.tables[table], Item=to_item(item))


def _backfill(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir", default=str(tmp_path))
    retention_cli.register(parser.add_subparsers(dest="command"))
    parsed = parser.parse_args(["retention", "backfill"])
    capsys.readouterr()
    code = parsed.func(parsed)
    out, err = capsys.readouterr()
    return code, json.loads(out), err


@pytest.mark.spec("OPS-5")
def test_malformed_items_are_skipped_named_and_counted_and_the_rest_is_backfilled(service, tmp_path, capsys):
    """Found by a hostile-input probe: the backfill died with a traceback on a malformed item,
    at the same item on every run, so nothing after it was ever upgraded."""
    repo = DynamoJobRepository(service.ddb, service.resources.tables["jobs"], retention_days=400)
    good = new_job(
        CreateReviewRequest(idempotency_key="k-good", changelist_id=701, review_version=1, kind="submitted"), NOW, "t"
    )
    assert repo.create_job(good).created
    service.ddb.update_item(
        TableName=service.resources.tables["jobs"],
        Key={"pk": {"S": job_pk(good.job_id)}},
        UpdateExpression="REMOVE active_job, expires_at",
    )
    job = {"record_type": "job", "status": "queued", "created_at": NOW, "note": CONTENT}
    _put(service, "jobs", {**job, "pk": job_pk("wrong-type-id"), "job_id": 4711})
    _put(service, "jobs", {**job, "pk": job_pk("missing-id"), "status": "in_progress"})
    _put(service, "jobs", {**job, "pk": job_pk("huge-id"), "job_id": "j" * 2049})  # over DynamoDB's key size
    _put(service, "jobs", {**job, "pk": job_pk("bad-time"), "job_id": "j", "status": "failed", "created_at": CONTENT})
    _put(service, "jobs", {**job, "pk": job_pk("status-list"), "job_id": "j", "status": [CONTENT]})
    _put(service, "jobs", {"pk": "CLV#702#1", "record_type": "changelist_version", "created_at": [CONTENT]})
    _put(service, "jobs", {**job, "pk": job_pk("hostile" + HOSTILE), "job_id": "j", "created_at": 20261125})
    _put(service, "outbox", {"pk": "CL#703", "sk": "V#1#a@example.test", "created_at": "2026-13-45T99:00:00Z"})

    for run in (1, 2):
        code, summary, err = _backfill(tmp_path, capsys)
        assert code == 1, err  # done, with items skipped (docs/runbook.md)
        assert summary == {
            "items_scanned": 11,  # the good job, its claim and its changelist head, and the 8
            "indexed": 1 if run == 1 else 0,
            "retention_set": 1 if run == 1 else 0,
            "skipped": 8,
        }
        lines = err.splitlines()
        assert len(lines) == 8 + 1, err  # one line per item, and what to do about them
        assert_terminal_safe(err)
        assert CONTENT not in err and "4711" not in err and "20261125" not in err
        for key, field in (
            ("wrong-type-id", "job_id"),
            ("missing-id", "job_id"),
            ("huge-id", "job_id"),
            ("bad-time", "created_at"),
            ("status-list", "status"),
            ("CLV#702#1", "created_at"),
            ("hostile\\x1b]52;c;", "created_at"),
            ("sk=V#1#a@example.test", "created_at"),
        ):
            assert any(key in line and line.endswith(f"invalid {field}") for line in lines), (key, err)

    item = service.ddb.get_item(TableName=service.resources.tables["jobs"], Key={"pk": {"S": job_pk(good.job_id)}})
    assert item["Item"][ACTIVE_JOBS_INDEX.partition_key] == {"S": good.job_id}
    assert RETENTION_TTL_ATTRIBUTE in item["Item"]
