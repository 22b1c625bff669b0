"""Operator replay of a dead-lettered job: one conditional UpdateItem (spec "Operator
remediation and replay workflow", step 4).

dead_lettered -> in_progress; the replayed stage (and the later ones, which never started) or,
with from_start, every stage goes back to pending with a fresh budget (attempts 0, no lease, no
error text, no first_failure_at). `last_error_class` and `last_dead_letter_class` are kept: the
runtime compares a new failure with them to escalate a replay that fails the same way.
`replays` counts operator replays, and the audit event `replayed` carries the ticket and note.

A job that is not dead_lettered is refused (IllegalTransitionError, from ALL_OLD), so a second
redrive of the same job changes nothing. One exception, for a redrive whose enqueue failed after
the replay was written: a "stranded" replay (see p4review.stores.replay_rules.is_stranded_replay) may be
replayed again, guarded by the observed `updated_at` (optimistic lock).
"""

from __future__ import annotations

from typing import Any

from p4review.clock import now_iso
from p4review.errors import IllegalTransitionError, NotFoundError
from p4review.models.job import STAGE_ORDER, AuditEvent, JobStatus, ReviewJob, StageName, StageStatus
from p4review.stores.dynamo_codec import to_value
from p4review.stores.dynamo_jobs import audit_value, job_from_item, job_pk, with_activity
from p4review.stores.dynamo_retention import is_expired_item, not_expired_condition
from p4review.stores.dynamo_writes import ConditionFailed, conditional_update
from p4review.stores.replay_rules import (
    REPLAY_ENQUEUED_EVENT,
    audit_detail,
    is_stranded_replay,
    replay_refusal,
    reset_stages,
)


def replay_stage(
    client: Any,
    table: str,
    job_id: str,
    stage: StageName,
    *,
    actor: str,
    ticket: str | None,
    note: str | None,
    from_start: bool,
) -> ReviewJob:
    """Move a dead_lettered job back to in_progress at `stage` (or at fetch, `from_start`)."""
    try:
        return _update(
            client, table, job_id, stage, actor=actor, ticket=ticket, note=note, from_start=from_start, observed=None
        )
    except _Refused as refused:
        current = refused.current
    if current is None:
        raise NotFoundError(f"job {job_id} not found")
    reason = replay_refusal(current, stage, from_start)
    if reason is not None:
        raise IllegalTransitionError(reason)
    if not is_stranded_replay(current, stage, from_start):
        # dead_lettered now (it moved between the write and our read of ALL_OLD): refuse, the
        # operator runs the redrive again.
        raise IllegalTransitionError(f"job {job_id} changed concurrently; run the redrive again")
    try:
        return _update(
            client, table, job_id, stage, actor=actor, ticket=ticket, note=note, from_start=from_start, observed=current
        )
    except _Refused as refused:
        status = refused.current.status.value if refused.current else "missing"
        raise IllegalTransitionError(f"job is {status}, not dead_lettered (it changed during the redrive)") from None


def confirm_enqueued(client: Any, table: str, job: ReviewJob, *, actor: str, stage: StageName) -> bool:
    """Append `replay_enqueued` when the job still ends with the replay's own audit event (the
    hand-off is confirmed, so a duplicate DLQ message for this job is refused from now on). False
    when something else was appended first (a worker already claimed it): nothing to do."""
    event = AuditEvent(
        at=now_iso(), actor=actor, event=REPLAY_ENQUEUED_EVENT, stage=stage, detail=f"enqueued {stage.value}"
    )
    try:
        conditional_update(
            client,
            table=table,
            key={"pk": to_value(job_pk(job.job_id))},
            update="SET audit = list_append(audit, :event)",
            condition="size(audit) = :length AND #status = :in_progress",
            names={"#status": "status"},
            values={
                ":event": audit_value(event),
                ":length": to_value(len(job.audit)),
                ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
            },
            operation="confirm replay",
            return_new=False,
        )
    except ConditionFailed:
        return False
    return True


class _Refused(Exception):
    def __init__(self, current: ReviewJob | None):
        super().__init__("refused")
        self.current = current


