"""notify: email the review to the changelist owner and the reviewers configured for its paths;
exactly one email per (changelist_id, recipient, review_version) via the outbox (send, then mark).
An address that cannot be used gets a failed outbox row for an operator instead of an email."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, NoReturn

from p4review.change.depot_paths import sanitize_for_log
from p4review.change.depot_policy import MAX_POLICY_NOTES_ON_JOB, job_diagnostic, reviewer_rules_from
from p4review.clock import parse_iso, utc_now
from p4review.errors import (
    AuthError,
    DeliveryInFlight,
    ErrorClass,
    NonRetryableError,
    P4ReviewError,
    RetryableError,
    StaleWriteError,
)
from p4review.metric_names import MetricName
from p4review.models.change import ChangeSnapshot
from p4review.models.job import JobStatus, ReviewJob, StageName
from p4review.models.outbox import DeliveryStatus, LookupResult, OutboxRow, SendResult
from p4review.models.policy import ChangePolicy
from p4review.models.review_result import StoredReview
from p4review.notify.delivery import message_id_for
from p4review.notify.delivery_loop import ChannelProfile, deliver
from p4review.notify.email.render import render_review_email
from p4review.notify.email.transport import EmailTransport
from p4review.notify.outbox_rows import (
    ensure_delivery_row,
    lock_holder,
    start_delivery,
    take_send_lock,
)
from p4review.notify.recipients import (
    Rejection,
    parse_reviewer_domains,
    parse_reviewer_policy,
    plan_recipients,
    policy_refusals,
)
from p4review.notify.settings import NotifySettings
from p4review.notify.swarm.access import (
    build_swarm_channel,
    post_test_verdict,
    swarm_comments_enabled,
    swarm_url,
    task_threshold,
)
from p4review.notify.swarm.channel import VERDICT_KEY, swarm_row_key
from p4review.notify.swarm.comments import plan_comments
from p4review.notify.swarm.verdict import Outcome, Verdict, callback_request, fail_threshold, verdict
from p4review.observability import logger, metrics
from p4review.perforce import P4ArgumentError
from p4review.perforce.access import build_change_fetcher
from p4review.pipeline.heartbeat import Lease
from p4review.pipeline.stage_runner import StageOutput
from p4review.ports import ArtifactStore, OutboxRepository, SecretReader


class NotifyWork:
    stage = StageName.NOTIFY

    def __init__(
        self, settings: NotifySettings, artifacts: ArtifactStore, outbox: OutboxRepository, secrets: SecretReader
    ):
        self._settings = settings
        self._artifacts = artifacts
        self._outbox = outbox
        self._secrets = secrets
        self._reviewer_rules = parse_reviewer_policy(settings.reviewers)  # ConfigError: refuse to start
        self._policy_domains = parse_reviewer_domains(settings.policy_reviewer_domains)
        self._swarm_url: str | None = None

    def run(self, job: ReviewJob, lease: Lease) -> StageOutput:
        """Each channel (email, Swarm comments, the Swarm test's verdict) is tried in every attempt
        and fails on its own: one channel's failure never keeps the others from delivering. The
        job succeeds only when every channel is complete."""
        channels = _Channels()
        stored: StoredReview | None = None
        if job.opted_out:  # not reviewed, so nothing to tell anyone; the job says why
            logger.info("change opted out of review: nothing to send", extra={"job_id": job.job_id})
            channels.updates.update(recipients_required=0, recipients_notified=0)
        else:
            if not (job.artifacts.change_key and job.artifacts.result_key):
                raise NonRetryableError("review completed without artifacts", error_class=ErrorClass.INTERNAL_BUG)
            # The redacted change: no email carries content the reviewer was not allowed to see.
            snapshot = ChangeSnapshot.model_validate(self._artifacts.get_json(job.artifacts.change_key)["snapshot"])
            stored = StoredReview.model_validate(self._artifacts.get_json(job.artifacts.result_key))
            resolved = bool(stored.history and stored.history.resolved)
            # A rerun that resolved everything is news (what was fixed), not an empty review; nor
            # is a review without the model's answer an all-clear.
            if (
                not stored.result.findings
                and not resolved
                and not stored.model_answer_rejected
                and self._settings.no_findings_policy == "skip"
            ):
                logger.info(
                    "no findings and P4REVIEW_NO_FINDINGS_POLICY=skip: nothing to send", extra={"job_id": job.job_id}
                )
                channels.updates.update(recipients_required=0, recipients_notified=0)
            else:
                review = stored
                channels.attempt(lambda: self._by_email(job, snapshot, review, lease))
                if swarm_comments_enabled(self._settings):
                    channels.attempt(lambda: self._by_swarm_comments(job, snapshot, review, lease))
        if job.swarm_test is not None:
            channels.attempt(lambda: self._swarm_test_verdict(job, stored, lease))
        channels.raise_unless_complete()
        return StageOutput(updates=channels.updates, finish_job=JobStatus.SUCCEEDED)

    def _by_email(self, job: ReviewJob, snapshot: ChangeSnapshot, stored: StoredReview, lease: Lease) -> dict[str, Any]:
        # The review's coverage (chunking skips included); results written before it existed: the fetch's.
        coverage = stored.coverage or snapshot.diffs
        description = snapshot.description
        plan = plan_recipients(
            description.owner,
            self._owner_email(description.owner),
            description.client,
            snapshot.changed_files,
            # The service's reviewers, and those the depot's .p4review.toml names for its paths
            # (only in an allowed domain: the email carries code).
            self._reviewer_rules + reviewer_rules_from(snapshot.policy.policies if snapshot.policy else []),
            case_insensitive=self._settings.p4_case_insensitive,
            policy_domains=self._policy_domains,
        )
        for rejection in plan.rejected:
            self._record_rejection(job, rejection, lease)
        depot_policy = snapshot.policy
        refusals = policy_refusals(plan.rejected)
        if refusals:  # the email's footer and the job say who was not emailed, and why
            depot_policy = (depot_policy or ChangePolicy()).model_copy(
                update={"diagnostics": [*(depot_policy.diagnostics if depot_policy else []), *refusals]}
            )
        recipients = plan.deliverable
        if not recipients:
            raise NonRetryableError(
                "changelist owner has no deliverable email address", error_class=ErrorClass.POLICY_DENIED
            )
        transport = EmailTransport(self._settings, self._secrets)
        email = EmailDelivery(
            job,
            transport,
            partial(
                render_review_email,
                job=job,
                result=stored.result,
                coverage=coverage,
                description=snapshot.description,
                swarm_url=self._settings.swarm_url,
                diffs=snapshot.diffs,  # the redacted change: an excerpt shows only what the reviewer saw
                history=stored.history,
                policy=depot_policy,
                model_answer=stored.model_answer,
                cut=stored.cut,
            ),
        )
        # Every recipient is tried in every attempt: one recipient's deferral or refusal must not
        # keep the review from the others (nor spend the attempt budget on their behalf).
        deferred: list[RetryableError] = []
        refused: list[NonRetryableError] = []
        # Each recipient's row as this run's last write answered it: no re-read of the outbox.
        rows: dict[str, OutboxRow] = {}
        for recipient in recipients:
            try:
                rows[recipient] = deliver(self._outbox, job, recipient, lease, email)  # notify/delivery_loop.py
            except (AuthError, StaleWriteError):
                raise  # our credentials, or the lease: every other recipient would meet the same
            except RetryableError as exc:
                deferred.append(exc)
            except NonRetryableError as exc:
                if exc.error_class is not ErrorClass.POLICY_DENIED:
                    raise
                refused.append(exc)
        if deferred:
            raise RetryableError(
                f"{len(deferred)} of {len(recipients)} recipients deferred ({deferred[0].message})",
                error_class=deferred[0].error_class,
                retry_after=max((exc.retry_after for exc in deferred if exc.retry_after is not None), default=None),
            )
        if refused:
            # The others have the review; the job needs an operator (`deliveries retry|skip`), as
            # it succeeds only when every required recipient is notified.
            raise NonRetryableError(
                f"{len(refused)} of {len(recipients)} recipients refused permanently ({refused[0].message}); "
                "the others were notified",
                error_class=ErrorClass.POLICY_DENIED,
            )
        # A recipient an operator skipped (`p4review deliveries skip`) is no longer required.
        required = [r for r in recipients if rows[r].status != DeliveryStatus.SKIPPED]
        notified = sum(1 for recipient in required if rows[recipient].notified_at)
        if notified < len(required):
            raise RetryableError("not every recipient is notified yet")
        updates: dict[str, Any] = {"recipients_required": len(required), "recipients_notified": notified}
        if refusals:  # first: the job keeps a bounded number (fetch's follow)
            earlier = snapshot.policy.diagnostics if snapshot.policy else []
            diagnostics = [*refusals, *earlier][:MAX_POLICY_NOTES_ON_JOB]
            updates["policy_diagnostics"] = [job_diagnostic(d) for d in diagnostics]
        return updates

    def _by_swarm_comments(
        self, job: ReviewJob, snapshot: ChangeSnapshot, stored: StoredReview, lease: Lease
    ) -> dict[str, Any]:
        """Each finding as a comment on the change's Swarm review, and a summary, exactly once
        (notify/swarm/channel.py)."""
        if self._swarm_url is None:  # found once per cold start
            self._swarm_url = swarm_url(self._settings, self._secrets)
        channel = build_swarm_channel(self._settings, self._secrets, self._outbox, lock_holder, self._swarm_url)
        diffs = {d.depot_path: d.unified_diff for d in snapshot.diffs if d.unified_diff}
        planned = plan_comments(
            changelist_id=job.changelist_id,
            review_version=job.review_version,
            stored=stored,
            diffs=diffs,
            task_threshold=task_threshold(self._settings),
            # A workflow test asked about one Swarm version: anchor there, not on the latest.
            swarm_version=job.swarm_test.version if job.swarm_test is not None else None,
        )
        outcome = channel.deliver(job, planned, lease)
        if outcome.deferred:
            first = outcome.deferred[0]
            raise RetryableError(
                f"{len(outcome.deferred)} Swarm comments deferred ({first.message})",
                error_class=first.error_class,
                retry_after=max((e.retry_after for e in outcome.deferred if e.retry_after is not None), default=None),
            )
        if outcome.refused:
            raise NonRetryableError(
                f"{len(outcome.refused)} Swarm comments refused permanently ({outcome.refused[0].message}); "
                "the others were posted",
                error_class=ErrorClass.POLICY_DENIED,
            )
        return {"swarm_comments_required": outcome.required, "swarm_comments_posted": outcome.delivered}

    def _swarm_test_verdict(self, job: ReviewJob, stored: StoredReview | None, lease: Lease) -> dict[str, Any]:
        """The Swarm workflow test's pass or fail, sent once (a row of its own, `swarm:verdict`).
        An opted-out change was not reviewed: it fails unless the test never fails, so an author
        cannot pass a required test by opting out. Send, then mark, but not through the delivery
        loop (notify/delivery_loop.py): there is nothing to look up, as Swarm keeps a test run's
        last status (a resend is harmless), and a failed verdict row is sent again next attempt."""
        assert job.swarm_test is not None
        fail_at = fail_threshold(self._settings.swarm_test_fail_at)
        if stored is None:
            result = Verdict(
                outcome=Outcome.PASS if fail_at is None else Outcome.FAIL,
                summary="p4review: not reviewed (the description opts out: #review-skip)",
                failing=0,
            )
        else:
            result = verdict(stored.result.findings, fail_at, answer_rejected=stored.model_answer_rejected)
        start = start_delivery(self._outbox, job, swarm_row_key(VERDICT_KEY), lease, "the Swarm verdict")
        row = start.row
        if row.notified_at:
            return {"swarm_test_verdict": result.outcome.value}
        if not start.attempted:
            row = take_send_lock(self._outbox, job, row, lease, "the Swarm verdict")
        try:
            # Sent again after a crash before the mark: Swarm keeps the last status of a test run.
            post_test_verdict(callback_request(job.swarm_test, result, self._settings.swarm_url), self._settings)
        except RetryableError as exc:
            self._outbox.note_error(row, exc.message)
            raise
        except NonRetryableError as exc:
            self._outbox.mark_failed(row, exc.message)
            raise
        self._outbox.mark_sent(row, result.outcome.value)
        return {"swarm_test_verdict": result.outcome.value}

    def _owner_email(self, owner: str) -> str | None:
        """The owner's address from `p4 user -o`; None when p4 cannot be asked about this name
        (`-x` is an option to p4, never a user name): the owner then gets a failed row like any
        unusable address, and the reviewers still get the review."""
        try:
            return build_change_fetcher(self._settings, self._secrets).user(owner).email
        except P4ArgumentError:
            logger.warning(
                "changelist owner is not a name p4 can be asked about", extra={"owner": sanitize_for_log(owner)}
            )
            return None

    def _record_rejection(self, job: ReviewJob, rejection: Rejection, lease: Lease) -> None:
        """A permanently failed row, so `deliveries list` shows who was not emailed and why. Not a
        required recipient. The log names the reason, never the address itself."""
        row = ensure_delivery_row(self._outbox, job, rejection.row_key, lease)
        token = row.provider_token
        # Only a fresh intent: a row already failed needs nothing, and one that was sent or attempted
        # (under an earlier configuration) must not be marked failed without reconciliation.
        if row.status == DeliveryStatus.PENDING and row.attempts == 0 and not row.notification_id:
            self._outbox.mark_failed(row, rejection.reason)
        # The token (a hash of the key, also on the row) lets an operator find the row.
        logger.warning(
            "recipient rejected; recorded as a failed delivery",
            extra={"job_id": job.job_id, "reason": rejection.reason, "token": token},
        )
        metrics.add_metric(name=MetricName.RECIPIENT_REJECTED, unit="Count", value=1)


# What the delivery loop logs and counts for an email row (a Swarm comment's: notify/swarm/channel.py).
EMAIL_PROFILE = ChannelProfile(
    sent_metric=MetricName.EMAIL_SENT,
    failed_row="delivery failed permanently; needs an operator",
    evidence_recorded="row marked sent without evidence; the provider has it: evidence recorded",
    reopened="row marked sent without evidence and the provider has no record: reopened to send once",
    earlier_found="earlier attempt was delivered; backfilled without sending",
    already_delivered="already delivered; not sending again",
    skipped="an operator skipped this delivery; not sending",
    unevidenced_metric=MetricName.SENT_WITHOUT_EVIDENCE,
    backfilled_metric=MetricName.DELIVERY_BACKFILLED,
)


class EmailDelivery:
    """The email channel's plug-in to the delivery loop (notify/delivery_loop.py): the review
    rendered for each recipient with its deterministic Message-ID, sent through SMTP or SES, and
    looked up by that Message-ID. `render` takes recipient, from_address and message_id."""

    profile = EMAIL_PROFILE

    def __init__(self, job: ReviewJob, transport: EmailTransport, render: Callable[..., bytes]):
        self._job = job
        self._transport = transport
        self._render = render

    @property
    def provider(self) -> str:
        return self._transport.provider

    def prepare(self, row: OutboxRow) -> bytes:
        return self._render(
            recipient=row.recipient, from_address=self._transport.from_address, message_id=self.identity(row)
        )

    def send(self, row: OutboxRow, payload: bytes, commit_by: datetime) -> SendResult:
        transport = self._transport
        return transport.sender.send(
            sender=transport.from_address, recipient=row.recipient, message=payload, commit_by=commit_by
        )

    def send_again(self, result: SendResult) -> bool:
        """Once more if the relay refused the credentials and the SMTP secret has since been
        rotated (authentication precedes MAIL, so the refused call handed nothing over)."""
        return result.error_code == "auth_failed" and self._transport.refresh()

    def identity(self, row: OutboxRow) -> str:
        return message_id_for(row.provider_token, self._transport.from_address)

    def lookup(self, identity: str) -> LookupResult:
        """The provider's answer about the Message-ID, with one more try after a credentials
        rotation. Credentials still refused: AuthError."""
        transport = self._transport
        found = transport.sender.lookup(identity)
        if found.error_code == "auth_failed" and transport.refresh():
            found = transport.sender.lookup(identity)
        if found.error_code == "auth_failed":
            raise AuthError(f"{transport.provider} refused our credentials")
        return found

    def in_flight(self, row: OutboxRow, busy: DeliveryInFlight) -> NoReturn:
        logger.warning(
            "another worker is delivering to this recipient; not sending",
            extra={"job_id": self._job.job_id, "token": row.provider_token},
        )
        raise RetryableError(
            "another worker is delivering to this recipient",
            error_class=ErrorClass.CONFLICT,
            retry_after=_seconds_until(busy.locked_until),
        ) from None


def _seconds_until(moment: str | None) -> float | None:
    """Seconds from now until `moment` (UTC ISO-8601), at least 1; None when unknown."""
    if not moment:
        return None
    return max(1.0, (parse_iso(moment) - utc_now()).total_seconds())


class _Channels:
    """What notify's channels left in one attempt: the job fields they report, and the errors of
    those that are not complete (each channel is tried whatever the others did)."""

    def __init__(self) -> None:
        self.updates: dict[str, Any] = {}
        self.errors: list[P4ReviewError] = []

    def attempt(self, channel: Callable[[], dict[str, Any]]) -> None:
        try:
            self.updates.update(channel())
        except StaleWriteError:
            raise  # the lease is gone: this worker must stop, whatever the channel
        except P4ReviewError as exc:
            self.errors.append(exc)

    def raise_unless_complete(self) -> None:
        """One channel's error as it is; several: retryable when any is (the complete channels
        deliver nothing twice on the retry), else the first permanent one's class."""
        if not self.errors:
            return
        if len(self.errors) == 1:
            raise self.errors[0]
        message = "; ".join(error.message for error in self.errors)
        retryable = [error for error in self.errors if isinstance(error, RetryableError)]
        if retryable:
            raise RetryableError(
                message,
                error_class=retryable[0].error_class,
                retry_after=max((e.retry_after for e in retryable if e.retry_after is not None), default=None),
            )
        raise NonRetryableError(message, error_class=self.errors[0].error_class)
