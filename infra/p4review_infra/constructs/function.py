"""One p4review Lambda function: its own role, its explicit log group, and the `uses_*` helpers
that add an environment variable and the matching least-privilege grant together, so a
function's environment and its IAM policy cannot disagree."""

from __future__ import annotations

from aws_cdk import Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from p4review.metric_names import NAMESPACE, SERVICE
from p4review.resources import IndexSpec, physical_name
from p4review_infra.concurrency_config import MIN_EVENT_SOURCE_CONCURRENCY
from p4review_infra.constructs.logs_key import logs_key
from p4review_infra.constructs.secrets import ProvisionedSecret
from p4review_infra.constructs.stage_queue import StageQueue
from p4review_infra.constructs.storage import ArtifactBucket, ArtifactStorage, ProvisionedTable
from p4review_infra.layer import ARCHITECTURE, RUNTIME
from p4review_infra.nag import acknowledge, arn_finding, resource_finding
from p4review_infra.network_config import FunctionNetwork
from p4review_infra.paths import FUNCTIONS_DIR
from p4review_infra.review_config import bedrock_invoke_resources
from p4review_infra.scanner_skips import skip_checkov

# DynamoDB item access, exactly what the DAL calls (TransactWriteItems is authorized per item as
# Put/ConditionCheck). No Scan of a table, no delete and no batch: TTL deletes, and the only table
# scan (`p4review deliveries list`) runs with the operator's credentials.
TABLE_READ_ACTIONS = ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem")
TABLE_WRITE_ACTIONS = ("dynamodb:PutItem", "dynamodb:UpdateItem")
INDEX_READ_ACTIONS = ("dynamodb:Scan",)  # the sweeper's scan of the sparse active-jobs index
HANDLER = "handler.lambda_handler"
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# Powertools reads these; the values are the one definition in p4review.metric_names.
POWERTOOLS_SERVICE_NAME = SERVICE
POWERTOOLS_METRICS_NAMESPACE = NAMESPACE

# What Lambda needs to manage a VPC function's network interfaces: the EC2 actions of the AWS
# managed policy AWSLambdaVPCAccessExecutionRole (its logs actions are granted per log group).
VPC_ENI_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)


