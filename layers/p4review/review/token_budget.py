"""The LLM provider's tokens-per-minute limit as one budget shared by every review worker (pure;
docs/capacity.md "The token budget").

Providers meter tokens with a bucket that holds one minute's worth and refills continuously
(Anthropic documents a token bucket; both count a request's input and its `max_tokens` when it
is admitted). The budget is the same bucket, kept in one number: the theoretical arrival time
`tat` of the generic cell rate algorithm (GCRA). Each token costs 60/TPM seconds of it; the
bucket is full when `tat <= now` and empty when `tat >= now + 60 s`. A request of cost C moves
`tat` to `max(tat, now) + C` and may start once `tat - 60 s` has passed.

One number means a reservation is one conditional write with arithmetic (`SET tat = tat + :c`),
no read first and no lost update under concurrency, and a worker that is granted tokens a little
in the future knows exactly how long to wait: waiting workers are served in the order they
asked, instead of retrying. Times are integer milliseconds since the epoch (exact in DynamoDB).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from p4review.ports import TokenGrant

# The bucket holds one minute of tokens, as the providers' do.
BURST_MS = 60_000


def cost_ms(tokens: int, tokens_per_minute: int) -> int:
    """Milliseconds of budget `tokens` take. Capped at a full bucket: a request bigger than a
    minute's budget still goes (alone, into a full bucket) instead of never."""
    if tokens_per_minute <= 0:
        raise ValueError("tokens_per_minute must be positive")
    return min(BURST_MS, max(1, math.ceil(max(tokens, 0) * 60_000 / tokens_per_minute)))


def latest_tat_ms(now_ms: int, cost: int, max_wait_ms: int) -> int:
    """The latest `tat` at which a request of `cost` is granted within `max_wait_ms`."""
    return now_ms + max(max_wait_ms, 0) + BURST_MS - cost


def wait_ms_after(tat_ms: int, now_ms: int) -> int:
    """How long a request that moved the budget to `tat_ms` waits before it may start."""
    return max(0, tat_ms - BURST_MS - now_ms)


def held_off_tat_ms(now_ms: int, seconds: float) -> int:
    """The `tat` that keeps every request waiting `seconds` (a provider's Retry-After): the
    bucket is empty until then, as the provider's own is."""
    return now_ms + math.ceil(max(seconds, 0.0) * 1000) + BURST_MS


@dataclass(frozen=True)
class Admission:
    granted: bool
    tat_ms: int  # the budget after the decision (unchanged when refused)
    wait_ms: int  # granted: until the tokens are there; refused: how much later it would be granted


def admit(tat_ms: int | None, now_ms: int, cost: int, max_wait_ms: int) -> Admission:
    """Reserve `cost` if the tokens are there within `max_wait_ms` (the reference model of the
    DynamoDB budget's conditional writes)."""
    base = now_ms if tat_ms is None or tat_ms <= now_ms else tat_ms
    latest = latest_tat_ms(now_ms, cost, max_wait_ms)
    if base > latest:
        return Admission(granted=False, tat_ms=base, wait_ms=base - latest)
    after = base + cost
    return Admission(granted=True, tat_ms=after, wait_ms=wait_ms_after(after, now_ms))


def settled_tat_ms(tat_ms: int | None, now_ms: int, delta_cost: int) -> int | None:
    """The budget after a request used `delta_cost` more (or, negative, less) than it reserved.
    A refund never fills the bucket past full (`tat` not below now)."""
    if tat_ms is None or tat_ms <= now_ms:
        return now_ms + delta_cost if delta_cost > 0 else tat_ms
    return max(now_ms, tat_ms + delta_cost)


def request_tokens(estimated_input: int, max_output_tokens: int) -> int:
    """What a request reserves: its estimated input and all the output it may produce, which is
    what the providers count when they admit it."""
    return estimated_input + max_output_tokens


class InMemoryTokenBudget:
    """The budget of one process (the capacity simulation, tests): the same decisions as the
    shared DynamoDB budget (`p4review.review.token_budget_store`), kept in a variable."""

    def __init__(self, tokens_per_minute: int, now_ms: Callable[[], int]):
        self.tokens_per_minute = tokens_per_minute
        self._now_ms = now_ms
        self.tat_ms: int | None = None

    def reserve(self, tokens: int, max_wait_seconds: float) -> TokenGrant:
        admission = admit(
            self.tat_ms,
            self._now_ms(),
            cost_ms(tokens, self.tokens_per_minute),
            math.floor(max_wait_seconds * 1000),
        )
        if admission.granted:
            self.tat_ms = admission.tat_ms
        return TokenGrant(granted=admission.granted, wait_seconds=admission.wait_ms / 1000)

    def settle(self, reserved: int, used: int) -> None:
        delta = cost_ms(used, self.tokens_per_minute) - cost_ms(reserved, self.tokens_per_minute)
        if delta:
            self.tat_ms = settled_tat_ms(self.tat_ms, self._now_ms(), delta)

    def hold_off(self, seconds: float) -> None:
        held = held_off_tat_ms(self._now_ms(), seconds)
        if self.tat_ms is None or self.tat_ms < held:
            self.tat_ms = held
