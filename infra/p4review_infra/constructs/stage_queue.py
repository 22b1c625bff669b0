"""A pipeline stage's SQS queue, its redrive DLQ and the DLQ alarm, all from one QueueSpec."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from p4review.resources import QueueSpec, dlq_key, physical_name

# SQS caps message retention at 14 days.
MAX_RETENTION_DAYS = 14


class StageQueue(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, environment: str, spec: QueueSpec) -> None:
        super().__init__(scope, construct_id)
        self.spec = spec

        self.dlq = sqs.Queue(
            self,
            "Dlq",
            queue_name=physical_name(environment, dlq_key(spec)),
            retention_period=Duration.days(min(spec.dlq_retention_days, MAX_RETENTION_DAYS)),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=physical_name(environment, spec.key),
            visibility_timeout=Duration.seconds(spec.visibility_timeout_seconds),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=spec.max_receive_count),
        )

        # Anything in a DLQ is a job that crashed past its redrive budget: page on the first one.
        self.dlq_alarm = cloudwatch.Alarm(
            self,
            "DlqNotEmpty",
            alarm_name=f"{physical_name(environment, dlq_key(spec))}-not-empty",
            alarm_description=(
                f"Messages in the {spec.key} DLQ: a {spec.stage.value} job failed "
                f"{spec.max_receive_count} deliveries. Inspect, fix, then redrive."
            ),
            metric=self.dlq.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
