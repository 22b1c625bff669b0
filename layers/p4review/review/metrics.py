"""Publish the review stage's metrics: the per-job rollout metrics (names:
review/metric_tracks.py), parser diagnostics per kind, and each LLM provider call's tokens,
latency and rate limiting, and the analyzers' answers run and reused (names: metric_names.py).

Each rollout set goes out twice, as its own EMF document: with {service, PromptTrack} for the
canary and rollback alarms, and with {service, PromptVersion} for comparing versions. Ephemeral
metrics keep these dimensions off the function's other metrics."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from p4review.metric_names import Dimension, MetricName, TokenType
from p4review.models.review_result import ParseOutcome, StoredReview
from p4review.observability import METRICS_NAMESPACE, SERVICE_NAME, metrics, publish_metric
from p4review.review import metric_tracks as names
from p4review.review.llm.base import LlmResponse, ProviderRateLimited
from p4review.review.result_parser import COERCION_APPLIED, FINDING_DROPPED, RESPONSE_REJECTED


def review_metric_values(stored: StoredReview, answers: Sequence[ParseOutcome]) -> dict[str, int]:
    kinds = [d.kind for outcome in answers for d in outcome.diagnostics]
    usage = stored.usage
    return {
        names.JOBS_REVIEWED: 1,
        names.ANSWERS: len(answers),
        names.RESPONSES_REJECTED: kinds.count(RESPONSE_REJECTED),
        names.FINDINGS_DROPPED: kinds.count(FINDING_DROPPED),
        names.COERCIONS: kinds.count(COERCION_APPLIED),
        names.VALID_FINDINGS: int(
            (stored.result.meta or {}).get("findings_before_noise_controls", len(stored.result.findings))
        ),
        names.INPUT_TOKENS: usage.input_tokens if usage else 0,
        names.OUTPUT_TOKENS: usage.output_tokens if usage else 0,
    }


def publish_review_metrics(stored: StoredReview, *, run_answers: Sequence[ParseOutcome], track: str) -> None:
    values = review_metric_values(stored, run_answers)
    for dimension, value in (
        (names.TRACK_DIMENSION, track),
        (names.VERSION_DIMENSION, stored.prompt_version or "unknown"),
    ):
        emitter = EphemeralMetrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)
        emitter.add_dimension(name=dimension, value=value)
        for name, count in values.items():
            emitter.add_metric(name=name, unit=MetricUnit.Count, value=count)
        emitter.flush_metrics()
    kinds = Counter(diagnostic.kind for outcome in run_answers for diagnostic in outcome.diagnostics)
    for kind, count in sorted(kinds.items()):
        publish_metric(MetricName.PARSER_DIAGNOSTICS, count, {Dimension.KIND: kind})


def publish_analyzer_metrics(*, analyzed: int, reused: int) -> None:
    """(analyzer, file) answers run by this review, and reused from the previous version's."""
    metrics.add_metric(name=MetricName.ANALYZER_FILES_ANALYZED, unit=MetricUnit.Count, value=analyzed)
    metrics.add_metric(name=MetricName.ANALYZER_FILES_REUSED, unit=MetricUnit.Count, value=reused)


def metered_completion(call: Callable[[], LlmResponse]) -> LlmResponse:
    """Make one LLM provider call and measure it: `LlmLatency` and `LlmTokens` (input, output)
    for an answer, `LlmRateLimited` for a 429 / throttling refusal (re-raised: the stage runtime
    backs off). Other failures are the runtime's to count."""
    started = time.perf_counter()
    try:
        response = call()
    except ProviderRateLimited:
        metrics.add_metric(name=MetricName.LLM_RATE_LIMITED, unit=MetricUnit.Count, value=1)
        raise
    elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
    metrics.add_metric(name=MetricName.LLM_LATENCY, unit=MetricUnit.Milliseconds, value=elapsed_ms)
    publish_metric(MetricName.LLM_TOKENS, response.input_tokens, {Dimension.TOKEN_TYPE: TokenType.INPUT})
    publish_metric(MetricName.LLM_TOKENS, response.output_tokens, {Dimension.TOKEN_TYPE: TokenType.OUTPUT})
    return response
