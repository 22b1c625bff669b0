"""The single Powertools Logger / Metrics setup every function imports.

No Tracer: it pulls in the X-Ray SDK (~400 ms of imports) and the functions run without active
tracing; a job is followed through its stages by `job_id` and the correlation id in the logs."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from p4review.metric_names import DIMENSIONS, Dimension, MetricName
from p4review.metric_names import NAMESPACE as METRICS_NAMESPACE
from p4review.metric_names import SERVICE as SERVICE_NAME

# A stage invocation that only acknowledges duplicates publishes no metric; that is normal.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service=SERVICE_NAME)
metrics = Metrics(service=SERVICE_NAME, namespace=METRICS_NAMESPACE)


def publish_metric(
    name: MetricName, value: float, dimensions: Mapping[Dimension, str], *, unit: MetricUnit = MetricUnit.Count
) -> None:
    """Publish one data point of a metric that has dimensions besides `service` (metric_names.
    DIMENSIONS), as its own EMF document, written now: dimensions are per document, so on the
    function's shared `metrics` they would land on every other metric of the invocation.

    `dimensions` must name exactly the metric's declared dimensions: an alarm or a widget finds a
    metric only by its full dimension set, so a missing or extra one would hide it."""
    declared = {str(dimension) for dimension in DIMENSIONS.get(name, ())}
    given = {str(dimension) for dimension in dimensions}
    if not declared:
        raise ValueError(f"{name} has no dimension besides service: publish it with metrics.add_metric")
    if given != declared:
        raise ValueError(f"{name} is published with the dimensions {sorted(declared)}, not {sorted(given)}")
    emitter = EphemeralMetrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)
    for dimension, dimension_value in dimensions.items():
        emitter.add_dimension(name=dimension, value=dimension_value)
    emitter.add_metric(name=name, unit=unit, value=value)
    emitter.flush_metrics()
