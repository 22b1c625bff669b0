"""The review job: the unit of work from trigger to email, and its audit trail."""

from __future__ import annotations

import hashlib
import uuid
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from p4review.models.policy import PolicyDiagnostic


class JobStatus(StrEnum):
    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    SUCCEEDED = "succeeded"
    RETRYABLE_FAILED = "retryable_failed"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"


TERMINAL_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED})
# Still moving: a worker may claim it, the sweeper watches it, a client keeps polling it. The
# one definition (in status order, for DynamoDB expressions); every other status is an end state.
ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.IN_PROGRESS, JobStatus.RETRYABLE_FAILED)


class ChangeKind(StrEnum):
    SUBMITTED = "submitted"
    SHELVED = "shelved"


class StageName(StrEnum):
    FETCH = "fetch"
    REVIEW = "review"
    NOTIFY = "notify"


STAGE_ORDER: tuple[StageName, ...] = (StageName.FETCH, StageName.REVIEW, StageName.NOTIFY)


def next_stage(stage: StageName) -> StageName | None:
    index = STAGE_ORDER.index(stage)
    return STAGE_ORDER[index + 1] if index + 1 < len(STAGE_ORDER) else None


class StageStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class StageState(BaseModel):
    """Per-stage lease and budget. `attempts` counts claims that started work."""

    model_config = ConfigDict(extra="forbid")

    status: StageStatus = StageStatus.PENDING
    attempts: int = 0
    claimed_by: str | None = None
    lease_expires_at: str | None = None
    # Last successful heartbeat (lease renewal) by `claimed_by`; a heartbeat is not a state change,
    # so it does not touch the job's `updated_at` and writes no audit event.
    heartbeat_at: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    last_error_class: str | None = None
    last_error: str | None = None
    first_failure_at: str | None = None
    # The error_class this stage was last dead-lettered with (kept across an operator replay,
    # so a replay that fails again with the same class can be escalated).
    last_dead_letter_class: str | None = None


class AuditEvent(BaseModel):
    """One append-only entry in the job's audit trail."""

    model_config = ConfigDict(extra="forbid")

    at: str
    actor: str
    event: str
    from_status: JobStatus | None = None
    to_status: JobStatus | None = None
    stage: StageName | None = None
    detail: str | None = None


class ArtifactRefs(BaseModel):
    """Where a job's artifacts live. Keys only; queue messages never carry content."""

    model_config = ConfigDict(extra="forbid")

    change_key: str | None = None
    result_key: str | None = None


class ReviewSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    findings: int = 0
    by_severity: dict[str, int] = Field(default_factory=dict)
    files_reviewed: int = 0
    files_skipped: int = 0
    diagnostics: int = 0
    # Which reviewer answered (docs/rollout.md) and what it cost; older jobs lack them.
    provider: str | None = None
    prompt_version: str | None = None
    prompt_track: str | None = None
    chunks: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None  # of input_tokens, read from the provider's prompt cache
    suppressed: int | None = None  # findings the noise controls removed
    # A versioned rerun compared with the previous version (docs/review.md "Versioned reruns").
    previous_version: int | None = None
    findings_new: int | None = None
    findings_resolved: int | None = None
    files_reused: int | None = None
    # The model's answer: accepted | partly_rejected | rejected, with the parser's reason codes
    # (a rejected part was reviewed by the analyzers and the heuristic rules only).
    model_answer: str | None = None
    model_answer_reasons: list[str] | None = None
    findings_not_shown: int | None = None  # over the per-version cap (P4REVIEW_MAX_FINDINGS)


class ShelfRef(BaseModel):
    """A shelf version of a change: the one a submit follows (the change was shelved and reviewed
    as versions 1..N, possibly under its number before it was renumbered on submit)."""

    model_config = ConfigDict(extra="forbid")

    changelist_id: int
    review_version: int


class SwarmTestRef(BaseModel):
    """The Helix Swarm workflow test run a job answers (docs/swarm.md "Workflow test"): the review
    and version it reviews and Swarm's callback URLs. The URLs carry Swarm's per-run tokens: they
    are stored on the job for the verdict and never logged, shown by the API or put on a queue."""

    model_config = ConfigDict(extra="forbid")

    review_id: int
    version: int
    change: int  # Swarm's {change}: the committed change, or the change shelved into the review
    status: str  # Swarm's {status}: shelved | submitted (committed accepted too: models/swarm_test.py)
    pass_url: str
    fail_url: str
    update_url: str | None = None
    test: str | None = None  # Swarm's {test}: the test definition's name, when sent
    test_run_id: str | None = None  # Swarm's {testRunId}, when sent


class ReviewJob(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: str
    idempotency_key: str
    request_fingerprint: str
    changelist_id: int
    review_version: int
    kind: ChangeKind
    rerun: bool = False
    follows_shelf: ShelfRef | None = None
    status: JobStatus = JobStatus.QUEUED
    stages: dict[StageName, StageState] = Field(default_factory=lambda: {stage: StageState() for stage in STAGE_ORDER})
    artifacts: ArtifactRefs = Field(default_factory=ArtifactRefs)
    summary: ReviewSummary | None = None
    # Secrets the redaction pipeline replaced, per class (counts only), recorded by fetch.
    redactions: dict[str, int] | None = None
    recipients_required: int | None = None
    recipients_notified: int = 0
    # The Swarm comment channel (docs/swarm.md): comment rows required (the notification's
    # included) and delivered; the workflow test's verdict once sent (`pass` or `fail`).
    swarm_comments_required: int | None = None
    swarm_comments_posted: int = 0
    swarm_test_verdict: str | None = None
    # The opt-out keyword the change's description carried (fetch/opt_out.py): fetched no content,
    # reviewed nothing, emailed no one.
    opted_out: str | None = None
    # The depot's review policy (docs/policy.md): the policy files this change adds, edits or
    # deletes (reviewed, and in force only for later changes), set by fetch; and why a policy file
    # was not used or a reviewer it names was not emailed, set by fetch and completed by notify.
    policy_changes: list[str] | None = None
    policy_diagnostics: list[PolicyDiagnostic] | None = None
    # Operator replays out of dead_lettered (p4review.stores.job_replay.replay_stage).
    replays: int = 0
    # Set when a Swarm workflow test asked for this review (POST /v1/swarm/tests): where its
    # pass/fail verdict goes once the review is done.
    swarm_test: SwarmTestRef | None = None
    created_at: str
    updated_at: str
    audit: list[AuditEvent] = Field(default_factory=list)


_JOB_NAMESPACE = uuid.UUID("6f1f7c3e-1d0b-4e55-9a8e-6b1f0a2d9c41")


def job_id_for(idempotency_key: str) -> str:
    """Deterministic job id: the job item itself is the idempotency record, so a duplicate
    key collides on the job's primary key and the losing write returns the winner (ALL_OLD)."""
    return str(uuid.uuid5(_JOB_NAMESPACE, idempotency_key))


def request_fingerprint(
    changelist_id: int, review_version: int, kind: str, rerun: bool, follows_shelf: ShelfRef | None = None
) -> str:
    """Hash of the semantic request body, to tell a replay from a key reused for another request.
    `follows_shelf` counts only when set, so jobs created before it existed keep their hash."""
    canonical = f"{changelist_id}|{review_version}|{kind}|{int(rerun)}"
    if follows_shelf is not None:
        canonical += f"|follows={follows_shelf.changelist_id}@{follows_shelf.review_version}"
    return hashlib.sha256(canonical.encode()).hexdigest()
