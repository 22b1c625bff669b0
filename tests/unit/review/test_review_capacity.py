"""The review stage's gate on the shared LLM token budget (p4review.review.capacity): wait
in place for granted tokens, give up (AwaitingCapacity) when they come too late, hold everyone
off after a 429 with a Retry-After and ask once more."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from p4review.errors import AwaitingCapacity
from p4review.pipeline.heartbeat import Lease
from p4review.review.capacity import TokenGate
from p4review.review.llm.base import LlmRequest, LlmResponse, ProviderRateLimited
from p4review.review.prompts import estimate_tokens
from p4review.review.token_budget import InMemoryTokenBudget

TPM = 60_000  # one token per millisecond
START = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)
REQUEST = LlmRequest(system="s" * 350, user="u" * 3_500, json_schema={}, max_output_tokens=900, request_id="r")
RESERVED = estimate_tokens(REQUEST.system) + estimate_tokens(REQUEST.user) + 900  # 100 + 1000 + 900


class World:
    """One clock for the gate, the budget and the lease; sleeping moves it on."""

    def __init__(self) -> None:
        self.now = START
        self.slept: list[float] = []
        self.budget = InMemoryTokenBudget(TPM, lambda: int(self.now.timestamp() * 1000))
        self.lease = Lease(START + timedelta(hours=1), clock=lambda: self.now)
        self.gate = TokenGate(self.budget, sleep=self.sleep, clock=lambda: self.now)
        self.calls = 0

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)

    def answer(self, *failures: Exception):
        def complete() -> LlmResponse:
            self.calls += 1
            if self.calls <= len(failures):
                raise failures[self.calls - 1]
            return LlmResponse(text="{}", input_tokens=1_200, output_tokens=300, provider="p", model="m")

        return complete

    def ask(self, complete, last_call_in: float = 600.0) -> LlmResponse:
        return self.gate.ask(REQUEST, complete, self.lease, self.now + timedelta(seconds=last_call_in))


@pytest.mark.spec("CAP-1")
def test_granted_tokens_are_waited_for_in_place_then_the_call_is_made():
    world = World()
    for tokens in (60_000, 5_000):  # a full minute's tokens and 5 s more, queued ahead
        world.budget.reserve(tokens, max_wait_seconds=600)
    response = world.ask(world.answer())
    assert response.output_tokens == 300 and world.calls == 1
    assert sum(world.slept) == pytest.approx((5_000 + RESERVED) / 1000)
    assert max(world.slept) <= 5.0  # in slices: the lease is looked at between them


@pytest.mark.spec("CAP-2")
def test_tokens_that_would_come_after_the_last_call_give_up_without_calling_or_reserving():
    world = World()
    world.budget.hold_off(3_600)
    before = world.budget.tat_ms
    with pytest.raises(AwaitingCapacity) as refused:
        world.ask(world.answer(), last_call_in=600)
    assert world.calls == 0 and world.slept == [] and world.budget.tat_ms == before
    assert refused.value.retry_after == pytest.approx(3_000 + RESERVED / 1000)


@pytest.mark.spec("CAP-1")
def test_the_provider_count_replaces_the_reservation():
    world = World()
    world.ask(world.answer())
    assert world.budget.tat_ms == int(START.timestamp() * 1000) + 1_200 + 300  # not RESERVED


@pytest.mark.spec("CAP-3")
def test_a_429_with_retry_after_holds_everyone_off_and_is_asked_once_more():
    world = World()
    response = world.ask(world.answer(ProviderRateLimited("429", retry_after=12)))
    assert world.calls == 2 and response.input_tokens == 1_200
    assert sum(world.slept) == pytest.approx(12 + RESERVED / 1000)
    # Another worker asking now waits behind the hold-off too.
    assert world.budget.reserve(1_000, max_wait_seconds=600).wait_seconds > 0


@pytest.mark.spec("CAP-3")
def test_a_second_429_or_one_without_retry_after_is_the_failed_attempt():
    world = World()
    with pytest.raises(ProviderRateLimited):
        world.ask(world.answer(ProviderRateLimited("429", retry_after=1), ProviderRateLimited("429", retry_after=1)))
    assert world.calls == 2
    bare = World()
    with pytest.raises(ProviderRateLimited):
        bare.ask(bare.answer(ProviderRateLimited("429")))
    assert bare.calls == 1


@pytest.mark.spec("CAP-3")
def test_a_429_whose_wait_does_not_fit_counts_rather_than_deferring():
    world = World()
    with pytest.raises(ProviderRateLimited):
        world.ask(world.answer(ProviderRateLimited("429", retry_after=300)), last_call_in=100)
    assert world.calls == 1


def test_an_answer_is_kept_when_the_budget_cannot_be_settled():
    from p4review.errors import StorageError

    world = World()

    def refuse(reserved: int, used: int) -> None:
        raise StorageError("throttled")

    world.budget.settle = refuse  # type: ignore[method-assign]
    assert world.ask(world.answer()).output_tokens == 300
