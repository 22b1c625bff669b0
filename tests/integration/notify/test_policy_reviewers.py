"""The reviewers and the edits of a depot policy file (.p4review.toml) through fetch, review and
notify, on the fake p4 and a real SMTP server on loopback: a reviewer outside the allowed domains
is never emailed and is named (by domain) in the email and on the job; a change that brings its
own policy is reviewed under the one before it, and the email says it changes the policy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from p4review.models.outbox import DeliveryStatus
from p4review.stores.factory import get_data_access
from p4review_dev.smtp_server import LocalMailServer
from p4review_dev.stack import repo_root, write_fake_p4_wrapper
from p4review_dev.support.notify import (
    RELAY_PASSWORD,
    RELAY_USER,
    notify_service,
    outbox_rows,
    reviewed_job,
    run_notify,
)

NET = "//depot/engine/main/src/net"
UPLOADER = "//depot/tools/main/uploader"


@pytest.fixture
def mail(tmp_path):
    server = LocalMailServer(tmp_path / "mailbox", username=RELAY_USER, password=RELAY_PASSWORD)
    server.start()
    yield server
    server.stop()


def _depot(tmp_path: Path) -> Path:
    depot = tmp_path / "depot"
    shutil.copytree(repo_root() / "events" / "depot", depot)
    return depot


def _archive(depot: Path, path: str, rev: int, data: bytes) -> None:
    folder = depot / "archive" / (path[2:] + ",d")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(rev)).write_bytes(data)


def _p4(tmp_path: Path, depot: Path) -> dict[str, str]:
    return {"P4REVIEW_P4_EXECUTABLE": str(write_fake_p4_wrapper(tmp_path / "bin" / "p4", {"P4FAKE_DEPOT": str(depot)}))}


def _text(message) -> str:
    return " ".join(message.parsed().get_body(preferencelist=("plain",)).get_content().split())


@pytest.mark.spec("RV-15")
def test_a_policy_reviewer_outside_the_owners_domain_is_never_emailed(tmp_path, moto_endpoint, aws_reset, mail):
    depot = _depot(tmp_path)
    # In force before 48213 (no fixture change lists it): the owner's domain and an outside one.
    reviewers = b'version = 1\nreviewers = ["net-leads@northwind-games.example", "someone@outside.example"]\n'
    _archive(depot, f"{NET}/.p4review.toml", 1, reviewers)
    with notify_service(moto_endpoint, mail, extra_env=_p4(tmp_path, depot)) as service:
        job = reviewed_job(service, 48213)
        assert run_notify(job).ack
        messages = mail.messages()  # one email per recipient
        assert sorted(r for m in messages for r in m.recipients) == [
            "dariusz.kowalski@northwind-games.example",
            "net-leads@northwind-games.example",
        ]
        message = messages[0]
        assert not any(b"someone@outside.example" in m.raw() for m in messages)
        assert (
            f"Review policy {NET}/.p4review.toml: reviewers at outside.example not emailed: "
            "not an allowed recipient domain." in _text(message)
        )
        refused = [row for row in outbox_rows(job) if row.recipient == "someone@outside.example"]
        assert [(row.status, row.last_error, row.notified_at) for row in refused] == [
            (DeliveryStatus.FAILED, "domain_not_allowed", None)
        ]
        stored = get_data_access().jobs.get_job(job.job_id)
        assert stored is not None and stored.status.value == "succeeded"
        assert [(d.source, d.reason) for d in stored.policy_diagnostics or []] == [
            (f"{NET}/.p4review.toml", "reviewer_not_allowed")
        ]


@pytest.mark.spec("RV-15")
def test_a_change_that_brings_its_own_policy_is_reviewed_under_the_one_before_it(
    tmp_path, moto_endpoint, aws_reset, mail
):
    """Issue 27: this change was reviewed with 0 files in scope, and its outside reviewer got a copy."""
    depot = _depot(tmp_path)
    policy = f"{UPLOADER}/.p4review.toml"
    _archive(depot, policy, 1, b'version = 1\nignore = ["**"]\nreviewers = ["someone@outside.example"]\n')
    _archive(depot, f"{UPLOADER}/upload.py", 1, b"import subprocess\nsubprocess.call(cmd, shell=True)\n")
    change = {
        "change": 48300,
        "user": "pnair",
        "client": "pnair-tools-main",
        "time": 1716400000,
        "status": "submitted",
        "desc": "uploader: a review policy of its own\n",
        "files": [
            {"depotFile": policy, "action": "add", "type": "text", "rev": 1},
            {"depotFile": f"{UPLOADER}/upload.py", "action": "add", "type": "text", "rev": 1},
        ],
    }
    (depot / "changes" / "48300.json").write_text(json.dumps(change))
    with notify_service(moto_endpoint, mail, extra_env=_p4(tmp_path, depot)) as service:
        job = reviewed_job(service, 48300)
        assert run_notify(job).ack
        [message] = mail.messages()
        assert list(message.recipients) == ["priya.nair@northwind-games.example"]
        text = _text(message)
        assert f"This change modifies the review policy at {policy}; it takes effect for later changes." in text
        assert "Files reviewed (2):" in text and "ignored_by_policy" not in text
        assert job.policy_changes == [policy]  # on the job too
