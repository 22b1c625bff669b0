"""One-off upgrade of items written before the active-jobs index and retention existed (issue 17):
an operator command (`p4review retention backfill`), never a function's path.

Each item gets what a new one is written with, by a conditional write that only adds a missing
attribute, so running it again, or beside the live service, changes nothing twice:
  * an active job (queued, in_progress, retryable_failed) without `active_job`: the index key;
  * a job, changelist-version claim or outbox row without `expires_at`: its retention, counted
    from its `created_at` (the changelist head and the token budget are left alone).
A job that ends between the scan and the write keeps no index key: the condition re-checks its
status. It scans both tables whole: an operator's one-off, with the operator's credentials.

An item it cannot read (a wrong-typed or missing job_id, status or created_at, or a created_at
that is no timestamp) is skipped, named by its key and the fields at fault (never their content)
and counted; the run goes on. Nothing is written to a skipped item, so it is named again by
every run until it is repaired or deleted."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from p4review.clock import parse_iso
from p4review.models.job import ACTIVE_STATUSES
from p4review.resources import ACTIVE_JOBS_INDEX, RETENTION_TTL_ATTRIBUTE
from p4review.stores.aws_errors import translate
from p4review.stores.dynamo_codec import from_item, to_value
from p4review.stores.dynamo_writes import ConditionFailed, conditional_update
from p4review.stores.record_retention import expires_at_epoch

_RETAINED_JOB_ITEMS = ("job", "changelist_version")
# DynamoDB refuses a partition key over 2048 bytes: such a job id could never be the index key,
# and the refused write would stop every run at that item.
_MAX_KEY_BYTES = 2048


@dataclass(frozen=True)
class SkippedItem:
    """A malformed item: its table ("jobs" or "outbox"), its key as stored, and which of its
    fields are at fault."""

    table: str
    key: dict[str, Any]
    fields: tuple[str, ...]


@dataclass
class BackfillReport:
    items_scanned: int = 0
    indexed: int = 0
    retention_set: int = 0
    skipped: list[SkippedItem] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "items_scanned": self.items_scanned,
            "indexed": self.indexed,
            "retention_set": self.retention_set,
            "skipped": len(self.skipped),
        }


class MalformedItem(ValueError):
    def __init__(self, *fields: str):
        super().__init__(", ".join(fields))
        self.fields = fields


@dataclass(frozen=True)
class _Plan:
    """What one item needs: its index key (the job id), its expires_at (epoch seconds)."""

    index_job_id: str | None
    expires_at: int | None


class DynamoRetentionBackfill:
    def __init__(self, client: Any, jobs_table: str, outbox_table: str, retention_days: int):
        self._client = client
        self._jobs = jobs_table
        self._outbox = outbox_table
        self._retention_days = retention_days

    def run(self) -> BackfillReport:
        report = BackfillReport()
        for name, table in (("jobs", self._jobs), ("outbox", self._outbox)):
            for item in self._scan(table):
                report.items_scanned += 1
                try:
                    plan = self._plan(table, item)
                except MalformedItem as bad:
                    key: dict[str, Any] = {part: item[part] for part in ("pk", "sk") if part in item}
                    report.skipped.append(SkippedItem(table=name, key=key, fields=bad.fields))
                    continue
                if plan.index_job_id is not None:
                    report.indexed += self._add_index_key(item, plan.index_job_id)
                if plan.expires_at is not None:
                    report.retention_set += self._add_retention(table, item, plan.expires_at)
        return report

    def _plan(self, table: str, item: dict[str, Any]) -> _Plan:
        """What `item` lacks, from the fields it is read by; MalformedItem names those at fault."""
        try:
            data = from_item(item)
        except (TypeError, ValueError, ArithmeticError):
            raise MalformedItem("item") from None
        record_type = data.get("record_type")
        index_job_id = None
        if record_type == "job" and ACTIVE_JOBS_INDEX.partition_key not in data:
            status = data.get("status")
            if not isinstance(status, str):
                raise MalformedItem("status")
            if status in ACTIVE_STATUSES:
                index_job_id = data.get("job_id")
                if not isinstance(index_job_id, str) or not 0 < len(index_job_id.encode()) <= _MAX_KEY_BYTES:
                    raise MalformedItem("job_id")
        expires_at = None
        retained = table == self._outbox or record_type in _RETAINED_JOB_ITEMS
        if retained and RETENTION_TTL_ATTRIBUTE not in data:
            created_at = data.get("created_at")
            try:
                moment = parse_iso(created_at)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise MalformedItem("created_at") from None
            expires_at = expires_at_epoch(moment, self._retention_days)
        return _Plan(index_job_id, expires_at)

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

    def _add_retention(self, table: str, item: dict[str, Any], expires: int) -> int:
        key: dict[str, Any] = {name: item[name] for name in ("pk", "sk") if name in item}
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
