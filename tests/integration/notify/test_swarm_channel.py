"""The Swarm comment channel against the real outbox (serialized moto server) and a scripted
Swarm: each comment exactly once across retries, a lost answer found by its marker instead of
posted again, one notification at the end, failures kept per comment."""

from __future__ import annotations

from datetime import timedelta

import pytest

from p4review.clock import utc_now
from p4review.errors import AuthError, ErrorClass, NonRetryableError, RetryableError, ValidationError
from p4review.models.outbox import DeliveryStatus
from p4review.models.swarm import PlannedSwarmComment, SwarmCommentContext
from p4review.notify.swarm.channel import NOTIFY_KEY, SwarmChannel, swarm_row_key
from p4review.notify.swarm.comments import comment_marker
from p4review.pipeline.heartbeat import Lease
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import new_job, provisioned_service


class LostAnswer(RetryableError):
    """Swarm stored the comment, but its answer never reached us (a timeout after the write)."""


class ScriptedSwarm:
    """Swarm's comments in memory; `faults` maps the n-th post (1-based) to what goes wrong."""

    def __init__(self, faults: dict[int, str] | None = None, review: int | None = 7):
        self.review = review
        self.comments: dict[int, str] = {}
        self.notifications = 0
        self.posts = 0
        self.faults = faults or {}

    def find_review(self, change: int) -> int | None:
        return self.review

    def create_review(self, change: int) -> int:
        self.review = 8
        return 8

    def post_comment(
        self, review_id: int, body: str, context: SwarmCommentContext | None = None, task_open: bool = False
    ) -> int:
        self.posts += 1
        fault = self.faults.get(self.posts)
        if fault == "unavailable":
            raise RetryableError("swarm 503")
        if fault == "refused":
            raise NonRetryableError("swarm 400: bad context", error_class=ErrorClass.POLICY_DENIED)
        if fault == "unauthorized":
            raise AuthError("swarm answered Unauthorized")
        comment_id = 100 + self.posts - 1  # Swarm's ids only grow
        self.comments[comment_id] = body
        if fault == "lost":
            raise LostAnswer("swarm timed out")
        return comment_id

    def send_notifications(self, review_id: int) -> None:
        self.notifications += 1

    def find_comment_by_marker(self, review_id: int, marker: str) -> int | None:
        return next((cid for cid, body in self.comments.items() if body.endswith(marker)), None)


def _planned(key: str, text: str, line: int | None = None, task_open: bool = False) -> PlannedSwarmComment:
    marker = comment_marker(48284, 2, key)
    anchor = SwarmCommentContext(file="//depot/a.py", right_line=line) if line else None
    return PlannedSwarmComment(key=key, marker=marker, body=f"{text}\n\n{marker}", context=anchor, task_open=task_open)


INTENTS = [
    _planned("fp-a", "High: eval of Retry-After", 3, task_open=True),
    _planned("fp-b", "Medium: bare except", 9),
    _planned("summary", "p4review: 2 findings"),
]


def _lease() -> Lease:
    return Lease(utc_now() + timedelta(minutes=5))


def _channel(swarm: ScriptedSwarm, create: bool = False) -> SwarmChannel:
    return SwarmChannel(swarm, get_data_access().outbox, create_reviews=create, lock_holder=lambda job: ("w1", 1))


@pytest.fixture
def job(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint):
        yield new_job("swarm-channel", 48284, review_version=2, kind="shelved")


def _rows(job):
    rows = get_data_access().outbox.rows_for_version(job.changelist_id, job.review_version)
    return {row.recipient: row for row in rows}


def test_each_comment_is_posted_once_then_one_notification(job):
    swarm = ScriptedSwarm()
    first = _channel(swarm).deliver(job, INTENTS, _lease())
    assert first.complete and (first.required, first.delivered) == (4, 4)
    assert len(swarm.comments) == 3 and swarm.notifications == 1
    again = _channel(swarm).deliver(job, INTENTS, _lease())  # a redelivered message
    assert again.complete and len(swarm.comments) == 3 and swarm.notifications == 1
    rows = _rows(job)
    assert {rows[swarm_row_key(i.key)].notification_id for i in INTENTS} == {"100", "101", "102"}
    assert rows[swarm_row_key(NOTIFY_KEY)].notified_at
    assert [body.rsplit("\n", 1)[-1] for body in swarm.comments.values()] == [i.marker for i in INTENTS]


