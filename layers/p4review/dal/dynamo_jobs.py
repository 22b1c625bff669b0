"""Review jobs in DynamoDB. Every uniqueness, transition and ownership rule is a
conditional write; a losing write learns the winner's record from ALL_OLD.

Items in the jobs table:
  JOB#<job_id>            the job (job_id is derived from the idempotency key)
  CLV#<changelist>#<ver>  claim: at most one job per (changelist_id, review_version)
  CL#<changelist>         head: the highest review_version accepted for the changelist
"""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

from p4review.clock import now_iso, to_iso, utc_now
from p4review.dal.aws_errors import translate
from p4review.dal.dynamo_codec import from_item, to_item, to_value
from p4review.dal.dynamo_writes import ConditionFailed, conditional_update
from p4review.dal.ports import ClaimOutcome, ClaimState, CreateConflict, CreateOutcome
from p4review.errors import IllegalTransitionError, LeaseLostError, NotFoundError, StaleWriteError, StorageError
from p4review.logic.transitions import check_transition, predecessors
from p4review.models.job import (
    ACTIVE_STATUSES,
    STAGE_ORDER,
    AuditEvent,
    JobStatus,
    ReviewJob,
    StageName,
    StageStatus,
)

# Real DynamoDB cancels concurrent transactions on the same item with TransactionConflict;
# the retry then meets the winner's committed record and fails its condition instead.
_CONFLICT_RETRIES = 8


def job_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


def version_pk(changelist_id: int, review_version: int) -> str:
    return f"CLV#{changelist_id}#{review_version}"


def head_pk(changelist_id: int) -> str:
    return f"CL#{changelist_id}"


def job_from_item(item: dict[str, Any]) -> ReviewJob:
    data = from_item(item)
    for key in ("pk", "record_type"):
        data.pop(key, None)
    return ReviewJob.model_validate(data)


def audit_value(event: AuditEvent) -> dict[str, Any]:
    return to_value([event.model_dump(mode="json", exclude_none=True)])


