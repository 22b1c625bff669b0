"""The Perforce trigger in front of the whole local stack: an API outage loses nothing, and a
drain killed mid-send causes no second review and no second email."""

from __future__ import annotations

import email
import email.policy
import email.utils
import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from p4review.cli.api_client import ReviewApiClient
from p4review.models.job import ACTIVE_STATUSES, job_id_for
from p4review.notify.swarm.channel import is_swarm_row
from p4review_dev.stack import LocalStack, repo_root, write_fake_p4_wrapper
from p4review_dev.trigger_host import FrontDoor, TriggerHost, trigger_file

pytestmark = pytest.mark.e2e
ACTIVE = frozenset(ACTIVE_STATUSES)
SUBMIT_TEMPLATES = (48213, 48220, 48234, 48270)
FIRST_CHANGE = 810_001
SUBMITS, SHELVES = 24, 6


def _build_depot(target: Path) -> tuple[list[int], list[int]]:
    """The fixture depot plus SUBMITS copies of submitted changes and SHELVES pending changes
    shelved with 48240's second shelf (its blobs copied under each new change number)."""
    shutil.copytree(repo_root() / "events" / "depot", target)
    templates = [json.loads((target / "changes" / f"{n}.json").read_text()) for n in SUBMIT_TEMPLATES]
    submits = [FIRST_CHANGE + index for index in range(SUBMITS)]
    for index, number in enumerate(submits):
        (target / "changes" / f"{number}.json").write_text(
            json.dumps(dict(templates[index % len(templates)], change=number))
        )
    shelved = json.loads((target / "changes" / "48240.json").read_text())
    shelf = shelved["shelf_versions"][1]
    shelves = [FIRST_CHANGE + SUBMITS + index for index in range(SHELVES)]
    for number in shelves:
        (target / "changes" / f"{number}.json").write_text(
            json.dumps(dict(shelved, change=number, shelf_versions=[dict(shelf, version=1)]))
        )
        for entry in shelf["files"]:
            parts = entry["depotFile"][2:].split("/")
            folder = target / "archive" / Path(*parts[:-1]) / (parts[-1] + ",d")
            shutil.copy(folder / "shelf-48240-v2", folder / f"shelf-{number}-v1")
    return submits, shelves


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("trigger-outage")
    submits, shelves = _build_depot(root / "depot")
    # The service's own p4 reads the same depot.
    fetch_p4 = write_fake_p4_wrapper(root / "fetch-p4", {"P4FAKE_DEPOT": str(root / "depot")})
    stack = LocalStack(
        root / "stack",
        extra_env={"P4REVIEW_P4_EXECUTABLE": str(fetch_p4)},
        visibility_timeouts={"fetch": 30, "review": 30, "notify": 30},
    )
    stack.start()
    api = urlsplit(stack.info.api_url)
    door = FrontDoor(api.port)
    door.open()
    try:
        yield {
            "root": root,
            "stack": stack,
            "door": door,
            "stage": api.path.strip("/"),
            "submits": submits,
            "shelves": shelves,
            "client": ReviewApiClient(stack.info.api_url, stack.signing_secret),
        }
    finally:
        door.close()
        stack.stop()


def _host(world, name: str, **kwargs) -> TriggerHost:
    return TriggerHost(
        world["root"] / name,
        api_url=world["door"].url(world["stage"]),
        signing_secret=world["stack"].signing_secret,
        depot=world["root"] / "depot",
        **kwargs,
    )


def _wait_for_jobs(client: ReviewApiClient, job_ids: list[str], timeout: float = 300) -> dict[str, dict]:
    deadline = time.monotonic() + timeout
    while True:
        jobs = {job_id: client.get_job(job_id).body for job_id in job_ids}
        if all(isinstance(job, dict) and job.get("status") not in ACTIVE for job in jobs.values()):
            return jobs
        assert time.monotonic() < deadline, Counter(str(job.get("status")) for job in jobs.values())
        time.sleep(0.5)


def _emails(stack: LocalStack) -> Counter:
    """(job id, recipient address) of every email in the mailbox."""
    found: Counter = Counter()
    for path in Path(stack.info.mailbox_dir).glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        found[(str(message["X-P4Review-Job"]), email.utils.parseaddr(str(message["To"]))[1])] += 1
    return found


