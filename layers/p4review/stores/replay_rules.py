"""Which replays of a dead-lettered job its state allows (pure), and what a replay writes: the
stages it resets and its audit detail. The jobs store enforces them in its one conditional write
(stores/job_replay.py); the pipeline's replay (pipeline/replay.py) asks them first."""

from __future__ import annotations

from p4review.models.job import STAGE_ORDER, JobStatus, ReviewJob, StageName, StageStatus

# Audit events that mark a replay whose hand-off has not been confirmed yet.
REPLAY_EVENTS = frozenset({"replayed", "replay_resumed"})
REPLAY_ENQUEUED_EVENT = "replay_enqueued"
NOTE_LIMIT = 200


def restart_stage(stage: StageName, from_start: bool) -> StageName:
    return STAGE_ORDER[0] if from_start else stage


def reset_stages(stage: StageName, from_start: bool) -> tuple[StageName, ...]:
    """The replayed stage and every later one (they cannot have started), or all of them."""
    return STAGE_ORDER[STAGE_ORDER.index(restart_stage(stage, from_start)) :]


def audit_detail(ticket: str | None, note: str | None, from_start: bool) -> str:
    detail = f"ticket={(ticket or 'none')[:128]}"
    if from_start:
        detail += " from_start"
    return f"{detail} note={(note or '')[:NOTE_LIMIT]}"


def is_stranded_replay(job: ReviewJob, stage: StageName, from_start: bool) -> bool:
    """A replay whose hand-off was never confirmed: in_progress, the last audit event is the
    replay itself, and the restart stage is still pending with an untouched budget."""
    state = job.stages[restart_stage(stage, from_start)]
    return (
        job.status == JobStatus.IN_PROGRESS
        and bool(job.audit)
        and job.audit[-1].event in REPLAY_EVENTS
        and state.status == StageStatus.PENDING
        and state.attempts == 0
    )


def replay_refusal(job: ReviewJob, stage: StageName, from_start: bool) -> str | None:
    """Why replaying `stage` of `job` is refused, or None when it is allowed."""
    if job.status != JobStatus.DEAD_LETTERED:
        if is_stranded_replay(job, stage, from_start):
            return None
        return f"job is {job.status.value}, not dead_lettered"
    if from_start:
        return None
    if job.stages[stage].status == StageStatus.COMPLETED:
        return f"stage {stage.value} already completed; use --from-start to run it again"
    index = STAGE_ORDER.index(stage)
    if index > 0 and job.stages[STAGE_ORDER[index - 1]].status != StageStatus.COMPLETED:
        previous = STAGE_ORDER[index - 1].value
        return f"stage {stage.value} cannot restart before {previous} has completed; use --from-start"
    return None
