"""The ReviewResult output contract (spec "Output contract")."""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from p4review.models.finding_labels import Category, Confidence, Severity

# The schema version the parser expects at least: an answer in 1.0 or any newer 1.x is accepted
# (spec "Compatibility expectations"); each prompt names the version it asks for (registry.json).
SCHEMA_VERSION = "1.0"
# 1.1 adds the optional `suggested_code` to findings: additive, so 1.0 answers stay valid.
SCHEMA_VERSION_SUGGESTED_CODE = "1.1"
MAX_SUGGESTED_CODE_CHARS = 4000

REVIEW_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "prompt_version", "findings"],
    "properties": {
        "schema_version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"},
        "prompt_version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+(\\.[0-9]+)?$"},
        "summary": {"type": "string"},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "severity", "category", "title", "file", "line", "message"],
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "severity": {"type": "string", "enum": ["critical", "high", "medium", "low", "info"]},
                    "category": {
                        "type": "string",
                        "enum": [
                            "correctness",
                            "security",
                            "performance",
                            "reliability",
                            "maintainability",
                            "style",
                            "test",
                        ],
                    },
                    "title": {"type": "string", "minLength": 1},
                    "file": {"type": "string", "minLength": 1},
                    "line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                    "message": {"type": "string", "minLength": 1},
                    "suggestion": {"type": "string"},
                    "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
                    "rule_id": {"type": "string"},
                },
            },
        },
        "meta": {"type": "object", "additionalProperties": True},
    },
}


def _schema_1_1() -> dict[str, Any]:
    schema = copy.deepcopy(REVIEW_RESULT_SCHEMA)
    schema["properties"]["findings"]["items"]["properties"]["suggested_code"] = {
        "type": "string",
        "maxLength": MAX_SUGGESTED_CODE_CHARS,
    }
    return schema


REVIEW_RESULT_SCHEMA_1_1: dict[str, Any] = _schema_1_1()


def finding_fields_in(schema_version: str) -> frozenset[str]:
    """The finding fields a `schema_version` answer may carry (1.1 and later 1.x: suggested_code)."""
    return frozenset(result_schema_for(schema_version)["properties"]["findings"]["items"]["properties"])


def result_schema_for(schema_version: str) -> dict[str, Any]:
    """The JSON schema of `schema_version` (1.0 for 1.0 and anything unparseable)."""
    major, _, minor = schema_version.partition(".")
    if major == "1" and minor.isdigit() and int(minor) >= 1:
        return REVIEW_RESULT_SCHEMA_1_1
    return REVIEW_RESULT_SCHEMA


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    severity: Severity
    category: Category
    title: str = Field(min_length=1)
    file: str = Field(min_length=1)
    line: int = Field(ge=1)
    end_line: int | None = Field(default=None, ge=1)
    message: str = Field(min_length=1)
    suggestion: str | None = None
    confidence: Confidence | None = None
    rule_id: str | None = None
    # Schema 1.1: the replacement for the flagged lines, as code (shown as a code block).
    suggested_code: str | None = Field(default=None, max_length=MAX_SUGGESTED_CODE_CHARS)


class ReviewResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: str
    prompt_version: str
    summary: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    meta: dict[str, Any] | None = None


class Diagnostic(BaseModel):
    """A machine-readable parser diagnostic: coercion_applied | finding_dropped |
    response_rejected | warning."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    reason: str | None = None
    finding_id: str | None = None
    field: str | None = None
    old_value: str | None = None
    new_value: str | None = None
    file: str | None = None
    line: int | None = None
    detail: str | None = None


class ParseOutcome(BaseModel):
    """What the parser returns: a result (possibly with zero findings) or a rejection."""

    model_config = ConfigDict(extra="forbid")

    result: ReviewResult | None = None
    rejected: bool = False
    diagnostics: list[Diagnostic] = Field(default_factory=list)


class SkippedFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    reason: str  # a SkipReason value, or too_large / budget_exhausted / answer_rejected


class Coverage(BaseModel):
    """Which of the change's files the review covered, and why the others were not."""

    model_config = ConfigDict(extra="forbid")

    files_reviewed: list[str] = Field(default_factory=list)
    files_skipped: list[SkippedFile] = Field(default_factory=list)


class ReviewUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    chunks: int = 0
    chunks_resumed: int = 0  # chunk results reused from an earlier attempt (no provider call)
    estimated: bool = False  # the offline reviewer reports estimated tokens
    # Of input_tokens: read from the provider's prompt cache, and written to it (docs/review.md).
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class FileAnswer(BaseModel):
    """The reviewer's findings for one file, kept so the next shelf version can reuse them when
    the file's reviewed diff section is byte-identical and the same reviewer would answer."""

    model_config = ConfigDict(extra="forbid")

    file: str
    section_sha256: str  # the numbered diff section the reviewer saw
    answered_by: str  # the reviewer fingerprint: provider, model, prompt version, line policy
    findings: list[Finding] = Field(default_factory=list)


class ResolvedFinding(BaseModel):
    """A finding of the previous version that this version no longer has (where it was then)."""

    model_config = ConfigDict(extra="forbid")

    severity: Severity
    category: Category
    title: str
    file: str
    line: int
    rule_id: str | None = None


class VersionHistory(BaseModel):
    """What changed since the previous review version of the same changelist (docs/review.md)."""

    model_config = ConfigDict(extra="forbid")

    previous_version: int
    previous_job_id: str
    new: list[str] = Field(default_factory=list)  # ids of this version's findings
    still_open: list[str] = Field(default_factory=list)  # ids of this version's findings
    resolved: list[ResolvedFinding] = Field(default_factory=list)
    # Previous findings on files this version did not review (skipped): neither open nor resolved.
    not_rechecked: int = 0
    # Files whose diff did not change since the previous version: its answers were reused.
    files_reused: list[str] = Field(default_factory=list)


class ModelAnswerStatus(StrEnum):
    ACCEPTED = "accepted"  # every part's answer passed the parser (or nothing was asked)
    PARTLY_REJECTED = "partly_rejected"  # some parts' answers were rejected
    REJECTED = "rejected"  # every part's answer was rejected


class ModelAnswer(BaseModel):
    """Whether the model's answer was used. A rejected part's files were still reviewed by the
    analyzers and the heuristic rules (docs/review.md "A rejected answer"). Reason codes only,
    never the answer's text."""

    model_config = ConfigDict(extra="forbid")

    status: ModelAnswerStatus
    parts: int = 0  # chunks asked
    parts_rejected: int = 0
    reasons: list[str] = Field(default_factory=list)  # the parser's response_rejected reasons
    fallback: str | None = None  # who reviewed the rejected parts instead: "heuristic"


class FindingsCut(BaseModel):
    """What the caps on one review version left out (docs/review.md "Caps")."""

    model_config = ConfigDict(extra="forbid")

    limit: int  # findings kept at most per review version
    findings_not_shown: int = 0
    by_severity: dict[str, int] = Field(default_factory=dict)  # of those not shown
    fields_truncated: int = 0  # titles, messages... cut at their length cap (marked in the text)


class StoredReview(BaseModel):
    """The review stage's result document in the redacted bucket (`results/...`)."""

    model_config = ConfigDict(extra="forbid")

    result: ReviewResult
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    coverage: Coverage | None = None  # None in documents written before coverage existed
    usage: ReviewUsage | None = None
    prompt_version: str | None = None
    prompt_track: str | None = None
    suppressed: dict[str, int] = Field(default_factory=dict)
    # Finding id -> its fingerprint (file, rule or normalized title, flagged line's content).
    fingerprints: dict[str, str] = Field(default_factory=dict)
    file_answers: list[FileAnswer] = Field(default_factory=list)
    # Each analyzer's whole-file reports per file, under the key of what they depend on, for the
    # next version (p4review.review.analyzers.answers). Read one by one there: a corrupt answer is
    # one file analyzed again, never the previous review lost.
    analyzer_answers: list[Any] = Field(default_factory=list)
    history: VersionHistory | None = None  # review_version > 1 with the previous result found
    model_answer: ModelAnswer | None = None  # None in documents written before it existed
    cut: FindingsCut | None = None  # None: nothing was cut

    @property
    def model_answer_rejected(self) -> bool:
        """The model's answer (for some part of the change) was not used: not an all-clear."""
        return self.model_answer is not None and self.model_answer.status is not ModelAnswerStatus.ACCEPTED
