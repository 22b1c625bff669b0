"""The one clock. DynamoDB has no server clock, so every persisted timestamp comes from
here: UTC, second precision in ISO-8601 with a trailing Z, so strings sort like times."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime


def _system_now() -> datetime:
    return datetime.now(UTC)


_now: Callable[[], datetime] = _system_now


def utc_now() -> datetime:
    return _now()


def set_time_source(source: Callable[[], datetime] | None) -> None:
    """Tests only: every reader of this clock (lease ends, sweeps, audit times) reads `source`
    instead of the system clock; None restores it. A test lets a lease lapse by moving time on,
    instead of sleeping past it and hoping a busy machine kept up."""
    global _now
    _now = source or _system_now


def to_iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("naive datetime: every persisted timestamp must be UTC")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_iso() -> str:
    return to_iso(utc_now())


def parse_iso(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
