"""The environment's customer-managed key for logs: every CloudWatch log group of the stack (the
functions' and the API's access logs) and, when on, the artifact audit trail's log files.

One key per stack, created by the first log group that asks for it (`logs_key`). Its key policy
lets CloudWatch Logs use it only for this environment's log groups (the encryption context
`aws:logs:arn` is the log group's ARN), and CloudTrail only for the trails `allow_trail` names.
Readers need no KMS permission for log groups (CloudWatch Logs decrypts for them); reading the
trail's files from S3 needs kms:Decrypt, granted through IAM (the account root holds the key)."""

from __future__ import annotations

from aws_cdk import ArnFormat, Aws, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from p4review.resources import physical_name
from p4review_infra.constructs.storage import rotating_key

LOGS_KEY_ID = "LogsKey"
# CloudWatch Logs' actions on a customer-managed key (AWS's documented key policy for log groups).
LOGS_SERVICE_ACTIONS = ("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*")


def log_group_name_patterns(environment: str) -> tuple[str, ...]:
    """The names of this environment's log groups: its functions' and its API's."""
    return (f"/aws/lambda/{physical_name(environment, '*')}", f"/aws/apigateway/{physical_name(environment, '*')}")


def logs_key_alias(environment: str) -> str:
    return f"alias/{physical_name(environment, 'logs')}"


class LogsKey(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, environment: str, removal_policy: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        self.key = rotating_key(
            self,
            alias=logs_key_alias(environment),
            description=f"p4review {environment}: encrypts the log groups and the artifact audit trail",
            removal_policy=removal_policy,
        )
        stack = Stack.of(self)
        log_group_arns = [
            stack.format_arn(
                service="logs", resource="log-group", resource_name=pattern, arn_format=ArnFormat.COLON_RESOURCE_NAME
            )
            for pattern in log_group_name_patterns(environment)
        ]
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsForThisEnvironmentsLogGroups",
                principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
                actions=list(LOGS_SERVICE_ACTIONS),
                resources=["*"],  # in a key policy, "*" is this key
                conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_group_arns}},
            )
        )

    def allow_trail(self, trail_name: str) -> None:
        """CloudTrail may encrypt the named trail's log files with this key (and describe it)."""
        stack = Stack.of(self)
        trail_arn = stack.format_arn(service="cloudtrail", resource="trail", resource_name=trail_name)
        principal = iam.ServicePrincipal("cloudtrail.amazonaws.com")
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudTrailEncryptsTheAuditTrail",
                principals=[principal],
                actions=["kms:GenerateDataKey*"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceArn": trail_arn},
                    "StringLike": {
                        "kms:EncryptionContext:aws:cloudtrail:arn": stack.format_arn(
                            service="cloudtrail", region="*", resource="trail", resource_name="*"
                        )
                    },
                },
            )
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudTrailDescribesTheKey",
                principals=[principal],
                actions=["kms:DescribeKey"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceArn": trail_arn}},
            )
        )


def logs_key(scope: Construct, *, environment: str, removal_policy: RemovalPolicy) -> LogsKey:
    """The stack's logs key, created at the stack's root on first use."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(LOGS_KEY_ID)
    if isinstance(existing, LogsKey):
        return existing
    return LogsKey(stack, LOGS_KEY_ID, environment=environment, removal_policy=removal_policy)
