"""The email provider interface notify uses (SMTP, SES), and the wrapper that measures it.

Providers answer with structured results (`SendResult`, `LookupResult`), never exceptions for
an expected failure. `TimedSender` counts every provider call once and records its latency and
outcome as metrics: `EmailProviderCalls` (per call), `EmailOutcome` (dimension Outcome: sent,
retryable or failed) and `EmailProviderLatency` (milliseconds; every call is one value, so
CloudWatch's percentile statistics give the latency distribution); a lookup counts `EmailLookup`
(dimension Outcome).

`lookup` asks by the deterministic Message-ID notify renders. Only a provider that delivers it
unchanged can answer: an SMTP relay passes it on, SES replaces it with its own (and has no lookup
API), so SesSender answers UNSUPPORTED.

`commit_by` is when the caller's right to deliver (its stage lease and the row's send lock)
ends. A provider must not hand the message over after it: past that moment another worker may
own the row, look the delivery up, find nothing yet and send again."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Protocol

from p4review.metric_names import Dimension, MetricName
from p4review.models.outbox import LookupResult, SendResult
from p4review.observability import metrics, publish_metric


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
        publish_metric(MetricName.EMAIL_OUTCOME, 1, {Dimension.OUTCOME: result.outcome.value})
        return result

    def lookup(self, message_id: str) -> LookupResult:
        result = self._inner.lookup(message_id)
        publish_metric(MetricName.EMAIL_LOOKUP, 1, {Dimension.OUTCOME: result.outcome.value})
        return result
