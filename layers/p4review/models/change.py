"""A changelist as fetched from Perforce: metadata plus per-file unified diffs."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from p4review.models.job import ChangeKind
from p4review.models.policy import ChangePolicy


class FileAction(StrEnum):
    ADD = "add"
    EDIT = "edit"
    DELETE = "delete"
    BRANCH = "branch"
    INTEGRATE = "integrate"
    MOVE_ADD = "move/add"
    MOVE_DELETE = "move/delete"
    PURGE = "purge"
    ARCHIVE = "archive"
    IMPORT = "import"


class DiffStatus(StrEnum):
    FETCHED = "fetched"
    SKIPPED = "skipped"


class SkipReason(StrEnum):
    """Why a file of the change has no diff: FileDiff.skip_reason, shown in the review's coverage."""

    OUTSIDE_ALLOW_LIST = "outside_allow_list"  # the depot allow-list refused the path: never fetched
    DELETED = "deleted"
    ARCHIVED = "archived"
    BINARY = "binary"
    TOO_LARGE = "too_large"
    IDENTICAL = "identical"  # no textual difference (e.g. an integrate that accepted "yours")
    NOT_FOUND = "not_found"  # obliterated or re-shelved between describe and fetch
    UNSUPPORTED_ACTION = "unsupported_action"
    IGNORED_BY_POLICY = "ignored_by_policy"  # an `ignore` glob of the depot's .p4review.toml: never fetched
    GENERATED = "generated"  # its header says a generator wrote it (change/generated.py): not reviewed


class ChangedFile(BaseModel):
    """One file of a changelist as `p4 describe -s` lists it."""

    model_config = ConfigDict(extra="forbid")

    depot_path: str
    action: str
    file_type: str
    revision: int


class FileDiff(BaseModel):
    """The unified diff of one file (new side = this change), or why there is none."""

    model_config = ConfigDict(extra="forbid")

    depot_path: str
    action: str
    status: DiffStatus
    unified_diff: str = ""
    skip_reason: str | None = None  # a SkipReason value (plain str: artifacts outlive the enum)
    # The whole new-side text, kept only for a file an enabled analyzer reads (review/analyzers/analysis.py);
    # redacted like the diff.
    new_content: str | None = None


class ChangeDescription(BaseModel):
    """`p4 -G describe -s [-S] N` parsed: metadata only, no content."""

    model_config = ConfigDict(extra="forbid")

    changelist_id: int
    kind: ChangeKind
    owner: str
    client: str
    status: str
    description: str
    time: int | None = None
    files: list[ChangedFile] = Field(default_factory=list)


class ChangeSnapshot(BaseModel):
    """What the fetch stage stores as the change artifact and the review stage reads."""

    model_config = ConfigDict(extra="forbid")

    description: ChangeDescription
    diffs: list[FileDiff] = Field(default_factory=list)
    # The depot's .p4review.toml files in force for this change (None: written before policies).
    policy: ChangePolicy | None = None

    @property
    def changed_files(self) -> list[str]:
        return [changed.depot_path for changed in self.description.files]


class P4User(BaseModel):
    """`p4 -G user -o USER` parsed."""

    model_config = ConfigDict(extra="forbid")

    user: str
    email: str | None = None
    full_name: str | None = None
