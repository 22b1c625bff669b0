"""W, the bound on concurrent workers per stage, and every function's reserved concurrency, from
CDK context (docs/infra.md, "Concurrency").

Per stage (fetch, review, notify) two numbers:

* the SQS event source's maximum concurrency (`<stage>MaxConcurrency`): how many invocations
  Lambda's pollers run at once, so how many jobs of the stage are worked on at once (W). Lambda's
  floor for the setting is 2, its ceiling 1,000.
* the function's reserved concurrency (`<stage>ReservedConcurrency`, default: the maximum
  concurrency): a cap no other invocation path can exceed, and a share of the account's pool that
  no other function can take. It must not be below the maximum concurrency: pollers that find the
  function throttled return the message to the queue, each return counts as a receive, and enough
  of them dead-letter a job that never ran.

ingest is bounded by `ingestReservedConcurrency`; the sweeper and the credential functions run
one at a time. Lambda keeps at least 100 of the account's concurrency unreserved, so the sum of
the stack's reservations must fit under `accountConcurrencyLimit` (default 1,000, the default
regional quota) minus 100: checked here, not at deploy time halfway through a stack update."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from p4review import resources as r
from p4review_infra.review_config import ContextError, _text

MIN_EVENT_SOURCE_CONCURRENCY = 2  # Lambda's floor for ScalingConfig.MaximumConcurrency
MAX_EVENT_SOURCE_CONCURRENCY = 1000  # and its ceiling
# 20 concurrent ingest runs serve the API stage's 50 requests/s throttle (api.py) at up to 400 ms
# each; beyond that Lambda throttles and the trigger keeps the event spooled and sends it again.
DEFAULT_INGEST_RESERVED = 20
# The sweeper, the signing-secret rotation and the credential-age check: one run at a time (a
# second sweep at once would only repeat the first one's conditional writes).
SINGLE_RUN_RESERVED = 1
SINGLE_RUN_FUNCTIONS = 3
DEFAULT_ACCOUNT_CONCURRENCY = 1000  # Lambda's default concurrency quota per account and region
UNRESERVED_MINIMUM = 100  # Lambda refuses a reservation that leaves less unreserved

STAGES = tuple(spec.key for spec in r.QUEUES)
INGEST_RESERVED_KEY = "ingestReservedConcurrency"
ACCOUNT_LIMIT_KEY = "accountConcurrencyLimit"


def max_concurrency_key(stage: str) -> str:
    return f"{stage}MaxConcurrency"


def reserved_concurrency_key(stage: str) -> str:
    return f"{stage}ReservedConcurrency"


@dataclass(frozen=True)
class StageConcurrency:
    max_concurrency: int  # W: the event source's maximum concurrency
    reserved: int  # the function's reserved concurrency, >= max_concurrency


@dataclass(frozen=True)
class ConcurrencyConfig:
    stages: Mapping[str, StageConcurrency]
    ingest_reserved: int = DEFAULT_INGEST_RESERVED
    account_limit: int = DEFAULT_ACCOUNT_CONCURRENCY

    @property
    def reserved_total(self) -> int:
        """What the stack reserves of the account's pool. The JavaScript analyzers' function reserves
        none (constructs/js_analyzers.py): review calls it synchronously, one call per invocation,
        so review's W bounds it, from the unreserved pool."""
        stage_total = sum(stage.reserved for stage in self.stages.values())
        return stage_total + self.ingest_reserved + SINGLE_RUN_FUNCTIONS * SINGLE_RUN_RESERVED

    @classmethod
    def default(cls) -> ConcurrencyConfig:
        return cls.from_context({}.get)

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> ConcurrencyConfig:
        """`get` is the app's context getter. Raises ContextError naming the key and the rule."""
        defaults = {spec.key: spec.max_concurrency for spec in r.QUEUES}
        stages = {}
        for stage in STAGES:
            key = max_concurrency_key(stage)
            maximum = _integer(get, key, defaults[stage], MIN_EVENT_SOURCE_CONCURRENCY, MAX_EVENT_SOURCE_CONCURRENCY)
            reserved = _integer(get, reserved_concurrency_key(stage), maximum, 1, None)
            if reserved < maximum:
                raise ContextError(
                    f"context {reserved_concurrency_key(stage)}={reserved}: must be at least {key} ({maximum}); "
                    "a poller that finds the function throttled returns the message, and the returns count "
                    "toward the queue's redrive to the DLQ"
                )
            stages[stage] = StageConcurrency(max_concurrency=maximum, reserved=reserved)
        config = cls(
            stages=MappingProxyType(stages),
            ingest_reserved=_integer(get, INGEST_RESERVED_KEY, DEFAULT_INGEST_RESERVED, 1, None),
            account_limit=_integer(get, ACCOUNT_LIMIT_KEY, DEFAULT_ACCOUNT_CONCURRENCY, UNRESERVED_MINIMUM + 1, None),
        )
        available = config.account_limit - UNRESERVED_MINIMUM
        if config.reserved_total > available:
            raise ContextError(
                f"context concurrency: the stack reserves {config.reserved_total} concurrent executions, more than "
                f"{ACCOUNT_LIMIT_KEY} ({config.account_limit}) minus the {UNRESERVED_MINIMUM} Lambda keeps unreserved; "
                f"lower the *ReservedConcurrency / *MaxConcurrency keys or raise the account's quota and "
                f"{ACCOUNT_LIMIT_KEY}"
            )
        return config


def _integer(get: Callable[[str], Any], key: str, default: int, low: int, high: int | None) -> int:
    text = _text(get(key))
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        bounds = f"{low}..{high}" if high is not None else f">= {low}"
        raise ContextError(f"context {key}={get(key)!r}: expected an integer, {bounds}")
    return value
