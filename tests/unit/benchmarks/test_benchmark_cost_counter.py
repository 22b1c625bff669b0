"""The cost benchmark's call counter: per (service, operation), item counts for transactions,
excluded origins ignored, nothing counted while disabled. Stubbed botocore clients, no network."""

import botocore.session
import pytest
from botocore.stub import Stubber

from benchmarks.cost import (
    BENCHMARK,
    EVENT_SOURCE,
    SERVICE,
    CallCounter,
    counting_all_boto3_clients,
    counting_dal_clients,
)


def _client(service: str):
    return botocore.session.get_session().create_client(
        service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def _stubbed(counter: CallCounter, service: str, origin: str = SERVICE):
    client = counter.attach(_client(service), origin)  # attached before the stub, as in the benchmark
    stubber = Stubber(client)
    stubber.activate()
    return client, stubber


def test_counts_per_service_and_operation_and_transaction_items():
    counter = CallCounter()
    dynamodb, ddb_stub = _stubbed(counter, "dynamodb")
    sqs, sqs_stub = _stubbed(counter, "sqs")
    for _ in range(2):
        ddb_stub.add_response("get_item", {})
    ddb_stub.add_response("transact_write_items", {})
    sqs_stub.add_response("send_message", {"MessageId": "m", "MD5OfMessageBody": "x"})

    dynamodb.get_item(TableName="t", Key={"pk": {"S": "a"}})
    dynamodb.get_item(TableName="t", Key={"pk": {"S": "b"}})
    dynamodb.transact_write_items(
        TransactItems=[{"Put": {"TableName": "t", "Item": {"pk": {"S": str(n)}}}} for n in range(3)]
    )
    sqs.send_message(QueueUrl="https://sqs.us-east-1.amazonaws.com/1/q", MessageBody="{}")

    counts = counter.snapshot(SERVICE)
    assert counts.calls == {
        ("dynamodb", "GetItem"): 2,
        ("dynamodb", "TransactWriteItems"): 1,
        ("sqs", "SendMessage"): 1,
    }
    assert counts.item_total("dynamodb", ("TransactWriteItems",)) == 3
    assert counts.total("dynamodb", ("GetItem", "Query")) == 2
    ddb_stub.assert_no_pending_responses()


def test_excluded_origin_and_unattached_clients_are_not_counted():
    counter = CallCounter(exclude_origins=(BENCHMARK,))
    watcher, watcher_stub = _stubbed(counter, "dynamodb", BENCHMARK)
    plain = _client("dynamodb")  # never attached
    plain_stub = Stubber(plain)
    plain_stub.activate()
    watcher_stub.add_response("get_item", {})
    plain_stub.add_response("get_item", {})

    watcher.get_item(TableName="t", Key={"pk": {"S": "a"}})
    plain.get_item(TableName="t", Key={"pk": {"S": "a"}})

    assert counter.snapshot().calls == {}
    assert counter.excluded_calls == 1


def test_disabled_counter_counts_nothing_and_reset_clears():
    counter = CallCounter(enabled=False)
    s3, stub = _stubbed(counter, "s3")
    stub.add_response("put_object", {})
    stub.add_response("put_object", {})
    s3.put_object(Bucket="b", Key="k", Body=b"x")
    assert counter.snapshot().calls == {}
    counter.enabled = True
    s3.put_object(Bucket="b", Key="k", Body=b"x")
    assert counter.snapshot(SERVICE).get("s3", "PutObject") == 1
    counter.reset()
    assert counter.snapshot().calls == {}


def test_dal_factory_patch_attaches_and_restores(monkeypatch: pytest.MonkeyPatch):
    from p4review.stores import factory

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    original = factory.aws_client
    counter = CallCounter()
    with counting_dal_clients(counter):
        client = factory.aws_client("secretsmanager")
    assert factory.aws_client is original
    stub = Stubber(client)
    stub.activate()
    stub.add_response("get_secret_value", {"SecretString": "s"})
    client.get_secret_value(SecretId="id", VersionStage="AWSCURRENT")
    assert counter.snapshot(SERVICE).calls == {("secretsmanager", "GetSecretValue"): 1}


@pytest.mark.spec("OPS-8")
def test_a_client_attached_twice_is_counted_once_under_its_last_origin():
    """The DAL's clients are made while the stack's own clients are counted too (a poller runs a
    handler while the stack starts): the client is attached as event-source, then as service.
    Each call must count once, as the service's (the benchmark once counted none of them)."""
    counter = CallCounter()
    client = counter.attach(_client("dynamodb"), EVENT_SOURCE)
    assert counter.attach(client, SERVICE) is client
    stub = Stubber(client)
    stub.activate()
    stub.add_response("update_item", {})
    client.update_item(TableName="jobs", Key={"pk": {"S": "a"}})
    assert counter.snapshot(SERVICE).calls == {("dynamodb", "UpdateItem"): 1}
    assert counter.snapshot(EVENT_SOURCE).calls == {}
    assert counter.snapshot(SERVICE).table_total("jobs", ("UpdateItem",)) == 1


def test_the_dal_clients_made_inside_the_all_clients_window_count_as_the_service(monkeypatch: pytest.MonkeyPatch):
    from p4review.stores import factory

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    counter = CallCounter()
    with counting_dal_clients(counter), counting_all_boto3_clients(counter, EVENT_SOURCE):
        client = factory.aws_client("sqs")
    stub = Stubber(client)
    stub.activate()
    stub.add_response("send_message", {"MessageId": "m", "MD5OfMessageBody": "x"})
    client.send_message(QueueUrl="https://sqs.us-east-1.amazonaws.com/1/q", MessageBody="{}")
    assert counter.snapshot(SERVICE).calls == {("sqs", "SendMessage"): 1}
    assert counter.snapshot(EVENT_SOURCE).calls == {}
