"""Helix Swarm comments: where a comment is anchored and what the notify stage will post
(docs/swarm.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SwarmCommentContext(BaseModel):
    """A comment's anchor on a review: `context[file]`, `context[rightLine]`, `context[content]`
    (the flagged line and up to four lines above it, as Swarm expects, oldest first) and
    `context[version]` (Swarm's own review version, not p4review's; None: the latest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(min_length=1)
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
