"""The job state machine. Transitions are monotonic: anything not listed is refused."""

from __future__ import annotations

from p4review.errors import IllegalTransitionError
from p4review.models.job import JobStatus

ALLOWED_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.QUEUED: frozenset({JobStatus.IN_PROGRESS, JobStatus.FAILED, JobStatus.DEAD_LETTERED}),
    JobStatus.IN_PROGRESS: frozenset(
        {JobStatus.SUCCEEDED, JobStatus.RETRYABLE_FAILED, JobStatus.FAILED, JobStatus.DEAD_LETTERED}
    ),
    JobStatus.RETRYABLE_FAILED: frozenset({JobStatus.IN_PROGRESS, JobStatus.FAILED, JobStatus.DEAD_LETTERED}),
    # Leaving dead_lettered is an operator replay (audited with its ticket); never automatic.
    JobStatus.DEAD_LETTERED: frozenset({JobStatus.IN_PROGRESS}),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.FAILED: frozenset(),
}


def can_transition(current: JobStatus, target: JobStatus) -> bool:
    return target in ALLOWED_TRANSITIONS[current]


def check_transition(current: JobStatus, target: JobStatus) -> None:
    if not can_transition(current, target):
        raise IllegalTransitionError(f"illegal job transition {current.value} -> {target.value}")


def predecessors(target: JobStatus) -> frozenset[JobStatus]:
    """The statuses a conditional write may move from, to reach `target`."""
    return frozenset(status for status, targets in ALLOWED_TRANSITIONS.items() if target in targets)
