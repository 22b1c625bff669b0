"""Queue messages. IDs and references only: a message in any DLQ is safe to read."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from p4review.models.job import StageName

MESSAGE_SCHEMA_VERSION = "1"


class StageMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: str = MESSAGE_SCHEMA_VERSION
    job_id: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-f-]+$")
    stage: StageName
    request_id: str | None = Field(default=None, max_length=128)


class DeadLetter(BaseModel):
    """A message read from a stage's DLQ (operator tooling: `p4review dlq`)."""

    model_config = ConfigDict(frozen=True)

    stage: StageName
    message_id: str
    receipt_handle: str
    body: dict[str, Any] = Field(default_factory=dict)  # {} when the body is not a JSON object
    body_sha256: str = ""
    received_count: int = 0
    sent_at: str | None = None


def decode_queue_body(raw: str | bytes | None) -> dict[str, Any] | None:
    """The JSON object a queue body holds, or None for anything else: not JSON, not an object,
    or nested deeper than the parser can follow (`json.loads` raises RecursionError there, which
    is not a ValueError). Every reader of queue bodies decodes through this, so a hostile body
    is "unrecognised", never a crash."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
