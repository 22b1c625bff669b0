"""What the code publishes (metric name and dimension set, read from the source) and what the
synthesized template reads (alarms and the dashboard), for tests/infra/test_alarmed_metrics.py
and tests/infra/test_dashboard.py. CloudWatch finds a metric by its name AND its full dimension
set: an alarm or a widget that names one dimension more or less than the publisher sees no data
(an alarm treats that as not breaching, so it never fires)."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from p4review.metric_names import (
    NAMESPACE,
    SERVICE,
    SERVICE_DIMENSION,
    BacklogState,
    MetricName,
    TokenType,
    dimension_names,
)
from p4review.models.job import StageName
from p4review.models.outbox import LookupOutcome, SendOutcome
from p4review.resources import SECRETS
from p4review.review import metric_tracks as review_metrics
from p4review_infra.swarm_config import SWARM_SECRET, SWARM_TEST_TOKEN_SECRET

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = (ROOT / "layers" / "p4review", ROOT / "functions")

# The values a query may give each enumerable dimension (a typo in a value finds no data either).
KNOWN_VALUES: dict[str, set[str]] = {
    SERVICE_DIMENSION: {SERVICE},
    "Stage": {stage.value for stage in StageName},
    "State": {state.value for state in BacklogState},
    "TokenType": {token_type.value for token_type in TokenType},
    "Outcome": {o.value for o in SendOutcome} | {o.value for o in LookupOutcome},
    review_metrics.TRACK_DIMENSION: {review_metrics.TRACK_STABLE, review_metrics.TRACK_CANARY},
    "Secret": {spec.key for spec in (*SECRETS, SWARM_SECRET, SWARM_TEST_TOKEN_SECRET)},
}


@dataclass(frozen=True)
class Query:
    """One metric a template resource reads: its name and dimensions {name: value}."""

    where: str
    name: str
    dimensions: tuple[tuple[str, str], ...]

    @property
    def dimension_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.dimensions)


def _metric_name_of(node: ast.expr | None) -> MetricName | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "MetricName":
        return MetricName[node.attr]
    return None


def _called(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return node.func.id if isinstance(node.func, ast.Name) else None


def publishing_sites() -> list[tuple[str, MetricName, str]]:
    """(file, metric, how) for every `add_metric(name=MetricName.X)` (how = "add_metric": the
    `service` dimension alone) and `publish_metric(MetricName.X, ...)` (how = "publish_metric":
    the metric's declared dimensions, which publish_metric enforces at run time)."""
    sites = []
    for directory in SHIPPED:
        for path in sorted(directory.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                called = _called(node)
                keywords = {keyword.arg: keyword.value for keyword in node.keywords}
                if called == "ChannelProfile":
                    # A delivery channel's metrics, which the one delivery loop counts with
                    # add_metric (notify/delivery_loop.py): each `*_metric` field of its profile.
                    for field, value in keywords.items():
                        metric = _metric_name_of(value)
                        if field and field.endswith("_metric") and metric is not None:
                            sites.append((str(path.relative_to(ROOT)), metric, "add_metric"))
                    continue
                if called == "add_metric":
                    name = _metric_name_of(keywords.get("name"))
                elif called == "publish_metric":
                    name = _metric_name_of(node.args[0] if node.args else keywords.get("name"))
                else:
                    continue
                if name is not None:
                    sites.append((str(path.relative_to(ROOT)), name, called))
    return sites


def published() -> set[tuple[str, frozenset[str]]]:
    """Every (metric name, dimension names) the code publishes."""
    found = {
        (str(name), frozenset({SERVICE_DIMENSION}) if how == "add_metric" else dimension_names(name))
        for _, name, how in publishing_sites()
    }
    # The prompt-track metrics go out in a loop over this tuple, once per dimension
    # (review/metrics.py).
    for name in review_metrics.ROLLOUT_METRICS:
        for dimension in (review_metrics.TRACK_DIMENSION, review_metrics.VERSION_DIMENSION):
            found.add((name, frozenset({SERVICE_DIMENSION, dimension})))
    return found


def _dimensions(entries: list[dict]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((entry["Name"], entry["Value"]) for entry in entries))


def alarm_queries(template: dict) -> list[Query]:
    """The service's own metrics every alarm reads, directly or inside a math expression."""
    queries = []
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        properties = resource["Properties"]
        if properties.get("Namespace") == NAMESPACE:
            dimensions = _dimensions(properties.get("Dimensions", []))
            queries.append(Query(logical_id, properties["MetricName"], dimensions))
        for query in properties.get("Metrics", []):
            metric = query.get("MetricStat", {}).get("Metric", {})
            if metric.get("Namespace") == NAMESPACE:
                queries.append(Query(logical_id, metric["MetricName"], _dimensions(metric.get("Dimensions", []))))
    return queries


def dashboard_bodies(template: dict) -> dict[str, dict]:
    """Each dashboard's body, parsed; a CloudFormation token (a queue name, the region) becomes
    the string "<token>"."""
    bodies = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::CloudWatch::Dashboard":
            continue
        body = resource["Properties"]["DashboardBody"]
        if isinstance(body, dict):
            body = "".join(part if isinstance(part, str) else "<token>" for part in body["Fn::Join"][1])
        bodies[logical_id] = json.loads(body)
    return bodies


def widget_queries(widget: dict) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """(namespace, metric name, dimensions) of each metric a metric widget lists; math
    expressions are skipped (the metrics they use are listed, hidden, beside them)."""
    queries = []
    for entry in widget["properties"].get("metrics", []):
        fields = [item for item in entry if not isinstance(item, dict)]
        if not fields:
            continue  # an expression
        namespace, name, *pairs = fields
        queries.append((namespace, name, tuple(sorted(zip(pairs[::2], pairs[1::2], strict=True)))))
    return queries


def unknown_values(query: Query) -> list[tuple[str, str]]:
    return [
        (name, value) for name, value in query.dimensions if name in KNOWN_VALUES and value not in KNOWN_VALUES[name]
    ]
