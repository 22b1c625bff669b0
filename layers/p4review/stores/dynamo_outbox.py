"""The notification outbox: one row per (changelist_id, recipient, review_version).

The primary key IS the delivery tuple (pk CLV#cl#v, sk RCPT#recipient), so uniqueness is
the table's own rule and every write that must not repeat a send is conditional.

Retention (SEC-23): every row is created with `expires_at`, `retention_days` after its
`created_at`, and DynamoDB's TTL deletes it then. The changelist's head item in the jobs table
(never expires) keeps a version at or below one already reviewed from being accepted again, so
nothing is re-sent once the rows are gone."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from p4review.clock import now_iso, parse_iso
from p4review.errors import DeliveryInFlight, StaleWriteError
from p4review.models.outbox import (
    DeliveryAction,
    DeliveryAuditEvent,
    DeliveryStatus,
    OutboxListing,
    OutboxRow,
    UnreadableRow,
)
from p4review.ports import DeliveryStart
from p4review.resources import DEFAULT_RETENTION_DAYS, RETENTION_TTL_ATTRIBUTE
from p4review.stores.aws_errors import condition_failed_item, translate
from p4review.stores.dynamo_codec import from_item, to_item, to_value
from p4review.stores.dynamo_retention import is_expired_item
from p4review.stores.dynamo_writes import ConditionFailed, conditional_update
from p4review.stores.record_retention import expires_at_epoch

# Bounds on what an operator's audit event stores (same as the job's replay audit).
TICKET_LIMIT = 128
NOTE_LIMIT = 200

# The row has never been delivered: notified_at is absent, or stored as NULL by ensure_row.
_NOT_NOTIFIED = "(attribute_not_exists(notified_at) OR attribute_type(notified_at, :null_type))"
# No provider evidence: the row has no notification_id (absent or stored as NULL).
_NO_EVIDENCE = "(attribute_not_exists(notification_id) OR attribute_type(notification_id, :null_type))"
# Notify's writes other than mark_sent (attempt, error note, failure): never on a sent row, nor
# on one an operator skipped, so a skip stops the next attempt and is not overwritten. mark_sent
# is deliberately not guarded against skipped: a send that already happened is recorded as it was.
_WORKER_GUARD = "attribute_exists(pk) AND #status <> :sent AND #status <> :skipped"
# No live send lock of another claim: none (absent or NULL), run out, this worker's own, or
# taken under an earlier claim of the notify stage (whose owner can no longer be acting).
_UNLOCKED = (
    "(attribute_not_exists(locked_until) OR attribute_type(locked_until, :null_type) "
    "OR locked_until < :now OR locked_by = :owner OR lock_fence < :fence)"
)
# Every write that records an attempt's outcome releases the send lock.
_RELEASE = " REMOVE locked_by, locked_until, lock_fence"
# A persisted row no attempt has touched (what ensure_row leaves): start_delivery may take it as
# if it created it. The token check keeps the Message-ID the attempt renders the row's own.
_UNTOUCHED = (
    f"#status = :pending AND attempts = :zero AND provider_token = :token AND {_NOT_NOTIFIED} "
    f"AND {_NO_EVIDENCE} AND {_UNLOCKED}"
)
# The intent's fields start_delivery writes only when the row is new (if_not_exists).
_INTENT_FIELDS = ("changelist_id", "recipient", "review_version", "job_id", "provider_token", "created_at")


def outbox_key(changelist_id: int, recipient: str, review_version: int) -> dict[str, Any]:
    return {
        "pk": to_value(f"CLV#{changelist_id}#{review_version}"),
        "sk": to_value(f"RCPT#{recipient}"),
    }


def _unreadable(item: dict[str, Any], invalid: ValidationError) -> UnreadableRow:
    key = {name: str(next(iter(item.get(name, {}).values()), "")) for name in ("pk", "sk")}
    fields = sorted({".".join(str(part) for part in error["loc"]) or "(item)" for error in invalid.errors()})
    return UnreadableRow(pk=key["pk"], sk=key["sk"], fields=fields)


def _row_from_item(item: dict[str, Any]) -> OutboxRow:
    data = from_item(item)
    for storage_only in ("pk", "sk", RETENTION_TTL_ATTRIBUTE):
        data.pop(storage_only, None)
    return OutboxRow.model_validate(data)


def _locked_by_another(row: OutboxRow, owner: str, fence: int, now: str) -> bool:
    """The negation of `_UNLOCKED`, for a row read back from a refused write."""
    return (
        row.locked_until is not None
        and row.locked_until >= now
        and row.locked_by != owner
        and (row.lock_fence is None or row.lock_fence >= fence)
    )


class DynamoOutboxRepository:
    def __init__(self, client: Any, table_name: str, retention_days: int = DEFAULT_RETENTION_DAYS):
        self._client = client
        self._table = table_name
        self._retention_days = retention_days

    def _key(self, row: OutboxRow) -> dict[str, Any]:
        return outbox_key(row.changelist_id, row.recipient, row.review_version)

    def _expires_at(self, row: OutboxRow) -> int:
        return expires_at_epoch(parse_iso(row.created_at), self._retention_days)

    def ensure_row(self, row: OutboxRow) -> OutboxRow:
        """Create the delivery intent once; an existing row (the winner) is returned as is."""
        item = {
            **self._key(row),
            **to_item(row.model_dump(mode="json")),
            RETENTION_TTL_ATTRIBUTE: to_value(self._expires_at(row)),
        }
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as exc:
            old = condition_failed_item(exc)
            if old is None:
                translate(exc, "create outbox row")
            return _row_from_item(old)
        return row

    def get_row(self, changelist_id: int, recipient: str, review_version: int) -> OutboxRow | None:
        try:
            answer = self._client.get_item(
                TableName=self._table, Key=outbox_key(changelist_id, recipient, review_version), ConsistentRead=True
            )
        except Exception as exc:
            translate(exc, "get outbox row")
        item = answer.get("Item")
        return _row_from_item(item) if item and not is_expired_item(item) else None

    def start_delivery(self, intent: OutboxRow, *, owner: str, fence: int, locked_until: str) -> DeliveryStart:
        """The delivery intent and its first attempt in one conditional write: what ensure_row +
        record_attempt do in two, for the common case of a row no attempt has touched.

        Creates the row (with `expires_at`) with one attempt counted and the send lock taken, or
        does the same to a persisted row no attempt has touched (`_UNTOUCHED`). Concurrent callers
        meet the condition one at a time: one attempts, the others are refused. A refused call
        writes nothing and answers the row as stored (`attempted` False), for the caller to
        inspect as it would ensure_row's answer (delivered, skipped, failed, an earlier attempt
        to reconcile); a row whose send lock another claim holds is DeliveryInFlight at once,
        as record_attempt would answer."""
        now = now_iso()
        names = {"#status": "status", "#expires": RETENTION_TTL_ATTRIBUTE}
        values = {
            ":pending": to_value(DeliveryStatus.PENDING.value),
            ":zero": to_value(0),
            ":one": to_value(1),
            ":token": to_value(intent.provider_token),
            ":now": to_value(now),
            ":owner": to_value(owner),
            ":fence": to_value(fence),
            ":until": to_value(locked_until),
            ":expires": to_value(self._expires_at(intent)),
            ":null_type": to_value("NULL"),
        }
        assignments = [
            "#status = :pending",
            "attempts = :one",
            "updated_at = :now",
            "locked_by = :owner",
            "locked_until = :until",
            "lock_fence = :fence",
            "#expires = if_not_exists(#expires, :expires)",
        ]
        for index, field in enumerate(_INTENT_FIELDS):
            names[f"#i{index}"] = field
            values[f":i{index}"] = to_value(getattr(intent, field))
            assignments.append(f"#i{index} = if_not_exists(#i{index}, :i{index})")
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key=self._key(intent),
                update="SET " + ", ".join(assignments),
                condition=f"attribute_not_exists(pk) OR ({_UNTOUCHED})",
                names=names,
                values=values,
                operation="start delivery",
            )
        except ConditionFailed as refused:  # the row exists (a missing one meets the condition)
            current = _row_from_item(refused.old_item)
            if current.status == DeliveryStatus.PENDING and _locked_by_another(current, owner, fence, now):
                raise DeliveryInFlight(current.locked_until) from None
            return DeliveryStart(current, attempted=False)
        return DeliveryStart(_row_from_item(attributes), attempted=True)

    def record_attempt(self, row: OutboxRow, *, owner: str, fence: int, locked_until: str) -> OutboxRow:
        """Counted before the provider call, so a crash mid-send leaves evidence of a possible send,
        and takes the row's send lock until `locked_until`, in one conditional write.

        Conditioned on the attempt count this worker read (`row.attempts`) and on no live lock
        of another worker under the same or a later stage claim (`fence`): of two workers that
        saw the same row, one wins; the loser gets DeliveryInFlight and must not call the
        provider. A lock left by an earlier claim (its send finished or abandoned, its outcome
        write lost) does not hold up the next claimant."""
        now = now_iso()
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key=self._key(row),
                update="SET attempts = attempts + :one, updated_at = :now, locked_by = :owner, "
                "locked_until = :until, lock_fence = :fence",
                condition=f"{_WORKER_GUARD} AND attempts = :seen AND {_UNLOCKED}",
                names={"#status": "status"},
                values={
                    ":one": to_value(1),
                    ":now": to_value(now),
                    ":owner": to_value(owner),
                    ":fence": to_value(fence),
                    ":until": to_value(locked_until),
                    ":seen": to_value(row.attempts),
                    ":null_type": to_value("NULL"),
                    **_guard_values(),
                },
                operation="record delivery attempt",
            )
        except ConditionFailed as refused:
            if refused.old_item:
                current = _row_from_item(refused.old_item)
                if current.status not in (DeliveryStatus.SENT, DeliveryStatus.SKIPPED):
                    raise DeliveryInFlight(current.locked_until) from None
            raise StaleWriteError("record delivery attempt: row already sent, skipped or missing") from None
        return _row_from_item(attributes)

    def mark_sent(self, row: OutboxRow, notification_id: str) -> OutboxRow:
        """The single write after a provider success: notification_id, notified_at, status sent."""
        now = now_iso()
        return self._update(
            row,
            "mark delivery sent",
            "SET notification_id = :nid, notified_at = :now, #status = :sent, updated_at = :now, last_error = :null"
            + _RELEASE,
            {
                ":nid": to_value(notification_id),
                ":now": to_value(now),
                ":sent": to_value(DeliveryStatus.SENT.value),
                ":null": to_value(None),
            },
            condition="attribute_exists(pk) AND #status <> :sent",
        )

    def mark_failed(self, row: OutboxRow, error: str) -> OutboxRow:
        return self._update(
            row,
            "mark delivery failed",
            "SET #status = :failed, last_error = :error, updated_at = :now" + _RELEASE,
            {
                ":failed": to_value(DeliveryStatus.FAILED.value),
                ":error": to_value(error[:500]),
                ":now": to_value(now_iso()),
                **_guard_values(),
            },
            condition=_WORKER_GUARD,
        )

    def backfill_evidence(self, row: OutboxRow, notification_id: str) -> OutboxRow:
        """A row marked sent without a notification_id, which the provider confirms: record its id."""
        return self._update(
            row,
            "backfill delivery evidence",
            "SET notification_id = :nid, updated_at = :now",
            {
                ":nid": to_value(notification_id),
                ":now": to_value(now_iso()),
                ":sent": to_value(DeliveryStatus.SENT.value),
                ":null_type": to_value("NULL"),
            },
            condition=f"#status = :sent AND {_NO_EVIDENCE}",
        )

    def reopen_unconfirmed(self, row: OutboxRow, actor: str) -> OutboxRow:
        """sent -> pending for a row marked sent without provider evidence that the provider has no
        record of (the ordering contract was violated): markers cleared, audit appended, in one
        conditional write on the notified_at that was seen, so it happens once."""
        event = _audit(
            DeliveryAction.RECONCILE,
            actor,
            "none",
            "marked sent without provider evidence; the provider has no record",
            DeliveryStatus.SENT,
            DeliveryStatus.PENDING,
        )
        return self._update(
            row,
            "reopen unconfirmed delivery",
            "SET #status = :pending, notified_at = :null, last_error = :why, updated_at = :now, "
            "audit = list_append(if_not_exists(audit, :empty), :event)",
            {
                ":pending": to_value(DeliveryStatus.PENDING.value),
                ":null": to_value(None),
                ":why": to_value("reopened: marked sent without provider evidence"),
                ":now": to_value(event.at),
                ":empty": to_value([]),
                ":event": _event_value(event),
                ":sent": to_value(DeliveryStatus.SENT.value),
                ":seen": to_value(row.notified_at),
                ":null_type": to_value("NULL"),
            },
            condition=f"#status = :sent AND notified_at = :seen AND {_NO_EVIDENCE}",
        )

    def note_error(self, row: OutboxRow, error: str) -> OutboxRow:
        return self._update(
            row,
            "note delivery error",
            "SET last_error = :error, updated_at = :now" + _RELEASE,
            {":error": to_value(error[:500]), ":now": to_value(now_iso()), **_guard_values()},
            condition=_WORKER_GUARD,
        )

    def rows_for_version(self, changelist_id: int, review_version: int) -> list[OutboxRow]:
        rows: list[OutboxRow] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": to_value(f"CLV#{changelist_id}#{review_version}")},
            "ConsistentRead": True,
        }
        try:
            while True:
                answer = self._client.query(**kwargs)
                rows.extend(_row_from_item(item) for item in answer.get("Items", []) if not is_expired_item(item))
                if "LastEvaluatedKey" not in answer:
                    return rows
                kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        except Exception as exc:
            translate(exc, "list outbox rows")

    # ---- operator tooling (`p4review deliveries`) -------------------------------------

    def list_rows(self, status: DeliveryStatus | None, limit: int) -> OutboxListing:
        """Rows (optionally of one status), newest `updated_at` first, at most `limit`.

        A filtered Scan of the whole table: acceptable for an occasional operator command on a
        table of one row per delivery, and it needs no index the service itself would not use.
        Sorting needs every match, so the scan always runs to the end."""
        kwargs: dict[str, Any] = {"TableName": self._table, "ConsistentRead": True}
        if status is not None:
            kwargs.update(
                FilterExpression="#status = :status",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":status": to_value(status.value)},
            )
        rows: list[OutboxRow] = []
        unreadable: list[UnreadableRow] = []
        try:
            while True:
                answer = self._client.scan(**kwargs)
                for item in answer.get("Items", []):
                    if is_expired_item(item):
                        continue  # past its retention: gone, whether or not TTL has deleted it yet
                    try:
                        rows.append(_row_from_item(item))
                    except ValidationError as invalid:  # one bad item must not hide the others
                        unreadable.append(_unreadable(item, invalid))
                if "LastEvaluatedKey" not in answer:
                    break
                kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        except Exception as exc:
            translate(exc, "scan outbox rows")
        rows.sort(key=lambda row: row.updated_at, reverse=True)  # ISO-8601 UTC strings sort as times
        return OutboxListing(rows=rows[: max(0, limit)], unreadable=unreadable)

    def retry_row(self, row: OutboxRow, actor: str, ticket: str, note: str) -> OutboxRow:
        """failed -> pending, in one conditional write, for a row that was never delivered.

        attempts go back to 0 (a fresh start for the operator's retry): a row is only failed
        after the provider definitively refused its last attempt, and notify reconciled any
        earlier attempt of unknown outcome before making that one."""
        event = _audit(DeliveryAction.RETRY, actor, ticket, note, DeliveryStatus.FAILED, DeliveryStatus.PENDING)
        return self._operator_update(
            row,
            "retry delivery",
            "only a failed row that was never delivered can be retried",
            "SET #status = :pending, attempts = :zero, last_error = :null, updated_at = :now, "
            "audit = list_append(if_not_exists(audit, :empty), :event)",
            {
                ":pending": to_value(DeliveryStatus.PENDING.value),
                ":zero": to_value(0),
                ":null": to_value(None),
                ":now": to_value(event.at),
                ":event": _event_value(event),
                ":failed": to_value(DeliveryStatus.FAILED.value),
            },
            condition="#status = :failed",
        )

    def skip_row(self, row: OutboxRow, actor: str, ticket: str, note: str) -> OutboxRow:
        """failed|pending -> skipped (never from sent), in one conditional write.

        Guarded by the status the caller saw (`row.status`), so the audit's from_status is what
        the write replaced."""
        event = _audit(DeliveryAction.SKIP, actor, ticket, note, row.status, DeliveryStatus.SKIPPED)
        return self._operator_update(
            row,
            "skip delivery",
            "only a failed or pending row that was never delivered can be skipped",
            "SET #status = :skipped, updated_at = :now, audit = list_append(if_not_exists(audit, :empty), :event)",
            {
                ":skipped": to_value(DeliveryStatus.SKIPPED.value),
                ":now": to_value(event.at),
                ":event": _event_value(event),
                ":observed": to_value(row.status.value),
                ":failed": to_value(DeliveryStatus.FAILED.value),
                ":pending": to_value(DeliveryStatus.PENDING.value),
            },
            condition="#status = :observed AND #status IN (:failed, :pending)",
        )

    def _operator_update(
        self, row: OutboxRow, operation: str, rule: str, expression: str, values: dict[str, Any], *, condition: str
    ) -> OutboxRow:
        """An operator's conditional write; a lost condition names the row's current status."""
        values = {**values, ":empty": to_value([]), ":null_type": to_value("NULL")}
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key=self._key(row),
                update=expression,
                condition=f"attribute_exists(pk) AND {condition} AND {_NOT_NOTIFIED}",
                names={"#status": "status"},
                values=values,
                operation=operation,
            )
        except ConditionFailed as refused:
            if not refused.old_item:
                raise StaleWriteError(f"{operation}: refused, the row does not exist") from None
            current = _row_from_item(refused.old_item)
            state = current.status.value + (" (delivered)" if current.notified_at else "")
            raise StaleWriteError(f"{operation}: refused, the row is {state}: {rule}") from None
        return _row_from_item(attributes)

    def _update(
        self, row: OutboxRow, operation: str, expression: str, values: dict[str, Any], *, condition: str
    ) -> OutboxRow:
        names = {"#status": "status"}
        try:
            attributes = conditional_update(
                self._client,
                table=self._table,
                key=self._key(row),
                update=expression,
                condition=condition,
                names=names,
                values=values,
                operation=operation,
            )
        except ConditionFailed:
            raise StaleWriteError(f"{operation}: row already sent, skipped or missing") from None
        return _row_from_item(attributes)


def _guard_values() -> dict[str, Any]:
    return {":sent": to_value(DeliveryStatus.SENT.value), ":skipped": to_value(DeliveryStatus.SKIPPED.value)}


def _audit(
    action: DeliveryAction, actor: str, ticket: str, note: str, from_status: DeliveryStatus, to_status: DeliveryStatus
) -> DeliveryAuditEvent:
    return DeliveryAuditEvent(
        at=now_iso(),
        actor=actor,
        action=action,
        ticket=ticket[:TICKET_LIMIT],
        note=note[:NOTE_LIMIT],
        from_status=from_status,
        to_status=to_status,
    )


def _event_value(event: DeliveryAuditEvent) -> dict[str, Any]:
    return to_value([event.model_dump(mode="json")])
