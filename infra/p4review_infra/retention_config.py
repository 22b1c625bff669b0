"""Record retention from CDK context (docs/infra.md, "Retention"; docs/security.md "Retention").

`retentionDays` sets `P4REVIEW_RETENTION_DAYS` on every function that writes or reads the jobs and
outbox tables: what a job item, a changelist-version claim or an outbox row gets as its DynamoDB
TTL (`expires_at`). Checked at synth by the `RetentionBlock` model the functions use at cold start."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4review.settings.blocks import RetentionBlock
from p4review_infra.review_config import _text, settings_from_context

CONTEXT_FIELDS = {"retentionDays": "retention_days"}
ENV_VARS = {key: RetentionBlock.env_var(name) for key, name in CONTEXT_FIELDS.items()}


def retention_env(get: Callable[[str], Any]) -> dict[str, str]:
    """The functions' environment for the context's retention (empty when not given: the
    `RetentionBlock` default applies). Raises ContextError naming the key."""
    env = {ENV_VARS[key]: text for key in CONTEXT_FIELDS if (text := _text(get(key)))}
    settings_from_context(env, ENV_VARS, RetentionBlock)
    return env
