"""The notify stage against a real SMTP server on loopback: send, then mark; never twice
once marked; transient vs permanent SMTP failures; credentials refused."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from p4review.clock import to_iso, utc_now
from p4review.models.job import JobStatus
from p4review.models.outbox import DeliveryStatus
from p4review.notify.settings import NotifySettings
from p4review.notify.stage import NotifyWork
from p4review.pipeline.heartbeat import Lease
from p4review.stores.factory import get_data_access
from p4review_dev.smtp_server import LocalMailServer
from p4review_dev.support.notify import (
    RELAY_PASSWORD,
    notify_dead_letters,
    notify_service,
    outbox_rows,
    reviewed_job,
    reviewers_env,
    run_notify,
)


@pytest.fixture
def mail(tmp_path):
    server = LocalMailServer(tmp_path / "mailbox", username="relay", password="relay-password")
    server.start()
    yield server
    server.stop()


def _service(moto_endpoint, mail, password=RELAY_PASSWORD, extra_env=None):
    return notify_service(moto_endpoint, mail, password=password, extra_env=extra_env)


_reviewed_job = reviewed_job
_rows = outbox_rows
_dlq = notify_dead_letters
_reviewers = reviewers_env


def _notify(job, worker="notifier"):
    return run_notify(job, worker)


@pytest.mark.spec("NOT-11")
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


@pytest.mark.spec("NOT-9", "NOT-13", "NE-1", "IDEM-6")
def test_a_row_marked_sent_is_never_sent_again(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        _notify(job)
        dal = get_data_access()
        # Even if the stage's work ran again (a bug, an operator rerun), the outbox says no.
        NotifyWork(NotifySettings.from_env(), dal.redacted_artifacts, dal.outbox, dal.secrets).run(
            job, Lease(to_iso(utc_now() + timedelta(minutes=5)))
        )
        assert mail.count() == 1


@pytest.mark.spec("NOT-17", "NOT-18", "NE-2", "NE-7")
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


@pytest.mark.spec("ERR-9", "NE-3")
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


def test_refused_smtp_credentials_dead_letter_as_auth_without_failing_the_recipient(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail, password="wrong") as service:
        job = _reviewed_job(service)
        assert _notify(job).ack
        (envelope,) = _dlq(service)
        assert envelope["error_class"] == "AUTH_DENIED"
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.PENDING  # the recipient did nothing wrong
        assert "wrong" not in json.dumps(envelope) and "relay-password" not in json.dumps(envelope)


@pytest.mark.spec("NOT-16", "NE-7", "IDEM-5")
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


@pytest.mark.spec("NOT-16")
def test_earlier_attempt_that_never_arrived_is_sent_after_the_lookup(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        mail.fail_next(1)  # 451: nothing stored
        assert not _notify(job).ack
        assert _notify(job, worker="second").ack
        (stored,) = mail.messages()
        (row,) = _rows(job)
        assert row.status == DeliveryStatus.SENT and row.attempts == 2 and row.notification_id == stored.queue_id


@pytest.mark.spec("NOT-16")
def test_relay_without_lookup_resends_an_unconfirmed_attempt_with_the_same_message_id(moto_endpoint, aws_reset, mail):
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


@pytest.mark.spec("NOT-7", "NOT-17")
def test_reviewers_configured_per_prefix_get_the_email_exactly_once_each(moto_endpoint, aws_reset, mail):
    env = _reviewers(
        (
            "//depot/engine/...",
            ["Net-Lead@northwind-games.example", "dariusz.kowalski@NORTHWIND-GAMES.example"],
        ),  # the owner again
        ("//depot/engine/main/src/net/", ["net-lead@northwind-games.example", "qa@northwind-games.example"]),
        ("//depot/game/...", ["ui-lead@northwind-games.example"]),
    )  # no file of 48213 there
    with _service(moto_endpoint, mail, extra_env=env) as service:
        job = _reviewed_job(service)
        assert _notify(job).ack
        dal = get_data_access()
        NotifyWork(NotifySettings.from_env(), dal.redacted_artifacts, dal.outbox, dal.secrets).run(
            job, Lease(to_iso(utc_now() + timedelta(minutes=5)))
        )  # a rerun sends nothing more
        expected = [
            "dariusz.kowalski@northwind-games.example",
            "net-lead@northwind-games.example",
            "qa@northwind-games.example",
        ]
        assert sorted(r for m in mail.messages() for r in m.recipients) == sorted(expected)
        rows = _rows(job)
        assert sorted(row.recipient for row in rows) == sorted(expected)
        assert all(row.status == DeliveryStatus.SENT and row.attempts == 1 for row in rows)
        finished = dal.jobs.get_job(job.job_id)
        assert finished.status == JobStatus.SUCCEEDED
        assert (finished.recipients_required, finished.recipients_notified) == (3, 3)


@pytest.mark.spec("NOT-7")
def test_owner_with_perforces_default_address_gets_a_failed_row_while_reviewers_get_theirs(
    moto_endpoint, aws_reset, mail
):
    """48261's owner jbeaulieu has p4's default Email `jbeaulieu@jbeaulieu-mtl-ws` (user@client)."""
    env = _reviewers(("//depot/game/main/ui/...", ["ui-lead@northwind-games.example"]))
    with _service(moto_endpoint, mail, extra_env=env) as service:
        job = _reviewed_job(service, changelist_id=48261)
        assert _notify(job).ack
        (stored,) = mail.messages()
        assert list(stored.recipients) == ["ui-lead@northwind-games.example"]
        rows = {row.recipient: row for row in _rows(job)}
        assert set(rows) == {"jbeaulieu@jbeaulieu-mtl-ws", "ui-lead@northwind-games.example"}
        unverified = rows["jbeaulieu@jbeaulieu-mtl-ws"]
        assert (unverified.status, unverified.last_error, unverified.attempts) == (
            DeliveryStatus.FAILED,
            "unverified_address",
            0,
        )
        assert rows["ui-lead@northwind-games.example"].status == DeliveryStatus.SENT
        finished = get_data_access().jobs.get_job(job.job_id)
        assert finished.status == JobStatus.SUCCEEDED  # the rejected owner is not a required recipient
        assert (finished.recipients_required, finished.recipients_notified) == (1, 1)


@pytest.mark.spec("ERR-9")
def test_owner_default_address_alone_fails_its_row_then_dead_letters(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service, changelist_id=48261)
        assert _notify(job).ack
        (row,) = _rows(job)
        assert (row.status, row.last_error) == (DeliveryStatus.FAILED, "unverified_address")
        (envelope,) = _dlq(service)
        assert envelope["error_class"] == "POLICY_DENIED" and row.recipient not in json.dumps(envelope)
        assert mail.count() == 0


@pytest.mark.spec("NOT-7")
def test_invalid_reviewer_address_gets_a_failed_row_and_does_not_crash(moto_endpoint, aws_reset, mail):
    env = _reviewers(("//depot/engine/...", ["not an address", "Bad\r\nBcc: x@evil.example"]))
    with _service(moto_endpoint, mail, extra_env=env) as service:
        job = _reviewed_job(service)
        assert _notify(job).ack
        (stored,) = mail.messages()
        assert list(stored.recipients) == ["dariusz.kowalski@northwind-games.example"]
        rows = {row.recipient: row for row in _rows(job)}
        assert {key: (row.status, row.last_error) for key, row in rows.items() if key != stored.recipients[0]} == {
            "not an address": (DeliveryStatus.FAILED, "invalid_address"),
            "bad\\x0d\\x0abcc: x@evil.example": (DeliveryStatus.FAILED, "invalid_address"),  # shown, not dropped
        }
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED


def test_skip_policy_sends_nothing_for_a_review_without_findings(moto_endpoint, aws_reset, mail):
    env = {
        "P4REVIEW_NO_FINDINGS_POLICY": "skip",
        "P4REVIEW_NOISE_POLICY": json.dumps([{"prefix": "//depot/...", "max_findings": 0}]),
        **_reviewers(("//depot/engine/...", ["net-lead@northwind-games.example"])),
    }
    with _service(moto_endpoint, mail, extra_env=env) as service:
        job = _reviewed_job(service)
        assert _notify(job).ack
        assert mail.count() == 0 and _rows(job) == []
        finished = get_data_access().jobs.get_job(job.job_id)
        assert finished.status == JobStatus.SUCCEEDED
        assert (finished.recipients_required, finished.recipients_notified) == (0, 0)


@pytest.mark.spec("RV-11")
def test_skip_policy_still_sends_a_rerun_that_resolved_every_finding(moto_endpoint, aws_reset, mail):
    """No findings left is news when the previous version had some: what was fixed."""
    from p4review.models.review_result import ResolvedFinding, StoredReview, VersionHistory

    env = {
        "P4REVIEW_NO_FINDINGS_POLICY": "skip",
        "P4REVIEW_NOISE_POLICY": json.dumps([{"prefix": "//depot/...", "max_findings": 0}]),
    }
    with _service(moto_endpoint, mail, extra_env=env) as service:
        job = _reviewed_job(service)
        artifacts = get_data_access().redacted_artifacts
        stored = StoredReview.model_validate(artifacts.get_json(job.artifacts.result_key))
        fixed = ResolvedFinding(
            severity="high", category="security", title="Unbounded copy", file="//depot/engine/a.cpp", line=3
        )
        stored.history = VersionHistory(previous_version=1, previous_job_id="job-v1", resolved=[fixed])
        artifacts.put_json(job.artifacts.result_key, stored.model_dump(mode="json", exclude_none=True))
        assert _notify(job).ack
        (message,) = mail.messages()
        assert " ".join(str(message.parsed()["Subject"]).split()).endswith("no findings; 0 new, 1 resolved")


@pytest.mark.spec("OC-9")
def test_skip_policy_still_sends_a_review_whose_model_answer_was_rejected(moto_endpoint, aws_reset, mail):
    """No findings is not an all-clear when the model's answer was not used: the email says so
    (issue 27)."""
    from p4review.models.review_result import ModelAnswer, StoredReview

    env = {
        "P4REVIEW_NO_FINDINGS_POLICY": "skip",
        "P4REVIEW_NOISE_POLICY": json.dumps([{"prefix": "//depot/...", "max_findings": 0}]),
    }
    with _service(moto_endpoint, mail, extra_env=env) as service:
        job = _reviewed_job(service)
        artifacts = get_data_access().redacted_artifacts
        stored = StoredReview.model_validate(artifacts.get_json(job.artifacts.result_key))
        stored.model_answer = ModelAnswer(
            status="rejected", parts=1, parts_rejected=1, reasons=["invalid_json"], fallback="heuristic"
        )
        artifacts.put_json(job.artifacts.result_key, stored.model_dump(mode="json", exclude_none=True))
        assert _notify(job).ack
        (message,) = mail.messages()
        parsed = message.parsed()
        assert " ".join(str(parsed["Subject"]).split()).endswith("no findings; model answer rejected")
        text = parsed.get_body(preferencelist=("plain",)).get_content()
        assert "Note: The model's answer was rejected (invalid_json)" in text


def test_default_policy_sends_an_all_clear_for_a_review_without_findings(moto_endpoint, aws_reset, mail):
    env = {"P4REVIEW_NOISE_POLICY": json.dumps([{"prefix": "//depot/...", "max_findings": 0}])}
    with _service(moto_endpoint, mail, extra_env=env) as service:
        job = _reviewed_job(service)
        assert _notify(job).ack
        (stored,) = mail.messages()
        assert stored.parsed()["Subject"].endswith(": no findings")


@pytest.mark.spec("NOT-10", "NOT-11")
def test_ses_transport_sends_once_and_marks_with_the_ses_message_id(moto_endpoint, aws_reset, mail):
    from moto.backends import get_backend

    with _service(
        moto_endpoint,
        mail,
        extra_env={"P4REVIEW_EMAIL_PROVIDER": "ses", "P4REVIEW_EMAIL_FROM": "p4review@example.test"},
    ) as service:
        service.client("ses").verify_email_identity(EmailAddress="p4review@example.test")
        job = _reviewed_job(service)
        assert _notify(job).ack
        (row,) = _rows(job)
        sent = [
            m
            for m in get_backend("ses")["123456789012"]["us-east-1"].sent_messages
            if "p4review@example.test" in str(getattr(m, "source", ""))
        ]
        assert row.status == DeliveryStatus.SENT and row.notification_id == sent[-1].id
        assert len(sent) == 1 and mail.messages() == []  # SES, not the SMTP relay
        assert _notify(job).ack  # a redelivery sends nothing more
        assert (
            len(
                [
                    m
                    for m in get_backend("ses")["123456789012"]["us-east-1"].sent_messages
                    if "p4review@example.test" in str(getattr(m, "source", ""))
                ]
            )
            == 1
        )


def _mark_sent_without_evidence(service, job, recipient):
    """The state the ordering contract forbids: status sent and notified_at set, no provider id,
    and no email ever sent (a bug or a manual edit)."""
    from p4review.models.outbox import OutboxRow
    from p4review.notify.delivery import delivery_token
    from p4review.stores.dynamo_outbox import outbox_key

    now = to_iso(utc_now())
    get_data_access().outbox.ensure_row(
        OutboxRow(
            changelist_id=job.changelist_id,
            recipient=recipient,
            review_version=job.review_version,
            job_id=job.job_id,
            provider_token=delivery_token(job.changelist_id, recipient, job.review_version),
            created_at=now,
            updated_at=now,
        )
    )
    service.client("dynamodb").update_item(
        TableName=service.resources.tables["outbox"],
        Key=outbox_key(job.changelist_id, recipient, job.review_version),
        UpdateExpression="SET #s = :sent, notified_at = :now",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":sent": {"S": "sent"}, ":now": {"S": now}},
    )


OWNER_48213 = "dariusz.kowalski@northwind-games.example"


@pytest.mark.spec("NE-6")
def test_a_row_marked_sent_without_evidence_is_reconciled_reopened_and_sent_once(moto_endpoint, aws_reset, mail):
    with _service(moto_endpoint, mail) as service:
        job = _reviewed_job(service)
        _mark_sent_without_evidence(service, job, OWNER_48213)
        assert _notify(job).ack
        (row,) = _rows(job)
        # The mailbox had no such message: the row was reopened (audited) and sent exactly once.
        assert len(mail.messages()) == 1
        assert row.status == DeliveryStatus.SENT and row.notification_id and row.notified_at
        assert [event.action.value for event in row.audit] == ["reconcile"]
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED


@pytest.mark.spec("NE-6")
def test_without_a_provider_lookup_such_a_row_is_left_sent_and_nothing_is_sent(moto_endpoint, aws_reset, tmp_path):
    relay = LocalMailServer(tmp_path / "mailbox", username="relay", password="relay-password", lookup_enabled=False)
    relay.start()
    try:
        with _service(moto_endpoint, relay) as service:
            job = _reviewed_job(service)
            _mark_sent_without_evidence(service, job, OWNER_48213)
            assert _notify(job).ack
            (row,) = _rows(job)
            # A plain relay cannot say: a possible duplicate is worse than an alarm (SentWithoutEvidence).
            assert relay.messages() == [] and row.status == DeliveryStatus.SENT and row.audit == []
    finally:
        relay.stop()


_THREE = (
    ("//depot/engine/...", ["net-lead@northwind-games.example", "qa@northwind-games.example"]),
)  # with 48213's owner: three recipients, the owner first


@pytest.mark.spec("CH-4")
def test_a_deferred_recipient_does_not_hold_back_the_others(moto_endpoint, aws_reset, mail):
    """Found by a hostile-input probe: a retryable failure for one recipient ended the attempt,
    so the recipients after it waited, and spent the attempt budget, with it."""
    with _service(moto_endpoint, mail, extra_env=_reviewers(*_THREE)) as service:
        job = _reviewed_job(service)
        mail.fail_next(1, code=451, text="4.3.0 try later")  # the first recipient's send
        assert not _notify(job).ack
        assert mail.count() == 2  # the others were sent in the same attempt
        rows = {row.recipient: row for row in _rows(job)}
        assert sorted(row.status for row in rows.values()) == [
            DeliveryStatus.PENDING,
            DeliveryStatus.SENT,
            DeliveryStatus.SENT,
        ]
        assert _notify(job).ack
        assert mail.count() == 3
        final = _rows(job)
        assert all(row.status == DeliveryStatus.SENT for row in final)
        assert sorted(row.attempts for row in final) == [1, 1, 2]  # one email each
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED


@pytest.mark.spec("CH-4")
def test_a_refused_recipient_does_not_keep_the_review_from_the_others(moto_endpoint, aws_reset, mail):
    """A 550 for one address: the others get the review in the same attempt; the job then waits
    for an operator (it succeeds only when every required recipient is notified)."""
    with _service(moto_endpoint, mail, extra_env=_reviewers(*_THREE)) as service:
        job = _reviewed_job(service)
        mail.fail_next(1, code=550, text="5.1.1 mailbox unavailable")
        assert _notify(job).ack
        assert mail.count() == 2
        statuses = sorted(row.status for row in _rows(job))
        assert statuses == [DeliveryStatus.FAILED, DeliveryStatus.SENT, DeliveryStatus.SENT]
        (envelope,) = _dlq(service)
        assert envelope["error_class"] == "POLICY_DENIED"
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.DEAD_LETTERED


@pytest.mark.spec("CH-4")
def test_an_owner_p4_cannot_be_asked_about_gets_a_failed_row_and_the_reviewers_the_review(
    moto_endpoint, aws_reset, mail
):
    """Found by a hostile-input probe: an owner named `-x` (p4 would read an option) made notify
    dead-letter the job as SCHEMA_INVALID; nobody got the review."""
    with _service(moto_endpoint, mail, extra_env=_reviewers(*_THREE)) as service:
        job = _reviewed_job(service)
        dal = get_data_access()
        change = dal.redacted_artifacts.get_json(job.artifacts.change_key)
        change["snapshot"]["description"]["owner"] = "-x"
        dal.redacted_artifacts.put_json(job.artifacts.change_key, change)
        assert _notify(job).ack
        assert sorted(r for m in mail.messages() for r in m.recipients) == [
            "net-lead@northwind-games.example",
            "qa@northwind-games.example",
        ]
        rows = {row.recipient: row for row in _rows(job)}
        assert (rows["<missing:-x>"].status, rows["<missing:-x>"].last_error) == (
            DeliveryStatus.FAILED,
            "missing_address",
        )
        assert dal.jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED
