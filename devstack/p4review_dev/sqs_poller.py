"""Lambda's SQS event source mapping, locally: poll a queue, invoke a handler, delete.

``SqsPoller`` runs ``concurrency`` worker threads (W, the bound on concurrent invocations
of the handler for this queue). Each worker long-polls ``ReceiveMessage`` with its own boto3
client, builds the SQS event Lambda would deliver, invokes ``handler(event, context)`` and
then, as an event source mapping with ``ReportBatchItemFailures`` does:

* handler returns normally: every message *not* listed in ``batchItemFailures`` is deleted;
  listed ones are left alone, to reappear when their visibility timeout ends (the handler may
  have changed it with ChangeMessageVisibility);
* handler raises, or returns a malformed ``batchItemFailures`` (an itemIdentifier that is
  empty or not in the batch): nothing is deleted, the whole batch is retried.

Redrive to the DLQ is the queue's business (moto's server honours ``RedrivePolicy``: a
message received ``maxReceiveCount`` times moves to the DLQ on the next receive attempt).

Note the one difference from AWS: all invocations share this process, so a handler's module
globals are shared by the W workers (in AWS each concurrent invocation has its own
execution environment).
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p4review.faults import InjectedCrash
from p4review_dev.lambda_context import FakeLambdaContext

log = logging.getLogger(__name__)

__all__ = ["Delivery", "ReceivedMessage", "SqsPoller", "build_sqs_event"]

# The deliveries a poller remembers (the latency benchmark reads them); older ones are dropped.
DELIVERY_LOG_SIZE = 10_000

_REQUIRED_ATTRIBUTES = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")


def _region_of(arn: str) -> str:
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 and parts[3] else "us-east-1"


def _message_attributes(raw: dict[str, Any]) -> dict[str, Any]:
    """boto3's MessageAttributes -> Lambda's messageAttributes (binary values base64)."""
    out: dict[str, Any] = {}
    for name, value in (raw or {}).items():
        binary = value.get("BinaryValue")
        out[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode("ascii") if isinstance(binary, bytes) else binary,
            "stringListValues": list(value.get("StringListValues") or []),
            "binaryListValues": [
                base64.b64encode(item).decode("ascii") if isinstance(item, bytes) else item
                for item in value.get("BinaryListValues") or []
            ],
            "dataType": value.get("DataType"),
        }
    return out


def build_sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """The event Lambda delivers for a batch received from ``queue_arn``."""
    region = _region_of(queue_arn)
    records = []
    for message in messages:
        attributes = {name: str(value) for name, value in (message.get("Attributes") or {}).items()}
        for name in _REQUIRED_ATTRIBUTES:
            attributes.setdefault(name, "")
        record: dict[str, Any] = {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message.get("Body", ""),
            "attributes": attributes,
            "messageAttributes": _message_attributes(message.get("MessageAttributes") or {}),
            "md5OfBody": message.get("MD5OfBody"),
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": region,
        }
        if message.get("MD5OfMessageAttributes"):
            record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
        records.append(record)
    return {"Records": records}


@dataclass(frozen=True)
class ReceivedMessage:
    body: str
    sent_at: float  # SentTimestamp: when the queue accepted it (epoch seconds, millisecond precision)


@dataclass(frozen=True)
class Delivery:
    """One batch this poller received (epoch seconds): when the ReceiveMessage that returned it
    was sent and when it answered. A message sent before `receive_started` waited for a free
    worker; from then on (or from its sending) to `received`, for the long poll to wake."""

    receive_started: float
    received: float
    messages: tuple[ReceivedMessage, ...]


def _sent_at(message: dict[str, Any]) -> float:
    sent = (message.get("Attributes") or {}).get("SentTimestamp")
    return int(sent) / 1000 if sent else 0.0


class _BatchFailed(Exception):
    """The handler's response means: retry the whole batch."""


