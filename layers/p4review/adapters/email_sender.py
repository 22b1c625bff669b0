"""The email provider interface notify uses (SMTP, SES), and the wrapper that measures it.

Providers answer with structured results (`SendResult`, `LookupResult`), never exceptions for
an expected failure. `TimedSender` counts every provider call once and records its latency and
outcome as metrics: `EmailProviderCalls` (per call), `EmailOutcome_<sent|retryable|failed>` and
`EmailProviderLatency` (milliseconds; every call is one value, so CloudWatch's percentile
statistics give the latency distribution).

`commit_by` is when the caller's right to deliver (its stage lease and the row's send lock)
ends. A provider must not hand the message over after it: past that moment another worker may
own the row, look the delivery up, find nothing yet and send again."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Protocol

from p4review.metric_names import MetricName
from p4review.models.outbox import LookupResult, SendResult
from p4review.observability import metrics


class EmailSender(Protocol):
    def send(self, *, sender: str, recipient: str, message: bytes, commit_by: datetime | None = None) -> SendResult: ...

    def lookup(self, message_id: str) -> LookupResult: ...


class TimedSender:
    def __init__(self, inner: EmailSender, provider: str):
        self._inner = inner
        self.provider = provider

    def send(self, *, sender: str, recipient: str, message: bytes, commit_by: datetime | None = None) -> SendResult:
        started = time.perf_counter()
        result = self._inner.send(sender=sender, recipient=recipient, message=message, commit_by=commit_by)
        metrics.add_metric(name=MetricName.EMAIL_PROVIDER_CALLS, unit="Count", value=1)
        metrics.add_metric(
            name=MetricName.EMAIL_PROVIDER_LATENCY,
            unit="Milliseconds",
            value=round((time.perf_counter() - started) * 1000, 1),
        )
        metrics.add_metric(name=f"EmailOutcome_{result.outcome.value}", unit="Count", value=1)
        return result

    def lookup(self, message_id: str) -> LookupResult:
        result = self._inner.lookup(message_id)
        metrics.add_metric(name=f"EmailLookup_{result.outcome.value}", unit="Count", value=1)
        return result
