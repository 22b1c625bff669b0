"""Stage queues and their dead-letter queues."""

from __future__ import annotations

import json
from typing import Any

from p4review.models.job import StageName
from p4review.models.messages import StageMessage
from p4review.stores.aws_errors import translate

MAX_SEND_DELAY_SECONDS = 900


class SqsStageQueues:
    def __init__(self, client: Any, queue_urls: dict[StageName, str], dlq_urls: dict[StageName, str]):
        self._client = client
        self._queue_urls = queue_urls
        self._dlq_urls = dlq_urls

    def send(self, message: StageMessage, *, delay_seconds: int = 0) -> None:
        """`delay_seconds`: SQS holds the message back this long (at most 900 s, SQS's limit)."""
        try:
            self._client.send_message(
                QueueUrl=self._queue_urls[message.stage],
                MessageBody=message.model_dump_json(exclude_none=True),
                DelaySeconds=max(0, min(delay_seconds, MAX_SEND_DELAY_SECONDS)),
            )
        except Exception as exc:
            translate(exc, f"enqueue {message.stage.value}")

    def send_dead_letter(self, stage: StageName, envelope: dict[str, Any]) -> None:
        try:
            self._client.send_message(QueueUrl=self._dlq_urls[stage], MessageBody=json.dumps(envelope, sort_keys=True))
        except Exception as exc:
            translate(exc, f"dead-letter {stage.value}")

    def delay(self, stage: StageName, receipt_handle: str, seconds: float) -> None:
        """Schedule a redelivery by the message's visibility timeout (no sleeping in a function)."""
        try:
            self._client.change_message_visibility(
                QueueUrl=self._queue_urls[stage],
                ReceiptHandle=receipt_handle,
                VisibilityTimeout=max(0, min(int(round(seconds)), 43_200)),
            )
        except Exception as exc:
            translate(exc, f"delay {stage.value} message")
