"""The service's CloudWatch dashboard (docs/runbook.md, "Dashboard"): the pipeline's backlog and
oldest job per stage, dead letters per stage, deliveries and possible duplicates, the LLM's
tokens, 429s and latency, and the rejection and drop rates per prompt track.

Every widget reads a metric the code publishes, with the dimensions it is published with
(`own_metric`; tests/infra/test_dashboard.py checks the synthesized body), or an SQS metric of
the stage queues' DLQs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from p4review.metric_names import BacklogState, Dimension, MetricName, TokenType
from p4review.models.job import STAGE_ORDER
from p4review.review import metric_tracks as m
from p4review_infra.constructs.alarms import own_metric
from p4review_infra.constructs.rollout_alarms import per_answer, rejection_rate
from p4review_infra.constructs.stage_queue import StageQueue

# The sweeper publishes the backlog every 5 minutes (stack.SWEEP_EVERY_MINUTES); the stages'
# counters are summed over the same period.
PERIOD = Duration.minutes(5)
WIDTH, HEIGHT = 12, 6
TRACKS = (m.TRACK_STABLE, m.TRACK_CANARY)
LATENCY_PERCENTILES = ("p50", "p90", "p99")


def _graph(
    title: str,
    left: Sequence[cloudwatch.IMetric],
    *,
    left_label: str,
    right: Sequence[cloudwatch.IMetric] = (),
    right_label: str = "",
) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(
        title=title,
        left=list(left),
        right=list(right),
        left_y_axis=cloudwatch.YAxisProps(label=left_label, min=0, show_units=False),
        right_y_axis=cloudwatch.YAxisProps(label=right_label, min=0, show_units=False) if right else None,
        width=WIDTH,
        height=HEIGHT,
    )


def _count(name: MetricName, label: str, dimensions: dict[Dimension, str] | None = None) -> cloudwatch.Metric:
    return own_metric(name, period=PERIOD, label=label, dimensions=dimensions)


def _dropped_per_answer(track: str) -> cloudwatch.MathExpression:
    return per_answer(track, m.FINDINGS_DROPPED, "dropped", f"{track} findings dropped per answer")


class Dashboard(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, environment: str, queues: Mapping[str, StageQueue]
    ) -> None:
        super().__init__(scope, construct_id)
        stages = [stage.value for stage in STAGE_ORDER]
        dlqs = {queue.spec.stage.value: queue.dlq for queue in queues.values()}
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"p4review-{environment}",
            default_interval=Duration.hours(6),
        )
        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"# p4review {environment}\nWhat each widget means and what to do: docs/runbook.md, "
                "*Dashboard*. Backlog and ages come from the sweeper (every 5 minutes); counts are sums per 5 minutes.",
                width=2 * WIDTH,
                height=2,
            )
        )
        self.dashboard.add_widgets(
            _graph(
                "Backlog per stage (active jobs)",
                [
                    own_metric(
                        MetricName.BACKLOG,
                        period=PERIOD,
                        statistic=cloudwatch.Stats.MAXIMUM,
                        label=f"{stage} {state}",
                        dimensions={Dimension.STAGE: stage, Dimension.STATE: state},
                    )
                    for state in BacklogState
                    for stage in stages
                ],
                left_label="jobs",
            ),
            _graph(
                "Oldest active job per stage (seconds since accepted)",
                [
                    own_metric(
                        MetricName.OLDEST_JOB_AGE,
                        period=PERIOD,
                        statistic=cloudwatch.Stats.MAXIMUM,
                        label=stage,
                        dimensions={Dimension.STAGE: stage},
                    )
                    for stage in stages
                ],
                left_label="seconds",
            ),
        )
        self.dashboard.add_widgets(
            _graph(
                "Dead letters per stage",
                [
                    dlqs[stage].metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM, label=f"{stage} DLQ depth"
                    )
                    for stage in stages
                ],
                left_label="messages in the DLQ",
                right=[
                    _count(MetricName.DEAD_LETTERED, f"{stage} dead-lettered", {Dimension.STAGE: stage})
                    for stage in stages
                ],
                right_label="dead-lettered",
            ),
            _graph(
                "Stages completed",
                [_count(MetricName.STAGE_COMPLETED, stage, {Dimension.STAGE: stage}) for stage in stages],
                left_label="jobs",
            ),
        )
        self.dashboard.add_widgets(
            _graph(
                "Deliveries",
                [
                    _count(MetricName.EMAIL_SENT, "emails sent"),
                    _count(MetricName.SWARM_COMMENT_POSTED, "Swarm comments posted"),
                    _count(MetricName.DELIVERY_BACKFILLED, "backfilled (found at the provider)"),
                    _count(MetricName.RECIPIENT_REJECTED, "recipients rejected"),
                ],
                left_label="deliveries",
            ),
            _graph(
                "Possible duplicates",
                [
                    _count(MetricName.UNCONFIRMED_DELIVERY_RETRIED, "unconfirmed attempts resent"),
                    _count(MetricName.SENT_WITHOUT_EVIDENCE, "marked sent without evidence"),
                ],
                left_label="deliveries",
            ),
        )
        self.dashboard.add_widgets(
            _graph(
                "LLM tokens",
                [
                    _count(MetricName.LLM_TOKENS, f"{token_type} tokens", {Dimension.TOKEN_TYPE: token_type})
                    for token_type in TokenType
                ],
                left_label="tokens",
            ),
            _graph(
                "LLM calls: answered and rate limited (429)",
                [
                    own_metric(
                        MetricName.LLM_LATENCY,
                        period=PERIOD,
                        statistic=cloudwatch.Stats.SAMPLE_COUNT,
                        label="answered",
                    ),
                    _count(MetricName.LLM_RATE_LIMITED, "rate limited (429)"),
                ],
                left_label="calls",
            ),
        )
        self.dashboard.add_widgets(
            _graph(
                "LLM latency",
                [
                    own_metric(MetricName.LLM_LATENCY, period=PERIOD, statistic=percentile, label=percentile)
                    for percentile in LATENCY_PERCENTILES
                ],
                left_label="milliseconds",
            ),
            _graph(
                "Rejection and drop rates per prompt track",
                [rejection_rate(track) for track in TRACKS],
                left_label="answers rejected / answers",
                right=[_dropped_per_answer(track) for track in TRACKS],
                right_label="findings dropped / answers",
            ),
        )
