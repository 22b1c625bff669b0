"""Domain exceptions. Data access translates AWS errors into these; the API and the
stage runtime map them to HTTP answers and to retry/dead-letter decisions."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorClass(StrEnum):
    """Stable failure identifiers (the spec's "Failure classification")."""

    NETWORK_TIMEOUT = "NETWORK_TIMEOUT"
    NETWORK_ERROR = "NETWORK_ERROR"
    RATE_LIMITED = "RATE_LIMITED"
    UPSTREAM_ERROR = "UPSTREAM_ERROR"
    CONFLICT = "CONFLICT"
    LEASE_HELD = "LEASE_HELD"
    SCHEMA_INVALID = "SCHEMA_INVALID"
    AUTH_DENIED = "AUTH_DENIED"
    NOT_FOUND = "NOT_FOUND"
    POLICY_DENIED = "POLICY_DENIED"
    CONFIG_ERROR = "CONFIG_ERROR"
    INTERNAL_BUG = "INTERNAL_BUG"
    # A stage was claimed more often than its budget without ever reporting back (crashes,
    # function timeouts): it will not do better on another try.
    ATTEMPTS_EXHAUSTED = "ATTEMPTS_EXHAUSTED"


RETRYABLE_CLASSES = frozenset(
    {
        ErrorClass.NETWORK_TIMEOUT,
        ErrorClass.NETWORK_ERROR,
        ErrorClass.RATE_LIMITED,
        ErrorClass.UPSTREAM_ERROR,
        ErrorClass.CONFLICT,
        ErrorClass.LEASE_HELD,
    }
)


# Upper bound honoured for an upstream's Retry-After (the runtime caps its own delays too).
MAX_RETRY_AFTER_SECONDS = 300.0


def clamp_retry_after(value: Any) -> float | None:
    """A Retry-After header value (seconds; HTTP dates are ignored) -> bounded float or None.
    Every adapter that can see the header passes it on through this (spec ERR-3)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    if seconds != seconds or seconds < 0:  # NaN or negative
        return None
    return min(seconds, MAX_RETRY_AFTER_SECONDS)


class P4ReviewError(Exception):
    """Base of every domain error. `message` is safe to show; it never holds secrets."""

    error_class: ErrorClass = ErrorClass.INTERNAL_BUG

    def __init__(self, message: str, *, error_class: ErrorClass | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        if error_class is not None:
            self.error_class = error_class
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.error_class in RETRYABLE_CLASSES


class RetryableError(P4ReviewError):
    error_class = ErrorClass.UPSTREAM_ERROR


class NonRetryableError(P4ReviewError):
    error_class = ErrorClass.INTERNAL_BUG


class NotFoundError(NonRetryableError):
    error_class = ErrorClass.NOT_FOUND


class AuthError(NonRetryableError):
    error_class = ErrorClass.AUTH_DENIED


class ValidationError(NonRetryableError):
    error_class = ErrorClass.SCHEMA_INVALID


class ConfigError(NonRetryableError):
    error_class = ErrorClass.CONFIG_ERROR


class IllegalTransitionError(NonRetryableError):
    """A state change that the job's state machine refuses (never applied)."""

    error_class = ErrorClass.INTERNAL_BUG


class StaleWriteError(RetryableError):
    """A conditional write lost: the record changed under us (lease lost, state moved on)."""

    error_class = ErrorClass.CONFLICT


class DeliveryInFlight(StaleWriteError):
    """Starting a delivery attempt lost: another worker holds the outbox row's send lock (or
    counted an attempt since this worker read the row). It must not call the provider.
    `locked_until` is the holder's lock end (UTC ISO-8601), when known."""

    def __init__(self, locked_until: str | None):
        super().__init__("another worker is delivering this row")
        self.locked_until = locked_until


class LeaseLostError(StaleWriteError):
    """This worker no longer owns its stage lease: a heartbeat was refused (another worker took
    over, or the sweeper requeued the stage) or the lease ran out locally. Stop before the next
    side effect; the job belongs to its new owner, so neither release nor dead-letter it."""


class LeaseHeldError(RetryableError):
    """Another worker holds a live lease; put the message back without spending budget."""

    error_class = ErrorClass.LEASE_HELD


class AwaitingCapacity(RetryableError):
    """The work stopped before its next side effect because shared capacity (the LLM's token
    budget) would not be there in the time its invocation has left. Not a failure: the runtime
    gives the stage back without counting the attempt and the message returns after
    `retry_after` (docs/capacity.md)."""

    error_class = ErrorClass.RATE_LIMITED


class StorageError(RetryableError):
    """A data store call failed transiently (throttling, 5xx, timeouts)."""

    error_class = ErrorClass.UPSTREAM_ERROR


class AnalyzerUnavailable(P4ReviewError):
    """An analyzer that runs elsewhere (the JavaScript analyzers' function) could not be asked or
    gave no report. The review goes on without it: a warning diagnostic, never a failed job."""

    error_class = ErrorClass.UPSTREAM_ERROR
