"""Notify with the Swarm comment channel beside email, against the fake Swarm (real HTTP on
loopback), a real SMTP server and the serialized moto server: every finding a comment at its
file and line, a summary, one Swarm notification, nothing twice, and neither channel keeping
the other from delivering."""

from __future__ import annotations

import json

import pytest

from p4review.errors import ErrorClass, NonRetryableError, RetryableError
from p4review.ingest.service import create_review
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, StageName, SwarmTestRef
from p4review.models.outbox import DeliveryStatus
from p4review.notify import stage as notify_module
from p4review.notify.settings import NotifySettings
from p4review.notify.swarm.access import swarm_url
from p4review.notify.swarm.channel import is_swarm_row
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import drain, fetch_work, run_through
from p4review_dev.support.notify import (
    local_mail,
    notify_service,
    outbox_rows,
    reviewed_job,
    run_notify,
)
from p4review_dev.swarm_server import FakeSwarmServer

SWARM_USER, SWARM_TICKET = "p4review-swarm", "S" * 32
SECRET_NAME = "p4review-test-swarm"


@pytest.fixture
def mail(tmp_path):
    with local_mail(tmp_path) as server:
        yield server


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


@pytest.mark.spec("SW-1")
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


@pytest.mark.spec("SW-4")
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


@pytest.mark.spec("SW-4")
def test_refused_swarm_credentials_fail_only_the_swarm_channel(moto_endpoint, aws_reset, mail, swarm):
    service_cm, _ = _with_swarm(moto_endpoint, mail, swarm)
    with service_cm as service:
        _store_secret(service, {"user": SWARM_USER, "ticket": "wrong"})  # Swarm answers 401 Unauthorized
        job = reviewed_job(service)
        swarm.add_review(job.changelist_id)
        run_notify(job)
        stored = _job_status(job)
        assert stored.status != JobStatus.SUCCEEDED
        assert stored.stages["notify"].last_error_class == "AUTH_DENIED"
        email_rows = [r for r in outbox_rows(job) if not is_swarm_row(r.recipient)]
        assert email_rows and all(r.status == DeliveryStatus.SENT for r in email_rows)


@pytest.mark.spec("SW-6")
def test_a_change_without_a_swarm_review_gets_none_unless_reviews_are_created(moto_endpoint, aws_reset, mail, swarm):
    service_cm, secret = _with_swarm(moto_endpoint, mail, swarm, P4REVIEW_SWARM_CREATE_REVIEWS="true")
    with service_cm as service:
        _store_secret(service, secret)
        job = reviewed_job(service)
        assert run_notify(job).ack
        review_id = swarm.review_for_change(job.changelist_id)
        assert review_id is not None and swarm.comments_for_review(review_id)


# ---- the workflow test's verdict ----------------------------------------------------------------

SWARM_HOST = "https://swarm.example.test"


UPDATE_URL = f"{SWARM_HOST}/api/v10/testruns/7/TOKEN"


def _swarm_test_job(service, changelist_id=48213, *, review_id=4242, version=1, urls=None, update=True):
    """A reviewed job that a Swarm workflow test asked for (its callbacks on the job): Swarm's own
    callback URLs (TestExecutor::generateCallbackUrls), {update} included unless `update=False`."""
    dal = get_data_access()
    urls = urls or {
        "pass": f"{SWARM_HOST}/api/v10/testruns/7/pass/TOKEN",
        "fail": f"{SWARM_HOST}/api/v10/testruns/7/fail/TOKEN",
        "update": UPDATE_URL,
    }
    ref = SwarmTestRef(
        review_id=review_id,
        version=version,
        change=changelist_id,
        status="submitted",
        pass_url=urls["pass"],
        fail_url=urls["fail"],
        update_url=urls["update"] if update else None,
    )
    request = CreateReviewRequest(
        idempotency_key=f"swarm-test-{review_id}-v{version}",
        changelist_id=changelist_id,
        review_version=version,
        kind="submitted",
    )
    job = create_review(request, jobs=dal.jobs, queues=dal.queues, request_id=None, swarm_test=ref).job
    job = run_through(job, fetch_work(), build_review_work(ReviewSettings.from_env(), dal))
    sqs = service.client("sqs")
    for stage in StageName:
        drain(sqs, service.resources.queue_for_stage(stage).url)
    return job


@pytest.fixture
def callbacks(monkeypatch):
    """The verdict POSTs notify makes (the callback is Swarm's, not the fake's)."""
    sent: list = []
    failures: list[Exception] = []

    def post(request, settings):
        if failures:
            raise failures.pop(0)
        sent.append(request)

    monkeypatch.setattr(notify_module, "post_test_verdict", post)
    return sent, failures


