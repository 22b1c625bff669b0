"""Lambda's partial batch response for an SQS event (pipeline/sqs_batch.py), with the semantics of
Powertools' BatchProcessor(raise_on_entire_batch_failure=False) that it replaced."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from p4review.faults import FaultPoint, InjectedCrash
from p4review.pipeline import sqs_batch
from p4review.pipeline.sqs_batch import RetryLater, SqsEvent, SqsRecord, partial_batch_response


def _event(*ids: str) -> SqsEvent:
    records = [
        {"messageId": i, "receiptHandle": f"handle-{i}", "body": "{}", "attributes": {}, "eventSource": "aws:sqs"}
        for i in ids
    ]
    return SqsEvent.model_validate({"Records": records})


def test_every_record_succeeding_reports_an_empty_list():
    seen: list[str] = []
    assert partial_batch_response(_event("a", "b"), lambda record: seen.append(record.message_id)) == {
        "batchItemFailures": []
    }
    assert seen == ["a", "b"]


def test_a_failing_record_is_reported_and_the_others_still_run(monkeypatch):
    warned: list[tuple[str, dict]] = []
    monkeypatch.setattr(sqs_batch.logger, "warning", lambda message, extra: warned.append((message, extra)))

    def handler(record: SqsRecord) -> None:
        if record.message_id == "a":
            raise RetryLater("lease held by another worker")
        if record.message_id == "b":
            raise ValueError("token=secret-looking text")

    answer = partial_batch_response(_event("a", "b", "c"), handler)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]}
    # An unexpected failure is logged by its class only: its text may quote what it failed on.
    assert warned == [("record left for redelivery", {"message_id": "b", "error_class": "ValueError"})]


def test_every_record_failing_is_still_an_answer_not_an_error():
    def handler(record: SqsRecord) -> None:
        raise RetryLater("not yet")

    assert partial_batch_response(_event("a", "b"), handler) == {
        "batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]
    }


def test_a_crash_ends_the_invocation_like_a_killed_process():
    def handler(record: SqsRecord) -> None:
        raise InjectedCrash(FaultPoint.AFTER_CLAIM)

    with pytest.raises(InjectedCrash):
        partial_batch_response(_event("a", "b"), handler)


def test_an_event_that_is_not_an_sqs_event_fails_the_invocation():
    with pytest.raises(ValidationError):
        SqsEvent.model_validate({"Records": [{"messageId": "a"}]})