class P4ReviewFunction(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        name: str,
        timeout_seconds: int,
        memory_mb: int,
        layers: list[lambda_.ILayerVersion],
        log_level: str,
        removal_policy: RemovalPolicy,
        description: str,
        reserved_concurrency: int,
        network: FunctionNetwork | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.name = name
        # Every function has a bound (concurrency_config.py): the most it can run at once, and a
        # share of the account's pool no other function can take.
        self.reserved_concurrency = reserved_concurrency
        function_name = physical_name(environment, name)
        # What the function's environment holds, checked against its settings model at synth
        # (function_settings.check_environment, called by the stack once every grant is made).
        self.environment_values: dict[str, str] = {
            "P4REVIEW_ENV": environment,
            "POWERTOOLS_SERVICE_NAME": POWERTOOLS_SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
            "LOG_LEVEL": log_level,
        }

        self.log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=f"/aws/lambda/{function_name}",
            retention=LOG_RETENTION,
            removal_policy=removal_policy,
            encryption_key=logs_key(self, environment=environment, removal_policy=removal_policy).key,
        )
        # Own role, no AWS managed policies: logging is granted on this function's log group only.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"p4review {environment} {name} function",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )

        self.function = lambda_.Function(
            self,
            "Function",
            function_name=function_name,
            description=description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(FUNCTIONS_DIR / name), exclude=["__pycache__", "*.pyc"]),
            timeout=Duration.seconds(timeout_seconds),
            memory_size=memory_mb,
            reserved_concurrent_executions=reserved_concurrency,
            role=self.role,
            layers=layers,
            log_group=self.log_group,
            # No active X-Ray tracing: no code calls a tracer (Powertools' Tracer costs ~0.4 s of
            # cold start); structured logs carry job_id and the correlation id instead.
            environment=dict(self.environment_values),
            **(self._in_vpc(network) if network else {}),
        )

        acknowledge(
            self.function,
            "AwsSolutions-L1",
            f"Pinned to {RUNTIME.name}: the deps layer is built for that exact CPython ABI "
            "(pip --python-version in layer.py); the runtime and the layer move together in one change.",
        )

    def _in_vpc(self, network: FunctionNetwork) -> dict:
        """The function's VPC placement in existing subnets and security groups (imported by id,
        no lookup, no resource created), and the ENI permissions Lambda uses to attach it. Own
        inline statement instead of AWSLambdaVPCAccessExecutionRole: the role keeps no managed policy."""
        # The AZs are never rendered (the subnets are given explicitly). Elements of Fn::GetAZs, as an
        # environment-agnostic stack has them: the stack's own AZs would be a context lookup once
        # CDK_DEFAULT_ACCOUNT/REGION are set, and a bare list token draws a CDK warning.
        azs = [Fn.select(index, Fn.get_azs()) for index in range(2)]
        vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=network.vpc_id, availability_zones=azs)
        subnets = [
            ec2.Subnet.from_subnet_id(self, f"Subnet{index}", subnet_id)
            for index, subnet_id in enumerate(network.subnet_ids)
        ]
        security_groups = [
            ec2.SecurityGroup.from_security_group_id(self, f"SecurityGroup{index}", group_id, mutable=False)
            for index, group_id in enumerate(network.security_group_ids)
        ]
        for subnet in subnets:
            acknowledge(
                subnet,
                "Annotation::@aws-cdk/aws-ec2:noSubnetRouteTableId",
                "Imported by id only to place the function: the stack never reads or changes its route table.",
            )
        self.role.add_to_policy(iam.PolicyStatement(actions=list(VPC_ENI_ACTIONS), resources=["*"]))
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "Lambda attaches a VPC function through elastic network interfaces it creates, describes and "
            "deletes with the execution role; EC2's Describe* actions support no resource-level "
            "permissions and the interfaces' ids are unknown until Lambda creates them, so these are the "
            "EC2 actions of AWSLambdaVPCAccessExecutionRole on '*', as AWS documents for VPC functions.",
            findings=["Resource::*"],
        )
        skip_checkov(
            self.role.node.find_child("DefaultPolicy"),
            "CKV_AWS_111",
            "The EC2 network-interface actions Lambda needs to attach a VPC function (those of "
            "AWSLambdaVPCAccessExecutionRole): the interfaces' ids are unknown until Lambda creates them, "
            "so they cannot be constrained to a resource.",
        )
        return {
            "vpc": vpc,
            "vpc_subnets": ec2.SubnetSelection(subnets=subnets),
            "security_groups": security_groups,
        }

    # -- environment + grants -------------------------------------------------------------------

    def set_env(self, name: str, value: str) -> None:
        self.environment_values[name] = value
        self.function.add_environment(name, value)

    def uses_table(self, provisioned: ProvisionedTable, *, write: bool, indexes: tuple[IndexSpec, ...] = ()) -> None:
        """Item reads (and writes) on the table itself, and reads of exactly the named indexes.
        Not CDK's `grant_read_*_data`: on a table with an index it grants `index/*` to everyone."""
        table = provisioned.table
        self.set_env(provisioned.spec.env_var, table.table_name)
        actions = TABLE_READ_ACTIONS + (TABLE_WRITE_ACTIONS if write else ())
        self.function.add_to_role_policy(iam.PolicyStatement(actions=list(actions), resources=[table.table_arn]))
        if indexes:
            self.function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=list(INDEX_READ_ACTIONS),
                    resources=[f"{table.table_arn}/index/{index.name}" for index in indexes],
                )
            )

    def sends_to(self, stage: StageQueue) -> None:
        self.set_env(stage.spec.env_var, stage.queue.queue_url)
        stage.queue.grant_send_messages(self.function)

    def consumes(self, stage: StageQueue, *, max_concurrency: int) -> None:
        """The stage's own queue drives this function, `max_concurrency` (W) invocations at most at
        once. The runtime needs the queue's URL to delay a retry (ChangeMessageVisibility, granted
        by the event source) and its DLQ to park a sanitized dead-letter envelope."""
        if not MIN_EVENT_SOURCE_CONCURRENCY <= max_concurrency <= self.reserved_concurrency:
            # concurrency_config.py refuses such context; this guards the stack's own wiring.
            raise ValueError(
                f"{self.name}: event source maximum concurrency {max_concurrency} must be between "
                f"{MIN_EVENT_SOURCE_CONCURRENCY} and the reserved concurrency ({self.reserved_concurrency})"
            )
        from aws_cdk import aws_lambda_event_sources as sources

        self.set_env(stage.spec.env_var, stage.queue.queue_url)
        self.set_env(stage.spec.dlq_env_var, stage.dlq.queue_url)
        stage.dlq.grant_send_messages(self.function)
        self.function.add_event_source(
            sources.SqsEventSource(
                stage.queue,
                batch_size=stage.spec.batch_size,
                report_batch_item_failures=True,
                max_concurrency=max_concurrency,
            )
        )

    def reads_secret(self, provisioned: ProvisionedSecret) -> None:
        self.set_env(provisioned.spec.env_var, provisioned.secret.secret_arn)
        provisioned.readers.append(self.name)  # a secret in use: its age is watched (SEC-20)
        provisioned.secret.grant_read(self.function)

    def invokes_bedrock_model(self, model: str) -> None:
        """`bedrock:InvokeModel` (all Converse needs) on `model` only; no secret: the role is the credential."""
        stack = Stack.of(self)
        resources = bedrock_invoke_resources(
            model, partition=stack.partition, region=stack.region, account=stack.account
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=list(resources))
        )
        any_region = [arn for arn in resources if "*" in arn]
        if any_region:
            acknowledge(
                self.role,
                "AwsSolutions-IAM5",
                f"A cross-region inference profile ({model}) sends each request to its foundation model in "
                "whichever region of its geography has capacity, so InvokeModel must allow that one model in "
                "every region ('*'); the profile itself is named exactly.",
                findings=[resource_finding(self, arn) for arn in any_region],
            )

    def sends_email_with_ses(self, config) -> None:  # config: p4review_infra.notify_config.NotifyConfig
        """SES v2 SendEmail (raw content) from the configured identity only."""
        stack = Stack.of(self)
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ses:SendEmail", "ses:SendRawEmail"],
                resources=config.ses_resources(partition=stack.partition, region=stack.region, account=stack.account),
            )
        )

    def uses_bucket(
        self, artifacts: ArtifactBucket, *, read: tuple[str, ...] = (), write: tuple[str, ...] = ()
    ) -> None:
        """Object access to one artifact bucket: GetObject (+ prefix-limited ListBucket, kms:Decrypt)
        under each `read` prefix, PutObject (+ kms:GenerateDataKey) under each `write` prefix."""
        self.set_env(artifacts.spec.env_var, artifacts.bucket_name)
        prefixes = tuple(dict.fromkeys((*read, *write)))
        for prefix in read:
            artifacts.grant_read_prefix(self.function, prefix)
        for prefix in write:
            artifacts.grant_write_prefix(self.function, prefix)
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            f"S3 object permissions are scoped to this function's key prefixes of the {artifacts.spec.key} "
            f"artifact bucket ({', '.join(p + '*' for p in prefixes)}); object keys are job ids, "
            "unknown until run time, so the prefix wildcard is the narrowest possible resource.",
            findings=[arn_finding(self, artifacts.bucket.node.default_child, f"/{prefix}*") for prefix in prefixes],
        )

    def lists_buckets(self, storage: ArtifactStorage, *, prefixes: tuple[str, ...]) -> None:
        """List-only access to every artifact bucket (s3:ListBucket under `prefixes`): no object
        read or write, no KMS. The function learns every bucket's name."""
        for artifacts in storage.buckets:
            self.set_env(artifacts.spec.env_var, artifacts.bucket_name)
        storage.grant_list(self.function, prefixes)
