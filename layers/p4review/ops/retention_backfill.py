"""One-off upgrade of items written before the active-jobs index and retention existed (issue 17):
an operator command (`p4review retention backfill`), never a function's path.

Each item gets what a new one is written with, by a conditional write that only adds a missing
attribute, so running it again, or beside the live service, changes nothing twice:
  * an active job (queued, in_progress, retryable_failed) without `active_job`: the index key;
  * a job, changelist-version claim or outbox row without `expires_at`: its retention, counted
    from its `created_at` (the changelist head and the token budget are left alone).
A job that ends between the scan and the write keeps no index key: the condition re-checks its
status. It scans both tables whole: an operator's one-off, with the operator's credentials."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from p4review.clock import parse_iso
from p4review.models.job import ACTIVE_STATUSES
from p4review.resources import ACTIVE_JOBS_INDEX, RETENTION_TTL_ATTRIBUTE
from p4review.stores.aws_errors import translate
from p4review.stores.dynamo_codec import from_item, to_value
from p4review.stores.dynamo_writes import ConditionFailed, conditional_update
from p4review.stores.record_retention import expires_at_epoch

_RETAINED_JOB_ITEMS = ("job", "changelist_version")


@dataclass
class BackfillReport:
    items_scanned: int = 0
    indexed: int = 0
    retention_set: int = 0


class DynamoRetentionBackfill:
    def __init__(self, client: Any, jobs_table: str, outbox_table: str, retention_days: int):
        self._client = client
        self._jobs = jobs_table
        self._outbox = outbox_table
        self._retention_days = retention_days

    def run(self) -> BackfillReport:
        report = BackfillReport()
        for table in (self._jobs, self._outbox):
            for item in self._scan(table):
                report.items_scanned += 1
                data = from_item(item)
                is_job = data.get("record_type") == "job"
                if is_job and ACTIVE_JOBS_INDEX.partition_key not in data and data.get("status") in ACTIVE_STATUSES:
                    report.indexed += self._add_index_key(item, data["job_id"])
                retained = table == self._outbox or data.get("record_type") in _RETAINED_JOB_ITEMS
                if retained and RETENTION_TTL_ATTRIBUTE not in data and data.get("created_at"):
                    report.retention_set += self._add_retention(table, item, data["created_at"])
        return report

    def _scan(self, table: str) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            try:
                page = self._client.scan(**kwargs)
            except Exception as exc:
                translate(exc, "scan for the retention backfill")
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _add_index_key(self, item: dict[str, Any], job_id: str) -> int:
        statuses = {f":s{index}": to_value(status.value) for index, status in enumerate(ACTIVE_STATUSES)}
        return self._add(
            self._jobs,
            {"pk": item["pk"]},
            "SET #attribute = :value",
            f"attribute_not_exists(#attribute) AND #status IN ({', '.join(statuses)})",
            {"#attribute": ACTIVE_JOBS_INDEX.partition_key, "#status": "status"},
            {":value": to_value(job_id), **statuses},
        )

    def _add_retention(self, table: str, item: dict[str, Any], created_at: str) -> int:
        key: dict[str, Any] = {name: item[name] for name in ("pk", "sk") if name in item}
        expires = expires_at_epoch(parse_iso(created_at), self._retention_days)
        return self._add(
            table,
            key,
            "SET #attribute = :value",
            "attribute_exists(pk) AND attribute_not_exists(#attribute)",
            {"#attribute": RETENTION_TTL_ATTRIBUTE},
            {":value": to_value(expires)},
        )

    def _add(
        self,
        table: str,
        key: dict[str, Any],
        update: str,
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
    ) -> int:
        try:
            conditional_update(
                self._client,
                table=table,
                key=key,
                update=update,
                condition=condition,
                names=names,
                values=values,
                operation="retention backfill",
                return_new=False,
            )
        except ConditionFailed:
            return 0  # added meanwhile, or the job ended: nothing to do
        return 1
