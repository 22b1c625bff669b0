"""The whole pipeline on the embedded local stack: signed HTTP in, emails and Swarm comments out."""

from __future__ import annotations

import email
import email.policy
import html
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from p4review.change.redaction import redact
from p4review.cli.api_client import ReviewApiClient, default_idempotency_key
from p4review.models.job import ACTIVE_STATUSES
from p4review.notify.swarm.channel import NOTIFY_KEY, SWARM_ROW_PREFIX, is_swarm_row, swarm_row_key
from p4review.notify.swarm.comments import comment_marker, find_marker
from p4review_dev.demo import fixture_changes
from p4review_dev.stack import LocalStack, repo_root

pytestmark = pytest.mark.e2e
ACTIVE = frozenset(ACTIVE_STATUSES)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    local = LocalStack(tmp_path_factory.mktemp("stack"), visibility_timeouts={"fetch": 30, "review": 30, "notify": 30})
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def client(stack):
    return ReviewApiClient(stack.info.api_url, stack.signing_secret)


def _wait(client, job_ids, timeout=240):
    deadline = time.monotonic() + timeout
    jobs = {}
    while time.monotonic() < deadline:
        jobs = {job_id: client.get_job(job_id).body for job_id in job_ids}
        if all(job["status"] not in ACTIVE for job in jobs.values()):
            return jobs
        time.sleep(0.5)
    raise AssertionError(f"jobs still active: {[j['status'] for j in jobs.values()]}")


def _mailbox(stack):
    return [
        email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        for path in sorted(Path(stack.info.mailbox_dir).glob("*.eml"))
    ]


def _emails(job):
    """The job's email deliveries (its Swarm rows aside)."""
    return [delivery for delivery in job["deliveries"] if not is_swarm_row(delivery["recipient"])]


def _comment_rows(job):
    """The job's Swarm comment rows (each finding, the summary), the notification's aside."""
    return [
        delivery
        for delivery in job["deliveries"]
        if is_swarm_row(delivery["recipient"]) and delivery["recipient"] != swarm_row_key(NOTIFY_KEY)
    ]


def _users():
    return json.loads((repo_root() / "events" / "depot" / "users.json").read_text())


def _submit(client, change, version, key=None):
    return client.submit(
        changelist_id=change["change"],
        review_version=version,
        kind=change["kind"],
        idempotency_key=key or default_idempotency_key(change["kind"], change["change"], version),
        rerun=version > 1,
    )


@pytest.mark.spec("NOT-6", "NOT-7", "NOT-15", "NOT-17", "IDEM-8", "IDEM-9")
def test_every_fixture_is_reviewed_and_emailed_exactly_once(stack, client):
    submitted = []
    for change in fixture_changes():
        for version in range(1, change["review_versions"] + 1):
            answer = _submit(client, change, version)
            assert answer.status == 201, answer.body
            submitted.append((change, version, answer.body["job_id"]))
    jobs = _wait(client, [job_id for *_, job_id in submitted])
    assert {job["status"] for job in jobs.values()} == {"succeeded"}

    messages = _mailbox(stack)
    assert len(messages) == len(submitted)
    by_job = {message["X-P4Review-Job"]: message for message in messages}
    assert set(by_job) == {job_id for *_, job_id in submitted}
    for change, version, job_id in submitted:
        message = by_job[job_id]
        assert message["Subject"].startswith(f"[p4review] CL {change['change']} v{version}:")
        job = jobs[job_id]
        sent = [delivery for delivery in _emails(job) if delivery["status"] == "sent"]
        assert len(sent) == 1 and message["To"].lower() == sent[0]["recipient"]
        if change["change"] == 48261:
            # The owner's Email is Perforce's unverified `user@client` default: a failed row, not an
            # email; the UI tree's reviewers (the local stack's P4REVIEW_REVIEWERS) get the review.
            assert sorted(d["status"] for d in _emails(job)) == ["failed", "sent"]
            assert sent[0]["recipient"] == "ui-leads@northwind-games.example"
        else:
            assert [delivery["status"] for delivery in _emails(job)] == ["sent"]
        # The local stack's fake Swarm: each finding and the summary a comment on the change's
        # review (created by P4REVIEW_SWARM_CREATE_REVIEWS), found by its marker, none twice.
        comment_rows = _comment_rows(job)
        assert len(comment_rows) == job["summary"]["findings"] + 1
        assert all(row["status"] == "sent" for row in comment_rows)
        markers = [find_marker(c["body"]) for c in stack.swarm_server.comments_for_change(change["change"])]
        for row in comment_rows:
            key = row["recipient"][len(SWARM_ROW_PREFIX) :]
            assert markers.count(comment_marker(change["change"], version, key)) == 1, (change["change"], key)
        assert [stage["status"] for stage in job["stages"].values()] == ["completed"] * 3
        assert job["audit"][0]["event"] == "job_created"
        assert job["audit"][-1]["to_status"] == "succeeded"

    # Replays of every request, and a same-version request under a new key, send nothing.
    for change, version, job_id in submitted:
        replay = _submit(client, change, version)
        assert (replay.status, replay.body["job_id"]) == (200, job_id)
        assert replay.headers["x-p4review-replay"] == "idempotency-key"
    change, version, job_id = submitted[0]
    same_version = _submit(client, change, version, key="another-trigger-fire")
    assert (same_version.status, same_version.body["job_id"], same_version.body["status"]) == (200, job_id, "succeeded")
    time.sleep(3)
    assert len(_mailbox(stack)) == len(submitted)
    for change in fixture_changes():
        markers = [find_marker(c["body"]) for c in stack.swarm_server.comments_for_change(change["change"])]
        assert None not in markers and len(markers) == len(set(markers)), change["change"]
        # Every comment notified, and at most one notification per review version (two versions
        # notified at once share one: Swarm's notify sends all of the caller's delayed comments).
        assert stack.swarm_server.delayed_for_change(change["change"]) == 0, change["change"]
        assert 1 <= stack.swarm_server.notifications_for_change(change["change"]) <= change["review_versions"]


