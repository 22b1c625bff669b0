"""TransactWriteItems for the local moto server without a deep copy of every table.

moto (5.x) backs up each table a transaction touches with `copy.deepcopy(table)`, once per item,
before applying the items one by one, so that it can roll back. With a few hundred jobs (each
with an audit trail) one `create_job` costs seconds and holds the DynamoDB lock meanwhile: the
whole local stack stalls as the table grows (the chaos test saw 40 s stalls).

The replacement keeps DynamoDB's semantics: every condition is evaluated against the state
before the transaction, then either nothing is written (TransactionCanceledException with one
reason per item, ALL_OLD where asked) or every item is written. It backs up only the touched
items, to undo a write that fails half-way (a bad update expression). It relies on the local
server serializing DynamoDB requests (SerializingMiddleware), as moto's own version does.
"""

from __future__ import annotations

from typing import Any

_installed = False


def install() -> None:
    """Replace DynamoDBBackend.transact_write_items (idempotent; the local stack only)."""
    global _installed
    if _installed:
        return
    from moto.dynamodb.models import DynamoDBBackend

    DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]
    _installed = True


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import (
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    planned: list[tuple[str, dict[str, Any], str, dict[str, Any], Any]] = []
    reasons: list[tuple[Any, Any, Any]] = []
    seen: set[tuple[str, str]] = set()
    for entry in transact_items:
        if len(entry) > 1:
            raise TransactWriteSingleOpException
        op_type, op = next(iter(entry.items()))
        if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
            reasons.append(("ValueError", "Unsupported transaction operation", None))
            continue
        table_name = op["TableName"]
        table = self.get_table(table_name)
        if op_type == "Put":
            attrs = op["Item"]
            key = {table.hash_key_attr: attrs[table.hash_key_attr]}
            if table.range_key_attr is not None:
                key[table.range_key_attr] = attrs[table.range_key_attr]
        else:
            key = op["Key"]
        identity = (str(table_name), str(dict(sorted(key.items()))))
        if identity in seen:
            raise MultipleTransactionsException()
        seen.add(identity)
        current = self.get_item(table_name, key)
        condition = op.get("ConditionExpression")
        if condition is not None:
            check = get_filter_expression(
                condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            )
            if not check.expr(current):
                old = None
                if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                    old = current.to_json()["Attributes"]
                reasons.append(("ConditionalCheckFailed", "The conditional request failed", old))
                continue
        reasons.append((None, None, None))
        planned.append((op_type, op, table_name, key, current.to_json()["Attributes"] if current else None))
    if any(code is not None for code, _, _ in reasons):
        raise TransactionCanceledException(reasons)

    applied: list[tuple[str, dict[str, Any], Any]] = []
    try:
        for op_type, op, table_name, key, before in planned:
            names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
            if op_type == "Put":
                self.put_item(table_name, op["Item"])
            elif op_type == "Delete":
                self.delete_item(table_name, key)
            elif op_type == "Update":
                self.update_item(
                    table_name,
                    key,
                    update_expression=op["UpdateExpression"],
                    expression_attribute_names=names,
                    expression_attribute_values=values,
                )
            else:
                continue
            applied.append((table_name, key, before))
    except Exception:
        for table_name, key, before in reversed(applied):
            if before is None:
                self.delete_item(table_name, key)
            else:
                self.put_item(table_name, before)
        raise
