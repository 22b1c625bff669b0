"""Every metric an alarm watches is one the code publishes. The alarms treat missing data as
not breaching, so an alarm on a name nobody publishes (a typo, a rename on one side) would
stay green for ever."""

from __future__ import annotations

import ast
from pathlib import Path

from p4review.logic import review_metrics
from p4review.metric_names import NAMESPACE, MetricName

LAYERS = Path(__file__).resolve().parents[2] / "layers" / "p4review"


def _alarmed_metric_names(template: dict) -> set[str]:
    names = set()
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        properties = resource["Properties"]
        if properties.get("Namespace") == NAMESPACE:
            names.add(properties["MetricName"])
        for query in properties.get("Metrics", []):
            metric = query.get("MetricStat", {}).get("Metric", {})
            if metric.get("Namespace") == NAMESPACE:
                names.add(metric["MetricName"])
    return names


def _published_metric_names() -> set[str]:
    """Names passed as `add_metric(name=MetricName.X, ...)` anywhere in the shipped code."""
    published = set()
    for path in LAYERS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_metric"
            ):
                continue
            for keyword in node.keywords:
                value = keyword.value
                if (
                    keyword.arg == "name"
                    and isinstance(value, ast.Attribute)
                    and isinstance(value.value, ast.Name)
                    and value.value.id == "MetricName"
                ):
                    published.add(MetricName[value.attr].value)
    return published


def test_every_alarmed_metric_is_published(dev):
    alarmed = _alarmed_metric_names(dev.template.to_json())
    # The prompt-track metrics are published in a loop over this tuple (stages/review_metrics.py).
    published = _published_metric_names() | set(review_metrics.ROLLOUT_METRICS)
    assert alarmed, "no alarm on the service's own metrics: the template changed shape?"
    assert alarmed <= published, f"alarmed but never published: {sorted(alarmed - published)}"


def test_the_runtime_alarms_are_the_expected_ones(dev):
    """Guards the test above against passing because it found nothing to check."""
    alarmed = _alarmed_metric_names(dev.template.to_json())
    assert {
        MetricName.DEAD_LETTER_ESCALATED,
        MetricName.ARTIFACT_TTL_VIOLATIONS,
        MetricName.ARTIFACT_TTL_CHECK_FAILED,
        MetricName.SENT_WITHOUT_EVIDENCE,
        MetricName.UNCONFIRMED_DELIVERY_RETRIED,
        MetricName.EMAIL_SENT,
    } <= alarmed
