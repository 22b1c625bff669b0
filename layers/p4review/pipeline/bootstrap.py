"""Every function's cold start, called by its handler module at import (as
aws-lambda-handler-cookbook does): refuse fault injection outside the local/test environments,
then parse the function's own settings model. Either failure fails the import with a ConfigError
naming the variable, never its value."""

from __future__ import annotations

from typing import TypeVar

from p4review import faults
from p4review.settings.blocks import SettingsBlock

SettingsT = TypeVar("SettingsT", bound=SettingsBlock)


def cold_start(model: type[SettingsT]) -> SettingsT:
    faults.refuse_outside_test_environments()
    return model.from_env()
