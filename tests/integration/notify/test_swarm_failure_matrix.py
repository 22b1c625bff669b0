"""The Swarm comment channel's failure matrix, mirroring the email one
(test_notify_failure_matrix.py): a notify run killed right after each of its steps, the lease
running out, a second worker; and workers racing for the same message (real threads). Against
the fake Swarm over HTTP, a real SMTP server and the serialized moto server."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from p4review.models.job import JobStatus
from p4review.models.outbox import DeliveryStatus
from p4review.notify.swarm import client as swarm_adapter
from p4review.stores.factory import get_data_access
from p4review_dev.support.notify import local_mail, notify_service, outbox_rows, race_notify, reviewed_job, run_notify
from p4review_dev.swarm_server import FakeSwarmServer
from tests.integration.notify.test_notify_failure_matrix import (
    ProcessKilled,
    StepJournal,
    _journaled_run,
    _lease_runs_out,
)

SWARM_USER, SWARM_TICKET, SECRET_NAME = "p4review-swarm", "S" * 32, "p4review-test-swarm"


@pytest.fixture
def mail(tmp_path):
    with local_mail(tmp_path) as server:
        yield server


def _service(moto_endpoint, mail, swarm):
    env = {"P4REVIEW_SWARM_URL": swarm.url, "P4REVIEW_SWARM_SECRET_ID": SECRET_NAME}
    return notify_service(moto_endpoint, mail, extra_env=env)


def _prepared_job(service, swarm):
    service.client("secretsmanager").create_secret(
        Name=SECRET_NAME, SecretString=json.dumps({"user": SWARM_USER, "ticket": SWARM_TICKET})
    )
    job = reviewed_job(service)
    return job, swarm.add_review(job.changelist_id)


def _journal_swarm(journal: StepJournal, monkeypatch) -> None:
    real = swarm_adapter.SwarmClient
    monkeypatch.setattr(swarm_adapter, "SwarmClient", lambda *a, **k: journal.wrap("swarm", real(*a, **k)))


def _markers(swarm, review_id) -> Counter:
    return Counter(c["body"].rsplit("\n", 1)[-1] for c in swarm.comments_for_review(review_id))


@pytest.mark.spec("SW-2", "SW-3")
def test_a_worker_killed_between_any_two_steps_posts_every_comment_exactly_once(
    moto_endpoint, local_aws_server, aws_reset, mail, monkeypatch
):
    """Every kill point: each comment on the review once (a post whose mark was lost is found by
    its marker); the one Swarm notification once, except a kill between sending it and marking
    its row, which sends it again (Swarm cannot say whether it went out: docs/swarm.md)."""
    with (
        FakeSwarmServer(user=SWARM_USER, ticket=SWARM_TICKET) as swarm,
        _service(moto_endpoint, mail, swarm) as service,
    ):
        job, review_id = _prepared_job(service, swarm)
        clean = StepJournal()
        _journal_swarm(clean, monkeypatch)
        assert _journaled_run(job, clean, monkeypatch, "observer").ack
        comments = sum(_markers(swarm, review_id).values())
    steps = clean.steps
    assert steps.count("swarm.post_comment") == comments and steps.count("swarm.send_notifications") == 1
    outcomes = {}
    for kill_after in range(1, len(steps) + 1):
        local_aws_server.reset()
        mail.clear()
        point = f"{kill_after}:{steps[kill_after - 1]}"
        with (
            FakeSwarmServer(user=SWARM_USER, ticket=SWARM_TICKET) as swarm,
            _service(moto_endpoint, mail, swarm) as service,
        ):
            job, review_id = _prepared_job(service, swarm)
            journal = StepJournal(kill_after)
            _journal_swarm(journal, monkeypatch)
            with pytest.raises(ProcessKilled):
                _journaled_run(job, journal, monkeypatch, "doomed")
            _lease_runs_out(service, job)
            recovered = run_notify(job, "survivor")
            if not recovered.ack:  # the kill came before the job record said so; one more delivery
                recovered = run_notify(job, "survivor")
            assert recovered.ack, point
            assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED, point
            assert all(row.status == DeliveryStatus.SENT for row in outbox_rows(job)), point
            markers = _markers(swarm, review_id)
            outcomes[point] = (len(markers), max(markers.values()), swarm.notify_calls(review_id))
    assert {p: o for p, o in outcomes.items() if o[:2] != (comments, 1)} == {}  # none lost, none twice
    notified_twice = {p for p, o in outcomes.items() if o[2] != 1}
    assert notified_twice == {p for p in outcomes if p.endswith(":swarm.send_notifications")}


@pytest.mark.spec("SW-2")
def test_workers_racing_for_the_same_message_post_each_comment_once(moto_endpoint, aws_reset, mail):
    with (
        FakeSwarmServer(user=SWARM_USER, ticket=SWARM_TICKET) as swarm,
        _service(moto_endpoint, mail, swarm) as service,
    ):
        job, review_id = _prepared_job(service, swarm)
        dispositions = race_notify(job)
        assert len(dispositions) == 4 and sum(d.ack for d in dispositions) >= 1
        markers = _markers(swarm, review_id)
        assert markers and max(markers.values()) == 1 and swarm.notify_calls(review_id) == 1
