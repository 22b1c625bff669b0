"""What each LLM model family accepts, in one table, and the lookup the request builders use.

Every entry names its source (a vendor document or a file of the installed SDK/botocore).
A model id no entry matches gets its provider's `UNKNOWN` entry: the request every server of
that kind accepts (no temperature, no cache checkpoint on Bedrock, no forced tool choice).
docs/llm-models.md shows the table and the reasoning behind each safe default.

Matching: the id is lower-cased; a gateway prefix up to the last "/" (`openai/gpt-4o`, a Bedrock
ARN's `.../inference-profile/`) is dropped, and on Bedrock so is a cross-Region inference
profile's geography (`us.`, `eu.`, `apac.`, `global.`, ...). The rest must match an entry's
pattern whole (`re.fullmatch`): dated snapshots (`-2024-08-06`, `-20250514`, `-v1:0`) are part
of the patterns, anything else is unknown."""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

Provider = Literal["openai", "anthropic", "bedrock"]
# openai: which token limit the chat completions request names. "either" means the model takes
# both: max_completion_tokens on api.openai.com (max_tokens is deprecated there), max_tokens on
# any other base URL (the field every OpenAI-compatible server knows).
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

_OPENAI_REASONING = "https://platform.openai.com/docs/guides/reasoning"
_OPENAI_MAX_TOKENS = (
    "openai SDK openai/types/chat/completion_create_params.py (max_tokens: deprecated, "
    "'not compatible with o-series models')"
)
_OPENAI_CACHING = "https://platform.openai.com/docs/guides/prompt-caching (automatic, prompts of 1,024 tokens or more)"
_OPENAI_STRUCTURED = "https://platform.openai.com/docs/guides/structured-outputs (supported models)"
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
    source: str

    @property
    def known(self) -> bool:
        return self.family != "unknown"


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
    family: str, patterns: list[str], *, reasoning: bool, structured: StructuredOutput, source: str, **extra: bool
) -> ModelFamily:
    return ModelFamily(
        provider="openai",
        family=family,
        pattern="|".join(f"(?:{p})" for p in patterns),
        accepts_temperature=not reasoning,
        output_limit_field="max_completion_tokens" if reasoning else "either",
        prompt_cache=_OPENAI_CACHE,
        structured_output=structured,
        source=source,
        **extra,
    )


OPENAI_FAMILIES: tuple[ModelFamily, ...] = (
    _openai_family(
        "o1-mini / o1-preview (retired)",
        [_openai("o1-mini"), _openai("o1-preview")],
        reasoning=True,
        structured="prompt_only",
        accepts_system_message=False,
        source=f"{_OPENAI_REASONING} (beta limitations: no system messages, no response_format); {_OPENAI_MAX_TOKENS}",
    ),
    _openai_family(
        "o-series reasoning (o1, o3, o3-mini, o4-mini)",
        [_openai("o1"), _openai("o3"), _openai("o3-mini"), _openai("o4-mini")],
        reasoning=True,
        structured="json_schema",
        source=f"{_OPENAI_REASONING} (temperature unsupported: 400 unsupported_value); {_OPENAI_MAX_TOKENS}; "
        f"{_OPENAI_STRUCTURED}",
    ),
    _openai_family(
        "gpt-5 family (gpt-5, -mini, -nano, 5.x, -chat-latest) and later gpt-N",
        # The later generations the SDK lists (gpt-6-*) are not documented here: they get the
        # choices every OpenAI chat model takes (no temperature, max_completion_tokens).
        [r"gpt-(?:[5-9]|\d{2,})(?:\.\d+)?(?:-[a-z0-9.-]+)?"],
        reasoning=True,
        structured="json_schema",
        source=f"{_OPENAI_REASONING}; openai SDK openai/types/shared/chat_model.py (model ids); {_OPENAI_MAX_TOKENS}",
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
        source=f"https://platform.openai.com/docs/guides/json-mode (json_object models); {_OPENAI_STRUCTURED}",
    ),
    _openai_family(
        "gpt-4o / gpt-4o-mini / gpt-4.1 (structured outputs)",
        [
            r"gpt-4o(?:-mini)?(?:-\d{4}-\d{2}-\d{2})?",
            r"gpt-4\.1(?:-mini|-nano)?(?:-\d{4}-\d{2}-\d{2})?",
            _openai("chatgpt-4o-latest", dated=False),
        ],
        reasoning=False,
        structured="json_schema",
        source=f"{_OPENAI_STRUCTURED} (gpt-4o-mini, gpt-4o-2024-08-06 and later); {_OPENAI_MAX_TOKENS}",
    ),
    _openai_family(
        "gpt-4 / gpt-3.5-turbo before 1106 (no JSON mode)",
        [r"gpt-4(?:-0314|-0613|-32k(?:-0314|-0613)?)?", r"gpt-3\.5-turbo-(?:0301|0613|16k(?:-0613)?)"],
        reasoning=False,
        structured="prompt_only",
        source="https://platform.openai.com/docs/guides/json-mode (gpt-3.5-turbo-1106 and gpt-4-turbo onwards only)",
    ),
)
# An unknown model, through api.openai.com or any compatible server: temperature left out (no
# server requires it, reasoning models refuse it); the token limit by base URL (see
# OutputLimitField); response_format as configured (P4REVIEW_LLM_STRUCTURED_OUTPUT is the
# operator's statement of what the server supports).
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


