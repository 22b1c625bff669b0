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

# Powertools' EMF metrics: namespace and default dimension of every p4review metric.
METRICS_NAMESPACE = "P4Review"
SERVICE_DIMENSION = {"service": "p4review"}


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

        # A replay that failed again the same non-retryable way (runtime/stage_runner._fail):
        # the remediation did not work, so an engineer has to look.
        self.escalated = cloudwatch.Alarm(
            self,
            "DeadLetterEscalated",
            alarm_name=f"p4review-{environment}-dead-letter-escalated",
            alarm_description="A replayed job failed again with the same error class; see docs/runbook.md.",
            metric=cloudwatch.Metric(namespace=METRICS_NAMESPACE, metric_name="DeadLetterEscalated",
                                     dimensions_map=SERVICE_DIMENSION, period=Duration.minutes(5),
                                     statistic=cloudwatch.Stats.SUM),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.notify(self.escalated)

    def notify(self, alarm: cloudwatch.Alarm) -> None:
        """Send `alarm`'s state changes (alarm and back to OK) to the topic."""
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
