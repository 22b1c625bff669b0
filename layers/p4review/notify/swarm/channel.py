"""The Swarm comment channel of notify: each finding as a comment on the change's Swarm review,
and one summary comment per version, exactly once per (changelist_id, review_version,
fingerprint); then one Swarm notification for all of them.

Each comment is an outbox row of its own, keyed `swarm:<fingerprint>` where an email's row is
keyed by its address, so a comment has everything an email has: the send-then-mark order, the
send lock, the attempt count, `failed` rows for an operator and the `deliveries` commands. It goes
through the loop an email goes through (notify/delivery_loop.py), with `CommentDelivery` as the
plug-in.

Swarm takes no idempotency key, so every comment carries a marker derived from its key
(`p4review.notify.swarm.comments.comment_marker`, the body's last line). After an attempt that
may have reached Swarm (the row counts an attempt and has no comment id), the marker is looked
up among the review's comments before anything is posted again: found, the row is marked with
that comment's id and nothing is posted; not found, the earlier attempt never arrived and the
comment is posted once. A row marked sent without a comment id (a bug, a manual edit) is
checked the same way before the channel counts it.

The notification is a row too (`swarm:notify`), sent only when every comment row is delivered.
Swarm cannot say whether a notification went out, so a crash between sending it and marking the
row sends it once more: one extra Swarm email, never a repeated comment."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NoReturn, Protocol, TypeVar

from p4review.errors import (
    AuthError,
    DeliveryInFlight,
    ErrorClass,
    NonRetryableError,
    P4ReviewError,
    RetryableError,
    ValidationError,
)
from p4review.metric_names import MetricName
from p4review.models.job import ReviewJob
from p4review.models.outbox import DeliveryStatus, LookupOutcome, LookupResult, OutboxRow, SendOutcome, SendResult
from p4review.models.swarm import PlannedSwarmComment, SwarmCommentContext
from p4review.notify.delivery_loop import ChannelProfile, begin, finish
from p4review.notify.outbox_rows import conflict, start_delivery, take_send_lock
from p4review.observability import logger
from p4review.pipeline.heartbeat import Lease
from p4review.ports import OutboxRepository

SWARM_ROW_PREFIX = "swarm:"
# The row of the one Swarm notification per version (comment keys are fingerprints or "summary").
NOTIFY_KEY = "notify"
# The row of a Swarm workflow test's verdict (notify/stage.py).
VERDICT_KEY = "verdict"


# Tries of one Swarm call within a notify attempt: a transient 5xx or timeout costs a call, not
# one of the stage's five attempts. Safe: reads and notify are idempotent, a create is tried again
# only after the review was not found, and a post only after its marker was not found.
CALL_TRIES = 3
T = TypeVar("T")


def _retried(call: Callable[[], T]) -> T:
    for attempt in range(CALL_TRIES):
        try:
            return call()
        except RetryableError:
            if attempt == CALL_TRIES - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def swarm_row_key(comment_key: str) -> str:
    """The outbox row's recipient for one comment (or the summary, or the notification)."""
    return f"{SWARM_ROW_PREFIX}{comment_key}"


def is_swarm_row(recipient: str) -> bool:
    return recipient.startswith(SWARM_ROW_PREFIX)


class SwarmPort(Protocol):
    """What the channel needs of Swarm (p4review.notify.swarm.client.SwarmClient)."""

    def find_review(self, change: int) -> int | None: ...

    def create_review(self, change: int) -> int: ...

    def post_comment(
        self, review_id: int, body: str, context: SwarmCommentContext | None = None, task_open: bool = False
    ) -> int: ...

    def send_notifications(self, review_id: int) -> None: ...

    def find_comment_by_marker(self, review_id: int, marker: str) -> int | None: ...


@dataclass
class ChannelOutcome:
    """What one pass of the channel left: rows required and delivered, and the failures met."""

    required: int = 0
    delivered: int = 0
    deferred: list[RetryableError] = field(default_factory=list)
    refused: list[NonRetryableError] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.delivered == self.required and not self.deferred and not self.refused


