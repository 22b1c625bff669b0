import pytest

from p4review.errors import IllegalTransitionError
from p4review.models.job import JobStatus
from p4review.stores.transitions import ALLOWED_TRANSITIONS, can_transition, check_transition, predecessors


@pytest.mark.spec("G-1")
def test_terminal_statuses_have_no_way_out():
    for terminal in (JobStatus.SUCCEEDED, JobStatus.FAILED):
        for target in JobStatus:
            assert not can_transition(terminal, target)


@pytest.mark.spec("G-1")
@pytest.mark.parametrize(
    ("current", "target"),
    [
        (JobStatus.SUCCEEDED, JobStatus.QUEUED),
        (JobStatus.IN_PROGRESS, JobStatus.QUEUED),
        (JobStatus.QUEUED, JobStatus.SUCCEEDED),
        (JobStatus.FAILED, JobStatus.IN_PROGRESS),
        (JobStatus.DEAD_LETTERED, JobStatus.SUCCEEDED),
    ],
)
def test_backward_or_skipping_transitions_are_refused(current, target):
    with pytest.raises(IllegalTransitionError):
        check_transition(current, target)


def test_happy_path_is_allowed():
    path = [
        JobStatus.QUEUED,
        JobStatus.IN_PROGRESS,
        JobStatus.RETRYABLE_FAILED,
        JobStatus.IN_PROGRESS,
        JobStatus.SUCCEEDED,
    ]
    for current, target in zip(path, path[1:], strict=False):
        check_transition(current, target)


def test_predecessors_match_the_table():
    for target in JobStatus:
        for source in predecessors(target):
            assert target in ALLOWED_TRANSITIONS[source]
    assert predecessors(JobStatus.QUEUED) == frozenset()


def test_active_and_end_states_partition_the_statuses():
    """ACTIVE_STATUSES is the one definition the claim, the sweeper, the CLI's wait and the demo
    use: every other status is an end state, and no active status is terminal."""
    from p4review.models.job import ACTIVE_STATUSES, TERMINAL_STATUSES

    active = set(ACTIVE_STATUSES)
    assert active.isdisjoint(TERMINAL_STATUSES) and JobStatus.DEAD_LETTERED not in active
    assert active | set(TERMINAL_STATUSES) | {JobStatus.DEAD_LETTERED} == set(JobStatus)
    assert "queued" in active  # statuses are str: JSON bodies compare directly
