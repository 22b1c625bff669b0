"""The stage dead-letter queues, for operators: list without consuming, take one, delete.

Listing receives with a short visibility timeout and gives every message back at once
(visibility 0), so `dlq list` never hides or consumes anything. Messages are held invisible
while a page is collected, so pagination sees each message once."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from p4review.errors import ConfigError
from p4review.models.job import StageName
from p4review.models.messages import DeadLetter, decode_queue_body
from p4review.stores.aws_errors import translate

PEEK_VISIBILITY_SECONDS = 30
# How long `take`/`take_all` hold a message for a redrive (released or deleted before that).
TAKE_VISIBILITY_SECONDS = 300
_PAGE = 10


def _dead_letter(stage: StageName, message: dict[str, Any]) -> DeadLetter:
    raw = message.get("Body", "")
    body = decode_queue_body(raw)
    attributes = message.get("Attributes", {})
    sent_at = None
    if attributes.get("SentTimestamp"):
        from datetime import UTC, datetime

        sent_at = (
            datetime.fromtimestamp(int(attributes["SentTimestamp"]) / 1000, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
    return DeadLetter(
        stage=stage,
        message_id=message["MessageId"],
        receipt_handle=message["ReceiptHandle"],
        body=body or {},
        body_sha256=hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest(),
        received_count=int(attributes.get("ApproximateReceiveCount", 0)),
        sent_at=sent_at,
    )


class SqsDeadLetters:
    def __init__(self, client: Any, dlq_urls: dict[StageName, str]):
        self._client = client
        self._urls = dlq_urls

    def stages(self) -> list[StageName]:
        return [stage for stage in StageName if stage in self._urls]

    def _url(self, stage: StageName) -> str:
        url = self._urls.get(stage)
        if not url:
            raise ConfigError(f"no dead-letter queue URL configured for {stage.value}")
        return url

    def _receive(self, stage: StageName, count: int, visibility: int) -> list[DeadLetter]:
        try:
            answer = self._client.receive_message(
                QueueUrl=self._url(stage),
                MaxNumberOfMessages=max(1, min(_PAGE, count)),
                VisibilityTimeout=visibility,
                WaitTimeSeconds=0,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            )
        except Exception as exc:
            translate(exc, f"receive {stage.value} dead letters")
        return [_dead_letter(stage, message) for message in answer.get("Messages", [])]

    def _collect(self, stage: StageName, max_messages: int, visibility: int) -> list[DeadLetter]:
        found: dict[str, DeadLetter] = {}
        while len(found) < max_messages:
            batch = self._receive(stage, max_messages - len(found), visibility)
            fresh = [letter for letter in batch if letter.message_id not in found]
            if not fresh:
                break
            for letter in fresh:
                found[letter.message_id] = letter
        return list(found.values())

    def peek(self, stage: StageName, max_messages: int = 100) -> list[DeadLetter]:
        """Up to `max_messages` visible messages, oldest receive first; all stay in the queue."""
        letters: list[DeadLetter] = []
        try:
            letters = self._collect(stage, max_messages, PEEK_VISIBILITY_SECONDS)
        finally:
            self._release_all(stage, letters)
        return letters

    def take_all(
        self, stage: StageName, max_messages: int = 100, visibility_seconds: int = TAKE_VISIBILITY_SECONDS
    ) -> list[DeadLetter]:
        """Receive up to `max_messages` and hold them for `visibility_seconds`: the caller deletes
        or releases each one."""
        return self._collect(stage, max_messages, visibility_seconds)

    def take(
        self,
        stage: StageName,
        message_id: str,
        *,
        max_scan: int = 1000,
        visibility_seconds: int = TAKE_VISIBILITY_SECONDS,
    ) -> DeadLetter | None:
        """Find one message by its SQS message id and hold it (the others are released at once)."""
        scanned: list[DeadLetter] = []
        wanted: DeadLetter | None = None
        try:
            while wanted is None and len(scanned) < max_scan:
                batch = self._receive(stage, _PAGE, visibility_seconds)
                fresh = [letter for letter in batch if letter.message_id not in {s.message_id for s in scanned}]
                if not fresh:
                    break
                for letter in fresh:
                    if letter.message_id == message_id and wanted is None:
                        wanted = letter
                    else:
                        scanned.append(letter)
        finally:
            self._release_all(stage, scanned)
        return wanted

    def find(self, message_id: str, stages: list[StageName] | None = None, **kwargs: Any) -> DeadLetter | None:
        for stage in stages or self.stages():
            letter = self.take(stage, message_id, **kwargs)
            if letter is not None:
                return letter
        return None

    def delete(self, stage: StageName, receipt_handle: str) -> None:
        try:
            self._client.delete_message(QueueUrl=self._url(stage), ReceiptHandle=receipt_handle)
        except Exception as exc:
            translate(exc, f"delete {stage.value} dead letter")

    def release(self, stage: StageName, receipt_handle: str) -> None:
        """Make a held message visible again at once."""
        try:
            self._client.change_message_visibility(
                QueueUrl=self._url(stage), ReceiptHandle=receipt_handle, VisibilityTimeout=0
            )
        except Exception as exc:
            translate(exc, f"release {stage.value} dead letter")

    def send(self, stage: StageName, body: dict[str, Any] | str) -> str:
        text = body if isinstance(body, str) else json.dumps(body, sort_keys=True)
        try:
            answer = self._client.send_message(QueueUrl=self._url(stage), MessageBody=text)
        except Exception as exc:
            translate(exc, f"send {stage.value} dead letter")
        message_id: str = answer.get("MessageId", "")
        return message_id

    def _release_all(self, stage: StageName, letters: list[DeadLetter]) -> None:
        for start in range(0, len(letters), _PAGE):
            chunk = letters[start : start + _PAGE]
            try:
                self._client.change_message_visibility_batch(
                    QueueUrl=self._url(stage),
                    Entries=[
                        {"Id": str(index), "ReceiptHandle": letter.receipt_handle, "VisibilityTimeout": 0}
                        for index, letter in enumerate(chunk)
                    ],
                )
            except Exception as exc:
                translate(exc, f"release {stage.value} dead letters")