def _no_senders_left(host: TriggerHost, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while subprocess.run(["pgrep", "-f", f"{host.config} --send"], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "a detached sender is still running"
        time.sleep(0.2)


@pytest.mark.spec("TRG-5")
def test_an_api_outage_loses_nothing_and_reviews_each_change_once(world):
    # One drain run for all 30 events: its 50-second default budget (the timer starts another run a
    # minute later) is not what this test is about, and a busy 2-core machine can need more.
    host = _host(world, "outage", extra_config={"DRAIN_MAX_SECONDS": "600"})
    world["door"].close()  # the API is down
    try:
        statuses = [host.fire("change-commit", number)[0] for number in world["submits"]]
        for number in world["shelves"]:
            host.set_shelf_version(1)
            statuses.append(host.fire("shelve-commit", number)[0])
        assert statuses == [0] * (SUBMITS + SHELVES)  # no user's command failed
        _no_senders_left(host)  # each trigger's sender tried the API and gave up
        pending = host.events("pending")
        assert len(pending) == SUBMITS + SHELVES and host.events("done") == host.events("rejected") == []
        assert any(event.get("last_error", "").startswith("unreachable: connection refused") for event in pending)
    finally:
        world["door"].open()  # the API is back
    drained = host.drain()
    assert drained.returncode == 0, drained.stderr
    done = host.events("done")
    assert len(done) == SUBMITS + SHELVES and host.events("pending") == [] and host.events("rejected") == []
    assert {event["outcome"]["status"] for event in done} == {201}
    job_ids = [event["outcome"]["job_id"] for event in done]
    jobs = _wait_for_jobs(world["client"], job_ids)
    assert Counter(job["status"] for job in jobs.values()) == {"succeeded": SUBMITS + SHELVES}
    emails = _emails(world["stack"])
    for job_id, job in jobs.items():
        sent = [d["recipient"] for d in job["deliveries"] if d["status"] == "sent" and not is_swarm_row(d["recipient"])]
        assert sent, job["changelist_id"]
        for recipient in sent:
            assert emails[(job_id, recipient)] == 1
    # Draining again (the timer's next run) sends nothing more.
    assert host.drain().returncode == 0 and len(host.events("done")) == SUBMITS + SHELVES


def test_a_drain_killed_mid_send_makes_no_second_review_or_email(world):
    host = _host(world, "killed", send_mode="spool-only")
    number = world["submits"][0] + 100_000  # a change of its own: copy one
    depot = world["root"] / "depot"
    template = json.loads((depot / "changes" / f"{world['submits'][0]}.json").read_text())
    (depot / "changes" / f"{number}.json").write_text(json.dumps(dict(template, change=number)))
    assert host.fire("change-commit", number)[0] == 0
    job_id = job_id_for(f"p4-submitted-{number}-v1")
    door = world["door"]
    door.hold_answers.set()  # the API acts, its answer waits at the door
    drain = subprocess.Popen(
        [sys.executable, str(trigger_file()), "-c", str(host.config), "--drain"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not world["client"].get_job(job_id).ok:
            assert time.monotonic() < deadline, "the request never reached the API"
            time.sleep(0.1)
        drain.send_signal(signal.SIGKILL)  # the drain dies before hearing the 201
        drain.wait(timeout=30)
    finally:
        door.hold_answers.clear()
    assert len(host.events("pending")) == 1  # it never learned: the event is still spooled
    again = host.drain()
    assert again.returncode == 0, again.stderr
    [done] = host.events("done")
    assert (done["outcome"]["status"], done["outcome"]["replay"]) == (200, "idempotency-key")
    [job] = _wait_for_jobs(world["client"], [job_id]).values()
    assert job["status"] == "succeeded"
    emails = _emails(world["stack"])
    sent = [d["recipient"] for d in job["deliveries"] if d["status"] == "sent" and not is_swarm_row(d["recipient"])]
    assert sent and all(emails[(job_id, recipient)] == 1 for recipient in sent)