def _failed_ids(result: Any, batch_ids: set[str]) -> set[str]:
    """Message ids the handler reported as failed (partial batch response)."""
    if result is None or not isinstance(result, dict):
        return set()
    failures = result.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        raise _BatchFailed("batchItemFailures is not a list")
    failed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not identifier or identifier not in batch_ids:
            raise _BatchFailed(f"invalid itemIdentifier {identifier!r}")
        failed.add(identifier)
    return failed


class SqsPoller:
    """Poll ``queue_url`` with ``concurrency`` threads and feed batches to ``handler``.

    ``sqs_client_factory``: zero-argument callable returning a boto3 SQS client; called once per
    worker, in ``start()``'s thread (boto3 sessions are not thread-safe to create clients
    from). ``wait_seconds``: the long-poll wait (keep it short so ``stop()`` is quick).
    ``idle_polls``: ``idle()`` is True once no invocation is running and every worker's last
    ``idle_polls`` polls returned nothing.

    Counters (read any time): ``received`` (messages), ``invocations``, ``deleted``,
    ``failed_items`` (messages left for retry: reported failures plus whole failed batches),
    ``errors`` (handler raised or returned a malformed response), ``receive_errors``;
    ``deliveries()``: the last ``DELIVERY_LOG_SIZE`` batches received, with their timings.
    """

    def __init__(
        self,
        sqs_client_factory: Callable[[], Any],
        queue_url: str,
        queue_arn: str,
        handler: Callable[[dict[str, Any], Any], Any],
        *,
        batch_size: int = 5,
        concurrency: int = 2,
        wait_seconds: int = 1,
        function_name: str = "p4review-local-worker",
        function_timeout_seconds: float = 60.0,
        idle_polls: int = 2,
        on_injected_crash: Callable[[], None] | None = None,
    ) -> None:
        if not 1 <= batch_size <= 10:
            raise ValueError("batch_size must be 1..10")
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if not 0 <= wait_seconds <= 20:
            raise ValueError("wait_seconds must be 0..20")
        self.sqs_client_factory = sqs_client_factory
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.handler = handler
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.wait_seconds = wait_seconds
        self.function_name = function_name
        self.function_timeout_seconds = function_timeout_seconds
        self.idle_polls = idle_polls
        # Called when a handler dies of an InjectedCrash; a worker process passes os._exit so the
        # fault kills the whole execution environment, as a crash in Lambda would.
        self.on_injected_crash = on_injected_crash
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._empty_streak: list[int] = []
        self._in_flight = 0
        self._counts = {
            "received": 0,
            "invocations": 0,
            "deleted": 0,
            "failed_items": 0,
            "errors": 0,
            "receive_errors": 0,
        }
        self._deliveries: deque[Delivery] = deque(maxlen=DELIVERY_LOG_SIZE)

    # -- counters ----------------------------------------------------------------------------
    def _add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def counters(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    @property
    def received(self) -> int:
        return self.counters()["received"]

    @property
    def invocations(self) -> int:
        return self.counters()["invocations"]

    @property
    def deleted(self) -> int:
        return self.counters()["deleted"]

    @property
    def failed_items(self) -> int:
        return self.counters()["failed_items"]

    @property
    def errors(self) -> int:
        return self.counters()["errors"]

    @property
    def receive_errors(self) -> int:
        return self.counters()["receive_errors"]

    def idle(self) -> bool:
        """No invocation running and each worker's last ``idle_polls`` polls came back empty.

        Messages hidden by their visibility timeout (failed, awaiting retry) do not count:
        check the queue's ApproximateNumberOfMessagesNotVisible too before calling it done."""
        with self._lock:
            return (
                bool(self._threads)
                and self._in_flight == 0
                and all(streak >= self.idle_polls for streak in self._empty_streak)
            )

    def wait_idle(self, timeout: float = 30.0, interval: float = 0.05) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.idle():
                return True
            time.sleep(interval)
        return self.idle()

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return bool(self._threads)

    def start(self) -> SqsPoller:
        if self._threads:
            return self
        self._stop.clear()
        clients = [self.sqs_client_factory() for _ in range(self.concurrency)]
        with self._lock:
            self._empty_streak = [0] * self.concurrency
        threads = [
            threading.Thread(
                target=self._worker,
                args=(index, client),
                name=f"sqs-poller-{self.function_name}-{index}",
                daemon=True,
            )
            for index, client in enumerate(clients)
        ]
        self._threads = threads
        for thread in threads:
            thread.start()
        return self

    def request_stop(self) -> None:
        """Signal the workers without waiting: each ends after its current receive and invocation."""
        self._stop.set()

    def stop(self, timeout: float | None = None) -> bool:
        """Signal the workers and join them. Returns False if one is still running after
        ``timeout`` (default: the poll wait + 5 s); a running handler is never interrupted."""
        self._stop.set()
        limit = (self.wait_seconds + 5.0) if timeout is None else timeout
        deadline = time.monotonic() + limit
        alive = False
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
            alive = alive or thread.is_alive()
        if not alive:
            self._threads = []
        return not alive

    def __enter__(self) -> SqsPoller:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- work --------------------------------------------------------------------------------
    def _worker(self, index: int, client: Any) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            receive_started = time.time()
            try:
                response = client.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=self.batch_size,
                    WaitTimeSeconds=self.wait_seconds,
                    AttributeNames=["All"],
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
            except Exception as exc:  # noqa: BLE001 - the poller outlives any one failed receive, as Lambda's does
                if self._stop.is_set():
                    break
                self._add("receive_errors")
                log.warning("%s: receive_message failed: %s", self.function_name, exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            backoff = 0.1
            messages = response.get("Messages") or []
            if not messages:
                with self._lock:
                    self._empty_streak[index] += 1
                continue
            delivery = Delivery(
                receive_started,
                time.time(),
                tuple(ReceivedMessage(message.get("Body", ""), _sent_at(message)) for message in messages),
            )
            with self._lock:
                self._empty_streak[index] = 0
                self._in_flight += 1
                self._counts["received"] += len(messages)
                self._deliveries.append(delivery)
            try:
                self._process(client, messages)
            finally:
                with self._lock:
                    self._in_flight -= 1

    def _process(self, client: Any, messages: list[dict[str, Any]]) -> None:
        event = build_sqs_event(messages, self.queue_arn)
        context = FakeLambdaContext(self.function_name, timeout_seconds=self.function_timeout_seconds)
        batch_ids = {message["MessageId"] for message in messages}
        self._add("invocations")
        try:
            result = self.handler(event, context)
            failed = _failed_ids(result, batch_ids)
        except _BatchFailed as exc:
            self._add("errors")
            self._add("failed_items", len(messages))
            log.error("%s: malformed partial batch response (%s): whole batch retried", self.function_name, exc)
            return
        except InjectedCrash:
            # A killed invocation (a BaseException): handled like any handler failure unless
            # the owner wants the process to die with it.
            if self.on_injected_crash is not None:
                self.on_injected_crash()
            self._add("errors")
            self._add("failed_items", len(messages))
            log.warning("%s: injected crash; whole batch of %d retried", self.function_name, len(messages))
            return
        except Exception:
            # Nothing is deleted: the batch comes back after its visibility timeout.
            self._add("errors")
            self._add("failed_items", len(messages))
            log.exception("%s: handler raised; whole batch of %d retried", self.function_name, len(messages))
            return
        if failed:
            self._add("failed_items", len(failed))
        to_delete = [message for message in messages if message["MessageId"] not in failed]
        for start in range(0, len(to_delete), 10):
            chunk = to_delete[start : start + 10]
            try:
                response = client.delete_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[
                        {"Id": str(n), "ReceiptHandle": message["ReceiptHandle"]} for n, message in enumerate(chunk)
                    ],
                )
            except Exception as exc:  # noqa: BLE001 - logged; the messages come back after their visibility timeout
                log.warning("%s: delete_message_batch failed: %s", self.function_name, exc)
                continue
            self._add("deleted", len(response.get("Successful") or []))
            for failure in response.get("Failed") or []:
                log.warning("%s: could not delete a message: %s", self.function_name, failure)
