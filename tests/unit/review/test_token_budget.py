"""The shared LLM token budget's arithmetic (p4review.review.token_budget): a GCRA token bucket
holding one minute of tokens, kept in one number."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p4review.review.token_budget import (
    BURST_MS,
    InMemoryTokenBudget,
    admit,
    cost_ms,
    held_off_tat_ms,
    settled_tat_ms,
)

TPM = 60_000  # one token per millisecond: costs read as tokens
NOW = 1_800_000_000_000


class Clock:
    def __init__(self, now_ms: int = NOW):
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def test_cost_is_the_tokens_share_of_a_minute_capped_at_a_full_bucket():
    assert cost_ms(30_000, TPM) == 30_000
    assert cost_ms(1, 400_000) == 1  # rounded up: a request never costs nothing
    assert cost_ms(10_000_000, TPM) == BURST_MS  # bigger than a minute's budget: goes alone, not never


@pytest.mark.spec("CAP-1")
def test_a_full_bucket_grants_a_minute_of_tokens_at_once_then_queues():
    budget = InMemoryTokenBudget(TPM, Clock())
    waits = [budget.reserve(30_000, max_wait_seconds=600).wait_seconds for _ in range(4)]
    assert waits == [0.0, 0.0, 30.0, 60.0]


def test_a_request_that_would_wait_too_long_is_refused_and_reserves_nothing():
    budget = InMemoryTokenBudget(TPM, Clock())
    for _ in range(3):
        budget.reserve(30_000, max_wait_seconds=600)
    before = budget.tat_ms
    refused = budget.reserve(30_000, max_wait_seconds=10)
    assert not refused.granted
    assert refused.wait_seconds == 50.0  # it would need 60 s: 50 s more than it can wait
    assert budget.tat_ms == before


def test_the_bucket_refills_with_time():
    clock = Clock()
    budget = InMemoryTokenBudget(TPM, clock)
    budget.reserve(60_000, max_wait_seconds=0)
    assert not budget.reserve(30_000, max_wait_seconds=0).granted
    clock.now_ms += 30_000
    assert budget.reserve(30_000, max_wait_seconds=0).granted


@pytest.mark.spec("CAP-3")
def test_a_hold_off_keeps_everyone_waiting_for_the_retry_after():
    budget = InMemoryTokenBudget(TPM, Clock())
    budget.hold_off(20)
    grant = budget.reserve(1_000, max_wait_seconds=600)
    assert grant.granted and grant.wait_seconds == 21.0  # the Retry-After, then its own tokens
    budget.hold_off(5)  # a shorter hold-off never shortens a longer one
    assert budget.tat_ms == held_off_tat_ms(NOW, 20) + 1_000


def test_settling_gives_back_unused_tokens_but_never_beyond_a_full_bucket():
    clock = Clock()
    budget = InMemoryTokenBudget(TPM, clock)
    for _ in range(3):
        budget.reserve(30_000, max_wait_seconds=600)
    budget.settle(reserved=30_000, used=10_000)  # 20 s back: the next request waits 40 s, not 60
    assert budget.reserve(30_000, max_wait_seconds=600).wait_seconds == 40.0
    assert settled_tat_ms(NOW + 5_000, NOW, -60_000) == NOW  # not past full
    assert settled_tat_ms(None, NOW, -5_000) is None
    assert settled_tat_ms(None, NOW, 5_000) == NOW + 5_000  # a charge on a full bucket


@pytest.mark.spec("CAP-1")
@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1_000, max_value=2_000_000),
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=90_000),  # ms since the previous request
            st.floats(min_value=0.0, max_value=1.0),  # the request's share of a minute's tokens
            st.integers(min_value=0, max_value=900_000),  # its maximum wait, ms
        ),
        min_size=1,
        max_size=60,
    ),
)
def test_no_window_ever_starts_more_than_its_share_plus_one_bucket(tokens_per_minute, requests):
    """Whatever arrives, the tokens of the requests that start within any span of L ms are at
    most TPM * L / 60 s + TPM: the provider's own bucket admits them all."""
    now = NOW
    tat: int | None = None
    started: list[tuple[int, int]] = []
    for gap, share, max_wait in requests:
        now += gap
        tokens = max(1, int(share * tokens_per_minute))
        decision = admit(tat, now, cost_ms(tokens, tokens_per_minute), max_wait)
        if decision.granted:
            tat = decision.tat_ms
            started.append((now + decision.wait_ms, tokens))
    started.sort()
    for first, (begin, _) in enumerate(started):
        total = 0
        for end, tokens in started[first:]:
            total += tokens
            assert total <= tokens_per_minute * (end - begin) / 60_000 + tokens_per_minute
