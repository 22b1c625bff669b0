"""The one conditional UpdateItem every ownership and uniqueness rule goes through.

A failed condition returns the item as it was (ALL_OLD) so the caller can tell why it lost
without a second read; any other failure becomes a domain error via `translate`."""

from __future__ import annotations

from typing import Any

from p4review.stores.aws_errors import condition_failed_item, translate


class ConditionFailed(Exception):
    """The write's condition did not hold. `old_item` is the raw item ({} when it is missing)."""

    def __init__(self, old_item: dict[str, Any]):
        super().__init__("condition failed")
        self.old_item = old_item


def conditional_update(
    client: Any,
    *,
    table: str,
    key: dict[str, Any],
    update: str,
    condition: str,
    names: dict[str, str],
    values: dict[str, Any],
    operation: str,
    return_new: bool = True,
) -> dict[str, Any]:
    """Apply `update` if `condition` holds; return the new item (raw) or {} when not asked for."""
    try:
        answer = client.update_item(
            TableName=table,
            Key=key,
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW" if return_new else "NONE",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except Exception as exc:  # classified here, once
        old = condition_failed_item(exc)
        if old is None:
            translate(exc, operation)
        raise ConditionFailed(old) from None
    attributes: dict[str, Any] = answer.get("Attributes", {})
    return attributes
