"""Retention in DynamoDB (spec SEC-23, `resources.RETENTION_TTL_ATTRIBUTE`): TTL deletes an item
up to days after its `expires_at`, and until then every reader treats it as gone and every write
that must not touch it says so in its condition."""

from __future__ import annotations

from typing import Any

from p4review.clock import utc_now
from p4review.resources import RETENTION_TTL_ATTRIBUTE
from p4review.stores.dynamo_codec import to_value
from p4review.stores.record_retention import has_expired


def is_expired_item(item: dict[str, Any]) -> bool:
    """Past its retention: TTL deletes an item up to days later, and until then it reads as gone."""
    stored = item.get(RETENTION_TTL_ATTRIBUTE, {}).get("N")
    return has_expired(int(stored) if stored is not None else None, utc_now())


def not_expired_condition(values: dict[str, Any]) -> str:
    """A condition clause that refuses a write to an item past its retention (its `:epoch_now`
    is added to `values`)."""
    values[":epoch_now"] = to_value(int(utc_now().timestamp()))
    return f"(attribute_not_exists({RETENTION_TTL_ATTRIBUTE}) OR {RETENTION_TTL_ATTRIBUTE} > :epoch_now)"
