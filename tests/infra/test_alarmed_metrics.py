"""Every metric an alarm watches is one the code publishes, under the same name and with the
same dimensions. The alarms treat missing data as not breaching, so an alarm on a name nobody
publishes (a typo, a rename on one side), or on a dimension set the publisher does not use,
would stay green for ever."""

from __future__ import annotations

import ast

import pytest

from p4review.metric_names import DIMENSIONS, MetricName
from p4review.review import metric_tracks as review_metrics
from tests.infra.metric_catalog import ROOT, SHIPPED, alarm_queries, published, publishing_sites, unknown_values


@pytest.mark.spec("CH-3", "OPS-3")
def test_every_alarmed_metric_is_published_with_the_dimensions_the_alarm_names(dev, openai):
    published_metrics = published()
    for synth in (dev, openai):  # openai: with the prompt rollout alarms
        queries = alarm_queries(synth.template.to_json())
        assert queries, "no alarm on the service's own metrics: the template changed shape?"
        unpublished = [q for q in queries if (q.name, q.dimension_names) not in published_metrics]
        assert not unpublished, f"alarmed but never published with these dimensions: {unpublished}"
        assert not [q for q in queries if unknown_values(q)], "an alarm names a dimension value nobody publishes"


def test_the_runtime_and_rollout_alarms_are_the_expected_ones(dev, openai):
    """Guards the test above against passing because it found nothing to check."""
    assert {q.name for q in alarm_queries(dev.template.to_json())} >= {
        MetricName.DEAD_LETTER_ESCALATED,
        MetricName.ARTIFACT_TTL_VIOLATIONS,
        MetricName.ARTIFACT_TTL_CHECK_FAILED,
        MetricName.SENT_WITHOUT_EVIDENCE,
        MetricName.UNCONFIRMED_DELIVERY_RETRIED,
        MetricName.EMAIL_SENT,
    }
    rollout = [q for q in alarm_queries(openai.template.to_json()) if q.name in review_metrics.ROLLOUT_METRICS]
    assert {dict(q.dimensions)[review_metrics.TRACK_DIMENSION] for q in rollout} == {"stable", "canary"}


@pytest.mark.spec("CH-3", "OPS-1")
def test_a_metric_with_dimensions_is_only_published_with_them():
    """`add_metric` on the shared Metrics object publishes with `service` alone: a metric
    declared with dimensions must go through publish_metric, which sets exactly them."""
    sites = publishing_sites()
    assert sites, "no publishing site found: the scan is broken"
    assert not [(path, name) for path, name, how in sites if how == "add_metric" and name in DIMENSIONS]
    assert {name for _, name, how in sites if how == "publish_metric"} == set(DIMENSIONS)


@pytest.mark.spec("CH-3", "OPS-1")
def test_every_published_name_comes_from_the_catalog_never_from_a_value():
    """No `f"Backlog_{stage}_pending"` (the value belongs in a dimension), no `stage_completed(x)`,
    no string literal: a name is `MetricName.X` (or, in the rollout loop, a name from
    `review_metrics.ROLLOUT_METRICS`)."""
    offending = []
    for directory in SHIPPED:
        for path in directory.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
                    called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                    names = [k.value for k in node.keywords if k.arg == "name"] + node.args[:1]
                    if called in ("add_metric", "publish_metric", "single_metric") and any(
                        isinstance(name, ast.JoinedStr | ast.BinOp | ast.Call | ast.Constant) for name in names
                    ):
                        offending.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offending, f"metric names not from p4review.metric_names: {offending}"
