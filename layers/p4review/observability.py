"""The single Powertools Logger / Metrics / Tracer setup every function imports.

Tracer pulls in the X-Ray SDK (~400 ms of imports), so it is created on first use and
only where a function asks for it; Logger and Metrics are cheap enough to build eagerly."""

from __future__ import annotations

import warnings
from functools import lru_cache
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics

if TYPE_CHECKING:  # pragma: no cover
    from aws_lambda_powertools import Tracer

SERVICE_NAME = "p4review"
METRICS_NAMESPACE = "P4Review"

# A stage invocation that only acknowledges duplicates publishes no metric; that is normal.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service=SERVICE_NAME)
metrics = Metrics(service=SERVICE_NAME, namespace=METRICS_NAMESPACE)


@lru_cache(maxsize=1)
def get_tracer() -> "Tracer":
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE_NAME)