@pytest.mark.spec("SW-2", "SW-10")
def test_a_lost_answer_is_found_by_its_marker_and_not_posted_again(job):
    swarm = ScriptedSwarm({2: "lost"})
    outcome = _channel(swarm).deliver(job, INTENTS, _lease())
    assert outcome.complete  # looked up within the attempt: no retry of the stage needed
    assert len(swarm.comments) == 3 and swarm.posts == 3  # the second comment was found, not re-posted
    assert _rows(job)[swarm_row_key("fp-b")].notification_id == "101"


@pytest.mark.spec("SW-10")
def test_a_transient_failure_is_tried_again_within_the_attempt(job):
    swarm = ScriptedSwarm({1: "unavailable"})
    assert _channel(swarm).deliver(job, INTENTS, _lease()).complete
    assert len(swarm.comments) == 3 and swarm.posts == 4 and swarm.notifications == 1


def test_a_comment_still_failing_after_its_tries_waits_for_the_next_attempt_and_the_others_go_out(job):
    swarm = ScriptedSwarm({1: "unavailable", 2: "unavailable", 3: "unavailable"})
    first = _channel(swarm).deliver(job, INTENTS, _lease())
    assert not first.complete and (first.delivered, len(first.deferred)) == (2, 1) and swarm.notifications == 0
    assert _channel(swarm).deliver(job, INTENTS, _lease()).complete
    assert len(swarm.comments) == 3 and swarm.notifications == 1


def test_a_refused_comment_is_a_failed_row_for_an_operator_and_the_others_are_posted(job):
    swarm = ScriptedSwarm({3: "refused"})  # refusals are not tried again
    outcome = _channel(swarm).deliver(job, INTENTS, _lease())
    assert len(outcome.refused) == 1 and outcome.delivered == 2 and swarm.notifications == 0
    assert _rows(job)[swarm_row_key("summary")].status == DeliveryStatus.FAILED
    again = _channel(swarm).deliver(job, INTENTS, _lease())  # nothing is posted for it until retried
    assert len(again.refused) == 1 and swarm.posts == 3


def test_refused_credentials_stop_the_channel(job):
    with pytest.raises(AuthError):
        _channel(ScriptedSwarm({1: "unauthorized"})).deliver(job, INTENTS, _lease())


@pytest.mark.spec("SW-2")
def test_a_row_marked_sent_without_evidence_is_checked_against_swarm(job):
    swarm = ScriptedSwarm()
    _channel(swarm).deliver(job, INTENTS, _lease())
    outbox = get_data_access().outbox
    row = _rows(job)[swarm_row_key("fp-a")]
    # A manual edit: notified_at kept, the comment id lost, and the comment deleted in Swarm.
    outbox._client.update_item(  # type: ignore[attr-defined]
        TableName=outbox._table,  # type: ignore[attr-defined]
        Key=outbox._key(row),  # type: ignore[attr-defined]
        UpdateExpression="REMOVE notification_id",
    )
    del swarm.comments[100]
    outcome = _channel(swarm).deliver(job, INTENTS, _lease())
    assert outcome.complete and swarm.posts == 4 and len(swarm.comments) == 3


def test_no_review_is_nothing_to_comment_on_unless_reviews_are_created(job):
    assert _channel(ScriptedSwarm(review=None)).deliver(job, INTENTS, _lease()).required == 0
    swarm = ScriptedSwarm(review=None)
    assert _channel(swarm, create=True).deliver(job, INTENTS, _lease()).complete and swarm.review == 8


class RacedSwarm(ScriptedSwarm):
    """Another worker creates the change's review between our find and our create."""

    def create_review(self, change: int) -> int:
        self.review = 9  # the other worker's
        raise ValidationError(f"Swarm create review: HTTP 400: A Review for change {change} already exists.")


def test_a_review_created_by_another_worker_meanwhile_is_the_one_commented_on(job):
    # Two versions of a shelved change notify at once; both find no review, both create one,
    # and Swarm refuses the second: that job comments on the winner's review, not the DLQ.
    swarm = RacedSwarm(review=None)
    assert _channel(swarm, create=True).deliver(job, INTENTS, _lease()).complete and swarm.review == 9
    assert len(swarm.comments) == 3


def test_a_refused_create_with_no_review_behind_it_is_still_refused(job):
    class Refusing(ScriptedSwarm):
        def create_review(self, change: int) -> int:
            raise ValidationError("Swarm create review: HTTP 400: bad change")

    with pytest.raises(ValidationError):
        _channel(Refusing(review=None), create=True).deliver(job, INTENTS, _lease())