@pytest.mark.spec("RV-1")
def test_no_secret_from_the_credential_fixture_reaches_an_email(stack, client):
    change = next(item for item in fixture_changes() if "credential" in item["summary"].lower())
    answer = _submit(client, change, 1)
    job = _wait(client, [answer.body["job_id"]])[answer.body["job_id"]]
    assert job["summary"]["findings"] >= 1
    fixture_text = (repo_root() / "events" / "depot" / "changes" / f"{change['change']}.json").read_text()
    raw_emails = b"".join(path.read_bytes() for path in Path(stack.info.mailbox_dir).glob("*.eml"))
    assert b"BEGIN RSA PRIVATE KEY" not in raw_emails and b"PRIVATE KEY-----\n" not in raw_emails
    assert b"AKIA" not in raw_emails
    assert fixture_text  # the fixture exists; its secrets live in the depot archive, not in any email
    # Decoded as a mail client shows them (quoted-printable can split a value across lines), the
    # emails' parts hold nothing the redactor would take out; the code they show is the redacted one.
    for path in Path(stack.info.mailbox_dir).glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        for part in message.walk():
            if part.get_content_type() in ("text/plain", "text/html"):
                shown = html.unescape(part.get_content())
                assert redact(shown).counts == {}, (path.name, part.get_content_type())
    shown_for_change = _decoded_emails_for(stack, change["change"])
    assert "[REDACTED:" in shown_for_change and "+|" in shown_for_change
    # Nor a Swarm comment: its bodies and the flagged lines they anchor to are the redacted ones.
    comments = stack.swarm_server.comments_for_change(change["change"])
    assert len(comments) == job["summary"]["findings"] + 1
    for comment in comments:
        shown = "\n".join([comment["body"], *(comment.get("context") or {}).get("content", [])])
        assert redact(shown).counts == {} and "AKIA" not in shown, comment["id"]


def _decoded_emails_for(stack, changelist_id: int) -> str:
    texts = []
    for path in Path(stack.info.mailbox_dir).glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        if str(message["Subject"]).startswith(f"[p4review] CL {changelist_id} "):
            body = message.get_body(("plain",))
            texts.append(body.get_content() if body is not None else "")
    return "\n".join(texts)


@pytest.mark.spec("G-2", "NOT-3", "IDEM-3", "IDEM-4")
def test_fifty_concurrent_identical_requests_create_one_job_and_one_email(stack):
    barrier = threading.Barrier(50)
    request = {
        "changelist_id": 48220,
        "review_version": 7,
        "kind": "submitted",
        "idempotency_key": "concurrent-duplicates",
    }

    def post(_):
        own_client = ReviewApiClient(stack.info.api_url, stack.signing_secret)  # one connection each
        barrier.wait()
        return own_client.submit(rerun=True, **request)

    with ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(pool.map(post, range(50)))
    statuses = sorted(answer.status for answer in answers)
    assert statuses == [200] * 49 + [201]
    job_ids = {answer.body["job_id"] for answer in answers}
    assert len(job_ids) == 1
    job_id = job_ids.pop()
    client = ReviewApiClient(stack.info.api_url, stack.signing_secret)
    assert _wait(client, [job_id])[job_id]["status"] == "succeeded"
    versions = [message for message in _mailbox(stack) if message["X-P4Review-Job"] == job_id]
    assert len(versions) == 1


def test_dead_letter_queues_stay_empty_on_the_happy_path(stack):
    import boto3

    sqs = boto3.Session(region_name="us-east-1", aws_access_key_id="local", aws_secret_access_key="local").client(
        "sqs", endpoint_url=stack.info.aws_endpoint
    )
    for stage in ("fetch", "review", "notify"):
        url = stack.resources.queues[stage].dlq_url
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "0"


def _cli(*args):
    """Run the `p4review` CLI in its own process, as a Perforce trigger would."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "p4review.cli.main", *args], capture_output=True, text=True, timeout=180, check=False
    )


def test_cli_submit_prints_the_json_answer_and_exits_by_status(stack):
    common = [
        "--state-dir",
        stack.info.state_dir,
        "submit",
        "--api",
        stack.info.api_url,
        "--secret-file",
        stack.info.signing_secret_file,
    ]
    accepted = _cli(*common, "--change", "48213", "--version", "1", "--key", "cli-check")
    assert accepted.returncode == 0, accepted.stderr
    created = json.loads(accepted.stdout)
    assert created["changelist_id"] == 48213 and created["status"] in ACTIVE | {"succeeded"}

    # A higher version without --rerun is refused: non-zero exit, the error JSON on stdout.
    refused = _cli(*common, "--change", "48213", "--version", "9")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "rerun_not_requested"

    shown = _cli(
        "--state-dir",
        stack.info.state_dir,
        "jobs",
        "show",
        created["job_id"],
        "--api",
        stack.info.api_url,
        "--secret-file",
        stack.info.signing_secret_file,
        "--wait",
        "120",
    )
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["job_id"] == created["job_id"]


def test_cli_refuses_to_run_without_a_secret(stack, tmp_path):
    refused = _cli("--state-dir", str(tmp_path), "submit", "--api", stack.info.api_url, "--change", "1")
    assert refused.returncode != 0
    assert "signing secret" in refused.stderr
