"""Spec T-1: every persisted timestamp is UTC, written with a trailing Z, sorting like time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from p4review.clock import now_iso, parse_iso, to_iso


@pytest.mark.spec("T-1")
def test_a_naive_datetime_is_refused():
    with pytest.raises(ValueError, match="naive"):
        to_iso(datetime(2026, 11, 25, 12, 0, 0))


@pytest.mark.spec("T-1")
def test_any_aware_datetime_is_written_as_utc_with_z():
    paris = timezone(timedelta(hours=1))
    assert to_iso(datetime(2026, 11, 25, 13, 0, 0, tzinfo=paris)) == "2026-11-25T12:00:00.000000Z"
    assert to_iso(datetime(2026, 11, 25, 12, 0, 0, 5, tzinfo=UTC)) == "2026-11-25T12:00:00.000005Z"
    assert now_iso().endswith("Z")


@pytest.mark.spec("T-1")
def test_round_trip_and_string_order_is_time_order():
    earlier = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    later = earlier + timedelta(microseconds=1)
    assert parse_iso(to_iso(earlier)) == earlier
    assert to_iso(earlier) < to_iso(later)
    assert parse_iso(to_iso(later)).tzinfo is UTC
