"""Tell Swarm a workflow test's verdict: POST the request notify/swarm/verdict.py built to the test
run's {update} URL (JSON status, messages, link) or, without one, its {pass} or {fail} URL (a form
with the link: Swarm reads no JSON there) (docs/swarm.md "Workflow test"). Standard library only.

The URL is checked against the configured Swarm again before the call (it was checked at ingest;
a job written before a P4REVIEW_SWARM_URL change must not call elsewhere), redirects are not
followed, and neither the URL (it carries Swarm's token) nor Swarm's answer body is ever put in
an error message or a log."""

from __future__ import annotations

import urllib.error
import urllib.request
from http import HTTPStatus
from typing import Any

from p4review.errors import ErrorClass, NonRetryableError, RetryableError, clamp_retry_after
from p4review.notify.swarm.verdict import CallbackRequest
from p4review.swarm_urls import callback_url_problem

DEFAULT_TIMEOUT_SECONDS = 10.0
_RETRYABLE_STATUSES = frozenset({HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_EARLY, HTTPStatus.TOO_MANY_REQUESTS})


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is answered as an error below, never followed


def _default_opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(_NoRedirects())


def post_verdict(
    request: CallbackRequest,
    *,
    swarm_url: str,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    opener: urllib.request.OpenerDirector | None = None,
) -> int:
    """POST the verdict; returns Swarm's HTTP status (2xx). Raises RetryableError for a timeout,
    a connection failure, 408/425/429 and 5xx (with Retry-After when Swarm sends one), and
    NonRetryableError for a URL off the configured Swarm, a redirect or another 4xx (the test run
    is gone, or its token was refused: trying again cannot help)."""
    problem = callback_url_problem(request.url, swarm_url)
    if problem is not None:
        raise NonRetryableError(f"Swarm callback refused: the URL {problem}", error_class=ErrorClass.POLICY_DENIED)
    http_request = urllib.request.Request(  # noqa: S310 - an http(s) URL on the Swarm host, checked above
        request.url, data=request.body, headers=dict(request.headers), method=request.method
    )
    try:
        with (opener or _default_opener()).open(http_request, timeout=timeout) as answer:
            answer.read(4096)  # drain a little; the body is not used
            status = int(answer.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise _status_error(exc.code, exc.headers.get("Retry-After") if exc.headers else None) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise RetryableError("Swarm callback timed out", error_class=ErrorClass.NETWORK_TIMEOUT) from None
        raise RetryableError("Swarm callback: connection failed", error_class=ErrorClass.NETWORK_ERROR) from None
    except TimeoutError:
        raise RetryableError("Swarm callback timed out", error_class=ErrorClass.NETWORK_TIMEOUT) from None
    except OSError:
        raise RetryableError("Swarm callback: connection failed", error_class=ErrorClass.NETWORK_ERROR) from None
    if not HTTPStatus.OK <= status < HTTPStatus.MULTIPLE_CHOICES:
        raise _status_error(status, None)
    return status


def _status_error(status: int, retry_after: str | None) -> Exception:
    text = f"Swarm callback answered HTTP {status}"
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return RetryableError(text, error_class=ErrorClass.RATE_LIMITED, retry_after=clamp_retry_after(retry_after))
    if status >= HTTPStatus.INTERNAL_SERVER_ERROR or status in _RETRYABLE_STATUSES:
        return RetryableError(text, error_class=ErrorClass.UPSTREAM_ERROR, retry_after=clamp_retry_after(retry_after))
    if status in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN):
        return NonRetryableError(text, error_class=ErrorClass.AUTH_DENIED)
    if status == HTTPStatus.NOT_FOUND:
        return NonRetryableError(text, error_class=ErrorClass.NOT_FOUND)
    if status < HTTPStatus.BAD_REQUEST:  # a redirect: not followed (it could lead off the Swarm host)
        return NonRetryableError(text, error_class=ErrorClass.POLICY_DENIED)
    return NonRetryableError(text, error_class=ErrorClass.SCHEMA_INVALID)  # Swarm refused what was sent
