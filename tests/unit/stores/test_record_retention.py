from datetime import UTC, datetime, timedelta

import pytest

from p4review.stores.record_retention import expires_at_epoch, has_expired

CREATED = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


def test_expiry_is_whole_epoch_seconds_retention_days_after_the_moment():
    expires = expires_at_epoch(CREATED, 400)
    assert expires == int((CREATED + timedelta(days=400)).timestamp())
    assert isinstance(expires, int)


def test_naive_times_are_refused():
    with pytest.raises(ValueError):
        expires_at_epoch(CREATED.replace(tzinfo=None), 400)


def test_an_item_reads_as_gone_from_its_expiry_on():
    expires = expires_at_epoch(CREATED, 30)
    assert not has_expired(expires, CREATED + timedelta(days=30) - timedelta(seconds=1))
    assert has_expired(expires, CREATED + timedelta(days=30))
    assert not has_expired(None, CREATED + timedelta(days=10_000))  # the head carries none: kept
