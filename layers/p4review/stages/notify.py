"""notify: email the review to the changelist owner; exactly one email per
(changelist_id, recipient, review_version) via the outbox (send, then mark)."""

from __future__ import annotations

from p4review.adapters.smtp import SmtpSender, SmtpSettings
from p4review.clock import now_iso
from p4review.config import Settings
from p4review.dal.ports import ArtifactStore, OutboxRepository, SecretReader
from p4review.errors import AuthError, ErrorClass, NonRetryableError, RetryableError
from p4review.logic.delivery import delivery_token, message_id_for, unique_recipients
from p4review.logic.email_render import render_review_email
from p4review.models.change import ChangeSnapshot
from p4review.models.job import JobStatus, ReviewJob, StageName
from p4review.models.outbox import DeliveryStatus, LookupOutcome, OutboxRow, SendOutcome
from p4review.models.review_result import Coverage, ReviewResult, StoredReview
from p4review.observability import logger, metrics
from p4review.runtime.faults import FaultPoint, fault
from p4review.runtime.heartbeat import Lease
from p4review.runtime.stage_runner import StageOutput
from p4review.stages.p4_access import build_change_fetcher


class NotifyWork:
    stage = StageName.NOTIFY

    def __init__(self, settings: Settings, artifacts: ArtifactStore, outbox: OutboxRepository,
                 secrets: SecretReader):
        self._settings = settings
        self._artifacts = artifacts
        self._outbox = outbox
        self._secrets = secrets

    def run(self, job: ReviewJob, lease: Lease) -> StageOutput:
        if not (job.artifacts.change_key and job.artifacts.result_key):
            raise NonRetryableError("review completed without artifacts", error_class=ErrorClass.INTERNAL_BUG)
        # The redacted change: no email carries content the reviewer was not allowed to see.
        snapshot = ChangeSnapshot.model_validate(self._artifacts.get_json(job.artifacts.change_key)["snapshot"])
        stored = StoredReview.model_validate(self._artifacts.get_json(job.artifacts.result_key))
        result = stored.result
        # The review's coverage (chunking skips included); results written before it existed: the fetch's.
        coverage = stored.coverage or snapshot.diffs
        owner = build_change_fetcher(self._settings, self._secrets).user(snapshot.description.owner)
        recipients = unique_recipients([owner.email])
        if not recipients:
            raise NonRetryableError("changelist owner has no deliverable email address",
                                    error_class=ErrorClass.POLICY_DENIED)
        smtp = SmtpSettings.model_validate(self._secrets.get_json(self._settings.require("smtp_secret_id")))
        sender = SmtpSender(smtp)
        for recipient in recipients:
            self._deliver(job, snapshot, result, coverage, recipient, smtp.from_address, sender, lease)
        rows = {row.recipient: row for row in self._outbox.rows_for_version(job.changelist_id, job.review_version)}
        notified = sum(1 for recipient in recipients if rows.get(recipient) and rows[recipient].notified_at)
        if notified < len(recipients):
            raise RetryableError("not every recipient is notified yet")
        return StageOutput(updates={"recipients_required": len(recipients), "recipients_notified": notified},
                           finish_job=JobStatus.SUCCEEDED)

    def _deliver(self, job: ReviewJob, snapshot: ChangeSnapshot, result: ReviewResult,
                 coverage: Coverage | list, recipient: str,
                 from_address: str, sender: SmtpSender, lease: Lease) -> None:
        """`lease.check()` guards every step that starts something (outbox row, attempt, SMTP
        send). The writes that only record what a send already did (mark_sent, note_error,
        mark_failed) are deliberately not gated: skipping mark_sent after a lease loss would make
        the new owner send the same email again."""
        token = delivery_token(job.changelist_id, recipient, job.review_version)
        now = now_iso()
        # ensure_row returns the persisted row when it already exists: that is the re-read.
        lease.check()
        row = self._outbox.ensure_row(OutboxRow(
            changelist_id=job.changelist_id, recipient=recipient, review_version=job.review_version,
            job_id=job.job_id, provider_token=token, created_at=now, updated_at=now))
        log = {"job_id": job.job_id, "token": token}
        if row.notified_at:
            logger.info("already delivered; not sending again", extra=log)
            return
        if row.status == DeliveryStatus.FAILED:
            raise NonRetryableError("delivery failed permanently; needs an operator", error_class=ErrorClass.POLICY_DENIED)
        message_id = message_id_for(token, from_address)
        if row.attempts > 0 or row.notification_id:
            # An earlier attempt may have reached the provider: look before sending again.
            if self._reconcile_earlier_attempt(row, message_id, sender, log):
                return
        message = render_review_email(
            job=job, result=result, coverage=coverage, description=snapshot.description,
            recipient=recipient, from_address=from_address, message_id=message_id,
            swarm_url=self._settings.swarm_url)
        lease.check()
        row = self._outbox.record_attempt(row)
        lease.check()
        outcome = sender.send(sender=from_address, recipient=recipient, message=message)
        if outcome.outcome == SendOutcome.SENT:
            fault(FaultPoint.DB_WRITE_AFTER_PROVIDER)
            self._outbox.mark_sent(row, outcome.notification_id or message_id)
            metrics.add_metric(name="EmailSent", unit="Count", value=1)
            return
        error = f"{outcome.error_code}: {outcome.error_message or ''}"
        if outcome.error_code == "auth_failed":
            self._secrets.invalidate(self._settings.require("smtp_secret_id"))
            raise AuthError("SMTP relay refused our credentials")
        if outcome.outcome == SendOutcome.RETRYABLE:
            self._outbox.note_error(row, error)
            raise RetryableError(f"SMTP delivery deferred ({outcome.error_code})", retry_after=outcome.retry_after)
        self._outbox.mark_failed(row, error)
        raise NonRetryableError(f"SMTP delivery refused ({outcome.error_code})", error_class=ErrorClass.POLICY_DENIED)

    def _reconcile_earlier_attempt(self, row: OutboxRow, message_id: str, sender: SmtpSender,
                                   log: dict[str, str]) -> bool:
        """True when the earlier attempt is known to have arrived (the row is backfilled, nothing
        is sent). False means: send. Policy where the provider cannot say (plain SMTP): resend
        with the same deterministic Message-ID, which receiving systems use to collapse the rare
        duplicate; counted by the UnconfirmedDeliveryRetried metric."""
        found = sender.lookup(message_id)
        if found.outcome == LookupOutcome.FOUND:
            self._outbox.mark_sent(row, found.notification_id or message_id)
            logger.info("earlier attempt was delivered; backfilled without sending", extra=log)
            metrics.add_metric(name="DeliveryBackfilled", unit="Count", value=1)
            return True
        if found.error_code == "auth_failed":
            self._secrets.invalidate(self._settings.require("smtp_secret_id"))
            raise AuthError("SMTP relay refused our credentials")
        if found.outcome == LookupOutcome.UNAVAILABLE:
            raise RetryableError(f"cannot confirm an earlier delivery attempt ({found.error_code})")
        if found.outcome == LookupOutcome.UNSUPPORTED:
            logger.warning("retrying a delivery whose earlier attempt is unconfirmed", extra=log)
            metrics.add_metric(name="UnconfirmedDeliveryRetried", unit="Count", value=1)
        return False
