"""Where moto and AWS's DynamoDB Local answer the same DynamoDB request differently (issue 25).

Each test sends one request to both and states both answers; its name says the difference. The
product follows DynamoDB Local: the DAL never depends on what moto alone allows (its integration
tests run on both, `dynamo_backend` in tests/integration/conftest.py), and where the DAL meets one
of these answers the test says what it makes of DynamoDB Local's."""

from __future__ import annotations

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from p4review.errors import ConfigError, StorageError
from p4review.models.job import JobStatus
from p4review.stores.aws_errors import translate
from p4review_dev.support.aws import _lock, shared_session

pytestmark = pytest.mark.xdist_group("dynamodb-local")  # the one JVM of tests/integration/conftest.py

TABLE = "differences"
INDEX = "by-active"
NO_RETRIES = Config(retries={"total_max_attempts": 1})  # moto's 500s would otherwise be retried


def _client(endpoint):
    with _lock:
        return shared_session().client("dynamodb", endpoint_url=endpoint, config=NO_RETRIES)


@pytest.fixture
def moto(moto_endpoint, aws_reset):
    client = _client(moto_endpoint)
    _create_table(client)
    return client


@pytest.fixture
def local(dynamodb_local):
    client = _client(dynamodb_local.endpoint_url)
    _create_table(client)
    yield client
    client.delete_table(TableName=TABLE)


def _create_table(client):
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "active", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": INDEX,
                "KeySchema": [{"AttributeName": "active", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.put_item(TableName=TABLE, Item={"pk": {"S": "job"}, "status": {"S": "queued"}, "n": {"N": "1"}})


def _answer(call):
    """The error code and message DynamoDB's client raised, or ("ok", "")."""
    try:
        call()
    except ClientError as exc:
        error = exc.response["Error"]
        return error.get("Code"), error.get("Message", "")
    return "ok", ""


def _update(client, condition, values=None, update="SET n = :one"):
    return lambda: client.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "job"}},
        UpdateExpression=update,
        ConditionExpression=condition,
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":one": {"N": "1"}, **(values or {})},
    )


def _domain_error(client, call):
    try:
        call()
    except ClientError as exc:
        with pytest.raises((ConfigError, StorageError)) as caught:
            translate(exc, "update job")
        return caught.value
    raise AssertionError("the request was accepted")


@pytest.mark.spec("DDB-1")
def test_dynamodb_local_refuses_an_empty_in_list_as_invalid_where_moto_fails_with_an_internal_error(moto, local):
    condition = "#status IN ()"
    assert _answer(_update(local, condition)) == (
        "ValidationException",
        'Invalid ConditionExpression: Syntax error; token: ")", near: "()"',
    )
    assert _answer(_update(moto, condition))[0] == "500"
    # What the DAL would make of each: DynamoDB Local's a refused request (never retried), moto's
    # a transient upstream error. The jobs repository refuses `IN ()` before any call
    # (test_dynamo_jobs.py::test_a_transition_nothing_may_make_is_refused_before_any_call).
    assert isinstance(_domain_error(local, _update(local, condition)), ConfigError)
    assert type(_domain_error(moto, _update(moto, condition))) is StorageError


def test_dynamodb_local_refuses_an_in_list_of_more_than_100_operands_which_moto_evaluates(moto, local):
    values = {f":v{index}": {"S": str(index)} for index in range(101)}
    condition = f"#status IN ({', '.join(values)})"
    assert _answer(_update(local, condition, values)) == (
        "ValidationException",
        "Invalid ConditionExpression: The IN operator is provided with too many operands; number of operands: 101",
    )
    assert _answer(_update(moto, condition, values))[0] == "ConditionalCheckFailedException"
    # The DAL's IN lists (sweep, retention backfill, transitions) hold job statuses: never 100.
    assert len(JobStatus) < 100


def test_dynamodb_local_refuses_an_index_key_of_another_type_than_declared_which_moto_stores(moto, local):
    def put(client):
        return lambda: client.put_item(TableName=TABLE, Item={"pk": {"S": "other"}, "active": {"N": "7"}})

    assert _answer(put(local)) == (
        "ValidationException",
        "One or more parameter values were invalid: Type mismatch for Index Key",
    )
    assert _answer(put(moto)) == ("ok", "")


def test_dynamodb_local_refuses_a_number_of_more_than_38_digits_which_moto_stores(moto, local):
    def put(client):
        return lambda: client.put_item(TableName=TABLE, Item={"pk": {"S": "big"}, "n": {"N": "1" * 39}})

    assert _answer(put(local)) == ("ValidationException", "DynamoDB only supports precision up to 38 digits")
    assert _answer(put(moto)) == ("ok", "")


def test_dynamodb_local_refuses_a_between_with_its_bounds_reversed_which_moto_evaluates_as_false(moto, local):
    condition = "#status BETWEEN :high AND :low"
    values = {":low": {"S": "a"}, ":high": {"S": "z"}}
    code, message = _answer(_update(local, condition, values))
    assert code == "ValidationException"
    assert message.startswith("Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater")
    assert _answer(_update(moto, condition, values))[0] == "ConditionalCheckFailedException"


def test_dynamodb_local_fails_the_condition_comparing_a_string_with_a_number_where_moto_fails_internally(moto, local):
    condition = "#status < :one"
    assert _answer(_update(local, condition)) == ("ConditionalCheckFailedException", "The conditional request failed")
    assert _answer(_update(moto, condition))[0] == "500"


def test_dynamodb_local_refuses_setting_a_path_nested_under_a_number_which_moto_accepts(moto, local):
    def update(client):
        return lambda: client.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "job"}},
            UpdateExpression="SET n.x = :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    assert _answer(update(local)) == (
        "ValidationException",
        "The document path provided in the update expression is invalid for update",
    )
    assert _answer(update(moto)) == ("ok", "")


@pytest.mark.spec("DDB-1")
def test_dynamodb_local_refuses_a_transaction_token_reused_for_other_writes_which_moto_ignores(moto, local):
    def write(client, pk):
        return lambda: client.transact_write_items(
            ClientRequestToken="one-token",
            TransactItems=[{"Put": {"TableName": TABLE, "Item": {"pk": {"S": pk}}}}],
        )

    for client in (moto, local):
        assert _answer(write(client, "first")) == ("ok", "")
    assert _answer(write(local, "second"))[0] == "IdempotentParameterMismatchException"
    assert _answer(write(moto, "second")) == ("ok", "")


def test_dynamodb_local_refuses_a_table_name_shorter_than_three_characters_which_moto_accepts(moto, local):
    def create(client):
        return lambda: client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )

    code, message = _answer(create(local))
    assert code == "ValidationException"
    assert message.startswith("Invalid table/index name.  Table/index names must be between 3 and 255 characters")
    assert _answer(create(moto)) == ("ok", "")
