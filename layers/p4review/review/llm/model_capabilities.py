"""What each LLM model family accepts, in one table, and the lookup the request builders use.

Every entry names its source (a vendor document or a file of the installed SDK/botocore).
A model id no entry matches gets its provider's `UNKNOWN` entry: the request every server of
that kind accepts (no temperature, no reasoning effort, no forced tool choice; on Bedrock no
system block, cache checkpoint, tools or output limit).
docs/llm-models.md shows the table and the reasoning behind each safe default.

Matching: the id is lower-cased; a gateway prefix up to the last "/" (`openai/gpt-4o`, a Bedrock
ARN's `.../inference-profile/`) is dropped, and on Bedrock so is a cross-Region inference
profile's geography (`us.`, `eu.`, `apac.`, `global.`, ...). The rest must match an entry's
pattern whole (`re.fullmatch`): dated snapshots (`-2024-08-06`, `-20250514`, `-v1:0`) are part
of the patterns, anything else is unknown.

Output limit: each family may name the most output its models take (`max_output_tokens`); the
request carries the configured limit (P4REVIEW_LLM_MAX_OUTPUT_TOKENS) lowered to it
(`ModelFamily.output_tokens`, `output_token_limit`). Where a family holds models with different
ceilings, the lowest is the family's; every known family has one, an unknown model none.

Above 500 lines on purpose: it is a table (data, each entry citing its provider's documentation),
not logic; splitting it would only scatter the citations."""

from __future__ import annotations

import re
from functools import cache
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

Provider = Literal["openai", "anthropic", "bedrock"]
# openai: which token limit the chat completions request names. "either" means the model takes
# both: max_completion_tokens on api.openai.com and on Azure OpenAI (max_tokens is deprecated
# there, and Azure's deployment names hide reasoning models, which refuse it), max_tokens on any
# other base URL (the field every OpenAI-compatible server knows).
OutputLimitField = Literal["max_completion_tokens", "max_tokens", "either", "maxTokens"]
# How the ReviewResult is asked for:
#   forced_tool  the one tool is forced by name (Anthropic tool_choice.type=tool, Converse toolChoice.tool)
#   any_tool     the model must call a tool, and there is one (Converse toolChoice.any)
#   auto_tool    the tool is offered, tool choice left at the default (auto)
#   json_schema  OpenAI response_format json_schema (the configured mode may ask for less)
#   json_object  OpenAI response_format json_object
#   prompt_only  nothing but the instructions; the result parser reads the text
StructuredOutput = Literal["forced_tool", "any_tool", "auto_tool", "json_schema", "json_object", "prompt_only"]
# How the stable prefix is marked cacheable: automatic (OpenAI, nothing sent), cache_control on
# the system block (Anthropic), a cachePoint after the system text (Converse), or not at all.
CacheMechanism = Literal["automatic", "cache_control", "cache_point", "none"]
# openai: the reasoning effort sent (reasoning_effort), a value of the SDK's ReasoningEffort
# (openai/types/shared/reasoning_effort.py). None: not sent (the model's default applies).
ReasoningEffort = Literal["minimal", "low", "medium", "high"]

