"""The event Secrets Manager sends a rotation function, one per rotation step."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class RotationStep(StrEnum):
    CREATE = "createSecret"
    SET = "setSecret"
    TEST = "testSecret"
    FINISH = "finishSecret"


class RotationRequest(BaseModel):
    # Secrets Manager may add fields (RotationToken for cross-account rotation): ignored, not refused.
    model_config = ConfigDict(frozen=True, extra="ignore")

    secret_id: str = Field(alias="SecretId", min_length=1)
    # The new version's id: the same for the four steps of one rotation.
    token: str = Field(alias="ClientRequestToken", min_length=1)
    step: RotationStep = Field(alias="Step")
