"""The review function's configuration from CDK context (docs/infra.md, "Review configuration").

Each value is checked at synth with what the function checks it with at cold start (the pydantic
`ReviewerSettings` model, the noise-policy parser, the shipped prompt registry), so a deploy cannot ship a
setting the function would refuse."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import ValidationError

from p4review.errors import ConfigError
from p4review.review.noise import parse_noise_policy
from p4review.review.prompts import load_registry
from p4review.review.settings import ReviewerSettings
from p4review.settings.blocks import SettingsBlock

BlockT = TypeVar("BlockT", bound=SettingsBlock)

PROVIDERS = ("offline", "openai", "anthropic", "bedrock")
# Providers authenticating with an API key from the LLM secret; bedrock uses the function's role.
KEY_PROVIDERS = ("openai", "anthropic")
DEFAULT_FINDINGS_PER_JOB_SLO = 0.5

# Context key -> ReviewerSettings field; the env var is the field's alias, set only when the key is given.
CONTEXT_FIELDS = {
    "llmProvider": "llm_provider",
    "llmModel": "llm_model",
    "llmBaseUrl": "llm_base_url",
    "llmStructuredOutput": "llm_structured_output",
    "reviewChunkTokens": "review_chunk_tokens",
    "reviewJobTokens": "review_job_tokens",
    "reviewContextTokens": "review_context_tokens",  # the enclosing functions a file may add (review/context/)
    "llmTokensPerMinute": "llm_tokens_per_minute",  # the shared token budget (docs/capacity.md)
    "lineOutsideDiff": "line_outside_diff",
    "noisePolicy": "noise_policy",
    "promptCanary": "prompt_canary",
    "promptCanaryPercent": "prompt_canary_percent",
}
ENV_VARS = {key: ReviewerSettings.env_var(name) for key, name in CONTEXT_FIELDS.items()}

# Cross-region (system) inference profiles are named `<geo>.<model id>`, e.g. us.anthropic.claude-...
INFERENCE_PROFILE_GEOS = ("us", "us-gov", "eu", "apac", "jp", "au", "ca", "global")
_MODEL_ID = re.compile(r"[a-z0-9-]+\.[A-Za-z0-9._:-]+")
_BEDROCK_ARN = re.compile(
    r"arn:(?P<partition>[a-z-]+):bedrock:(?P<region>[a-z0-9-]+):(?P<account>\d*):"
    r"(?P<kind>foundation-model|inference-profile)/(?P<id>[A-Za-z0-9._:-]+)"
)


class ContextError(ValueError):
    """A CDK context value the review function could not run with."""


@dataclass(frozen=True)
class ReviewConfig:
    provider: str = "offline"
    model: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    findings_per_job_slo: float = DEFAULT_FINDINGS_PER_JOB_SLO

    @property
    def reads_llm_secret(self) -> bool:
        return self.provider in KEY_PROVIDERS

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> ReviewConfig:
        """`get` is `app.node.try_get_context`. Raises ContextError naming the key and the rule."""
        given = {key: text for key in CONTEXT_FIELDS if (text := _text(get(key)))}
        provider = given.get("llmProvider", "offline")
        if provider not in PROVIDERS:
            raise ContextError(f"context llmProvider={provider!r}: expected one of {', '.join(PROVIDERS)}")
        model = given.get("llmModel")
        if provider != "offline" and not model:
            raise ContextError(f"context llmModel is required with llmProvider={provider} (-c llmModel=<model id>)")
        if "llmBaseUrl" in given:
            if provider != "openai":
                raise ContextError(f"context llmBaseUrl applies to llmProvider=openai only, not {provider}")
            url = urlsplit(given["llmBaseUrl"])
            if url.scheme not in ("http", "https") or not url.netloc:
                raise ContextError(f"context llmBaseUrl={given['llmBaseUrl']!r}: expected an http(s):// URL")
        if model and provider == "bedrock":
            # Fail at synth, not at the first review: the same parse that builds the IAM grant.
            bedrock_invoke_resources(model, partition="aws", region="region", account="account")
        elif model and not re.fullmatch(r"\S+", model):
            raise ContextError(f"context llmModel={model!r}: must not contain whitespace")

        env = {ENV_VARS[key]: text for key, text in given.items()}
        settings = _validate(env)
        try:
            parse_noise_policy(settings.noise_policy)
        except ConfigError as exc:
            raise ContextError(f"context noisePolicy: {exc}") from None
        if settings.prompt_canary:
            # The registry ships in the core layer: a version unknown here is unknown to the function.
            known = load_registry().templates
            if settings.prompt_canary not in known:
                raise ContextError(
                    f"context promptCanary={settings.prompt_canary!r}: not a prompt version in "
                    f"p4review/review/prompt_templates/registry.json ({', '.join(sorted(known))})"
                )
        return cls(
            provider=provider,
            model=model,
            env=MappingProxyType(env),
            findings_per_job_slo=_slo(get("findingsPerJobSlo")),
        )


def bedrock_invoke_resources(model: str, *, partition: str, region: str, account: str) -> tuple[str, ...]:
    """The resources `bedrock:InvokeModel` (what Converse needs) must name for `model`, a model id,
    an inference-profile id or either's ARN, as the function passes it to Converse.

    A plain model id runs in the function's region. An inference profile routes each request to its
    foundation model in any region of the profile's geography, so it needs the profile itself and
    the foundation model in every region."""
    arn = _BEDROCK_ARN.fullmatch(model)
    if arn and arn["kind"] == "foundation-model":
        return (model,)
    profile_id = arn["id"] if arn else model
    geo, _, base_model = profile_id.partition(".")
    if geo not in INFERENCE_PROFILE_GEOS:
        if arn or model.startswith("arn:") or not _MODEL_ID.fullmatch(model):
            raise ContextError(
                f"context llmModel={model!r}: expected a Bedrock model id (anthropic.claude-...), a "
                f"cross-region inference-profile id ({'|'.join(INFERENCE_PROFILE_GEOS)}.<model id>) or the ARN "
                "of a foundation model or cross-region inference profile"
            )
        return (f"arn:{partition}:bedrock:{region}::foundation-model/{model}",)
    if not _MODEL_ID.fullmatch(base_model):
        raise ContextError(f"context llmModel={model!r}: no model id after the {geo}. inference-profile prefix")
    profile = model if arn else f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model}"
    any_region = f"arn:{arn['partition'] if arn else partition}:bedrock:*::foundation-model/{base_model}"
    return (profile, any_region)


def _text(value: Any) -> str:
    """A context value as the function's env var text: `-c key=value` gives strings, cdk.json or a
    test may give numbers, booleans or (noisePolicy) a JSON array. "" counts as not given."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return str(value).strip()


def _validate(env: dict[str, str]) -> ReviewerSettings:
    return settings_from_context(env, ENV_VARS, ReviewerSettings)


def settings_from_context(env: dict[str, str], env_vars: Mapping[str, str], model: type[BlockT]) -> BlockT:
    """The service's own settings `model` (a block the functions parse at cold start) from context
    values already turned into their variables (`env_vars`: context key -> variable); an invalid
    value is a ContextError naming its key."""
    try:
        return model.model_validate(env)
    except ValidationError as exc:
        key_for_env = {env_var: key for key, env_var in env_vars.items()}
        problems = "; ".join(
            f"context {key_for_env.get(loc, loc)}={error['input']!r}: {error['msg']}"
            for error in exc.errors()
            for loc in [str(error["loc"][0]) if error["loc"] else "review settings"]
        )
        raise ContextError(problems) from None


def _slo(value: Any) -> float:
    text = _text(value)
    if not text:
        return DEFAULT_FINDINGS_PER_JOB_SLO
    try:
        slo = float(text)
    except ValueError:
        slo = math.nan
    if not (math.isfinite(slo) and slo > 0):
        raise ContextError(f"context findingsPerJobSlo={value!r}: expected a number > 0 (valid findings per job)")
    return slo
