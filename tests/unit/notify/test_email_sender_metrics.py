"""TimedSender: every provider call counts once, with its outcome and latency as metrics."""

from __future__ import annotations

import pytest

from p4review.metric_names import Dimension, MetricName
from p4review.models.outbox import LookupOutcome, LookupResult, SendOutcome, SendResult
from p4review.notify.email.sender import TimedSender
from p4review.observability import metrics
from p4review_dev.support.emf import data_points, total


class FakeProvider:
    def __init__(self, *results: SendResult):
        self.results = list(results)
        self.calls = 0

    def send(self, *, sender: str, recipient: str, message: bytes, commit_by=None) -> SendResult:
        self.calls += 1
        return self.results.pop(0)

    def lookup(self, message_id: str) -> LookupResult:
        return LookupResult(outcome=LookupOutcome.UNSUPPORTED)


@pytest.mark.spec("OPS-1")
def test_each_call_is_counted_once_with_outcome_and_latency(capsys):
    metrics.clear_metrics()
    inner = FakeProvider(
        SendResult(outcome=SendOutcome.RETRYABLE, error_code="421"),
        SendResult(outcome=SendOutcome.SENT, notification_id="q1"),
    )
    sender = TimedSender(inner, "smtp")
    capsys.readouterr()
    for _ in range(2):
        sender.send(sender="a@example.com", recipient="b@example.com", message=b"x")
    sender.lookup("<id>")
    recorded = metrics.metric_set
    assert inner.calls == 2
    assert recorded["EmailProviderCalls"]["Value"] == [1.0, 1.0]
    assert len(recorded["EmailProviderLatency"]["Value"]) == 2  # one value per call: a distribution
    assert recorded["EmailProviderLatency"]["Unit"] == "Milliseconds"
    # The outcome is a dimension of one metric, in its own document: never on the calls above.
    assert not any(name.startswith(("EmailOutcome", "EmailLookup")) for name in recorded)
    points = data_points(capsys.readouterr().out)
    outcomes = {(p.name, p.dimensions[Dimension.OUTCOME]): sum(p.values) for p in points}
    assert outcomes == {
        (MetricName.EMAIL_OUTCOME, "retryable"): 1,
        (MetricName.EMAIL_OUTCOME, "sent"): 1,
        (MetricName.EMAIL_LOOKUP, "unsupported"): 1,
    }
    assert all(set(p.dimensions) == {"service", Dimension.OUTCOME} for p in points)
    assert total(points, MetricName.EMAIL_OUTCOME) == 2
    metrics.clear_metrics()
