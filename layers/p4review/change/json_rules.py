"""Settings that hold a JSON array of rules (noise controls, reviewers per depot prefix)."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from p4review.errors import ConfigError

Rule = TypeVar("Rule", bound=BaseModel)


def parse_rules(value: str, model: type[Rule], setting: str) -> tuple[Rule, ...]:
    """`value` (empty = no rules) as a tuple of `model`; ConfigError naming `setting` otherwise,
    so a bad setting stops the function at cold start (and `cdk synth`), never a job."""
    if not value.strip():
        return ()
    try:
        document = json.loads(value)
        if not isinstance(document, list):
            raise ValueError("not a JSON array")
        return tuple(model.model_validate(item) for item in document)
    except (ValueError, ValidationError) as exc:
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise ConfigError(f"{setting} is invalid: {detail}") from None
