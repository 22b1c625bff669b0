"""Review jobs in DynamoDB. Every uniqueness, transition and ownership rule is a
conditional write; a losing write learns the winner's record from ALL_OLD.

Items in the jobs table:
  JOB#<job_id>            the job (job_id is derived from the idempotency key)
  CLV#<changelist>#<ver>  claim: at most one job per (changelist_id, review_version)
  CL#<changelist>         head: the highest review_version accepted for the changelist
  TPM#<provider>#<model>  the LLM token budget, written by p4review.review.token_budget_store

Retention (SEC-23): the job and its claim carry `expires_at`, `retention_days` after creation, and
DynamoDB's TTL deletes them; the head carries none and is kept, so a version at or below the
latest accepted one is refused for ever. While a job is active it carries `active_job` (the
sparse index the sweeper scans); the write that moves it to an end state removes it.

Above 500 lines on purpose: every conditional write of the jobs table (claim, lease, transition,
hand-off), so each write's predicate is read beside the others it must not contradict.
"""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

from p4review.clock import now_iso, parse_iso, to_iso, utc_now
from p4review.errors import IllegalTransitionError, LeaseLostError, NotFoundError, StaleWriteError, StorageError
from p4review.models.job import (
    ACTIVE_STATUSES,
    STAGE_ORDER,
    AuditEvent,
    JobStatus,
    ReviewJob,
    StageName,
    StageStatus,
)
from p4review.ports import ClaimOutcome, ClaimState, CreateConflict, CreateOutcome
from p4review.resources import ACTIVE_JOBS_INDEX, DEFAULT_RETENTION_DAYS, RETENTION_TTL_ATTRIBUTE
from p4review.stores.aws_errors import translate
from p4review.stores.dynamo_codec import from_item, to_item, to_value
from p4review.stores.dynamo_retention import is_expired_item, not_expired_condition
from p4review.stores.dynamo_writes import ConditionFailed, conditional_update
from p4review.stores.record_retention import expires_at_epoch
from p4review.stores.transitions import check_transition, predecessors

# Real DynamoDB cancels concurrent transactions on the same item with TransactionConflict;
# the retry then meets the winner's committed record and fails its condition instead.
_CONFLICT_RETRIES = 8


def job_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


def version_pk(changelist_id: int, review_version: int) -> str:
    return f"CLV#{changelist_id}#{review_version}"


def head_pk(changelist_id: int) -> str:
    return f"CL#{changelist_id}"


ACTIVE_KEY = ACTIVE_JOBS_INDEX.partition_key
# Attributes of a job item that are storage bookkeeping, not part of the ReviewJob record.
_STORAGE_ONLY = ("pk", "record_type", ACTIVE_KEY, RETENTION_TTL_ATTRIBUTE)


def job_from_item(item: dict[str, Any]) -> ReviewJob:
    data = from_item(item)
    for key in _STORAGE_ONLY:
        data.pop(key, None)
    return ReviewJob.model_validate(data)


def with_activity(
    set_expression: str, job_id: str, target: JobStatus, names: dict[str, str], values: dict[str, Any]
) -> str:
    """`set_expression` (one SET clause, and nothing after it) extended to keep the sparse
    active-jobs index true for a job moving to `target`: the key is set while the job stays active
    (joining the SET) and removed when it reaches an end state (a REMOVE clause appended). Part of
    the same conditional write as the status change, so the two cannot disagree."""
    assert set_expression.startswith("SET ") and " REMOVE " not in set_expression, set_expression
    names["#active"] = ACTIVE_KEY
    if target in ACTIVE_STATUSES:
        values[":active_job"] = to_value(job_id)
        return f"{set_expression}, #active = :active_job"
    return f"{set_expression} REMOVE #active"


def audit_value(event: AuditEvent) -> dict[str, Any]:
    return to_value([event.model_dump(mode="json", exclude_none=True)])


