"""The trigger-facing REST API: POST /v1/reviews, GET /v1/reviews/{job_id} and GET /v1/ping (the
trigger's signed self-test), and with Swarm workflow tests on POST /v1/swarm/tests, all proxied
to `ingest`.

There is no API Gateway authorizer: every trigger request is HMAC-signed by the Perforce trigger
with the key in the trigger-signing secret, and `ingest` verifies signature and timestamp before
doing anything; a Swarm workflow test's call carries the shared token of the swarm-test-token
secret, which `ingest` checks first. Abuse is bounded by stage throttling."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from p4review.resources import physical_name
from p4review_infra.constructs.logs_key import logs_key
from p4review_infra.nag import acknowledge
from p4review_infra.scanner_skips import skip_checkov

THROTTLE_RATE_LIMIT = 50
THROTTLE_BURST_LIMIT = 100
ACCESS_LOG_RETENTION = logs.RetentionDays.ONE_MONTH

_HMAC_REASON = (
    "Callers are Perforce triggers, not users: every request is HMAC-SHA256 signed with the "
    "trigger-signing secret and the ingest function rejects unsigned, mis-signed or stale "
    "(timestamp outside the allowed skew) requests before touching any resource. An IAM/Cognito "
    "authorizer would need AWS credentials or a user pool on the Perforce server."
)
_SWARM_ROUTE_REASON = (
    " POST /v1/swarm/tests is called by Helix Swarm's workflow test, which cannot sign a body or hold "
    "AWS credentials: ingest compares its shared per-environment token (swarm-test-token secret, "
    "current and previous value, constant time) before reading the body's fields and refuses callback "
    "URLs off the configured Swarm."
)


# checkov CKV_AWS_59 (AuthorizationType NONE), per method.
_NO_AUTHORIZER_REASON = (
    " API Gateway has no HMAC authorizer, and a Lambda authorizer never receives the request body "
    "that the signature covers."
)
_SWARM_NO_AUTHORIZER_REASON = (
    " A Lambda authorizer would only repeat that comparison in a second invocation per request."
)


class ReviewApi(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        handler: lambda_.IFunction,
        removal_policy: RemovalPolicy,
        swarm_tests: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)

        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            log_group_name=f"/aws/apigateway/{physical_name(environment, 'api')}/access",
            retention=ACCESS_LOG_RETENTION,
            removal_policy=removal_policy,
            encryption_key=logs_key(self, environment=environment, removal_policy=removal_policy).key,
        )

        self.api = apigw.RestApi(
            self,
            "Api",
            rest_api_name=physical_name(environment, "api"),
            description="p4review: Perforce trigger endpoint (HMAC-signed requests)",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Execution logging (APIG6) needs the account-level API Gateway CloudWatch role.
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name=environment,
                throttling_rate_limit=THROTTLE_RATE_LIMIT,
                throttling_burst_limit=THROTTLE_BURST_LIMIT,
                tracing_enabled=True,
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,  # never log request bodies (diff metadata, signatures)
                metrics_enabled=True,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=False,
                ),
            ),
        )

        validator = self.api.add_request_validator(
            "Validator",
            request_validator_name=physical_name(environment, "api-validator"),
            validate_request_body=True,
            validate_request_parameters=True,
        )
        integration = apigw.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)

        v1 = self.api.root.add_resource("v1")
        self.reviews = v1.add_resource("reviews")
        self.post_review = self.reviews.add_method("POST", integration, request_validator=validator)
        self.job = self.reviews.add_resource("{job_id}")
        self.get_review = self.job.add_method(
            "GET",
            integration,
            request_validator=validator,
            request_parameters={"method.request.path.job_id": True},
        )
        self.ping = v1.add_resource("ping").add_method("GET", integration, request_validator=validator)
        # Swarm's workflow test (docs/swarm-workflow-test.md): as POST /v1/reviews, token instead of HMAC.
        self.post_swarm_test = (
            v1.add_resource("swarm").add_resource("tests").add_method("POST", integration, request_validator=validator)
            if swarm_tests
            else None
        )

        for rule in ("AwsSolutions-APIG4", "AwsSolutions-COG4"):
            acknowledge(self.api, rule, _HMAC_REASON + (_SWARM_ROUTE_REASON if swarm_tests else ""))
        callers = "Perforce triggers and Swarm's workflow test" if swarm_tests else "Perforce triggers"
        checks = "HMAC- or token-verified" if swarm_tests else "HMAC-verified"
        acknowledge(
            self.api,
            "AwsSolutions-APIG3",
            f"No WAF yet: the only callers are {callers}, requests are {checks} in the "
            "function, bodies are capped and the stage is throttled (50 rps, burst 100). A WAF web ACL "
            "(IP allow-list of the Perforce servers) is a follow-up once their egress IPs are fixed.",
        )

        swarm_route = self.post_swarm_test.node.path if self.post_swarm_test else None
        for method in self.api.methods:
            skip_checkov(
                method,
                "CKV_AWS_59",
                _SWARM_ROUTE_REASON.strip() + _SWARM_NO_AUTHORIZER_REASON
                if method.node.path == swarm_route
                else _HMAC_REASON + _NO_AUTHORIZER_REASON,
            )
        skip_checkov(
            self.api.deployment_stage,
            "CKV_AWS_120",
            "No response caching: a cache hit is answered by API Gateway without ingest running, so "
            "without its signature and timestamp checks (a replayed GET would be served), and could be a "
            "stale job status.",
        )

        cloud_watch_role = self.api.node.try_find_child("CloudWatchRole")
        if cloud_watch_role is not None:
            acknowledge(
                cloud_watch_role,
                "AwsSolutions-IAM4",
                "The account-level API Gateway CloudWatch role (required for execution logging, "
                "APIG6) uses AmazonAPIGatewayPushToCloudWatchLogs, the AWS-maintained policy for "
                "exactly this purpose; API Gateway writes to log groups it names itself, so an "
                "inline policy would need the same logs:* on arbitrary groups.",
                findings=[
                    "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"
                ],
            )

    @property
    def reviews_url(self) -> str:
        return self.api.url_for_path("/v1/reviews")

    @property
    def swarm_tests_url(self) -> str:
        return self.api.url_for_path("/v1/swarm/tests")
