"""Items one sweep reads, with many finished jobs and a few active ones (issue 17).

The table is filled through the service's own writes (`DynamoJobRepository.create_job`, then the
conditional write that ends a job), so finished jobs, their changelist-version claims and the
changelist heads are the items production holds. The sweep under test scans the sparse
`active-jobs` index (`DynamoSweepRepository.active_jobs`); the baseline, measured on the same
table in the same run, is the filtered Scan of the whole table the sweeper used before it.
Figures are DynamoDB's own `ScannedCount` (items read before any filter), from moto in-process."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from benchmarks.sizes import sized

FINISHED = sized(10_000, 1_000)
ACTIVE = 10
FIRST_CHANGE = 500_000


@dataclass(frozen=True)
class SweepReads:
    finished: int
    active: int
    table_items: int
    index_items_read: int
    active_found: int
    full_scan_items_read: int

    @property
    def ratio_to_active(self) -> float:
        return self.index_items_read / self.active


def _full_table_scan(client: Any, table: str) -> int:
    """The old sweep: a filtered Scan of the table, paying for every item it reads."""
    read, kwargs = 0, {"TableName": table, "Select": "COUNT"}
    while True:
        page = client.scan(**kwargs)
        read += page["ScannedCount"]
        if "LastEvaluatedKey" not in page:
            return read
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _clone(item: dict[str, Any], template: tuple[str, int], target: tuple[str, int]) -> dict[str, Any]:
    """`item` (DynamoDB JSON) with the template job's id and changelist replaced by the target's."""
    (template_id, template_cl), (job_id, changelist) = template, target
    clone = json.loads(
        json.dumps(item)
        .replace(template_id, job_id)
        .replace(f"CL#{template_cl}", f"CL#{changelist}")
        .replace(f"CLV#{template_cl}#", f"CLV#{changelist}#")
    )
    if "changelist_id" in clone:
        clone["changelist_id"] = {"N": str(changelist)}
    return clone


def measure_sweep_reads(finished: int = FINISHED, active: int = ACTIVE) -> SweepReads:
    """Active jobs are created by the service's writes; finished ones too, once, as a template whose
    three items (job, claim, head) are then copied under new ids with BatchWriteItem: moto's
    TransactWriteItems copies the whole table per call, which makes 10,000 real creations take
    hours, and the items are byte for byte what the service wrote."""
    import boto3
    from moto import mock_aws

    from p4review.ingest.intake import new_job
    from p4review.models.api import CreateReviewRequest
    from p4review.models.job import AuditEvent, JobStatus
    from p4review.ops.sweep_store import DynamoSweepRepository
    from p4review.resources import SECRETS
    from p4review.stores.dynamo_jobs import DynamoJobRepository, head_pk, job_pk, version_pk
    from p4review_dev.provision import provision

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    now = "2026-11-25T00:00:00.000000Z"

    def create(repo: DynamoJobRepository, index: int) -> tuple[str, int]:
        request = CreateReviewRequest(
            idempotency_key=f"sweep-bench-{index}",
            changelist_id=FIRST_CHANGE + index,
            review_version=1,
            kind="submitted",
        )
        job = new_job(request, now, "bench")
        assert repo.create_job(job).created
        return job.job_id, job.changelist_id

    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        resources = provision(session, "bench", secret_values={secret.key: "unused" for secret in SECRETS})
        client = session.client("dynamodb")
        table = resources.tables["jobs"]
        repo = DynamoJobRepository(client, table)
        # Active jobs first, while the table is small (each creation is a transaction).
        for index in range(finished, finished + active):
            create(repo, index)
        if finished:
            template = create(repo, 0)
            # Any end state takes a job out of the index the same way (one conditional write).
            end = AuditEvent(at=now, actor="bench", event="failed", to_status=JobStatus.FAILED)
            repo.transition(template[0], JobStatus.FAILED, end)
            items = [
                client.get_item(TableName=table, Key={"pk": {"S": pk}})["Item"]
                for pk in (job_pk(template[0]), version_pk(template[1], 1), head_pk(template[1]))
            ]
            copies = [
                _clone(item, template, (f"{template[0][:-8]}{index:08d}", FIRST_CHANGE + index))
                for index in range(1, finished)
                for item in items
            ]
            for start in range(0, len(copies), 25):
                batch = [{"PutRequest": {"Item": item}} for item in copies[start : start + 25]]
                client.batch_write_item(RequestItems={table: batch})
        sweep_store = DynamoSweepRepository(client, table)
        found = sum(1 for _ in sweep_store.active_jobs())
        full_scan = _full_table_scan(client, table)
        return SweepReads(
            finished=finished,
            active=active,
            table_items=full_scan,
            index_items_read=sweep_store.items_read,
            active_found=found,
            full_scan_items_read=full_scan,
        )


def bench_sweep_reads() -> None:
    result = measure_sweep_reads()
    print(
        f"sweep reads with {result.finished} finished + {result.active} active jobs "
        f"({result.table_items} items in the table): sparse index {result.index_items_read} items "
        f"(x{result.ratio_to_active:.1f} the active count, goal <= x2; found {result.active_found}); "
        f"baseline full-table scan {result.full_scan_items_read} items "
        f"(x{result.full_scan_items_read / max(result.index_items_read, 1):.0f} the index)"
    )


if __name__ == "__main__":
    bench_sweep_reads()
