"""The notification outbox: one row per (changelist_id, recipient, review_version).

The primary key IS the delivery tuple (pk CLV#cl#v, sk RCPT#recipient), so uniqueness is
the table's own rule and every write that must not repeat a send is conditional."""

from __future__ import annotations

from typing import Any

from p4review.clock import now_iso
from p4review.dal.aws_errors import condition_failed_item, translate
from p4review.dal.dynamo_codec import from_item, to_item, to_value
from p4review.dal.dynamo_writes import ConditionFailed, conditional_update
from p4review.errors import StaleWriteError
from p4review.models.outbox import DeliveryStatus, OutboxRow


def outbox_key(changelist_id: int, recipient: str, review_version: int) -> dict[str, Any]:
    return {
        "pk": to_value(f"CLV#{changelist_id}#{review_version}"),
        "sk": to_value(f"RCPT#{recipient}"),
    }


def _row_from_item(item: dict[str, Any]) -> OutboxRow:
    data = from_item(item)
    data.pop("pk", None)
    data.pop("sk", None)
    return OutboxRow.model_validate(data)

class DynamoOutboxRepository:
    def __init__(self, client: Any, table_name: str):
        self._client = client
        self._table = table_name

    def _key(self, row: OutboxRow) -> dict[str, Any]:
        return outbox_key(row.changelist_id, row.recipient, row.review_version)

    def ensure_row(self, row: OutboxRow) -> OutboxRow:
        """Create the delivery intent once; an existing row (the winner) is returned as is."""
        item = {**self._key(row), **to_item(row.model_dump(mode="json"))}
        try:
            self._client.put_item(TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)",
                                  ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except Exception as exc:  # noqa: BLE001
            old = condition_failed_item(exc)
            if old is None:
                translate(exc, "create outbox row")
            return _row_from_item(old)
        return row

    def get_row(self, changelist_id: int, recipient: str, review_version: int) -> OutboxRow | None:
        try:
            answer = self._client.get_item(TableName=self._table, Key=outbox_key(changelist_id, recipient,
                                                                                   review_version),
                                           ConsistentRead=True)
        except Exception as exc:  # noqa: BLE001
            translate(exc, "get outbox row")
        item = answer.get("Item")
        return _row_from_item(item) if item else None

    def record_attempt(self, row: OutboxRow) -> OutboxRow:
        """Counted before the provider call, so a crash mid-send leaves evidence of a possible send."""
        return self._update(
            row, "record delivery attempt",
            "SET attempts = attempts + :one, updated_at = :now",
            {":one": to_value(1), ":now": to_value(now_iso()), ":sent": to_value(DeliveryStatus.SENT.value)},
            condition="attribute_exists(pk) AND #status <> :sent",
        )

    def mark_sent(self, row: OutboxRow, notification_id: str) -> OutboxRow:
        """The single write after a provider success: notification_id, notified_at, status sent."""
        now = now_iso()
        return self._update(
            row, "mark delivery sent",
            "SET notification_id = :nid, notified_at = :now, #status = :sent, updated_at = :now, last_error = :null",
            {":nid": to_value(notification_id), ":now": to_value(now), ":sent": to_value(DeliveryStatus.SENT.value),
             ":null": to_value(None)},
            condition="attribute_exists(pk) AND #status <> :sent",
        )

    def mark_failed(self, row: OutboxRow, error: str) -> OutboxRow:
        return self._update(
            row, "mark delivery failed",
            "SET #status = :failed, last_error = :error, updated_at = :now",
            {":failed": to_value(DeliveryStatus.FAILED.value), ":error": to_value(error[:500]),
             ":now": to_value(now_iso()), ":sent": to_value(DeliveryStatus.SENT.value)},
            condition="attribute_exists(pk) AND #status <> :sent",
        )

    def note_error(self, row: OutboxRow, error: str) -> OutboxRow:
        return self._update(
            row, "note delivery error",
            "SET last_error = :error, updated_at = :now",
            {":error": to_value(error[:500]), ":now": to_value(now_iso()),
             ":sent": to_value(DeliveryStatus.SENT.value)},
            condition="attribute_exists(pk) AND #status <> :sent",
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
                rows.extend(_row_from_item(item) for item in answer.get("Items", []))
                if "LastEvaluatedKey" not in answer:
                    return rows
                kwargs["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        except Exception as exc:  # noqa: BLE001
            translate(exc, "list outbox rows")

    def _update(self, row: OutboxRow, operation: str, expression: str, values: dict[str, Any], *,
                condition: str) -> OutboxRow:
        names = {"#status": "status"}
        try:
            attributes = conditional_update(
                self._client, table=self._table, key=self._key(row), update=expression, condition=condition,
                names=names, values=values, operation=operation,
            )
        except ConditionFailed:
            raise StaleWriteError(f"{operation}: row already sent or missing") from None
        return _row_from_item(attributes)
