"""The single Powertools Logger / Metrics setup every function imports.

No Tracer: it pulls in the X-Ray SDK (~400 ms of imports) and the functions run without active
tracing; a job is followed through its stages by `job_id` and the correlation id in the logs."""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Logger, Metrics

from p4review.metric_names import NAMESPACE as METRICS_NAMESPACE
from p4review.metric_names import SERVICE as SERVICE_NAME

# A stage invocation that only acknowledges duplicates publishes no metric; that is normal.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service=SERVICE_NAME)
metrics = Metrics(service=SERVICE_NAME, namespace=METRICS_NAMESPACE)
