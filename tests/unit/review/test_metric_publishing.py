"""Metrics with dimensions: published with exactly their declared dimensions, each in its own
EMF document; and the LLM provider calls' tokens, latency and 429s."""

from __future__ import annotations

import pytest

from p4review.metric_names import DIMENSIONS, Dimension, MetricName, dimension_names
from p4review.observability import metrics, publish_metric
from p4review.review.llm.base import LlmResponse, ProviderRateLimited
from p4review.review.metrics import metered_completion
from p4review_dev.support.emf import data_points


@pytest.fixture(autouse=True)
def clean_metrics():
    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


@pytest.mark.spec("OPS-1")
def test_a_dimension_goes_into_its_own_document_not_onto_the_invocations_metrics(capsys):
    metrics.add_metric(name=MetricName.EMAIL_SENT, unit="Count", value=1)
    capsys.readouterr()
    publish_metric(MetricName.STAGE_COMPLETED, 1, {Dimension.STAGE: "review"})
    (point,) = data_points(capsys.readouterr().out)
    assert point.name == "StageCompleted" and point.dimensions == {"service": "p4review", "Stage": "review"}
    assert Dimension.STAGE not in metrics.dimension_set
    assert list(metrics.metric_set) == [MetricName.EMAIL_SENT]


@pytest.mark.spec("CH-3", "OPS-1")
@pytest.mark.parametrize(
    ("name", "dimensions"),
    [
        (MetricName.BACKLOG, {Dimension.STAGE: "fetch"}),  # State missing: no widget would find it
        (MetricName.STAGE_COMPLETED, {Dimension.STAGE: "fetch", Dimension.KIND: "x"}),
        (MetricName.EMAIL_SENT, {Dimension.OUTCOME: "sent"}),  # declared with `service` alone
    ],
)
def test_a_metric_is_refused_with_any_other_dimension_set(name, dimensions, capsys):
    with pytest.raises(ValueError, match=str(name)):
        publish_metric(name, 1, dimensions)
    assert data_points(capsys.readouterr().out) == []


def test_declared_dimensions_are_named_in_the_dimension_enum():
    assert all(dimension_names(name) == {"service", *dims} for name, dims in DIMENSIONS.items())
    assert dimension_names(MetricName.EMAIL_SENT) == {"service"}


def _response(input_tokens: int, output_tokens: int) -> LlmResponse:
    return LlmResponse(text="{}", input_tokens=input_tokens, output_tokens=output_tokens, provider="p", model="m")


@pytest.mark.spec("OPS-3")
def test_an_answered_call_publishes_its_latency_and_tokens(capsys):
    capsys.readouterr()
    assert metered_completion(lambda: _response(1200, 340)).input_tokens == 1200
    tokens = {p.dimensions[Dimension.TOKEN_TYPE]: p.values for p in data_points(capsys.readouterr().out)}
    assert tokens == {"input": (1200.0,), "output": (340.0,)}
    assert metrics.metric_set[MetricName.LLM_LATENCY]["Unit"] == "Milliseconds"
    assert len(metrics.metric_set[MetricName.LLM_LATENCY]["Value"]) == 1
    assert MetricName.LLM_RATE_LIMITED not in metrics.metric_set


@pytest.mark.spec("OPS-3")
def test_a_rate_limited_call_is_counted_and_raised_for_the_runtime_to_back_off(capsys):
    def throttled() -> LlmResponse:
        raise ProviderRateLimited("429 too many requests", retry_after=12)

    capsys.readouterr()
    with pytest.raises(ProviderRateLimited):
        metered_completion(throttled)
    assert metrics.metric_set[MetricName.LLM_RATE_LIMITED]["Value"] == [1.0]
    assert MetricName.LLM_LATENCY not in metrics.metric_set
    assert data_points(capsys.readouterr().out) == []  # no tokens for an unanswered call


def test_parser_diagnostics_are_one_metric_with_the_kind_as_dimension(capsys):
    from p4review.models.review_result import Diagnostic, ParseOutcome, ReviewResult, StoredReview
    from p4review.review.metrics import publish_review_metrics

    stored = StoredReview(result=ReviewResult(schema_version="1.0", prompt_version="1.2.0"), prompt_version="1.2.0")
    answers = [
        ParseOutcome(diagnostics=[Diagnostic(kind="finding_dropped"), Diagnostic(kind="coercion_applied")]),
        ParseOutcome(diagnostics=[Diagnostic(kind="finding_dropped")]),
    ]
    capsys.readouterr()
    publish_review_metrics(stored, run_answers=answers, track="stable")
    points = [p for p in data_points(capsys.readouterr().out) if p.name == MetricName.PARSER_DIAGNOSTICS]
    assert {p.dimensions[Dimension.KIND]: p.values for p in points} == {
        "finding_dropped": (2.0,),
        "coercion_applied": (1.0,),
    }
    assert not any(name.startswith("Parser") for name in metrics.metric_set)