class DynamoJobRepository:
    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name

    # ---- creation -------------------------------------------------------------------
    def create_job(self, job: ReviewJob) -> CreateOutcome:
        # Unset fields are left out, not stored as NULL, so if_not_exists() can fill them later.
        job_item = to_item(
            {"pk": job_pk(job.job_id), "record_type": "job", **job.model_dump(mode="json", exclude_none=True)}
        )
        version_item = to_item(
            {
                "pk": version_pk(job.changelist_id, job.review_version),
                "record_type": "changelist_version",
                "job_id": job.job_id,
                "created_at": job.created_at,
            }
        )
        head_item = to_item(
            {
                "pk": head_pk(job.changelist_id),
                "record_type": "changelist_head",
                "latest_version": job.review_version,
                "latest_job_id": job.job_id,
                "updated_at": job.created_at,
            }
        )
        head_put: dict[str, Any] = {
            "TableName": self._table,
            "Item": head_item,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if job.rerun:
            # A versioned rerun must be strictly newer than anything accepted before.
            head_put["ConditionExpression"] = "attribute_not_exists(pk) OR latest_version < :version"
            head_put["ExpressionAttributeValues"] = {":version": to_value(job.review_version)}
        else:
            head_put["ConditionExpression"] = "attribute_not_exists(pk)"
        items = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": job_item,
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": version_item,
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {"Put": head_put},
        ]
        for attempt in range(_CONFLICT_RETRIES):
            try:
                self._client.transact_write_items(TransactItems=items)
                return CreateOutcome(created=True, job=job)
            except Exception as exc:  # classified below
                reasons = _cancellation_reasons(exc)
                if reasons is None:
                    translate(exc, "create job")
                if any(reason.get("Code") == "TransactionConflict" for reason in reasons):
                    time.sleep(random.uniform(0, 0.02 * (2**attempt)))
                    continue
                return self._explain_refusal(reasons)
        raise StorageError("create job: transaction kept conflicting")

    def _explain_refusal(self, reasons: list[dict[str, Any]]) -> CreateOutcome:
        job_reason, version_reason, head_reason = (reasons + [{}, {}, {}])[:3]
        if job_reason.get("Code") == "ConditionalCheckFailed":
            existing = job_from_item(job_reason["Item"]) if job_reason.get("Item") else None
            return CreateOutcome(
                created=False,
                conflict=CreateConflict.IDEMPOTENCY_KEY,
                existing_job=existing,
                existing_job_id=existing.job_id if existing else None,
            )
        if version_reason.get("Code") == "ConditionalCheckFailed":
            winner_id = from_item(version_reason.get("Item", {})).get("job_id")
            existing = self.get_job(winner_id) if winner_id else None
            return CreateOutcome(
                created=False,
                conflict=CreateConflict.CHANGELIST_VERSION,
                existing_job=existing,
                existing_job_id=winner_id,
            )
        if head_reason.get("Code") == "ConditionalCheckFailed":
            head = from_item(head_reason.get("Item", {}))
            return CreateOutcome(
                created=False,
                conflict=CreateConflict.CHANGELIST_HEAD,
                existing_job_id=head.get("latest_job_id"),
                head_latest_version=head.get("latest_version"),
            )
        raise StorageError("create job: transaction cancelled without a failed condition")

    # ---- reads ----------------------------------------------------------------------
    def get_job(self, job_id: str) -> ReviewJob | None:
        try:
            answer = self._client.get_item(
                TableName=self._table, Key={"pk": to_value(job_pk(job_id))}, ConsistentRead=True
            )
        except Exception as exc:
            translate(exc, "get job")
        item = answer.get("Item")
        return job_from_item(item) if item else None

    def job_id_for_version(self, changelist_id: int, review_version: int) -> str | None:
        try:
            answer = self._client.get_item(
                TableName=self._table,
                Key={"pk": to_value(version_pk(changelist_id, review_version))},
                ConsistentRead=True,
            )
        except Exception as exc:
            translate(exc, "get changelist version")
        item = answer.get("Item")
        return from_item(item).get("job_id") if item else None

    # ---- job status -----------------------------------------------------------------
    def transition(self, job_id: str, target: JobStatus, event: AuditEvent) -> ReviewJob:
        allowed_from = sorted(predecessors(target))
        if not allowed_from:
            # Nothing may move to `target` (QUEUED): `#status IN ()` is a ValidationException on
            # AWS and a ValueError in moto. Refuse it here, before any call.
            raise IllegalTransitionError(f"no status may move to {target.value}")
        placeholders = {f":from{index}": to_value(status.value) for index, status in enumerate(allowed_from)}
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key={"pk": to_value(job_pk(job_id))},
                update="SET #status = :target, updated_at = :now, audit = list_append(audit, :event)",
                condition=f"attribute_exists(pk) AND #status IN ({', '.join(placeholders)})",
                names={"#status": "status"},
                values={
                    ":target": to_value(target.value),
                    ":now": to_value(event.at),
                    ":event": audit_value(event),
                    **placeholders,
                },
                operation="transition job",
            )
        except ConditionFailed as refused:
            if not refused.old_item:
                raise NotFoundError(f"job {job_id} not found") from None
            current = job_from_item(refused.old_item)
            if current.status == target:
                return current  # already there: a retried transition is a no-op
            check_transition(current.status, target)
            raise IllegalTransitionError(f"job moved to {current.status.value} concurrently") from None
        return job_from_item(attributes)

    # ---- stage leases ---------------------------------------------------------------
    def claim_stage(self, job_id: str, stage: StageName, worker_id: str, lease_seconds: int) -> ClaimOutcome:
        job = self.get_job(job_id)
        if job is None:
            return ClaimOutcome(ClaimState.MISSING)
        verdict = _claim_verdict(job, stage)
        if verdict is not None:
            return ClaimOutcome(verdict, job)
        now = utc_now()
        now_text = to_iso(now)
        state = job.stages[stage]
        detail = f"worker={worker_id}"
        if state.status == StageStatus.RUNNING:
            detail += f" took over expired lease of {state.claimed_by}"
        event = AuditEvent(
            at=now_text,
            actor=worker_id,
            event="stage_claimed",
            stage=stage,
            from_status=job.status,
            to_status=JobStatus.IN_PROGRESS,
            detail=detail,
        )
        names = {"#stage": stage.value, "#st": "status", "#job_status": "status"}
        values = {
            ":running": to_value(StageStatus.RUNNING.value),
            ":pending": to_value(StageStatus.PENDING.value),
            ":worker": to_value(worker_id),
            ":expires": to_value(to_iso(now + timedelta(seconds=lease_seconds))),
            ":now": to_value(now_text),
            ":one": to_value(1),
            ":null": to_value(None),
            ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
            ":observed": to_value(job.status.value),
            ":event": audit_value(event),
        }
        condition = (
            "#job_status = :observed AND (stages.#stage.#st = :pending OR "
            "(stages.#stage.#st = :running AND stages.#stage.lease_expires_at <= :now))"
        )
        previous = STAGE_ORDER.index(stage) - 1
        if previous >= 0:
            names["#previous"] = STAGE_ORDER[previous].value
            values[":completed"] = to_value(StageStatus.COMPLETED.value)
            condition += " AND stages.#previous.#st = :completed"
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key={"pk": to_value(job_pk(job_id))},
                update=(
                    "SET stages.#stage.#st = :running, stages.#stage.claimed_by = :worker, "
                    "stages.#stage.lease_expires_at = :expires, stages.#stage.started_at = :now, "
                    "stages.#stage.heartbeat_at = :null, "
                    "stages.#stage.attempts = stages.#stage.attempts + :one, #job_status = :in_progress, "
                    "updated_at = :now, audit = list_append(audit, :event)"
                ),
                condition=condition,
                names=names,
                values=values,
                operation="claim stage",
            )
        except ConditionFailed as refused:
            if not refused.old_item:
                return ClaimOutcome(ClaimState.MISSING)
            current = job_from_item(refused.old_item)
            return ClaimOutcome(_claim_verdict(current, stage) or ClaimState.LEASE_HELD, current)
        return ClaimOutcome(ClaimState.CLAIMED, job_from_item(attributes))

    def renew_lease(self, job_id: str, stage: StageName, worker_id: str, lease_seconds: int) -> str:
        """Heartbeat: push the owner's lease to now + lease_seconds; return the new expiry.

        Guarded like every owner write (WQ-6): stage running AND claimed_by = worker AND job
        in_progress. A refused condition means another worker took the stage over (or the sweeper
        requeued it, or it finished): raise LeaseLostError and let the caller stop.

        Deliberately NOT written: an audit event (one per heartbeat would bloat the item towards
        DynamoDB's 400 KB limit and drown the real transitions) and the job's `updated_at`, which
        means "last state change"; a renewal changes no state. `stages.<stage>.heartbeat_at`
        records the renewal instead. ReturnValues=NONE keeps the heartbeat cheap (no item read-back).
        """
        now = utc_now()
        expires = to_iso(now + timedelta(seconds=lease_seconds))
        try:
            conditional_update(
                self._client,
                table=self._table,
                key={"pk": to_value(job_pk(job_id))},
                update="SET stages.#stage.lease_expires_at = :expires, stages.#stage.heartbeat_at = :now",
                condition=_OWNER_PREDICATE,
                names={"#stage": stage.value, "#st": "status", "#job_status": "status"},
                values={
                    ":expires": to_value(expires),
                    ":now": to_value(to_iso(now)),
                    ":running": to_value(StageStatus.RUNNING.value),
                    ":worker": to_value(worker_id),
                    ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
                },
                operation="renew lease",
                return_new=False,
            )
        except ConditionFailed:
            raise LeaseLostError(f"renew lease: {stage.value} of {job_id} is no longer owned by this worker") from None
        return expires

    def complete_stage(
        self,
        job_id: str,
        stage: StageName,
        worker_id: str,
        *,
        updates: dict[str, Any],
        finish_job: JobStatus | None = None,
    ) -> ReviewJob:
        now_text = now_iso()
        event = AuditEvent(
            at=now_text,
            actor=worker_id,
            event="stage_completed",
            stage=stage,
            from_status=JobStatus.IN_PROGRESS if finish_job else None,
            to_status=finish_job,
        )
        assignments = [
            "stages.#stage.#st = :completed",
            "stages.#stage.completed_at = :now",
            "stages.#stage.claimed_by = :null",
            "stages.#stage.lease_expires_at = :null",
            "stages.#stage.heartbeat_at = :null",
            "updated_at = :now",
            "audit = list_append(audit, :event)",
        ]
        names = {"#stage": stage.value, "#st": "status", "#job_status": "status"}
        values = {
            ":completed": to_value(StageStatus.COMPLETED.value),
            ":running": to_value(StageStatus.RUNNING.value),
            ":worker": to_value(worker_id),
            ":now": to_value(now_text),
            ":null": to_value(None),
            ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
            ":event": audit_value(event),
        }
        for index, (attribute, value) in enumerate(updates.items()):
            names[f"#u{index}"] = attribute
            values[f":u{index}"] = to_value(value)
            assignments.append(f"#u{index} = :u{index}")
        if finish_job is not None:
            check_transition(JobStatus.IN_PROGRESS, finish_job)
            values[":finish"] = to_value(finish_job.value)
            assignments.append("#job_status = :finish")
        return self._owner_update(
            job_id,
            "complete stage",
            "SET " + ", ".join(assignments),
            names,
            values,
        )

    def release_stage(
        self,
        job_id: str,
        stage: StageName,
        worker_id: str,
        *,
        error_class: str,
        error: str,
        stage_status: StageStatus,
        job_status: JobStatus,
    ) -> ReviewJob:
        check_transition(JobStatus.IN_PROGRESS, job_status)
        now_text = now_iso()
        event = AuditEvent(
            at=now_text,
            actor=worker_id,
            event=f"stage_{stage_status.value}",
            stage=stage,
            from_status=JobStatus.IN_PROGRESS,
            to_status=job_status,
            detail=error_class,
        )
        names = {"#stage": stage.value, "#st": "status", "#job_status": "status"}
        values = {
            ":stage_status": to_value(stage_status.value),
            ":running": to_value(StageStatus.RUNNING.value),
            ":worker": to_value(worker_id),
            ":now": to_value(now_text),
            ":null": to_value(None),
            ":error_class": to_value(error_class),
            ":error": to_value(error[:500]),
            ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
            ":job_target": to_value(job_status.value),
            ":event": audit_value(event),
        }
        expression = (
            "SET stages.#stage.#st = :stage_status, stages.#stage.claimed_by = :null, "
            "stages.#stage.lease_expires_at = :null, stages.#stage.heartbeat_at = :null, "
            "stages.#stage.last_error_class = :error_class, "
            "stages.#stage.last_error = :error, "
            "stages.#stage.first_failure_at = if_not_exists(stages.#stage.first_failure_at, :now), "
            "#job_status = :job_target, updated_at = :now, "
            "audit = list_append(audit, :event)"
        )
        if job_status == JobStatus.DEAD_LETTERED:
            # What a replay's next failure is compared with, to tell a repeat (escalate) from a new problem.
            expression += ", stages.#stage.last_dead_letter_class = :error_class"
        return self._owner_update(job_id, "release stage", expression, names, values)

    def _owner_update(
        self, job_id: str, operation: str, expression: str, names: dict[str, str], values: dict[str, Any]
    ) -> ReviewJob:
        """Finalize writes carry the owner predicate: id + claimed_by + status = running."""
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key={"pk": to_value(job_pk(job_id))},
                update=expression,
                condition=_OWNER_PREDICATE,
                names=names,
                values=values,
                operation=operation,
            )
        except ConditionFailed:
            raise StaleWriteError(f"{operation}: lease lost") from None
        return job_from_item(attributes)


# Owner-only writes (heartbeat, complete, fail): id + claimed_by + status = running.
_OWNER_PREDICATE = "stages.#stage.#st = :running AND stages.#stage.claimed_by = :worker AND #job_status = :in_progress"


def _claim_verdict(job: ReviewJob, stage: StageName) -> ClaimState | None:
    """Why `stage` of `job` cannot be claimed now, or None when it can."""
    state = job.stages[stage]
    if state.status == StageStatus.COMPLETED:
        return ClaimState.ALREADY_COMPLETED
    if job.status not in ACTIVE_STATUSES or state.status == StageStatus.FAILED:
        return ClaimState.JOB_CLOSED
    if state.status == StageStatus.RUNNING and state.lease_expires_at and state.lease_expires_at > now_iso():
        return ClaimState.LEASE_HELD
    index = STAGE_ORDER.index(stage)
    if index > 0 and job.stages[STAGE_ORDER[index - 1]].status != StageStatus.COMPLETED:
        return ClaimState.NOT_READY
    return None


def _cancellation_reasons(exc: Exception) -> list[dict[str, Any]] | None:
    response = getattr(exc, "response", None) or {}
    if response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return None
    return list(response.get("CancellationReasons") or [])
