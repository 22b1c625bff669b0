"""When a stored record stops being kept (spec SEC-23, `resources.RETENTION_TTL_ATTRIBUTE`)."""

from __future__ import annotations

from datetime import datetime, timedelta


def expires_at_epoch(moment: datetime, retention_days: int) -> int:
    """DynamoDB TTL's value: whole epoch seconds, `retention_days` after `moment` (UTC-aware)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime: retention is computed from UTC times")
    return int((moment + timedelta(days=retention_days)).timestamp())


def has_expired(expires_at: int | None, now: datetime) -> bool:
    """TTL deletes an item up to days after its time: a reader treats it as gone from that time on."""
    return expires_at is not None and expires_at <= int(now.timestamp())
