"""What a p4 failure means, classified from p4's own message (first match wins)."""

from __future__ import annotations

import re

from p4review.errors import (
    AuthError,
    ErrorClass,
    NonRetryableError,
    NotFoundError,
    RetryableError,
    ValidationError,
)


class P4ConnectionError(RetryableError):
    """The server could not be reached (refused, DNS, reset). Transient by nature."""

    error_class = ErrorClass.NETWORK_ERROR


class P4TimeoutError(RetryableError):
    """p4 did not finish within the configured timeout; the child was killed."""

    error_class = ErrorClass.NETWORK_TIMEOUT


class P4ServerBusyError(RetryableError):
    """The server said to try again later (database busy, too many clients, partner exited)."""

    error_class = ErrorClass.UPSTREAM_ERROR


class P4NotFoundError(NotFoundError):
    """Unknown changelist, or no such file revision."""


class P4AuthError(AuthError):
    """Password/ticket invalid or expired, or protections deny the service user. Retrying
    cannot help until an operator rotates the ticket or fixes the protections table."""


class P4ArgumentError(ValidationError):
    """An untrusted value (depot path, user name) would be unsafe as a p4 argument."""


class P4CommandError(NonRetryableError):
    """Any other p4 failure: a non-zero exit or an error record we do not recognise, or
    output we cannot parse. Classified INTERNAL_BUG (non-retryable) on purpose: UPSTREAM_ERROR
    is retryable in errors.RETRYABLE_CLASSES, and an unrecognised p4 answer (usage error,
    unsupported server, malformed output) repeats identically on retry and would only burn
    the stage budget. Known-transient server messages map to P4ServerBusyError instead."""

    error_class = ErrorClass.INTERNAL_BUG


# (pattern in p4's message, exception) in priority order; first match wins.
CLASSIFY: tuple[tuple[re.Pattern[str], type[Exception]], ...] = (
    (re.compile(r"connection timed out|operation timed out|receive exceeded maximum", re.I), P4TimeoutError),
    (
        re.compile(
            r"connect to server failed|tcp connect|connection refused|connection reset|"
            r"tcp (send|receive) failed|ssl (connect|receive|send)|name or service not known",
            re.I,
        ),
        P4ConnectionError,
    ),
    (
        re.compile(
            r"password \(p4passwd\) invalid|password invalid|password must be set|session has expired|"
            r"ticket.*expired|please login|login again|don't have permission|no permission|"
            r"protections|p4 protect",
            re.I,
        ),
        P4AuthError,
    ),
    (re.compile(r"change \d+ unknown|no such file|no such changelist|unknown user", re.I), P4NotFoundError),
    (
        re.compile(r"busy|try again|too many clients|partner exited unexpectedly|server is shutting down", re.I),
        P4ServerBusyError,
    ),
)
