"""Notify with the Swarm comment channel beside email, against the fake Swarm (real HTTP on
loopback), a real SMTP server and the serialized moto server: every finding a comment at its
file and line, a summary, one Swarm notification, nothing twice, and neither channel keeping
the other from delivering."""

from __future__ import annotations

import json

import pytest

from p4review.dal.factory import get_data_access
from p4review.local.smtp_server import LocalMailServer
from p4review.local.swarm_server import FakeSwarmServer
from p4review.models.job import JobStatus
from p4review.models.outbox import DeliveryStatus
from p4review.stages.swarm_channel import is_swarm_row
from tests.support.notify import (
    RELAY_PASSWORD,
    RELAY_USER,
    notify_service,
    outbox_rows,
    reviewed_job,
    run_notify,
)

SWARM_USER, SWARM_TICKET = "p4review-swarm", "S" * 32
SECRET_NAME = "p4review-test-swarm"


@pytest.fixture
def mail(tmp_path):
    server = LocalMailServer(tmp_path / "mailbox", username=RELAY_USER, password=RELAY_PASSWORD)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def swarm():
    server = FakeSwarmServer(user=SWARM_USER, ticket=SWARM_TICKET, seed=7)
    server.start()
    yield server
    server.stop()


def _with_swarm(moto_endpoint, mail, swarm, ticket=SWARM_TICKET, **env):
    service = notify_service(
        moto_endpoint,
        mail,
        extra_env={
            "P4REVIEW_SWARM_URL": swarm.url,
            "P4REVIEW_SWARM_SECRET_ID": SECRET_NAME,
            "P4REVIEW_SWARM_TIMEOUT_SECONDS": "2",
            **env,
        },
    )
    return service, {"user": SWARM_USER, "ticket": ticket}


def _store_secret(service, value):
    service.client("secretsmanager").create_secret(Name=SECRET_NAME, SecretString=json.dumps(value))


def _job_status(job):
    return get_data_access().jobs.get_job(job.job_id)


@pytest.mark.parametrize("api", ["v9", "v11"])
def test_each_finding_becomes_one_comment_and_reviewers_get_one_swarm_notification(
    moto_endpoint, aws_reset, mail, swarm, api
):
    service_cm, secret = _with_swarm(moto_endpoint, mail, swarm, P4REVIEW_SWARM_API=api)
    with service_cm as service:
        _store_secret(service, secret)
        job = reviewed_job(service)
        review_id = swarm.add_review(job.changelist_id)
        assert run_notify(job).ack
        stored = _job_status(job)
        assert stored.status == JobStatus.SUCCEEDED and stored.recipients_notified == stored.recipients_required
        comments = swarm.comments_for_review(review_id)
        findings = stored.summary.findings if stored.summary else None
        assert findings and len(comments) == findings + 1  # each finding, then the summary
        anchored = [c for c in comments if (c.get("context") or {}).get("file")]
        assert len(anchored) == findings and all(c["context"].get("rightLine") for c in anchored)
        assert swarm.notifications_for_review(review_id) == 1
        assert stored.swarm_comments_posted == stored.swarm_comments_required == findings + 2  # + the notification
        # The message comes again (a redelivery): nothing is posted twice.
        run_notify(job, worker="second")
        assert len(swarm.comments_for_review(review_id)) == findings + 1
        assert swarm.notifications_for_review(review_id) == 1


def test_swarm_failing_does_not_keep_the_email_from_going_out_and_the_retry_completes_it(
    moto_endpoint, aws_reset, mail, swarm
):
    service_cm, secret = _with_swarm(moto_endpoint, mail, swarm)
    with service_cm as service:
        _store_secret(service, secret)
        job = reviewed_job(service)
        review_id = swarm.add_review(job.changelist_id)
        # Swarm's next answers: two 500s, then a request carried out whose answer is lost.
        swarm.fail_next(2, "error")
        swarm.fail_next(1, "lost")
        assert not run_notify(job).ack  # retried later
        email_rows = [r for r in outbox_rows(job) if not is_swarm_row(r.recipient)]
        assert email_rows and all(r.notified_at for r in email_rows)  # the email went out anyway
        retries = [run_notify(job, worker=f"retry-{n}").ack for n in range(4)]
        assert True in retries and retries.index(True) <= 2  # the three faults spend at most three runs
        assert _job_status(job).status == JobStatus.SUCCEEDED
        markers = [c["body"].rsplit("\n", 1)[-1] for c in swarm.comments_for_review(review_id)]
        assert len(markers) == len(set(markers))  # the lost one was found by its marker, not re-posted
        assert swarm.notifications_for_review(review_id) == 1


def test_refused_swarm_credentials_fail_only_the_swarm_channel(moto_endpoint, aws_reset, mail, swarm):
    service_cm, _ = _with_swarm(moto_endpoint, mail, swarm)
    with service_cm as service:
        _store_secret(service, {"user": SWARM_USER, "ticket": "wrong"})  # Swarm answers 200 + Unauthorized
        job = reviewed_job(service)
        swarm.add_review(job.changelist_id)
        run_notify(job)
        stored = _job_status(job)
        assert stored.status != JobStatus.SUCCEEDED
        assert stored.stages["notify"].last_error_class == "AUTH_DENIED"
        email_rows = [r for r in outbox_rows(job) if not is_swarm_row(r.recipient)]
        assert email_rows and all(r.status == DeliveryStatus.SENT for r in email_rows)


def test_a_change_without_a_swarm_review_gets_none_unless_reviews_are_created(moto_endpoint, aws_reset, mail, swarm):
    service_cm, secret = _with_swarm(moto_endpoint, mail, swarm, P4REVIEW_SWARM_CREATE_REVIEWS="true")
    with service_cm as service:
        _store_secret(service, secret)
        job = reviewed_job(service)
        assert run_notify(job).ack
        review_id = swarm.review_for_change(job.changelist_id)
        assert review_id is not None and swarm.comments_for_review(review_id)