_OPENAI_REASONING = "https://platform.openai.com/docs/guides/reasoning"
_OPENAI_MAX_TOKENS = (
    "openai SDK openai/types/chat/completion_create_params.py (max_tokens: deprecated, "
    "'not compatible with o-series models')"
)
_OPENAI_CACHING = "https://platform.openai.com/docs/guides/prompt-caching (automatic, prompts of 1,024 tokens or more)"
_OPENAI_STRUCTURED = "https://platform.openai.com/docs/guides/structured-outputs (supported models)"
_OPENAI_EFFORT = (
    "openai SDK openai/types/shared/reasoning_effort.py and completion_create_params.py reasoning_effort "
    "('Reducing reasoning effort can result in ... fewer tokens used on reasoning'; max_completion_tokens "
    "includes 'visible output tokens and reasoning tokens'); https://platform.openai.com/docs/guides/reasoning "
    "(models before gpt-5.1 default to medium)"
)
_OPENAI_MODELS = "https://platform.openai.com/docs/models (max output tokens per model)"
_ANTHROPIC_MODELS = (
    "https://platform.claude.com/docs/en/about-claude/models/overview (max output per model, legacy models table)"
)
_BEDROCK_FEATURES = (
    "https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html"
)
_ANTHROPIC_CACHING = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching (minimum cacheable length)"
_ANTHROPIC_TOOLS = (
    "anthropic SDK anthropic/types/tool_choice_tool_param.py; no temperature field in message_create_params.py"
)
_ANTHROPIC_ADAPTIVE = (
    "https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking (adaptive-only models); "
    "https://platform.claude.com/docs/en/build-with-claude/extended-thinking "
    "(with thinking on, tool_choice auto or none only)"
)
_BEDROCK_CACHING = (
    "https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html (supported models and limits)"
)
_BEDROCK_TOOL_CHOICE = (
    "botocore data/bedrock-runtime/2023-09-30/service-2.json ToolChoice.tool: "
    "'Only supported by Anthropic Claude 3 and Amazon Nova models'"
)


class PromptCache(BaseModel):
    model_config = ConfigDict(frozen=True)

    mechanism: CacheMechanism
    # The shortest prefix the vendor caches at one checkpoint; None where not documented. A marker
    # before it is not an error (the prefix is just not cached) on the Anthropic API and Bedrock.
    min_tokens: int | None = None


