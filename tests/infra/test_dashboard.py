"""The CloudWatch dashboard (constructs/dashboard.py, docs/runbook.md "Dashboard"): it exists,
has the widgets the on-call needs, and every metric it shows is one the code publishes with
exactly the dimensions the widget names (a widget on an unpublished metric is an empty graph
that looks like a quiet system)."""

from __future__ import annotations

import pytest

from p4review.metric_names import NAMESPACE, MetricName
from p4review.models.job import StageName
from tests.infra.metric_catalog import Query, dashboard_bodies, published, unknown_values, widget_queries

EXPECTED_TITLES = {
    "Backlog per stage (active jobs)",
    "Oldest active job per stage (seconds since accepted)",
    "Dead letters per stage",
    "Deliveries",
    "Possible duplicates",
    "LLM tokens",
    "LLM calls: answered and rate limited (429)",
    "LLM latency",
    "Rejection and drop rates per prompt track",
}
STAGES = {stage.value for stage in StageName}


def _widgets(synth) -> dict[str, dict]:
    (body,) = dashboard_bodies(synth.template.to_json()).values()
    return {w["properties"]["title"]: w for w in body["widgets"] if "title" in w["properties"]}


def _queries(widget: dict) -> list[Query]:
    return [
        Query(widget["properties"]["title"], name, dimensions)
        for namespace, name, dimensions in widget_queries(widget)
        if namespace == NAMESPACE
    ]


@pytest.mark.spec("OPS-3")
def test_one_dashboard_per_environment_named_after_it(dev):
    dev.template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    dev.template.has_resource_properties("AWS::CloudWatch::Dashboard", {"DashboardName": "p4review-dev"})
    assert EXPECTED_TITLES <= set(_widgets(dev))


@pytest.mark.spec("CH-3", "OPS-3")
@pytest.mark.parametrize("environment", ["dev", "openai"])
def test_every_metric_on_the_dashboard_is_published_with_those_dimensions(environment, request):
    widgets = _widgets(request.getfixturevalue(environment))
    queries = [query for widget in widgets.values() for query in _queries(widget)]
    assert len(queries) > 30, "the dashboard lists fewer metrics than expected: parse broken?"
    published_metrics = published()
    unpublished = [q for q in queries if (q.name, q.dimension_names) not in published_metrics]
    assert not unpublished, f"shown but never published with these dimensions: {unpublished}"
    assert not [q for q in queries if unknown_values(q)], "a widget names a dimension value nobody publishes"


@pytest.mark.spec("OPS-3")
def test_the_pipeline_widgets_cover_every_stage(dev):
    widgets = _widgets(dev)

    def by_stage(title: str, name: str) -> set[tuple[str, ...]]:
        return {
            tuple(value for key, value in q.dimensions if key != "service")
            for q in _queries(widgets[title])
            if q.name == name
        }

    assert by_stage("Backlog per stage (active jobs)", MetricName.BACKLOG) == {
        (stage, state) for stage in STAGES for state in ("pending", "running")
    }
    assert by_stage("Oldest active job per stage (seconds since accepted)", MetricName.OLDEST_JOB_AGE) == {
        (stage,) for stage in STAGES
    }
    assert by_stage("Dead letters per stage", MetricName.DEAD_LETTERED) == {(stage,) for stage in STAGES}
    dlq_depths = [
        name for namespace, name, _ in widget_queries(widgets["Dead letters per stage"]) if namespace == "AWS/SQS"
    ]
    assert dlq_depths == ["ApproximateNumberOfMessagesVisible"] * len(STAGES)


@pytest.mark.spec("PR-17", "OPS-3")
def test_deliveries_llm_and_prompt_track_widgets_show_their_metrics(dev):
    widgets = _widgets(dev)

    def names(title: str) -> set[str]:
        return {q.name for q in _queries(widgets[title])}

    assert {MetricName.EMAIL_SENT, MetricName.SWARM_COMMENT_POSTED} <= names("Deliveries")
    assert names("Possible duplicates") == {MetricName.UNCONFIRMED_DELIVERY_RETRIED, MetricName.SENT_WITHOUT_EVIDENCE}
    assert names("LLM tokens") == {MetricName.LLM_TOKENS}
    assert names("LLM calls: answered and rate limited (429)") == {MetricName.LLM_LATENCY, MetricName.LLM_RATE_LIMITED}
    latency = widgets["LLM latency"]["properties"]["metrics"]
    assert [entry[-1]["stat"] for entry in latency] == ["p50", "p90", "p99"]
    rates = widgets["Rejection and drop rates per prompt track"]["properties"]["metrics"]
    expressions = [entry[0]["label"] for entry in rates if "expression" in entry[0]]
    assert expressions == [
        "stable rejection rate",
        "canary rejection rate",
        "stable findings dropped per answer",
        "canary findings dropped per answer",
    ]
