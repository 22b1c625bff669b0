"""Per-environment CDK context (docs/infra.md, "Per-environment context").

A flat key (`-c key=value`, or cdk.json's top level) applies to whichever environment is being
synthesized. The `environments` key holds each environment's own values, used where no flat key
sets them:

    "environments": {"prod": {"reviewMaxConcurrency": 8, "retentionDays": 730}}

So cdk.json keeps every environment's standing configuration side by side, and `-c key=value`
still overrides one value for one deploy. Every key of the synthesized environment's block must
be one the app reads: a misspelt key fails synth naming it instead of being ignored."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from p4review_infra.review_config import ContextError

ENVIRONMENTS_KEY = "environments"


class EnvironmentContext:
    """`app.node.try_get_context` with the environment's block behind it; remembers what was read."""

    def __init__(self, get: Callable[[str], Any], environment: str) -> None:
        self._get = get
        self._environment = environment
        self._block = _environment_block(get(ENVIRONMENTS_KEY), environment)
        self._read: set[str] = set()

    def __call__(self, key: str) -> Any:
        self._read.add(key)
        value = self._get(key)
        return self._block.get(key) if value is None else value

    def check_every_key_was_read(self) -> None:
        """Call once the whole app is built: a key of the block that nothing read is a typo (or a
        key that cannot be set per environment, like `environment` itself)."""
        unread = sorted(set(self._block) - self._read)
        if unread:
            raise ContextError(
                f"context {ENVIRONMENTS_KEY}.{self._environment}: unknown key{'s' if len(unread) > 1 else ''} "
                f"{', '.join(unread)} (not a context key this app reads)"
            )


def _environment_block(value: Any, environment: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):  # `-c environments=<JSON>` arrives as text
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = None
    if not isinstance(value, dict):
        raise ContextError(
            f"context {ENVIRONMENTS_KEY}: expected a JSON object of environment name -> object of context keys"
        )
    block = value.get(environment, {})
    if not isinstance(block, dict):
        raise ContextError(f"context {ENVIRONMENTS_KEY}.{environment}: expected an object of context keys")
    return block