class ModelFamily(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: Provider
    family: str
    pattern: str  # re.fullmatch against the normalized model id
    accepts_temperature: bool  # False: temperature is left out (the model's default applies)
    output_limit_field: OutputLimitField
    accepts_system_message: bool = True  # False: the instructions go first in the user message
    prompt_cache: PromptCache
    structured_output: StructuredOutput
    # The most output tokens the family's models take (the lowest of them where they differ);
    # None: not known here, the configured limit is sent as is (an unknown Bedrock model is sent
    # none: Converse then allows the model's maximum).
    max_output_tokens: int | None = None
    reasoning_effort: ReasoningEffort | None = None  # openai only: sent as reasoning_effort
    source: str

    @property
    def known(self) -> bool:
        return self.family != "unknown"

    def output_tokens(self, configured: int) -> int:
        """The output limit a request to this family carries: the configured one, at most the ceiling."""
        return configured if self.max_output_tokens is None else min(configured, self.max_output_tokens)


_NO_CACHE = PromptCache(mechanism="none")
_OPENAI_CACHE = PromptCache(mechanism="automatic", min_tokens=1024)


def _claude(tier: str, major: int, minor: int | None = None, *, bedrock: bool) -> str:
    """Both Claude naming schemes (claude-3-5-sonnet-20241022, claude-sonnet-4-5-20250929) with
    their snapshot suffixes; Bedrock adds `anthropic.` and `-v1:0` (and `:200k`-style tails)."""
    version = f"{major}" + (f"-{minor}" if minor is not None else "")
    suffix = r"(?:-\d{8})?(?:-latest)?(?:-v\d+(?::\d+)?(?::\d+k)?)?"
    names = rf"(?:claude-{version}-{tier}|claude-{tier}-{version})"
    return (r"anthropic\." if bedrock else "") + names + suffix


def _openai(name: str, *, dated: bool = True) -> str:
    """An OpenAI model and its dated snapshots (gpt-4o-2024-08-06)."""
    return re.escape(name) + (r"(?:-\d{4}-\d{2}-\d{2})?" if dated else "")


def _openai_family(
    family: str,
    patterns: list[str],
    *,
    reasoning: bool,
    structured: StructuredOutput,
    max_output: int,
    source: str,
    effort: ReasoningEffort | None = None,
    system: bool = True,
) -> ModelFamily:
    return ModelFamily(
        provider="openai",
        family=family,
        pattern="|".join(f"(?:{p})" for p in patterns),
        accepts_temperature=not reasoning,
        output_limit_field="max_completion_tokens" if reasoning else "either",
        accepts_system_message=system,
        prompt_cache=_OPENAI_CACHE,
        structured_output=structured,
        max_output_tokens=max_output,
        reasoning_effort=effort,
        source=f"{source}; {_OPENAI_MODELS}" + (f"; {_OPENAI_EFFORT}" if effort else ""),
    )


OPENAI_FAMILIES: tuple[ModelFamily, ...] = (
    _openai_family(
        "o1-mini / o1-preview (retired)",
        [_openai("o1-mini"), _openai("o1-preview")],
        reasoning=True,
        structured="prompt_only",
        system=False,
        max_output=32_768,  # o1-preview's; o1-mini takes 65,536
        # No reasoning_effort: these two refuse it (it came with o1).
        source=f"{_OPENAI_REASONING} (beta limitations: no system messages, no response_format); {_OPENAI_MAX_TOKENS}",
    ),
    _openai_family(
        "o-series reasoning (o1, o3, o3-mini, o4-mini)",
        [_openai("o1"), _openai("o3"), _openai("o3-mini"), _openai("o4-mini")],
        reasoning=True,
        structured="json_schema",
        max_output=100_000,
        effort="low",
        source=f"{_OPENAI_REASONING} (temperature unsupported: 400 unsupported_value); {_OPENAI_MAX_TOKENS}; "
        f"{_OPENAI_STRUCTURED}",
    ),
    # gpt-5 itself, -mini and -nano default to medium effort: low leaves room for the answer.
    _openai_family(
        "gpt-5, gpt-5-mini, gpt-5-nano",
        [r"gpt-5(?:-mini|-nano)?(?:-\d{4}-\d{2}-\d{2})?"],
        reasoning=True,
        structured="json_schema",
        max_output=128_000,
        effort="low",
        source=f"{_OPENAI_REASONING}; openai SDK openai/types/shared/chat_model.py (model ids); {_OPENAI_MAX_TOKENS}",
    ),
    # The ChatGPT snapshots are not reasoning models: no reasoning_effort, 16,384 tokens out.
    _openai_family(
        "gpt-5 chat (gpt-5-chat-latest, gpt-5.x-chat-latest)",
        [r"gpt-5(?:\.\d+)?-chat(?:-latest)?"],
        reasoning=True,
        structured="json_schema",
        max_output=16_384,
        source=f"openai SDK openai/types/shared/chat_model.py (model ids); {_OPENAI_MAX_TOKENS}",
    ),
    _openai_family(
        "gpt-5.x, gpt-5 pro/codex and later gpt-N",
        # gpt-5.1 and later default to no reasoning (effort none), which low would raise; gpt-5-pro
        # takes only high. The later generations the SDK lists (gpt-6-*) are not documented here:
        # they get the choices every OpenAI chat model takes (no temperature, max_completion_tokens,
        # the default effort).
        [r"gpt-(?:[5-9]|\d{2,})(?:\.\d+)?(?:-[a-z0-9.-]+)?"],
        reasoning=True,
        structured="json_schema",
        max_output=128_000,
        source=f"{_OPENAI_REASONING} (gpt-5.1 defaults to none; gpt-5-pro supports only high); "
        f"openai SDK openai/types/shared/chat_model.py (model ids); {_OPENAI_MAX_TOKENS}",
    ),
    _openai_family(
        "gpt-4-turbo / gpt-3.5-turbo-1106 and later (JSON mode)",
        [
            _openai("gpt-4o-2024-05-13", dated=False),  # ahead of the gpt-4o entry, which would match it
            r"gpt-4-turbo(?:-preview|-\d{4}-\d{2}-\d{2})?",
            r"gpt-4-(?:1106|0125)-preview",
            r"gpt-3\.5-turbo(?:-1106|-0125)?",
        ],
        reasoning=False,
        structured="json_object",
        max_output=4_096,
        source=f"https://platform.openai.com/docs/guides/json-mode (json_object models); {_OPENAI_STRUCTURED}",
    ),
    _openai_family(
        "gpt-4o / gpt-4o-mini (structured outputs)",
        [r"gpt-4o(?:-mini)?(?:-\d{4}-\d{2}-\d{2})?", _openai("chatgpt-4o-latest", dated=False)],
        reasoning=False,
        structured="json_schema",
        max_output=16_384,
        source=f"{_OPENAI_STRUCTURED} (gpt-4o-mini, gpt-4o-2024-08-06 and later); {_OPENAI_MAX_TOKENS}",
    ),
    _openai_family(
        "gpt-4.1 / -mini / -nano (structured outputs)",
        [r"gpt-4\.1(?:-mini|-nano)?(?:-\d{4}-\d{2}-\d{2})?"],
        reasoning=False,
        structured="json_schema",
        max_output=32_768,
        source=f"{_OPENAI_STRUCTURED}; {_OPENAI_MAX_TOKENS}",
    ),
    # 8,192 is gpt-4's whole context window: the prompt shares it.
    _openai_family(
        "gpt-4 before turbo (no JSON mode)",
        [r"gpt-4(?:-0314|-0613|-32k(?:-0314|-0613)?)?"],
        reasoning=False,
        structured="prompt_only",
        max_output=8_192,
        source="https://platform.openai.com/docs/guides/json-mode (gpt-3.5-turbo-1106 and gpt-4-turbo onwards only)",
    ),
    _openai_family(
        "gpt-3.5-turbo before 1106 (no JSON mode)",
        [r"gpt-3\.5-turbo-(?:0301|0613|16k(?:-0613)?)"],
        reasoning=False,
        structured="prompt_only",
        max_output=4_096,
        source="https://platform.openai.com/docs/guides/json-mode (gpt-3.5-turbo-1106 and gpt-4-turbo onwards only)",
    ),
)
# An unknown model, through api.openai.com, Azure OpenAI or any compatible server: temperature left
# out (no server requires it, reasoning models refuse it); the token limit by base URL (see
# OutputLimitField) and as configured (no ceiling known); no reasoning_effort (servers without
# reasoning models may refuse it); response_format as configured (P4REVIEW_LLM_STRUCTURED_OUTPUT
# is the operator's statement of what the server supports).
OPENAI_UNKNOWN = ModelFamily(
    provider="openai",
    family="unknown",
    pattern="",
    accepts_temperature=False,
    output_limit_field="either",
    prompt_cache=_OPENAI_CACHE,
    structured_output="json_schema",
    source="safe default (docs/llm-models.md)",
)


class _Claude(NamedTuple):
    family: str
    patterns: list[str]
    min_cache_tokens: int | None  # None: no prompt caching
    structured: StructuredOutput
    max_output: int  # the same on the Anthropic API and on Bedrock (without beta headers)


def _anthropic_family(claude: _Claude) -> ModelFamily:
    return ModelFamily(
        provider="anthropic",
        family=claude.family,
        pattern="|".join(f"(?:{p})" for p in claude.patterns),
        accepts_temperature=False,  # not sent: the SDK's MessageCreateParams has no sampling fields
        output_limit_field="max_tokens",
        prompt_cache=PromptCache(mechanism="cache_control", min_tokens=claude.min_cache_tokens)
        if claude.min_cache_tokens is not None
        else _NO_CACHE,
        structured_output=claude.structured,
        max_output_tokens=claude.max_output,
        source=f"{_ANTHROPIC_CACHING}; {_ANTHROPIC_TOOLS}; {_ANTHROPIC_MODELS}"
        + (f"; {_ANTHROPIC_ADAPTIVE}" if claude.structured == "auto_tool" else ""),
    )


def _claude_families(*, bedrock: bool) -> list[_Claude]:
    """The Claude families on either API; the two APIs differ only where noted in the provider
    tables below. Max output: Anthropic's models overview (Claude 3 and 3.5 Sonnet v1 4,096 without
    the retired beta header, 3.5 Haiku and 3.5 Sonnet v2 8,192, 3.7 Sonnet 64,000 without the
    128k beta header), the lowest member's where a family's models differ."""

    def c(tier: str, major: int, minor: int | None = None) -> str:
        return _claude(tier, major, minor, bedrock=bedrock)

    prefix = r"anthropic\." if bedrock else ""
    return [
        _Claude("Claude 3 Haiku", [c("haiku", 3)], 2048, "forced_tool", 4_096),
        _Claude("Claude 3 Sonnet (retired)", [c("sonnet", 3)], None, "forced_tool", 4_096),
        _Claude("Claude 3 Opus", [c("opus", 3)], 1024, "forced_tool", 4_096),
        # v2 (20241022, and -latest, its alias) ahead of v1, whose pattern would match it.
        _Claude(
            "Claude 3.5 Sonnet v2",
            [prefix + r"claude-3-5-sonnet-(?:20241022|latest)(?:-v\d+(?::\d+)?(?::\d+k)?)?"],
            1024,
            "forced_tool",
            8_192,
        ),
        _Claude("Claude 3.5 Sonnet v1", [c("sonnet", 3, 5)], 1024, "forced_tool", 4_096),
        _Claude("Claude 3.5 Haiku", [c("haiku", 3, 5)], 2048, "forced_tool", 8_192),
        _Claude("Claude 3.7 Sonnet", [c("sonnet", 3, 7)], 1024, "forced_tool", 64_000),
        _Claude(
            "Claude Sonnet 4 / 4.5 / 4.6",
            [c("sonnet", 4), c("sonnet", 4, 5), c("sonnet", 4, 6)],
            1024,
            "forced_tool",
            64_000,  # Sonnet 4.6 takes 128,000
        ),
        _Claude("Claude Opus 4 / 4.1", [c("opus", 4), c("opus", 4, 1)], 1024, "forced_tool", 32_000),
        _Claude(
            "Claude Opus 4.5 / 4.6, Haiku 4.5",
            [c("opus", 4, 5), c("opus", 4, 6), c("haiku", 4, 5)],
            4096,
            "forced_tool",
            64_000,  # Opus 4.6 takes 128,000
        ),
        # Adaptive thinking only (thinking cannot be disabled): a forced tool choice is refused.
        # Max output: Mythos's and Fable's are not in the sources read; 32,000 is the lowest of
        # the Claude 4 generation (Opus 4.7 takes more).
        _Claude(
            "Claude Opus 4.7, Mythos, Fable (adaptive thinking only)",
            [c("opus", 4, 7), prefix + r"claude-(?:mythos|fable)(?:-preview|-\d+(?:-\d+)?)(?:-v\d+(?::\d+)?)?"],
            4096,
            "auto_tool",
            32_000,
        ),
    ]


ANTHROPIC_FAMILIES: tuple[ModelFamily, ...] = tuple(_anthropic_family(c) for c in _claude_families(bedrock=False))
# An unknown Claude model: the tool offered with tool choice auto (accepted with thinking on or
# off), and cache_control kept: every active Claude model caches, and a prefix shorter than the
# minimum is processed uncached, without an error. The configured output limit is sent as is (no
# ceiling known; the default 4,096 is within every Claude model's).
ANTHROPIC_UNKNOWN = ModelFamily(
    provider="anthropic",
    family="unknown",
    pattern="",
    accepts_temperature=False,
    output_limit_field="max_tokens",
    prompt_cache=PromptCache(mechanism="cache_control"),
    structured_output="auto_tool",
    source=f"safe default (docs/llm-models.md); {_ANTHROPIC_CACHING}; {_ANTHROPIC_ADAPTIVE}",
)


def _bedrock_claude(claude: _Claude) -> ModelFamily:
    family, structured, min_tokens = claude.family, claude.structured, claude.min_cache_tokens
    # Bedrock caches only for the models on its own list: Claude 3 Haiku/Sonnet/Opus and 3.5 Sonnet
    # (v2 was a closed preview) are not on it, and refuse a cachePoint with a ValidationException;
    # nor are the adaptive-thinking models (not on the list as read for this table).
    bedrock_caches = structured != "auto_tool" and not family.startswith(("Claude 3 ", "Claude 3.5 Sonnet"))
    if structured == "forced_tool" and not family.startswith("Claude 3"):
        # botocore documents toolChoice.tool for "Anthropic Claude 3 and Amazon Nova models" only;
        # `any` with a single tool forces the same call and carries no such restriction.
        structured = "any_tool"
    return ModelFamily(
        provider="bedrock",
        family=family,
        pattern="|".join(f"(?:{p})" for p in claude.patterns),
        # With adaptive thinking a temperature other than the default is refused.
        accepts_temperature=structured != "auto_tool",
        output_limit_field="maxTokens",
        prompt_cache=PromptCache(mechanism="cache_point", min_tokens=min_tokens)
        if bedrock_caches and min_tokens is not None
        else _NO_CACHE,
        structured_output=structured,
        max_output_tokens=claude.max_output,
        source=f"{_BEDROCK_CACHING}; {_BEDROCK_TOOL_CHOICE}; {_ANTHROPIC_MODELS}"
        + (f"; {_ANTHROPIC_ADAPTIVE}" if structured == "auto_tool" else ""),
    )


def _titan_text(variant: str, max_output: int) -> ModelFamily:
    """Amazon Titan Text: no system prompt and no tool use on Converse (ValidationException "This
    model doesn't support system messages"); temperature 0.0-1.0 and maxTokenCount per model."""
    return ModelFamily(
        provider="bedrock",
        family=f"Amazon Titan Text {variant.capitalize()}",
        pattern=rf"amazon\.titan-text-{variant}-v1(?::\d+)?(?::\d+k)?",
        accepts_temperature=True,
        output_limit_field="maxTokens",
        accepts_system_message=False,
        prompt_cache=_NO_CACHE,
        structured_output="prompt_only",
        max_output_tokens=max_output,
        source=f"{_BEDROCK_FEATURES} (Amazon Titan models: system prompts No, tool use No); "
        "https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-text.html "
        "(temperature 0.0-1.0; maxTokenCount maximum: Lite 4,096, Express 8,192, Premier 3,072)",
    )


BEDROCK_FAMILIES: tuple[ModelFamily, ...] = (
    *(_bedrock_claude(c) for c in _claude_families(bedrock=True)),
    ModelFamily(
        provider="bedrock",
        family="Amazon Nova Micro / Lite / Pro",
        pattern=r"amazon\.nova-(?:micro|lite|pro)-v1(?::\d+)?(?::\d+k)?",
        accepts_temperature=True,
        output_limit_field="maxTokens",
        prompt_cache=PromptCache(mechanism="cache_point", min_tokens=1000),
        structured_output="forced_tool",
        max_output_tokens=5_000,
        source=f"{_BEDROCK_CACHING}; {_BEDROCK_TOOL_CHOICE}; https://docs.aws.amazon.com/bedrock/latest/userguide/"
        "model-card-amazon-nova-lite.html ('Max output tokens: 5K'; Micro and Pro: the same generation's)",
    ),
    # Premier's maximum output is not in the sources read (10K and 32K are both reported
    # elsewhere): the lower is sent.
    ModelFamily(
        provider="bedrock",
        family="Amazon Nova Premier",
        pattern=r"amazon\.nova-premier-v1(?::\d+)?(?::\d+k)?",
        accepts_temperature=True,
        output_limit_field="maxTokens",
        prompt_cache=PromptCache(mechanism="cache_point", min_tokens=1000),
        structured_output="forced_tool",
        max_output_tokens=10_000,
        source=f"{_BEDROCK_CACHING}; {_BEDROCK_TOOL_CHOICE}; max output not verified (docs/llm-models.md)",
    ),
    _titan_text("premier", 3_072),
    _titan_text("express", 8_192),
    _titan_text("lite", 4_096),
    # Claude 2.x and Claude Instant: system prompts yes, tool use no (no toolConfig at all).
    ModelFamily(
        provider="bedrock",
        family="Claude 2.x / Instant (no tool use)",
        pattern=r"anthropic\.claude-(?:v2|instant-v1)(?::\d+)?(?::\d+k)?",
        accepts_temperature=True,
        output_limit_field="maxTokens",
        prompt_cache=_NO_CACHE,
        structured_output="prompt_only",
        max_output_tokens=4_096,
        source=f"{_BEDROCK_FEATURES} (Anthropic Claude 2.x and earlier: system prompts Yes, tool use No); "
        "https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-text-completion.html "
        "(temperature 0-1, max_tokens_to_sample at most 4,096)",
    ),
    # A Claude model newer than this table (Claude 3 and later take tools; 2.x, above, does not):
    # its caching and thinking defaults are not known here, so the tool is offered without a
    # forced choice; its output ceiling is taken as the lowest of the Claude 4 generation.
    ModelFamily(
        provider="bedrock",
        family="other Claude (not in this table)",
        pattern=r"anthropic\.claude-[a-z0-9.:-]+",
        accepts_temperature=False,
        output_limit_field="maxTokens",
        prompt_cache=_NO_CACHE,
        structured_output="auto_tool",
        max_output_tokens=32_000,
        source=f"safe default (docs/llm-models.md); {_ANTHROPIC_ADAPTIVE}; {_BEDROCK_FEATURES}",
    ),
)
# An unknown Converse model: no system block (Titan refuses system messages; the instructions open
# the user message), no cachePoint (refused by models without caching), no toolConfig (refused by
# models without tool use; the instructions carry the schema and the parser reads the text), no
# temperature (refused by some reasoning models; the model's default applies), and no maxTokens
# (a value above the model's maximum is refused; left out, "the default value is the maximum
# allowed value for the model": botocore InferenceConfiguration.maxTokens).
BEDROCK_UNKNOWN = ModelFamily(
    provider="bedrock",
    family="unknown",
    pattern="",
    accepts_temperature=False,
    output_limit_field="maxTokens",
    accepts_system_message=False,
    prompt_cache=_NO_CACHE,
    structured_output="prompt_only",
    source=f"safe default (docs/llm-models.md); {_BEDROCK_FEATURES} (features differ per model); "
    "botocore data/bedrock-runtime/2023-09-30/service-2.json InferenceConfiguration.maxTokens",
)

FAMILIES: dict[Provider, tuple[ModelFamily, ...]] = {
    "openai": OPENAI_FAMILIES,
    "anthropic": ANTHROPIC_FAMILIES,
    "bedrock": BEDROCK_FAMILIES,
}
UNKNOWN: dict[Provider, ModelFamily] = {
    "openai": OPENAI_UNKNOWN,
    "anthropic": ANTHROPIC_UNKNOWN,
    "bedrock": BEDROCK_UNKNOWN,
}

# Cross-Region inference profile geographies (the profile id is "<geo>.<model id>").
_BEDROCK_GEOGRAPHY = re.compile(r"^(?:us|eu|apac|global|us-gov|jp|au|ca|apne|de|in)\.(?=[a-z0-9-]+\.)")


def normalize_model_id(provider: Provider, model_id: str) -> str:
    normalized = model_id.strip().lower().rsplit("/", 1)[-1]
    if provider == "bedrock":
        normalized = _BEDROCK_GEOGRAPHY.sub("", normalized)
    return normalized


@cache
def capabilities(provider: Provider, model_id: str) -> ModelFamily:
    """The family entry for `model_id`, or the provider's UNKNOWN entry (the safe choices)."""
    normalized = normalize_model_id(provider, model_id)
    for family in FAMILIES[provider]:
        if re.fullmatch(family.pattern, normalized):
            return family
    return UNKNOWN[provider]


def output_token_limit(provider: Provider, model_id: str, configured: int) -> int:
    """The output limit a request to `model_id` carries: `configured`, at most the family's
    ceiling. What the token budget should reserve for a request's output (an unknown Bedrock
    model is sent no limit: the configured one is then an estimate, settled with the usage)."""
    return capabilities(provider, model_id).output_tokens(configured)