# What the delivery loop logs and counts for a comment row (an email's: notify/stage.py).
COMMENT_PROFILE = ChannelProfile(
    sent_metric=MetricName.SWARM_COMMENT_POSTED,
    failed_row="Swarm comment failed permanently; needs an operator",
    evidence_recorded="Swarm row marked sent without evidence; the comment exists: evidence recorded",
    reopened="Swarm row marked sent without evidence and no such comment: reopened to post once",
    earlier_found="earlier Swarm comment found by its marker; not posting again",
    evidence_means_attempt=False,
)


class CommentDelivery:
    """One comment's plug-in to the delivery loop: posted with its marker, looked up by it. Swarm
    answers a failure by raising (AuthError, RetryableError, NonRetryableError), which the channel
    records on the row (`SwarmChannel._record_failure`)."""

    profile = COMMENT_PROFILE
    provider = "swarm"

    def __init__(self, client: SwarmPort, review_id: int, comment: PlannedSwarmComment, lease: Lease):
        self._client = client
        self._review_id = review_id
        self._comment = comment
        self._lease = lease

    def prepare(self, row: OutboxRow) -> None:
        return None  # the comment is planned already

    def send(self, row: OutboxRow, payload: None, commit_by: datetime) -> SendResult:
        return SendResult(outcome=SendOutcome.SENT, notification_id=str(self._post()))

    def send_again(self, result: SendResult) -> bool:
        return False

    def identity(self, row: OutboxRow) -> str:
        return self._comment.marker

    def lookup(self, identity: str) -> LookupResult:
        found = _retried(lambda: self._client.find_comment_by_marker(self._review_id, identity))
        if found is None:
            return LookupResult(outcome=LookupOutcome.NOT_FOUND)
        return LookupResult(outcome=LookupOutcome.FOUND, notification_id=str(found))

    def in_flight(self, row: OutboxRow, busy: DeliveryInFlight) -> NoReturn:
        conflict("this Swarm comment")(row, busy)

    def _post(self) -> int:
        """Post the comment; after a failure whose outcome is unknown (the post may have arrived),
        look its marker up before posting it again."""
        review_id, comment = self._review_id, self._comment
        for attempt in range(CALL_TRIES):
            if attempt:
                found = _retried(lambda: self._client.find_comment_by_marker(review_id, comment.marker))
                if found is not None:
                    return found
                self._lease.check()
            try:
                return self._client.post_comment(review_id, comment.body, comment.context, comment.task_open)
            except RetryableError:
                if attempt == CALL_TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


