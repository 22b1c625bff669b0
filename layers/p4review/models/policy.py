"""The review policy a depot keeps beside its code: `.p4review.toml` (docs/policy.md).

Version 1 of the file's schema. A policy file governs its directory and everything below it,
unless a deeper policy file governs a subtree (the nearest one wins, whole: files are not
merged)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from p4review.models.finding_labels import Confidence, Severity

POLICY_FILE_NAME = ".p4review.toml"
POLICY_SCHEMA_VERSION = 1
MAX_INSTRUCTIONS_CHARS = 2000
MAX_REVIEWERS = 20
MAX_IGNORE_GLOBS = 200
MAX_GLOB_CHARS = 256


class PathPolicy(BaseModel):
    """Settings for a subdirectory of the policy file's directory (`path`, e.g. "tests/")."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=500, pattern=r"^[^/].*/$")
    min_severity: Severity | None = None
    max_findings: int | None = Field(default=None, ge=0, le=1000)
    reviewers: list[str] = Field(default_factory=list, max_length=MAX_REVIEWERS)
    instructions: str | None = Field(default=None, max_length=MAX_INSTRUCTIONS_CHARS)


class PolicyFile(BaseModel):
    """What a `.p4review.toml` holds; anything else in it makes it invalid (never half-read)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    # Globs, relative to the file's directory; bounded, as each is matched against every changed file.
    ignore: list[Annotated[str, Field(max_length=MAX_GLOB_CHARS)]] = Field(
        default_factory=list, max_length=MAX_IGNORE_GLOBS
    )
    min_severity: Severity | None = None
    max_findings: int | None = Field(default=None, ge=0, le=1000)
    reviewers: list[str] = Field(default_factory=list, max_length=MAX_REVIEWERS)
    instructions: str | None = Field(default=None, max_length=MAX_INSTRUCTIONS_CHARS)
    paths: list[PathPolicy] = Field(default_factory=list, max_length=100)


class DepotPolicy(BaseModel):
    """A policy file found for a change: where it is, which revision was read, what it says."""

    model_config = ConfigDict(extra="forbid")

    source: str  # //depot/project/.p4review.toml
    revision: str  # "@48219" (submitted change 48220: in force before it) or "#head" (shelved)
    directory: str  # //depot/project/ (what it governs)
    policy: PolicyFile


# A PolicyDiagnostic's reason when the file was used but a reviewer it names was not emailed.
REVIEWER_NOT_ALLOWED = "reviewer_not_allowed"


class PolicyDiagnostic(BaseModel):
    """Why a policy file was not used; the review went on with the service's defaults."""

    model_config = ConfigDict(extra="forbid")

    source: str
    # invalid_toml | invalid_policy | unsupported_version | unreadable: the file was not used;
    # reviewer_not_allowed: it was, but a reviewer outside the allowed domains was not emailed.
    reason: str
    detail: str  # where and what (line and column, field names, a domain), never the file's content


class ChangePolicy(BaseModel):
    """The policies in force for one change, as fetch stored them with the snapshot."""

    model_config = ConfigDict(extra="forbid")

    policies: list[DepotPolicy] = Field(default_factory=list)
    diagnostics: list[PolicyDiagnostic] = Field(default_factory=list)
    # Policy files this change adds, edits or deletes: reviewed like any file, never ignored, and
    # called out; they govern later changes, never this one.
    modified: list[str] = Field(default_factory=list)


# The path rules a depot policy and the deployment settings both give: noise controls (applied
# by review/noise.py) and reviewers (planned by notify/recipients.py).
class NoiseRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prefix: str = Field(min_length=1)
    max_findings: int | None = Field(default=None, ge=0)
    min_severity: Severity | None = None
    min_confidence: Confidence | None = None

    @property
    def base(self) -> str:
        return self.prefix[:-3] if self.prefix.endswith("...") else self.prefix

    def matches(self, depot_path: str) -> bool:
        return depot_path.startswith(self.base)


class ReviewerRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prefix: str = Field(min_length=3)
    # Plain strings: an invalid address here becomes a failed delivery row, not a refused start.
    reviewers: tuple[str, ...] = Field(min_length=1)
    # The depot policy file that names these reviewers (its addresses must be in an allowed
    # domain); None: the service's own P4REVIEW_REVIEWERS.
    source: str | None = None

    @field_validator("prefix")
    @classmethod
    def _directory_prefix(cls, value: str) -> str:
        if not value.startswith("//") or not (value.endswith("...") or value.endswith("/")):
            raise ValueError("prefix must look like //depot/dir/... or //depot/dir/")
        return value

    @property
    def base(self) -> str:
        return self.prefix[:-3] if self.prefix.endswith("...") else self.prefix
