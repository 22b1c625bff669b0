"""The local moto server's TransactWriteItems (p4review_dev.moto_transactions): DynamoDB's
all-or-nothing semantics without moto's whole-table copies. Each test runs on AWS's DynamoDB Local
too (`dynamo_backend`, tests/integration/conftest.py): the semantics asserted are DynamoDB's."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from p4review_dev.support.aws import moto_client

TABLE = "txn"  # DynamoDB (and DynamoDB Local) refuse table names under 3 characters; moto took "t"


@pytest.fixture
def table(dynamodb_endpoint):
    dynamodb = moto_client("dynamodb", dynamodb_endpoint)
    dynamodb.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield dynamodb
    dynamodb.delete_table(TableName=TABLE)


def _put(pk: str, value: str, condition: str | None = "attribute_not_exists(pk)") -> dict:
    put = {
        "TableName": TABLE,
        "Item": {"pk": {"S": pk}, "v": {"S": value}},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if condition:
        put["ConditionExpression"] = condition
    return {"Put": put}


def _items(dynamodb) -> dict[str, str]:
    return {item["pk"]["S"]: item["v"]["S"] for item in dynamodb.scan(TableName=TABLE)["Items"]}


def test_every_item_is_written_when_every_condition_holds(table):
    table.transact_write_items(TransactItems=[_put("a", "1"), _put("b", "2")])
    assert _items(table) == {"a": "1", "b": "2"}


def test_one_failed_condition_writes_nothing_and_reports_reasons_per_item_with_all_old(table):
    table.put_item(TableName=TABLE, Item={"pk": {"S": "b"}, "v": {"S": "old"}})
    with pytest.raises(ClientError) as caught:
        table.transact_write_items(TransactItems=[_put("a", "1"), _put("b", "2")])
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    reasons = error["CancellationReasons"]
    assert reasons[0]["Code"] == "None"
    assert reasons[1]["Code"] == "ConditionalCheckFailed"
    assert reasons[1]["Item"] == {"pk": {"S": "b"}, "v": {"S": "old"}}
    assert _items(table) == {"b": "old"}  # "a" was not written


def test_two_operations_on_one_item_are_refused(table):
    with pytest.raises(ClientError) as caught:
        table.transact_write_items(TransactItems=[_put("a", "1"), _put("a", "2", condition=None)])
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert _items(table) == {}


def test_a_write_failing_half_way_is_undone(table):
    table.put_item(TableName=TABLE, Item={"pk": {"S": "b"}, "v": {"S": "old"}})
    bad_update = {
        "Update": {
            "TableName": TABLE,
            "Key": {"pk": {"S": "c"}},
            "UpdateExpression": "SET v = v + :one",  # v is missing: fails when applied
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }
    with pytest.raises(ClientError):
        table.transact_write_items(TransactItems=[_put("a", "1"), _put("b", "new", condition=None), bad_update])
    assert _items(table) == {"b": "old"}
