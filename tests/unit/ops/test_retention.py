"""TTL verification: the oldest day left under each artifact prefix, against the bucket's TTL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from p4review.ops.retention import verify_retention

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


class FakeRetention:
    def __init__(self, oldest: dict[tuple[str, str], str | None]):
        self._oldest = oldest

    def buckets(self) -> dict[str, int]:
        return {"raw": 7, "redacted": 30}

    def oldest_day(self, bucket_key: str, prefix: str) -> str | None:
        return self._oldest.get((bucket_key, prefix))


def test_objects_within_ttl_plus_the_grace_day_are_fine():
    # Objects of 2026/11/14 are at least 7.5 days old: within the raw TTL (7) plus the grace day.
    store = FakeRetention(
        {("raw", "changes/"): "2026/11/14", ("redacted", "changes/"): "2026/10/22", ("redacted", "results/"): None}
    )
    assert verify_retention(store, NOW) == []


@pytest.mark.spec("SEC-31")
def test_an_object_older_than_ttl_plus_a_day_is_a_violation():
    store = FakeRetention({("raw", "changes/"): "2026/11/13", ("redacted", "results/"): "2026/10/20"})
    violations = verify_retention(store, NOW)
    assert [(v.bucket, v.prefix, v.oldest_day, v.ttl_days) for v in violations] == [
        ("raw", "changes/", "2026/11/13", 7),
        ("redacted", "results/", "2026/10/20", 30),
    ]
    assert violations[0].min_age_days == 8.5


def test_keys_this_service_did_not_write_are_not_judged():
    assert verify_retention(FakeRetention({("raw", "changes/"): "legacy/x/y"}), NOW) == []
