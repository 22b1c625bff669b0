"""Helix Swarm comments: where a comment is anchored and what the notify stage will post
(docs/swarm.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SwarmCommentContext(BaseModel):
    """A comment's anchor on a review: `context[file]`, `context[leftLine]` (the line's number on
    the left side when the diff shows it there, a context line; None for an added line),
    `context[rightLine]`, `context[content]` (the diff's lines up to and including the flagged
    one, at most five, each with its `+`/`-`/space prefix, as Swarm stores them: Swarm 2022.1
    `module/Api/src/Controller/CommentsController.php` fetchDiffSnippet, `library/P4/File/Diff.php`)
    and `context[version]` (Swarm's own review version, not p4review's; None: the latest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(min_length=1)
    left_line: int | None = Field(default=None, ge=1)
    right_line: int | None = Field(default=None, ge=1)
    content: tuple[str, ...] = ()
    version: int | None = Field(default=None, ge=1)


class PlannedSwarmComment(BaseModel):
    """One comment to post exactly once: `key` is the finding's fingerprint (`#2`, `#3`... for a
    repeated one) or `summary`; `marker` is derived from (changelist, review_version, key) and is
    the body's last line, so an earlier attempt's comment can be found."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=1)
    marker: str = Field(min_length=1)
    body: str = Field(min_length=1)
    context: SwarmCommentContext | None = None
    task_open: bool = False
    finding_id: str | None = None  # None for the summary
