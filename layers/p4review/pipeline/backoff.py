"""Retry delays (spec "Retry backoff policy"): full jitter, recomputed per attempt."""

from __future__ import annotations

import random

INITIAL_DELAY = 1.0
MULTIPLIER = 2.0
MAX_DELAY = 60.0
RETRY_AFTER_CEILING = 300.0


def backoff_delay(attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
    """Delay before the next try after failed attempt number `attempt` (1-based)."""
    ceiling = min(MAX_DELAY, INITIAL_DELAY * MULTIPLIER ** max(attempt - 1, 0))
    delay = (rng or random).uniform(0, ceiling)
    if retry_after is not None and retry_after > delay:
        delay = min(retry_after, RETRY_AFTER_CEILING)
    return delay