@pytest.mark.spec("SW-8")
def test_the_verdict_goes_to_swarm_once_and_fails_on_high_findings(moto_endpoint, aws_reset, mail, callbacks):
    sent, failures = callbacks
    with notify_service(moto_endpoint, mail, extra_env={"P4REVIEW_SWARM_URL": SWARM_HOST}) as service:
        job = _swarm_test_job(service)  # 48213 has high findings
        failures.append(RetryableError("Swarm callback timed out"))
        assert not run_notify(job).ack  # the callback deferred: retried
        assert run_notify(job, worker="retry").ack
        run_notify(job, worker="redelivered")
        # One POST to {update}: status, summary and link together (TestRunApi::updateWithUuid).
        assert [request.url for request in sent] == [UPDATE_URL]
        body = json.loads(sent[0].body)
        assert body["status"] == "fail" and body["messages"][0].startswith("p4review:")
        assert _job_status(job).swarm_test_verdict == "fail"


@pytest.mark.spec("SW-8")
def test_the_verdict_passes_when_nothing_reaches_the_threshold(moto_endpoint, aws_reset, mail, callbacks):
    sent, _ = callbacks
    env = {"P4REVIEW_SWARM_URL": SWARM_HOST, "P4REVIEW_SWARM_TEST_FAIL_AT": "never"}
    with notify_service(moto_endpoint, mail, extra_env=env) as service:
        job = _swarm_test_job(service, update=False)
        assert run_notify(job).ack
        # Without {update}: the {pass} URL, the link as a form field (Swarm reads no JSON there).
        assert [request.url for request in sent] == [f"{SWARM_HOST}/api/v10/testruns/7/pass/TOKEN"]
        assert sent[0].body == f"url={SWARM_HOST.replace(':', '%3A').replace('/', '%2F')}".encode()


@pytest.mark.spec("SW-4")
def test_a_refused_verdict_is_a_failed_row_and_the_email_still_goes_out(moto_endpoint, aws_reset, mail, callbacks):
    _, failures = callbacks
    with notify_service(moto_endpoint, mail, extra_env={"P4REVIEW_SWARM_URL": SWARM_HOST}) as service:
        job = _swarm_test_job(service)
        failures.append(NonRetryableError("Swarm callback answered HTTP 404", error_class=ErrorClass.POLICY_DENIED))
        assert run_notify(job).ack  # dead-lettered: trying again cannot help
        rows = {row.recipient: row for row in outbox_rows(job)}
        assert rows["swarm:verdict"].status == DeliveryStatus.FAILED
        assert all(row.notified_at for name, row in rows.items() if not is_swarm_row(name))
        assert _job_status(job).status == JobStatus.DEAD_LETTERED


@pytest.mark.spec("SW-6")
def test_without_a_configured_url_swarm_is_found_from_the_servers_property(moto_endpoint, aws_reset, mail):
    with notify_service(moto_endpoint, mail):
        settings = NotifySettings.from_env()
        assert settings.swarm_url is None
        assert swarm_url(settings, get_data_access().secrets) == "https://swarm.northwind-games.example"
        configured = settings.model_copy(update={"swarm_url": "https://swarm.other.example"})
        assert swarm_url(configured, get_data_access().secrets) == "https://swarm.other.example"


@pytest.mark.spec("SW-1")
@pytest.mark.parametrize("api", ["v9", "v11"])
def test_a_workflow_test_job_comments_on_its_review_at_the_version_asked_and_swarm_records_the_verdict(
    moto_endpoint, aws_reset, mail, swarm, api
):
    """The review is the one Swarm's test named, the comments sit on the version it asked about (not
    the latest), and the verdict reaches Swarm's test run through the strict fake's {update} URL."""
    review_id = swarm.add_review(48213, versions=3)
    run = swarm.add_test_run(review_id, version=2)
    service_cm, secret = _with_swarm(moto_endpoint, mail, swarm, P4REVIEW_SWARM_API=api)
    with service_cm as service:
        _store_secret(service, secret)
        job = _swarm_test_job(service, review_id=review_id, version=2, urls=run)
        assert run_notify(job).ack
        comments = swarm.comments_for_review(review_id)
        anchored = [comment for comment in comments if comment["context"]]
        assert anchored and all(comment["context"]["version"] == 2 for comment in anchored)
        assert swarm.notifications_for_review(review_id) == 1
        test_run = swarm.test_run(int(run["id"]))
        assert test_run["status"] == "fail" and test_run["messages"][0].startswith("p4review:")
        assert test_run["url"] == swarm.url
