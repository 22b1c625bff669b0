"""SqsPoller: Lambda's SQS event source mapping against the moto server."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from p4review_dev.sqs_poller import SqsPoller


def _queue(sqs: Any, name: str, *, visibility: int, dlq_max_receive: int | None = None) -> tuple[str, str, str | None]:
    attributes = {"VisibilityTimeout": str(visibility)}
    dlq_url = None
    if dlq_max_receive is not None:
        dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": dlq_max_receive})
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn, dlq_url


def _wait(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _counts(sqs: Any, url: str) -> tuple[int, int]:
    attrs = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]), int(attrs["ApproximateNumberOfMessagesNotVisible"])


def test_builds_lambda_sqs_events_and_deletes_handled_messages(aws_client) -> None:
    sqs = aws_client("sqs")
    url, arn, _ = _queue(sqs, "events", visibility=30)
    sqs.send_message(
        QueueUrl=url,
        MessageBody=json.dumps({"job_id": "j1"}),
        MessageAttributes={
            "kind": {"DataType": "String", "StringValue": "fetch"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x01\x02"},
        },
    )
    events: list[dict[str, Any]] = []
    contexts: list[Any] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        events.append(event)
        contexts.append(context)
        return {"batchItemFailures": []}

    poller = SqsPoller(
        lambda: aws_client("sqs"), url, arn, handler, function_name="fetch", wait_seconds=1, idle_polls=1
    )
    with poller:
        assert _wait(lambda: poller.deleted == 1, 10)
        assert poller.wait_idle(10)
    assert _counts(sqs, url) == (0, 0)
    record = events[0]["Records"][0]
    assert json.loads(record["body"]) == {"job_id": "j1"}
    assert record["eventSource"] == "aws:sqs" and record["eventSourceARN"] == arn and record["awsRegion"] == "us-east-1"
    assert record["messageId"] and record["receiptHandle"] and record["md5OfBody"]
    attrs = record["attributes"]
    assert attrs["ApproximateReceiveCount"] == "1"
    for name in ("SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"):
        assert attrs[name], name
    assert record["messageAttributes"]["kind"]["stringValue"] == "fetch"
    assert record["messageAttributes"]["kind"]["dataType"] == "String"
    assert record["messageAttributes"]["blob"]["binaryValue"] == "AQI="
    assert contexts[0].function_name == "fetch" and contexts[0].get_remaining_time_in_millis() > 0
    assert poller.counters()["invocations"] == 1 and poller.errors == 0 and not poller.running


def test_each_delivery_is_recorded_with_its_receive_and_each_messages_send_time(aws_client) -> None:
    """What the latency benchmark reads (benchmarks/email_latency.py): a message sent before the
    receive went out waited for a worker; one sent after it, for the long poll to wake."""
    sqs = aws_client("sqs")
    url, arn, _ = _queue(sqs, "recorded", visibility=30)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    poller = SqsPoller(lambda: aws_client("sqs"), url, arn, lambda e, c: None, batch_size=5, concurrency=1)
    with poller:
        assert _wait(lambda: poller.deleted == 3, 10), poller.counters()
    deliveries = poller.deliveries()
    assert sorted(message.body for delivery in deliveries for message in delivery.messages) == ["m0", "m1", "m2"]
    for delivery in deliveries:
        assert delivery.receive_started <= delivery.received
        for message in delivery.messages:
            # SentTimestamp is in milliseconds: the send precedes the receive's answer.
            assert 0 < message.sent_at <= delivery.received + 0.001


def test_partial_batch_failure_keeps_only_the_failed_message(aws_client) -> None:
    sqs = aws_client("sqs")
    url, arn, _ = _queue(sqs, "partial", visibility=30)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])
    batches: list[list[str]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        batches.append([r["body"] for r in event["Records"]])
        failures = [{"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "m3"]
        return {"batchItemFailures": failures}

    poller = SqsPoller(lambda: aws_client("sqs"), url, arn, handler, batch_size=10, concurrency=1, wait_seconds=1)
    with poller:
        assert _wait(lambda: poller.deleted + poller.failed_items == 5, 10), poller.counters()
    assert poller.deleted == 4 and poller.failed_items == 1 and poller.errors == 0
    seen = Counter(body for batch in batches for body in batch)
    assert seen == Counter({f"m{i}": 1 for i in range(5)})
    # m3 is still in the queue (in flight until its visibility timeout), the rest are gone.
    assert _counts(sqs, url) == (0, 1)
    # The poller never touches a failed message's visibility (the handler may have set it).
    remaining = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0, WaitTimeSeconds=0)
    assert remaining.get("Messages") is None  # still invisible: the poller did not reset visibility


def test_handler_exception_deletes_nothing_and_batch_is_retried(aws_client) -> None:
    sqs = aws_client("sqs")
    url, arn, _ = _queue(sqs, "crash", visibility=1)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"c{i}"} for i in range(3)])
    receive_counts: list[list[str]] = []
    lock = threading.Lock()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        with lock:
            receive_counts.append([r["attributes"]["ApproximateReceiveCount"] for r in event["Records"]])
            first_time = len(receive_counts) == 1
        if first_time:
            raise RuntimeError("boom")
        return {}

    poller = SqsPoller(lambda: aws_client("sqs"), url, arn, handler, batch_size=10, concurrency=1, wait_seconds=1)
    with poller:
        assert _wait(lambda: poller.deleted == 3, 10), poller.counters()
    assert poller.errors == 1 and poller.failed_items == 3
    assert receive_counts[0] == ["1", "1", "1"]
    assert all(c == "2" for c in receive_counts[1])  # the whole batch came back, once more
    assert _counts(sqs, url) == (0, 0)


def test_malformed_partial_response_fails_whole_batch(aws_client) -> None:
    sqs = aws_client("sqs")
    url, arn, _ = _queue(sqs, "malformed", visibility=30)
    sqs.send_message(QueueUrl=url, MessageBody="x")
    poller = SqsPoller(
        lambda: aws_client("sqs"),
        url,
        arn,
        lambda e, c: {"batchItemFailures": [{"itemIdentifier": "not-in-batch"}]},
        concurrency=1,
        wait_seconds=1,
    )
    with poller:
        assert _wait(lambda: poller.errors == 1, 10)
    assert poller.deleted == 0 and poller.failed_items == 1
    assert _counts(sqs, url) == (0, 1)


@pytest.mark.spec("WQP-9")
def test_concurrency_bounds_parallel_invocations(aws_client) -> None:
    sqs = aws_client("sqs")
    url, arn, _ = _queue(sqs, "bounded", visibility=30)
    total = 24
    for start in range(0, total, 10):
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"b{i}"} for i in range(start, min(start + 10, total))]
        )
    active = 0
    peak = 0
    bodies: Counter[str] = Counter()
    lock = threading.Lock()
    three_at_once = threading.Event()

    def handler(event: dict[str, Any], context: Any) -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            bodies.update(r["body"] for r in event["Records"])
            if active >= 3:
                three_at_once.set()
        # Hold until three invocations overlap (an event, not a sleep a busy machine may not
        # honour); a fourth would push the peak past 3.
        three_at_once.wait(10)
        with lock:
            active -= 1

    poller = SqsPoller(lambda: aws_client("sqs"), url, arn, handler, batch_size=2, concurrency=3, wait_seconds=1)
    with poller:
        assert _wait(lambda: poller.deleted == total, 20), poller.counters()
    assert peak == 3, peak
    assert bodies == Counter({f"b{i}": 1 for i in range(total)})


def test_always_failing_message_is_redriven_to_the_dlq(aws_client) -> None:
    """moto's server honours RedrivePolicy: after maxReceiveCount receives, the next receive
    attempt moves the message to the DLQ instead of delivering it."""
    sqs = aws_client("sqs")
    url, arn, dlq_url = _queue(sqs, "poison", visibility=1, dlq_max_receive=2)
    assert dlq_url is not None
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    sqs.send_message(QueueUrl=url, MessageBody="fine")
    receives: Counter[str] = Counter()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        receives.update(r["body"] for r in event["Records"])
        return {
            "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "poison"]
        }

    poller = SqsPoller(lambda: aws_client("sqs"), url, arn, handler, batch_size=5, concurrency=2, wait_seconds=1)
    with poller:
        assert _wait(lambda: _counts(sqs, dlq_url)[0] == 1, 15), (poller.counters(), receives)
    assert receives["poison"] == 2 and receives["fine"] == 1
    assert _counts(sqs, url) == (0, 0)
    dead = sqs.receive_message(QueueUrl=dlq_url, MessageSystemAttributeNames=["All"])["Messages"]
    assert [m["Body"] for m in dead] == ["poison"]


def test_stop_joins_workers_promptly(aws_client) -> None:
    sqs = aws_client("sqs")
    url, arn, _ = _queue(sqs, "quiet", visibility=30)
    poller = SqsPoller(
        lambda: aws_client("sqs"), url, arn, lambda e, c: None, concurrency=3, wait_seconds=1, idle_polls=1
    )
    poller.start()
    assert not poller.idle() or poller.running
    assert poller.wait_idle(10)
    started = time.monotonic()
    assert poller.stop() is True
    assert time.monotonic() - started < 8.0  # a 1 s long poll, plus seconds of margin on a busy machine
    assert not any(t.name.startswith("sqs-poller-p4review-local-worker") for t in threading.enumerate())


def test_rejects_bad_settings() -> None:
    with pytest.raises(ValueError):
        SqsPoller(lambda: None, "u", "a", lambda e, c: None, batch_size=11)
    with pytest.raises(ValueError):
        SqsPoller(lambda: None, "u", "a", lambda e, c: None, concurrency=0)