class SwarmChannel:
    def __init__(
        self,
        client: SwarmPort,
        outbox: OutboxRepository,
        *,
        create_reviews: bool,
        lock_holder: Callable[[ReviewJob], tuple[str, int]],
    ):
        self._client = client
        self._outbox = outbox
        self._create_reviews = create_reviews
        self._lock_holder = lock_holder

    def deliver(self, job: ReviewJob, comments: Sequence[PlannedSwarmComment], lease: Lease) -> ChannelOutcome:
        """Post what is not posted yet. Our credentials refused: AuthError (every comment would
        meet the same). Anything else is per row, in the outcome, so one comment's failure does
        not keep the others (or the email channel) from going out."""
        outcome = ChannelOutcome()
        review_id = self._review_id(job)
        if review_id is None:
            logger.info("no Swarm review for this change; nothing to comment on", extra={"job_id": job.job_id})
            return outcome
        for comment in comments:
            outcome.required += 1
            self._deliver_one(job, review_id, comment, lease, outcome)
        if outcome.delivered == outcome.required and not (outcome.deferred or outcome.refused):
            outcome.required += 1
            self._notify_once(job, review_id, lease, outcome)
        return outcome

    def _review_id(self, job: ReviewJob) -> int | None:
        """The review to comment on: the one a Swarm workflow test named (Swarm said which review
        asked), else the review that names the change (found, or created when configured to)."""
        if job.swarm_test is not None:
            return job.swarm_test.review_id

        def find_or_create() -> int | None:
            # After a create whose answer was lost, the next try finds the review it made.
            found = self._client.find_review(job.changelist_id)
            if found is None and self._create_reviews:
                try:
                    return self._client.create_review(job.changelist_id)
                except ValidationError:
                    # Another worker (another version of the change) created it first: Swarm
                    # refuses a second review of a change (400 "A Review for change N already
                    # exists.", ReviewsController::create). The winner's review is the one.
                    if (winner := self._client.find_review(job.changelist_id)) is None:
                        raise
                    return winner
            return found

        return _retried(find_or_create)

    def _unless_busy(self, start: Callable[[], T], outcome: ChannelOutcome) -> T | None:
        """A row's start write (notify/outbox_rows.py); None when another worker holds its send
        lock (deferred, and nothing written: that worker's post is under way). A lost lease or a
        storage failure ends the channel, as before any post."""
        try:
            return start()
        except RetryableError as busy:
            if busy.error_class is not ErrorClass.CONFLICT:
                raise
            outcome.deferred.append(busy)
            return None

    def _deliver_one(
        self,
        job: ReviewJob,
        review_id: int,
        comment: PlannedSwarmComment,
        lease: Lease,
        outcome: ChannelOutcome,
    ) -> None:
        delivery = CommentDelivery(self._client, review_id, comment, lease)
        begun = self._unless_busy(
            lambda: begin(self._outbox, job, swarm_row_key(comment.key), lease, delivery), outcome
        )
        if begun is None:
            return
        try:
            row = finish(self._outbox, job, begun, lease, delivery)
        except AuthError:
            raise
        except P4ReviewError as exc:
            self._record_failure(begun.start.row, exc, outcome)
            return
        outcome.delivered += row.notified_at is not None
        outcome.required -= row.status == DeliveryStatus.SKIPPED

    def _record_failure(self, row: OutboxRow, exc: P4ReviewError, outcome: ChannelOutcome) -> None:
        """A retryable failure is noted on the row (it stays pending); another marks it failed.
        A CONFLICT (another worker holds the row's send lock) writes nothing: noting the error
        would release that worker's lock while its post is under way."""
        if isinstance(exc, RetryableError):
            if exc.error_class is not ErrorClass.CONFLICT:
                self._outbox.note_error(row, exc.message)
            outcome.deferred.append(exc)
            return
        if row.status != DeliveryStatus.FAILED:
            self._outbox.mark_failed(row, exc.message)
        outcome.refused.append(exc if isinstance(exc, NonRetryableError) else NonRetryableError(exc.message))

    def _notify_once(self, job: ReviewJob, review_id: int, lease: Lease, outcome: ChannelOutcome) -> None:
        """Send, then mark, but not through the delivery loop: Swarm cannot say whether a notify
        went out, so there is nothing to look up (a crash before the mark sends it once more)."""
        start = self._unless_busy(
            lambda: start_delivery(self._outbox, job, swarm_row_key(NOTIFY_KEY), lease, "the Swarm notification"),
            outcome,
        )
        if start is None:
            return
        row = start.row
        if row.notified_at:
            outcome.delivered += 1
            return
        try:
            if not start.attempted:
                row = take_send_lock(self._outbox, job, row, lease, "the Swarm notification")
            # A notify repeated after a lost answer sends nothing: no comment is left delayed.
            _retried(lambda: self._client.send_notifications(review_id))
            self._outbox.mark_sent(row, f"review-{review_id}")
            outcome.delivered += 1
        except AuthError:
            raise
        except P4ReviewError as exc:
            self._record_failure(row, exc, outcome)


def swarm_rows(rows: Iterable[OutboxRow]) -> list[OutboxRow]:
    return [row for row in rows if is_swarm_row(row.recipient)]
