"""Where the service's alarms go: one SNS topic per environment, and the alarms on the
runtime's own metrics (the DLQ alarms live with their queues and are wired here)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from p4review.metric_names import NAMESPACE as METRICS_NAMESPACE
from p4review.metric_names import SERVICE, Dimension, MetricName, dimension_names
from p4review.metric_names import SERVICE_DIMENSION as SERVICE_DIMENSION_NAME

# Powertools' EMF metrics: the default dimension of every p4review metric.
SERVICE_DIMENSION = {SERVICE_DIMENSION_NAME: SERVICE}


def own_metric(
    name: MetricName,
    *,
    period: Duration,
    statistic: str = cloudwatch.Stats.SUM,
    label: str | None = None,
    dimensions: dict[Dimension, str] | None = None,
) -> cloudwatch.Metric:
    """One of the service's own metrics, with the dimension set it is published with
    (metric_names.DIMENSIONS): CloudWatch matches the full set, so a query naming fewer or more
    dimensions finds no data, and an alarm on it would never fire."""
    dimensions_map = {**SERVICE_DIMENSION, **{str(k): v for k, v in (dimensions or {}).items()}}
    if set(dimensions_map) != dimension_names(name):
        raise ValueError(f"{name} is published with {sorted(dimension_names(name))}, not {sorted(dimensions_map)}")
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map=dimensions_map,
        period=period,
        statistic=statistic,
        label=label,
    )


class Alarms(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, environment: str, email: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(
            self,
            "Topic",
            topic_name=f"p4review-{environment}-alarms",
            display_name=f"p4review {environment} alarms",
            master_key=kms.Alias.from_alias_name(self, "SnsKey", "alias/aws/sns"),
            enforce_ssl=True,
        )
        if email:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        self._action = cw_actions.SnsAction(self.topic)

        self._environment = environment
        # A replay that failed again the same non-retryable way (runtime/stage_runner._fail):
        # the remediation did not work, so an engineer has to look.
        self.escalated = self._on_runtime_metric(
            MetricName.DEAD_LETTER_ESCALATED,
            "dead-letter-escalated",
            Duration.minutes(5),
            "A replayed job failed again with the same error class; see docs/runbook.md.",
        )
        # The sweeper's TTL verification (ops/retention.py): an artifact day older than its
        # bucket's expiration plus one grace day means lifecycle expiry is not happening.
        self.artifact_ttl = self._on_runtime_metric(
            MetricName.ARTIFACT_TTL_VIOLATIONS,
            "artifact-ttl-violation",
            Duration.hours(1),
            "An artifact outlived its bucket's TTL (+1 day grace): check the bucket's lifecycle rule; "
            "the sweeper's log names the bucket, prefix and day.",
        )
        # Notify found a delivery row marked sent without provider evidence (notify/stage.py:
        # _reconcile_unevidenced): the send-then-mark ordering contract was violated somewhere.
        self.sent_without_evidence = self._on_runtime_metric(
            MetricName.SENT_WITHOUT_EVIDENCE,
            "sent-without-evidence",
            Duration.minutes(5),
            "A delivery row was marked sent without provider evidence (ordering contract violated); notify "
            "reconciled it: see docs/runbook.md, Deliveries.",
        )
        # Notify resent an attempt the provider could not confirm (plain SMTP, SES): each is a
        # possible duplicate email. Expected far below 0.01% of sends (docs/notify.md); 1% in an
        # hour means lost relay replies or notify dying mid-send.
        self.possible_duplicates = self._possible_duplicate_rate(threshold_percent=1.0)
        # A check that cannot run (e.g. lost ListBucket permission) would otherwise never alarm.
        self.artifact_ttl_check = self._on_runtime_metric(
            MetricName.ARTIFACT_TTL_CHECK_FAILED,
            "artifact-ttl-check-failed",
            Duration.hours(1),
            "The sweeper could not verify artifact TTLs (see its log for the error class).",
        )

    def _on_runtime_metric(
        self, metric_name: MetricName, suffix: str, period: Duration, description: str
    ) -> cloudwatch.Alarm:
        """An alarm on one of the service's own metrics (Sum over `period` > 0), sent to the topic."""
        alarm = cloudwatch.Alarm(
            self,
            metric_name,
            alarm_name=f"p4review-{self._environment}-{suffix}",
            alarm_description=description,
            metric=own_metric(metric_name, period=period),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.notify(alarm)
        return alarm

    def _possible_duplicate_rate(self, *, threshold_percent: float) -> cloudwatch.Alarm:
        def metric(name: MetricName) -> cloudwatch.Metric:
            return own_metric(name, period=Duration.hours(1))

        alarm = cloudwatch.Alarm(
            self,
            "PossibleDuplicateEmails",
            alarm_name=f"p4review-{self._environment}-possible-duplicate-emails",
            alarm_description=(
                f"Over {threshold_percent}% of emails in an hour were resends of an unconfirmed "
                "attempt (UnconfirmedDeliveryRetried / EmailSent): check the relay's connection "
                "resets and notify's timeouts; see docs/notify.md."
            ),
            metric=cloudwatch.MathExpression(
                expression="IF(sent > 0, 100 * FILL(resent, 0) / sent, 0)",
                using_metrics={
                    "resent": metric(MetricName.UNCONFIRMED_DELIVERY_RETRIED),
                    "sent": metric(MetricName.EMAIL_SENT),
                },
                period=Duration.hours(1),
                label="unconfirmed resends, % of emails sent",
            ),
            threshold=threshold_percent,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.notify(alarm)
        return alarm

    def notify(self, alarm: cloudwatch.Alarm) -> None:
        """Send `alarm`'s state changes (alarm and back to OK) to the topic."""
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
