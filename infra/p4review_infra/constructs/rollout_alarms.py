"""Alarms of the prompt rollout (docs/rollout.md), on the per-track metrics the review stage
publishes (p4review.review.metric_tracks, dimensions {service, PromptTrack}).

* canary rejections: the canary's answers are rejected by the parser at more than twice the
  stable track's rate, for 30 minutes in a row: roll the canary back.
* findings SLO (canary, and stable as the steady state): valid findings per reviewed job below
  the `findingsPerJobSlo` context value over 30 minutes."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from p4review.review import metric_tracks as m
from p4review_infra.constructs.alarms import METRICS_NAMESPACE, SERVICE_DIMENSION, Alarms

PERIOD = Duration.minutes(5)
CANARY_PERIODS = 6  # 6 x 5 minutes, all breaching: 30 minutes
SLO_WINDOW = Duration.minutes(30)
REJECTION_RATE_MULTIPLE = 2
# The stable rate counts as at least 1%: a stable track without rejections (or without traffic)
# would otherwise turn a single canary rejection into an infinite ratio.
STABLE_REJECTION_RATE_FLOOR = 0.01
RUNBOOK = "docs/rollout.md"


def track_metric(metric_name: str, track: str, period: Duration) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={**SERVICE_DIMENSION, m.TRACK_DIMENSION: track},
        period=period,
        statistic=cloudwatch.Stats.SUM,
    )


def per_answer(track: str, metric_name: str, counted: str, label: str) -> cloudwatch.MathExpression:
    """`metric_name`'s sum per model answer on `track`, over PERIOD. No answers metric on the
    track: no data point (answers is not filled). A job publishes ReviewAnswers even when it
    parsed none (value 0): 0 rather than 0/0."""
    return cloudwatch.MathExpression(
        expression=f"IF(answers_{track} > 0, FILL({counted}_{track}, 0) / answers_{track}, 0)",
        using_metrics={
            f"{counted}_{track}": track_metric(metric_name, track, PERIOD),
            f"answers_{track}": track_metric(m.ANSWERS, track, PERIOD),
        },
        period=PERIOD,
        label=label,
    )


def rejection_rate(track: str) -> cloudwatch.MathExpression:
    return per_answer(track, m.RESPONSES_REJECTED, "rejected", f"{track} rejection rate")


def findings_per_job(track: str) -> cloudwatch.MathExpression:
    # A window without reviewed jobs has no jobs data point, hence no result: not breaching.
    # (ReviewJobsReviewed is 1 per job, so a data point is never 0.)
    return cloudwatch.MathExpression(
        expression=f"FILL(findings_{track}, 0) / jobs_{track}",
        using_metrics={
            f"findings_{track}": track_metric(m.VALID_FINDINGS, track, SLO_WINDOW),
            f"jobs_{track}": track_metric(m.JOBS_REVIEWED, track, SLO_WINDOW),
        },
        period=SLO_WINDOW,
        label=f"{track} valid findings per reviewed job",
    )


class RolloutAlarms(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, environment: str, alarms: Alarms, findings_per_job_slo: float
    ) -> None:
        super().__init__(scope, construct_id)
        floor = STABLE_REJECTION_RATE_FLOOR
        baseline = f"IF(FILL(stable_rate, 0) > {floor}, FILL(stable_rate, 0), {floor})"
        self.canary_rejections = self._alarm(
            alarms,
            "CanaryRejections",
            f"p4review-{environment}-prompt-canary-rejections",
            cloudwatch.MathExpression(
                expression=f"canary_rate / {baseline}",
                using_metrics={
                    "canary_rate": rejection_rate(m.TRACK_CANARY),
                    "stable_rate": rejection_rate(m.TRACK_STABLE),
                },
                period=PERIOD,
                label="canary rejection rate / stable rejection rate",
            ),
            threshold=REJECTION_RATE_MULTIPLE,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            periods=CANARY_PERIODS,
            description=f"The canary prompt's answers were rejected at more than {REJECTION_RATE_MULTIPLE}x the "
            f"stable rate (stable floor {floor:.0%}) for 30 minutes: roll the canary back; see {RUNBOOK}.",
        )
        self.findings_slo = self._findings_alarm(
            alarms,
            m.TRACK_CANARY,
            f"p4review-{environment}-prompt-findings-slo",
            findings_per_job_slo,
            "roll the canary back",
        )
        self.findings_slo_stable = self._findings_alarm(
            alarms,
            m.TRACK_STABLE,
            f"p4review-{environment}-prompt-findings-slo-stable",
            findings_per_job_slo,
            "the steady-state SLO is missed",
        )

    def _findings_alarm(self, alarms: Alarms, track: str, name: str, slo: float, action: str) -> cloudwatch.Alarm:
        return self._alarm(
            alarms,
            f"FindingsSlo{track.capitalize()}",
            name,
            findings_per_job(track),
            threshold=slo,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            periods=1,
            description=f"The {track} prompt produced fewer than {slo:g} valid findings per reviewed job over "
            f"30 minutes: {action}; see {RUNBOOK}.",
        )

    def _alarm(
        self,
        alarms: Alarms,
        construct_id: str,
        name: str,
        expression: cloudwatch.MathExpression,
        *,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        periods: int,
        description: str,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=name,
            alarm_description=description,
            metric=expression,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarms.notify(alarm)
        return alarm
