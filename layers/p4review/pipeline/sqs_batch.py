"""SQS event -> stage runs, with partial batch responses (Lambda's ReportBatchItemFailures).

The partial batch response is built here, not by Powertools' batch processor: importing that
module imports asyncio and every Powertools event class (about 25 ms of review's cold start,
docs/benchmarks.md) for a loop this short. The contract is AWS's ("Handling errors for an
SQS event source in Lambda": `{"batchItemFailures": [{"itemIdentifier": messageId}]}`, an empty
list when every record succeeded), and the semantics are those of Powertools' `BatchProcessor`
with `raise_on_entire_batch_failure=False`, which this replaced: a record whose handler raises
an `Exception` is reported and the others go on; a `BaseException` ends the invocation."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from p4review.errors import ErrorClass, IllegalTransitionError, NotFoundError
from p4review.models.job import StageName
from p4review.models.messages import StageMessage
from p4review.observability import logger
from p4review.pipeline import dead_letter
from p4review.pipeline.stage_runner import StageWork, lease_for, run_stage
from p4review.settings.blocks import LeaseBlock
from p4review.stores.factory import get_data_access

# One id per execution environment; each invocation's request id is appended.
_ENVIRONMENT_ID = uuid.uuid4().hex[:12]


class SqsRecord(BaseModel):
    """The fields of an SQS event record (Lambda's SQS event) that the stages read."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    message_id: str = Field(alias="messageId")
    receipt_handle: str = Field(alias="receiptHandle")
    body: str


class SqsEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    records: list[SqsRecord] = Field(alias="Records")


class RetryLater(Exception):
    """Marks a record as a batch item failure; SQS redelivers it after its visibility timeout."""


def handle_stage_batch(
    event: dict[str, Any],
    context: Any,
    work_factory: Callable[[], StageWork],
    settings: LeaseBlock | None = None,
) -> dict[str, Any]:
    """`settings`: the stage function's own (parsed by its handler at import); by default the
    lease block of the environment."""
    work = work_factory()
    dal = get_data_access()
    settings = settings if settings is not None else LeaseBlock.from_env()
    function_name = getattr(context, "function_name", None) or os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "local")
    worker_id = f"{function_name}:{_ENVIRONMENT_ID}:{getattr(context, 'aws_request_id', uuid.uuid4().hex)}"

    def record_handler(record: SqsRecord) -> None:
        try:
            message = StageMessage.model_validate_json(record.body)
        except ValidationError:
            message = _console_redrive(record, work.stage, dal)
        if message is None:
            # Malformed input cannot succeed on retry: park a safe envelope (hash, not body).
            logger.error("malformed stage message", extra={"message_id": record.message_id})
            dal.queues.send_dead_letter(
                work.stage,
                dead_letter.envelope(
                    job=None,
                    job_id="unknown",
                    stage=work.stage,
                    error_class=ErrorClass.SCHEMA_INVALID,
                    exc=None,
                    request_id=None,
                    message_id=record.message_id,
                    body_sha256=dead_letter.body_hash(record.body),
                ),
            )
            return
        if message.stage != work.stage:
            logger.error("message for another stage", extra={"message_id": record.message_id})
            dal.queues.send_dead_letter(
                work.stage,
                dead_letter.envelope(
                    job=None,
                    job_id=message.job_id,
                    stage=work.stage,
                    error_class=ErrorClass.SCHEMA_INVALID,
                    exc=None,
                    request_id=message.request_id,
                    message_id=record.message_id,
                ),
            )
            return
        disposition = run_stage(
            message,
            work,
            jobs=dal.jobs,
            queues=dal.queues,
            worker_id=worker_id,
            lease_seconds=lease_for(work.stage, settings.lease_seconds),
            message_id=record.message_id,
            receipt_handle=record.receipt_handle,
        )
        if not disposition.ack:
            if disposition.delay_seconds is not None:
                dal.queues.delay(work.stage, record.receipt_handle, disposition.delay_seconds)
            raise RetryLater(disposition.reason)

    return partial_batch_response(SqsEvent.model_validate(event), record_handler)


def partial_batch_response(event: SqsEvent, record_handler: Callable[[SqsRecord], None]) -> dict[str, Any]:
    """Each record through `record_handler`; the ones it raised an `Exception` for are reported
    for redelivery. An InjectedCrash (faults.py, a BaseException) propagates out of the whole
    invocation, like a killed process."""
    failures: list[dict[str, str]] = []
    for record in event.records:
        try:
            record_handler(record)
        except RetryLater:
            failures.append({"itemIdentifier": record.message_id})
        except Exception as error:  # noqa: BLE001 - one record's failure must not fail the others
            # The class only: an exception's text may quote what it failed on.
            logger.warning(
                "record left for redelivery",
                extra={"message_id": record.message_id, "error_class": type(error).__name__},
            )
            failures.append({"itemIdentifier": record.message_id})
    return {"batchItemFailures": failures}


CONSOLE_REDRIVE_ACTOR = "sqs-dlq-redrive"


def _console_redrive(record: SqsRecord, stage: StageName, dal: Any) -> StageMessage | None:
    """A dead-letter envelope back on its stage queue was moved there by the SQS console's
    "Start DLQ redrive": replay it like `p4review dlq redrive`, recorded as having no ticket."""
    from p4review.pipeline.replay import parse_dead_letter  # a rare path: not at cold start

    target = parse_dead_letter(record.body)
    if target is None or target.kind != "envelope" or target.stage != stage:
        return None
    try:
        dal.job_replay.replay_stage(
            target.job_id,
            stage,
            actor=CONSOLE_REDRIVE_ACTOR,
            ticket=None,
            note="moved back by the SQS console's DLQ redrive",
            from_start=False,
        )
        logger.warning(
            "replaying a job moved back by SQS DLQ redrive (no ticket)",
            extra={"job_id": target.job_id, "stage": stage.value},
        )
    except (IllegalTransitionError, NotFoundError) as refusal:
        # Already replayed (a duplicate move) or gone: the claim below decides, as for any message.
        logger.info("console redrive needs no replay", extra={"job_id": target.job_id, "reason": refusal.message})
    return StageMessage(job_id=target.job_id, stage=stage, request_id=target.request_id)
