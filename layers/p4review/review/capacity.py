"""The review stage's side of the LLM token budget (docs/capacity.md "The token budget").

Before each model call the stage reserves the request's tokens (its estimated input plus its
`max_output_tokens`, what the providers count on admission) from the budget every worker
shares, and waits in place until they are there: the worker keeps its lease (the heartbeat
runs), the message stays invisible, and nothing is retried or counted. Waiting in place, not
putting the message back, is what keeps a burst from churning: the event source hands a waiting
worker nothing else, so the backlog stays in the queue, oldest first.

Only when the tokens would not be there before the invocation must start its last call does the
stage give up (`AwaitingCapacity`): the runtime gives the stage back without counting the
attempt (stage_runner._defer), and the chunks already answered are kept for the next run.

A 429 that still happens (another client on the same key, the estimate short of the provider's
count) holds the whole budget off for the provider's Retry-After, so every reservation made from
then on waits, not just this one's (a worker already granted and asleep is not woken: it may meet
a 429 of its own), and this chunk is asked once more in place. A second 429, or one without a
Retry-After, is the failed attempt the spec says it is (ERR-3)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from p4review.clock import utc_now
from p4review.errors import AwaitingCapacity, P4ReviewError
from p4review.observability import logger
from p4review.pipeline.heartbeat import Lease
from p4review.ports import TokenBudget
from p4review.review.llm.base import ContextTooLong, LlmRequest, LlmResponse, ProviderRateLimited
from p4review.review.prompts import estimate_tokens
from p4review.review.token_budget import request_tokens

# A waiting worker looks at its lease this often, so a lost lease ends the wait early.
WAIT_SLICE_SECONDS = 5.0
# A chunk refused with a Retry-After is asked again in place this many times per attempt.
RATE_LIMITED_REASKS = 1


class TokenGate:
    def __init__(
        self,
        budget: TokenBudget,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = utc_now,
    ):
        self._budget = budget
        self._sleep = sleep
        self._clock = clock

    def ask(
        self, request: LlmRequest, complete: Callable[[], LlmResponse], lease: Lease, deadline: datetime
    ) -> LlmResponse:
        """`complete()` once the request's tokens are there. `deadline`: the latest moment this
        invocation may start a call (AwaitingCapacity when the tokens would come later)."""
        estimated_input = estimate_tokens(request.system) + estimate_tokens(request.user)
        reserved = request_tokens(estimated_input, request.max_output_tokens)
        self._acquire(reserved, lease, deadline)
        reasks = RATE_LIMITED_REASKS
        while True:
            lease.check()
            try:
                response = complete()
            except ContextTooLong:
                self._give_back(reserved)  # refused unread: the budget was not spent (the chunk is split)
                raise
            except ProviderRateLimited as refused:
                self._give_back(reserved)  # a 429 processed nothing; a re-ask reserves again
                if refused.retry_after is None or reasks == 0:
                    raise
                reasks -= 1
                self._budget.hold_off(refused.retry_after)
                logger.warning(
                    "LLM rate limited despite the token budget; the budget is held off",
                    extra={"retry_after": refused.retry_after, "request_id": request.request_id},
                )
                try:
                    self._acquire(reserved, lease, deadline)
                except AwaitingCapacity:
                    raise refused from None  # no time left to wait: the 429 counts, as the spec says
                continue
            # The provider's count replaces the estimate and unused output tokens go back; an answer
            # without usage (some OpenAI-compatible servers) keeps the reservation as it was.
            if response.input_tokens:
                self._settle(reserved, response.input_tokens + response.output_tokens)
            return response

    def _give_back(self, reserved: int) -> None:
        self._settle(reserved, 0)

    def _settle(self, reserved: int, used: int) -> None:
        try:
            self._budget.settle(reserved, used)
        except P4ReviewError as exc:  # the answer is paid for: a budget a little off is the lesser loss
            logger.warning("token budget not settled", extra={"error_class": exc.error_class.value})

    def _acquire(self, tokens: int, lease: Lease, deadline: datetime) -> None:
        time_left = (deadline - self._clock()).total_seconds()
        grant = self._budget.reserve(tokens, max(time_left, 0.0))
        if not grant.granted:
            raise AwaitingCapacity(
                f"LLM token budget: {tokens} tokens not available before this run's last call",
                retry_after=grant.wait_seconds,
            )
        remaining = grant.wait_seconds
        if remaining > 0:
            logger.info("waiting for the LLM token budget", extra={"wait_seconds": round(remaining, 3)})
        while remaining > 0:
            lease.check()
            step = min(WAIT_SLICE_SECONDS, remaining)
            self._sleep(step)
            remaining -= step
