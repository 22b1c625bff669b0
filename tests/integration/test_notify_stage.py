"""The notify stage against a real SMTP server on loopback: send, then mark; never twice
once marked; transient vs permanent SMTP failures; credentials refused."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from p4review.clock import to_iso, utc_now
from p4review.config import get_settings
from p4review.dal.factory import get_data_access
from p4review.logic.ingest_service import create_review
from p4review.local.smtp_server import LocalMailServer
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, StageName
from p4review.models.messages import StageMessage
from p4review.models.outbox import DeliveryStatus
from p4review.runtime.heartbeat import Lease
from p4review.runtime.stage_runner import run_stage
from p4review.stages.fetch import FetchWork
from p4review.stages.notify import NotifyWork
from p4review.stages.review_setup import build_review_work
from tests.support.harness import drain, provisioned_service



@pytest.fixture
def mail(tmp_path):
    server = LocalMailServer(tmp_path / "mailbox", username="relay", password="relay-password")
    server.start()
    yield server
    server.stop()


def _service(moto_endpoint, mail, password="relay-password"):
    return provisioned_service(moto_endpoint, smtp={
        "host": "127.0.0.1", "port": mail.port, "tls_mode": "none", "username": "relay", "password": password,
        "from_address": "p4review@example.test"})


def _reviewed_job(service):
    """A job whose fetch and review stages completed (change 48213, owner dkowalski)."""
    dal = get_data_access()
    answer = create_review(CreateReviewRequest(idempotency_key="notify-test", changelist_id=48213, review_version=1,
                                               kind="submitted"), jobs=dal.jobs, queues=dal.queues, request_id=None)
    settings = get_settings()
    for work in (FetchWork(settings, dal.raw_artifacts, dal.redacted_artifacts, dal.secrets),
                 build_review_work(settings, dal)):
        disposition = run_stage(StageMessage(job_id=answer.job.job_id, stage=work.stage), work, jobs=dal.jobs,
                                queues=dal.queues, worker_id="setup", lease_seconds=60)
        assert disposition.ack
    sqs = service.client("sqs")
    for stage in StageName:
        drain(sqs, service.resources.queue_for_stage(stage).url)
    return dal.jobs.get_job(answer.job.job_id)


def _notify(job, worker="notifier"):
    dal = get_data_access()
    work = NotifyWork(get_settings(), dal.redacted_artifacts, dal.outbox, dal.secrets)
    return run_stage(StageMessage(job_id=job.job_id, stage=StageName.NOTIFY), work, jobs=dal.jobs, queues=dal.queues,
                     worker_id=worker, lease_seconds=60)


def _rows(job):
    return get_data_access().outbox.rows_for_version(job.changelist_id, job.review_version)


def _dlq(service):
    sqs = service.client("sqs")
    return [json.loads(m["Body"]) for m in drain(sqs, service.resources.queue_for_stage(StageName.NOTIFY).dlq_url)]


def test_sends_once_then_marks_with_the_servers_queue_id(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        assert _notify(job).ack
        (stored,) = mail.messages()
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.SENT and row.notified_at and row.attempts == 1
        assert row.notification_id == stored.queue_id
        assert list(stored.recipients) == [row.recipient]
        finished = get_data_access().jobs.get_job(job.job_id)
        assert finished.status == JobStatus.SUCCEEDED
        assert (finished.recipients_required, finished.recipients_notified) == (1, 1)


def test_a_row_marked_sent_is_never_sent_again(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        _notify(job)
        dal = get_data_access()
        # Even if the stage's work ran again (a bug, an operator rerun), the outbox says no.
        NotifyWork(get_settings(), dal.redacted_artifacts, dal.outbox, dal.secrets).run(
            job, Lease(to_iso(utc_now() + timedelta(minutes=5))))
        assert mail.count() == 1


def test_transient_smtp_failure_retries_and_delivers_once(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        mail.fail_next(1, code=451, text="4.3.0 try again later")
        first = _notify(job)
        assert not first.ack and first.delay_seconds is not None
        (row,) = _rows(job)
        assert (row.status, row.attempts, row.notified_at) == (DeliveryStatus.PENDING, 1, None)
        assert "451" in row.last_error
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.RETRYABLE_FAILED
        assert _notify(job, worker="second").ack
        assert mail.count() == 1
        assert _rows(job)[0].attempts == 2


def test_permanent_refusal_fails_the_row_and_dead_letters_without_the_address(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        mail.fail_next(1, code=550, text="5.1.1 mailbox unavailable")
        assert _notify(job).ack
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.FAILED and row.notified_at is None
        (envelope,) = _dlq(service)
        assert envelope["error_class"] == "POLICY_DENIED"
        assert row.recipient not in json.dumps(envelope)
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.DEAD_LETTERED
        assert mail.count() == 0


def test_refused_smtp_credentials_dead_letter_as_auth_without_failing_the_recipient(moto_endpoint, aws_reset,
                                                                                  mail):
    with _service(moto_endpoint, mail, password="wrong") as service:
        job = _reviewed_job(service)
        assert _notify(job).ack
        (envelope,) = _dlq(service)
        assert envelope["error_class"] == "AUTH_DENIED"
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.PENDING  # the recipient did nothing wrong
        assert "wrong" not in json.dumps(envelope) and "relay-password" not in json.dumps(envelope)


def test_lost_smtp_reply_is_looked_up_and_backfilled_without_a_second_email(moto_endpoint, aws_reset, mail):
    """The server stored the message but the reply was lost: the retry asks the mailbox (lookup
    by the deterministic Message-ID), finds it, and marks the row sent without sending."""
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        mail.drop_connection_after_data_next(1)
        assert not _notify(job).ack
        assert _notify(job, worker="second").ack
        (stored,) = mail.messages()
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.SENT and row.attempts == 1
        assert row.notification_id == stored.queue_id


def test_earlier_attempt_that_never_arrived_is_sent_after_the_lookup(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        mail.fail_next(1)  # 451: nothing stored
        assert not _notify(job).ack
        assert _notify(job, worker="second").ack
        (stored,) = mail.messages()
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.SENT and row.attempts == 2 and row.notification_id == stored.queue_id


def test_relay_without_lookup_resends_an_unconfirmed_attempt_with_the_same_message_id(moto_endpoint, aws_reset,
                                                                                       mail):
    """A plain SMTP relay cannot say whether it accepted a message: the documented policy resends
    with the same deterministic Message-ID, so the receiving side can collapse the copy."""
    mail.lookup_enabled = False
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        mail.drop_connection_after_data_next(1)
        assert not _notify(job).ack
        assert _notify(job, worker="second").ack
        copies = mail.messages()
        assert len(copies) == 2
        assert copies[0].message_id == copies[1].message_id
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.SENT and row.attempts == 2
