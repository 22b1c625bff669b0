"""What the sweeper reads and writes in the jobs table.

Active jobs are found by scanning the sparse `active-jobs` index (`resources.ACTIVE_JOBS_INDEX`):
only active jobs carry its key, so a sweep reads O(active) items however many finished jobs,
changelist claims and heads the table holds. The index is eventually consistent; every write
the sweeper makes is conditioned on what it observed, so a stale entry costs a refused write."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict

from p4review.clock import now_iso
from p4review.models.job import ACTIVE_STATUSES, AuditEvent, JobStatus, StageName, StageState, StageStatus
from p4review.resources import ACTIVE_JOBS_INDEX
from p4review.stores.aws_errors import translate
from p4review.stores.dynamo_codec import from_item, to_value
from p4review.stores.dynamo_jobs import audit_value, job_pk
from p4review.stores.dynamo_retention import not_expired_condition
from p4review.stores.dynamo_writes import ConditionFailed, conditional_update

_PROJECTED = ACTIVE_JOBS_INDEX.projected


class ActiveJob(BaseModel):
    """The slice of a job the sweeper needs (no audit trail, no artifacts)."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    status: JobStatus
    stages: dict[StageName, StageState]
    created_at: str
    updated_at: str


class DynamoSweepRepository:
    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name
        # Items the index scans returned before filtering (what a sweep pays for): the benchmark's figure.
        self.items_read = 0

    def active_jobs(self) -> Iterator[ActiveJob]:
        # The filter drops an entry the index has not caught up on (a job that just ended), and a
        # job past its retention (it reads as gone: nothing is re-sent for it).
        values: dict[str, Any] = {f":s{index}": to_value(status.value) for index, status in enumerate(ACTIVE_STATUSES)}
        statuses = ", ".join(values)
        live = not_expired_condition(values)
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": ACTIVE_JOBS_INDEX.name,
            "FilterExpression": f"#status IN ({statuses}) AND {live}",
            "ProjectionExpression": ", ".join(("#status" if name == "status" else name) for name in _PROJECTED),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": values,
        }
        while True:
            try:
                page = self._client.scan(**kwargs)
            except Exception as exc:
                translate(exc, "scan active jobs")
            self.items_read += page.get("ScannedCount", 0)
            for item in page.get("Items", []):
                yield ActiveJob.model_validate(from_item(item))
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def requeue_expired(self, job_id: str, stage: StageName, observed: StageState, actor: str) -> bool:
        """running -> pending for a lease that expired, guarded by the owner and expiry we saw:
        of two sweepers (or a sweeper and a late heartbeat) exactly one write wins."""
        now = now_iso()
        event = AuditEvent(
            at=now,
            actor=actor,
            event="lease_expired_requeued",
            stage=stage,
            detail=f"lease of {observed.claimed_by} expired at {observed.lease_expires_at}",
        )
        values = {
            ":pending": to_value(StageStatus.PENDING.value),
            ":running": to_value(StageStatus.RUNNING.value),
            ":null": to_value(None),
            ":now": to_value(now),
            ":owner": to_value(observed.claimed_by),
            ":expiry": to_value(observed.lease_expires_at),
            ":event": audit_value(event),
        }
        condition = (
            "stages.#stage.#st = :running AND stages.#stage.claimed_by = :owner "
            "AND stages.#stage.lease_expires_at = :expiry AND stages.#stage.lease_expires_at <= :now "
            f"AND {not_expired_condition(values)}"
        )
        try:
            conditional_update(
                self._client,
                table=self._table,
                key={"pk": to_value(job_pk(job_id))},
                update=(
                    "SET stages.#stage.#st = :pending, stages.#stage.claimed_by = :null, "
                    "stages.#stage.lease_expires_at = :null, updated_at = :now, audit = list_append(audit, :event)"
                ),
                condition=condition,
                names={"#stage": stage.value, "#st": "status"},
                values=values,
                operation="requeue expired lease",
                return_new=False,
            )
        except ConditionFailed:
            return False
        return True

    def mark_handoff_resent(self, job_id: str, stage: StageName, observed_updated_at: str, actor: str) -> bool:
        """Record that the sweeper re-sends `stage`'s lost hand-off, so the next re-send waits a
        full stranded period again (without it every sweep would add one more message). Guarded
        by the `updated_at` the sweeper observed: of two sweepers exactly one re-sends."""
        now = now_iso()
        event = AuditEvent(
            at=now,
            actor=actor,
            event="stranded_handoff_resent",
            stage=stage,
            detail=f"no progress since {observed_updated_at}",
        )
        values = {
            ":now": to_value(now),
            ":observed": to_value(observed_updated_at),
            ":pending": to_value(StageStatus.PENDING.value),
            ":event": audit_value(event),
        }
        live = not_expired_condition(values)
        try:
            conditional_update(
                self._client,
                table=self._table,
                key={"pk": to_value(job_pk(job_id))},
                update="SET updated_at = :now, audit = list_append(audit, :event)",
                condition=f"updated_at = :observed AND stages.#stage.#st = :pending AND {live}",
                names={"#stage": stage.value, "#st": "status"},
                values=values,
                operation="mark stranded hand-off resent",
                return_new=False,
            )
        except ConditionFailed:
            return False
        return True
