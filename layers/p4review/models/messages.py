"""Queue messages. IDs and references only: a message in any DLQ is safe to read."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from p4review.models.job import StageName

MESSAGE_SCHEMA_VERSION = "1"


class StageMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: str = MESSAGE_SCHEMA_VERSION
    job_id: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-f-]+$")
    stage: StageName
    request_id: str | None = Field(default=None, max_length=128)