class DynamoJobRepository:
    def __init__(self, client: Any, table_name: str, retention_days: int = DEFAULT_RETENTION_DAYS):
        self._client = client
        self._table = table_name
        self._retention_days = retention_days

    # ---- creation -------------------------------------------------------------------
    def create_job(self, job: ReviewJob) -> CreateOutcome:
        expires_at = expires_at_epoch(parse_iso(job.created_at), self._retention_days)
        # Unset fields are left out, not stored as NULL, so if_not_exists() can fill them later.
        job_item = to_item(
            {
                "pk": job_pk(job.job_id),
                "record_type": "job",
                ACTIVE_KEY: job.job_id,  # a new job is queued: active
                RETENTION_TTL_ATTRIBUTE: expires_at,
                **job.model_dump(mode="json", exclude_none=True),
            }
        )
        version_item = to_item(
            {
                "pk": version_pk(job.changelist_id, job.review_version),
                "record_type": "changelist_version",
                "job_id": job.job_id,
                "created_at": job.created_at,
                RETENTION_TTL_ATTRIBUTE: expires_at,
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
        if any(
            reason.get("Code") == "ConditionalCheckFailed" and is_expired_item(reason.get("Item") or {})
            for reason in (job_reason, version_reason)
        ):
            # Past its retention but not yet deleted by TTL: it reads as gone, and the head refuses.
            head = from_item(head_reason.get("Item") or {})
            return CreateOutcome(
                created=False,
                conflict=CreateConflict.RECORDS_EXPIRED,
                head_latest_version=head.get("latest_version"),
            )
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
        if not item or is_expired_item(item):
            return None
        return job_from_item(item)

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
        if not item or is_expired_item(item):
            return None
        return from_item(item).get("job_id")

    # ---- job status -----------------------------------------------------------------
    def transition(self, job_id: str, target: JobStatus, event: AuditEvent) -> ReviewJob:
        allowed_from = sorted(predecessors(target))
        if not allowed_from:
            # Nothing may move to `target` (QUEUED): `#status IN ()` is a ValidationException on
            # AWS and a ValueError in moto. Refuse it here, before any call.
            raise IllegalTransitionError(f"no status may move to {target.value}")
        placeholders = {f":from{index}": to_value(status.value) for index, status in enumerate(allowed_from)}
        names = {"#status": "status"}
        values = {
            ":target": to_value(target.value),
            ":now": to_value(event.at),
            ":event": audit_value(event),
            **placeholders,
        }
        assignments = "SET #status = :target, updated_at = :now, audit = list_append(audit, :event)"
        update = with_activity(assignments, job_id, target, names, values)
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key={"pk": to_value(job_pk(job_id))},
                update=update,
                condition=f"attribute_exists(pk) AND #status IN ({', '.join(placeholders)})",
                names=names,
                values=values,
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
        """Claim `stage` for `worker_id` in one conditional write, with no read before it.

        The write's condition holds everything `_claim_verdict` checks (the job active, the stage
        pending or its lease run out, the previous stage completed, the item not past retention)
        and pins the exact state its audit event describes, so the event stays true: first the
        usual one (the stage pending; the job queued before its first stage, in progress after).
        A refusal answers the item as it was (ALL_OLD): not claimable, that is the verdict; claimable
        in another state (a lease that ran out, a job a failed or deferred attempt left retryable_failed), one more
        write claims exactly that state, and its event names the worker whose lease it took over."""
        usual = JobStatus.QUEUED if STAGE_ORDER.index(stage) == 0 else JobStatus.IN_PROGRESS
        try:
            return self._claim_in_state(job_id, stage, worker_id, lease_seconds, usual, takeover=False, holder=None)
        except ConditionFailed as refused:
            current = _live_job(refused.old_item)
        if current is None:
            return ClaimOutcome(ClaimState.MISSING)
        verdict = _claim_verdict(current, stage)
        if verdict is not None:
            return ClaimOutcome(verdict, current)
        state = current.stages[stage]
        takeover = state.status == StageStatus.RUNNING
        try:
            return self._claim_in_state(
                job_id, stage, worker_id, lease_seconds, current.status, takeover=takeover, holder=state.claimed_by
            )
        except ConditionFailed as refused:  # it moved between the two writes
            current = _live_job(refused.old_item)
        if current is None:
            return ClaimOutcome(ClaimState.MISSING)
        return ClaimOutcome(_claim_verdict(current, stage) or ClaimState.LEASE_HELD, current)

    def _claim_in_state(
        self,
        job_id: str,
        stage: StageName,
        worker_id: str,
        lease_seconds: int,
        from_status: JobStatus,
        *,
        takeover: bool,
        holder: str | None,
    ) -> ClaimOutcome:
        """The claim, if the job is in `from_status` and the stage pending (`takeover` False) or
        running under `holder`'s lease, run out (True). ConditionFailed otherwise."""
        now = utc_now()
        now_text = to_iso(now)
        detail = f"worker={worker_id}"
        if takeover:
            detail += f" took over expired lease of {holder}"
        event = AuditEvent(
            at=now_text,
            actor=worker_id,
            event="stage_claimed",
            stage=stage,
            from_status=from_status,
            to_status=JobStatus.IN_PROGRESS,
            detail=detail,
        )
        names = {"#stage": stage.value, "#st": "status", "#job_status": "status"}
        values = {
            ":running": to_value(StageStatus.RUNNING.value),
            ":worker": to_value(worker_id),
            ":expires": to_value(to_iso(now + timedelta(seconds=lease_seconds))),
            ":now": to_value(now_text),
            ":one": to_value(1),
            ":null": to_value(None),
            ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
            ":observed": to_value(from_status.value),
            ":event": audit_value(event),
        }
        if takeover:
            condition = "stages.#stage.#st = :running AND stages.#stage.lease_expires_at <= :now"
            if holder is not None:
                values[":holder"] = to_value(holder)
                condition += " AND stages.#stage.claimed_by = :holder"
        else:
            values[":pending"] = to_value(StageStatus.PENDING.value)
            condition = "stages.#stage.#st = :pending"
        # An active status pinned: `from_status` comes from the caller's guess or a claimable item.
        condition = f"#job_status = :observed AND {condition}"
        previous = STAGE_ORDER.index(stage) - 1
        if previous >= 0:
            names["#previous"] = STAGE_ORDER[previous].value
            values[":completed"] = to_value(StageStatus.COMPLETED.value)
            condition += " AND stages.#previous.#st = :completed"
        condition += " AND " + not_expired_condition(values)
        update = (
            "SET stages.#stage.#st = :running, stages.#stage.claimed_by = :worker, "
            "stages.#stage.lease_expires_at = :expires, stages.#stage.started_at = :now, "
            "stages.#stage.heartbeat_at = :null, "
            "stages.#stage.attempts = stages.#stage.attempts + :one, #job_status = :in_progress, "
            "updated_at = :now, audit = list_append(audit, :event)"
        )
        attributes = conditional_update(
            self._client,
            table=self._table,
            key={"pk": to_value(job_pk(job_id))},
            # The job is active: the claim sets the index key too, so the one write that moves a
            # job to in_progress keeps the index true itself (and a job written before the index
            # existed enters it on its next claim).
            update=with_activity(update, job_id, JobStatus.IN_PROGRESS, names, values),
            condition=condition,
            names=names,
            values=values,
            operation="claim stage",
        )
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
        expression = "SET " + ", ".join(assignments)
        if finish_job is not None:
            check_transition(JobStatus.IN_PROGRESS, finish_job)
            values[":finish"] = to_value(finish_job.value)
            expression += ", #job_status = :finish"
            expression = with_activity(expression, job_id, finish_job, names, values)
        return self._owner_update(job_id, "complete stage", expression, names, values)

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
        expression = with_activity(expression, job_id, job_status, names, values)
        return self._owner_update(job_id, "release stage", expression, names, values)

    def defer_stage(self, job_id: str, stage: StageName, worker_id: str, *, reason: str) -> ReviewJob:
        """Give the stage back (pending) and take back the attempt its claim counted: the work
        waited for the LLM's token budget, which is no failure (docs/capacity.md). The job stays
        active, in `retryable_failed` (the status that waits for a message); no error is recorded.

        Review only: notify fences its send locks with its stage's attempt count, which must only
        ever grow (notify/outbox_rows.py: lock_holder), and only review waits for a shared budget."""
        if stage is not StageName.REVIEW:
            raise IllegalTransitionError(f"only the review stage may be deferred, not {stage.value}")
        check_transition(JobStatus.IN_PROGRESS, JobStatus.RETRYABLE_FAILED)
        now_text = now_iso()
        event = AuditEvent(
            at=now_text,
            actor=worker_id,
            event="stage_deferred",
            stage=stage,
            from_status=JobStatus.IN_PROGRESS,
            to_status=JobStatus.RETRYABLE_FAILED,
            detail=reason[:200],
        )
        names = {"#stage": stage.value, "#st": "status", "#job_status": "status"}
        values = {
            ":pending": to_value(StageStatus.PENDING.value),
            ":running": to_value(StageStatus.RUNNING.value),
            ":worker": to_value(worker_id),
            ":now": to_value(now_text),
            ":null": to_value(None),
            ":one": to_value(1),
            ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
            ":job_target": to_value(JobStatus.RETRYABLE_FAILED.value),
            ":event": audit_value(event),
        }
        expression = (
            "SET stages.#stage.#st = :pending, stages.#stage.claimed_by = :null, "
            "stages.#stage.lease_expires_at = :null, stages.#stage.heartbeat_at = :null, "
            "stages.#stage.attempts = stages.#stage.attempts - :one, "
            "#job_status = :job_target, updated_at = :now, audit = list_append(audit, :event)"
        )
        expression = with_activity(expression, job_id, JobStatus.RETRYABLE_FAILED, names, values)
        return self._owner_update(job_id, "defer stage", expression, names, values)

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


def _live_job(item: dict[str, Any]) -> ReviewJob | None:
    """A refused claim's ALL_OLD as the job, or None when it is missing or past its retention."""
    return job_from_item(item) if item and not is_expired_item(item) else None


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