def _anthropic_family(
    family: str, patterns: list[str], min_tokens: int | None, *, structured: StructuredOutput = "forced_tool"
) -> ModelFamily:
    return ModelFamily(
        provider="anthropic",
        family=family,
        pattern="|".join(f"(?:{p})" for p in patterns),
        accepts_temperature=False,  # not sent: the SDK's MessageCreateParams has no sampling fields
        output_limit_field="max_tokens",
        prompt_cache=PromptCache(mechanism="cache_control", min_tokens=min_tokens)
        if min_tokens is not None
        else _NO_CACHE,
        structured_output=structured,
        source=f"{_ANTHROPIC_CACHING}; {_ANTHROPIC_TOOLS}"
        + (f"; {_ANTHROPIC_ADAPTIVE}" if structured == "auto_tool" else ""),
    )


def _claude_families(*, bedrock: bool) -> list[tuple[str, list[str], int | None, StructuredOutput]]:
    """(family, patterns, minimum cacheable tokens or None, structured output) for Claude on either
    API; the two APIs differ only where noted in the provider tables below."""

    def c(tier: str, major: int, minor: int | None = None) -> str:
        return _claude(tier, major, minor, bedrock=bedrock)

    return [
        ("Claude 3 Haiku", [c("haiku", 3)], 2048, "forced_tool"),
        ("Claude 3 Sonnet (retired)", [c("sonnet", 3)], None, "forced_tool"),
        ("Claude 3 Opus", [c("opus", 3)], 1024, "forced_tool"),
        ("Claude 3.5 Sonnet (v1, v2)", [c("sonnet", 3, 5)], 1024, "forced_tool"),
        ("Claude 3.5 Haiku", [c("haiku", 3, 5)], 2048, "forced_tool"),
        ("Claude 3.7 Sonnet", [c("sonnet", 3, 7)], 1024, "forced_tool"),
        (
            "Claude Sonnet 4 / 4.5 / 4.6, Opus 4 / 4.1",
            [c("sonnet", 4), c("sonnet", 4, 5), c("sonnet", 4, 6), c("opus", 4), c("opus", 4, 1)],
            1024,
            "forced_tool",
        ),
        ("Claude Opus 4.5 / 4.6, Haiku 4.5", [c("opus", 4, 5), c("opus", 4, 6), c("haiku", 4, 5)], 4096, "forced_tool"),
        # Adaptive thinking only (thinking cannot be disabled): a forced tool choice is refused.
        (
            "Claude Opus 4.7, Mythos, Fable (adaptive thinking only)",
            [
                c("opus", 4, 7),
                (r"anthropic\." if bedrock else "")
                + r"claude-(?:mythos|fable)(?:-preview|-\d+(?:-\d+)?)(?:-v\d+(?::\d+)?)?",
            ],
            4096,
            "auto_tool",
        ),
    ]


ANTHROPIC_FAMILIES: tuple[ModelFamily, ...] = tuple(
    _anthropic_family(family, patterns, min_tokens, structured=structured)
    for family, patterns, min_tokens, structured in _claude_families(bedrock=False)
)
# An unknown Claude model: the tool offered with tool choice auto (accepted with thinking on or
# off), and cache_control kept: every active Claude model caches, and a prefix shorter than the
# minimum is processed uncached, without an error.
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


def _bedrock_claude(
    family: str, patterns: list[str], min_tokens: int | None, structured: StructuredOutput
) -> ModelFamily:
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
        pattern="|".join(f"(?:{p})" for p in patterns),
        # With adaptive thinking a temperature other than the default is refused.
        accepts_temperature=structured != "auto_tool",
        output_limit_field="maxTokens",
        prompt_cache=PromptCache(mechanism="cache_point", min_tokens=min_tokens)
        if bedrock_caches and min_tokens is not None
        else _NO_CACHE,
        structured_output=structured,
        source=f"{_BEDROCK_CACHING}; {_BEDROCK_TOOL_CHOICE}"
        + (f"; {_ANTHROPIC_ADAPTIVE}" if structured == "auto_tool" else ""),
    )


BEDROCK_FAMILIES: tuple[ModelFamily, ...] = (
    *(
        _bedrock_claude(family, patterns, min_tokens, structured)
        for family, patterns, min_tokens, structured in _claude_families(bedrock=True)
    ),
    ModelFamily(
        provider="bedrock",
        family="Amazon Nova Micro / Lite / Pro / Premier",
        pattern=r"amazon\.nova-(?:micro|lite|pro|premier)-v1(?::\d+)?(?::\d+k)?",
        accepts_temperature=True,
        output_limit_field="maxTokens",
        prompt_cache=PromptCache(mechanism="cache_point", min_tokens=1000),
        structured_output="forced_tool",
        source=f"{_BEDROCK_CACHING}; {_BEDROCK_TOOL_CHOICE}",
    ),
    # A Claude model newer than this table: every Claude model on Bedrock takes tools, but its
    # caching and thinking defaults are not known here.
    ModelFamily(
        provider="bedrock",
        family="other Claude (not in this table)",
        pattern=r"anthropic\.claude-[a-z0-9.:-]+",
        accepts_temperature=False,
        output_limit_field="maxTokens",
        prompt_cache=_NO_CACHE,
        structured_output="auto_tool",
        source=f"safe default (docs/llm-models.md); {_ANTHROPIC_ADAPTIVE}",
    ),
)
# An unknown Converse model: no cachePoint (refused by models without caching), no toolConfig
# (refused by models without tool use; the instructions carry the schema and the parser reads
# the text), no temperature (refused by some reasoning models; the model's default applies).
BEDROCK_UNKNOWN = ModelFamily(
    provider="bedrock",
    family="unknown",
    pattern="",
    accepts_temperature=False,
    output_limit_field="maxTokens",
    prompt_cache=_NO_CACHE,
    structured_output="prompt_only",
    source="safe default (docs/llm-models.md); https://docs.aws.amazon.com/bedrock/latest/userguide/"
    "conversation-inference-supported-models-features.html (features differ per model)",
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