def _update(
    client: Any,
    table: str,
    job_id: str,
    stage: StageName,
    *,
    actor: str,
    ticket: str | None,
    note: str | None,
    from_start: bool,
    observed: ReviewJob | None,
) -> ReviewJob:
    now = now_iso()
    from_status = observed.status if observed is not None else JobStatus.DEAD_LETTERED
    event = AuditEvent(
        at=now,
        actor=actor,
        event="replayed" if observed is None else "replay_resumed",
        stage=stage,
        from_status=from_status,
        to_status=JobStatus.IN_PROGRESS,
        detail=audit_detail(ticket, note, from_start),
    )
    names: dict[str, str] = {"#status": "status", "#st": "status", "#failed_stage": stage.value}
    values: dict[str, Any] = {
        ":in_progress": to_value(JobStatus.IN_PROGRESS.value),
        ":pending": to_value(StageStatus.PENDING.value),
        ":zero": to_value(0),
        ":null": to_value(None),
        ":now": to_value(now),
        ":event": audit_value(event),
    }
    assignments = [
        "#status = :in_progress",
        "updated_at = :now",
        "audit = list_append(audit, :event)",
        # Keep the class the stage was dead-lettered with, for the runtime's escalation check.
        "stages.#failed_stage.last_dead_letter_class = if_not_exists(stages.#failed_stage.last_error_class, :null)",
    ]
    if observed is None:
        values[":one"] = to_value(1)
        assignments.append("replays = if_not_exists(replays, :zero) + :one")
    for index, name in enumerate(reset_stages(stage, from_start)):
        alias = f"#s{index}"
        names[alias] = name.value
        for attribute, value in (
            ("#st", ":pending"),
            ("attempts", ":zero"),
            ("claimed_by", ":null"),
            ("lease_expires_at", ":null"),
            ("heartbeat_at", ":null"),
            ("started_at", ":null"),
            ("completed_at", ":null"),
            ("last_error", ":null"),
            ("first_failure_at", ":null"),
        ):
            assignments.append(f"stages.{alias}.{attribute} = {value}")
    if observed is None:
        values[":dead_lettered"] = to_value(JobStatus.DEAD_LETTERED.value)
        condition = "attribute_exists(pk) AND #status = :dead_lettered"
        if not from_start:
            values[":completed"] = to_value(StageStatus.COMPLETED.value)
            condition += " AND stages.#failed_stage.#st <> :completed"
            index = STAGE_ORDER.index(stage)
            if index > 0:
                names["#previous"] = STAGE_ORDER[index - 1].value
                condition += " AND stages.#previous.#st = :completed"
    else:
        values[":observed_status"] = to_value(observed.status.value)
        values[":observed_at"] = to_value(observed.updated_at)
        condition = "attribute_exists(pk) AND #status = :observed_status AND updated_at = :observed_at"
    # A job past its retention is gone (its delivery rows may already be deleted): never replayed.
    condition += " AND " + not_expired_condition(values)
    try:
        attributes = conditional_update(
            client,
            table=table,
            key={"pk": to_value(job_pk(job_id))},
            # Back to in_progress: the job is active again, so it re-enters the sweeper's index.
            update=with_activity("SET " + ", ".join(assignments), job_id, JobStatus.IN_PROGRESS, names, values),
            condition=condition,
            names=names,
            values=values,
            operation="replay job",
        )
    except ConditionFailed as refused:
        old = refused.old_item
        raise _Refused(job_from_item(old) if old and not is_expired_item(old) else None) from None
    return job_from_item(attributes)


class DynamoJobReplay:
    """The replay port used by p4review.pipeline.replay.redrive."""

    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name

    def get_job(self, job_id: str) -> ReviewJob | None:
        from p4review.stores.dynamo_jobs import DynamoJobRepository

        return DynamoJobRepository(self._client, self._table).get_job(job_id)

    def replay_stage(
        self, job_id: str, stage: StageName, *, actor: str, ticket: str | None, note: str | None, from_start: bool
    ) -> ReviewJob:
        return replay_stage(
            self._client, self._table, job_id, stage, actor=actor, ticket=ticket, note=note, from_start=from_start
        )

    def confirm_enqueued(self, job: ReviewJob, *, actor: str, stage: StageName) -> None:
        confirm_enqueued(self._client, self._table, job, actor=actor, stage=stage)
