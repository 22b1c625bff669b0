"""Helpers for notify-stage tests: a provisioned service whose SMTP secret points at a local
mailbox, a job whose fetch and review stages already ran, and one notify run."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from p4review.models.job import StageName
from p4review.models.messages import StageMessage
from p4review.models.outbox import OutboxRow
from p4review.notify.settings import NotifySettings
from p4review.notify.stage import NotifyWork
from p4review.pipeline.stage_runner import Disposition, run_stage
from p4review.review.settings import ReviewSettings
from p4review.review.setup import build_review_work
from p4review.stores.factory import get_data_access
from p4review_dev.smtp_server import LocalMailServer
from p4review_dev.support.harness import drain, fetch_work, new_job, provisioned_service, run_through

RELAY_USER = "relay"
RELAY_PASSWORD = "relay-password"
FROM_ADDRESS = "p4review@example.test"


def notify_service(moto_endpoint, mail, password=RELAY_PASSWORD, extra_env=None):
    """provisioned_service() whose SMTP secret names `mail` (a LocalMailServer)."""
    return provisioned_service(
        moto_endpoint,
        smtp={
            "host": "127.0.0.1",
            "port": mail.port,
            "tls_mode": "none",
            "username": RELAY_USER,
            "password": password,
            "from_address": FROM_ADDRESS,
        },
        extra_env=extra_env,
    )


def reviewed_job(service, changelist_id=48213):
    """A job whose fetch and review stages completed (default: change 48213, owner dkowalski)."""
    job = run_through(
        new_job("notify-test", changelist_id),
        fetch_work(),
        build_review_work(ReviewSettings.from_env(), get_data_access()),
    )
    sqs = service.client("sqs")
    for stage in StageName:
        drain(sqs, service.resources.queue_for_stage(stage).url)
    return job


def notify_work(outbox=None) -> NotifyWork:
    dal = get_data_access()
    return NotifyWork(NotifySettings.from_env(), dal.redacted_artifacts, outbox or dal.outbox, dal.secrets)


def run_notify(job, worker="notifier", *, work=None, jobs=None, lease_seconds=60) -> Disposition:
    dal = get_data_access()
    return run_stage(
        StageMessage(job_id=job.job_id, stage=StageName.NOTIFY),
        work or notify_work(),
        jobs=jobs or dal.jobs,
        queues=dal.queues,
        worker_id=worker,
        lease_seconds=lease_seconds,
    )


def outbox_rows(job) -> list[OutboxRow]:
    return get_data_access().outbox.rows_for_version(job.changelist_id, job.review_version)


def notify_dead_letters(service) -> list[dict]:
    sqs = service.client("sqs")
    return [json.loads(m["Body"]) for m in drain(sqs, service.resources.queue_for_stage(StageName.NOTIFY).dlq_url)]


def reviewers_env(*rules) -> dict[str, str]:
    """P4REVIEW_REVIEWERS from (prefix, [addresses]) pairs."""
    return {
        "P4REVIEW_REVIEWERS": json.dumps(
            [{"prefix": prefix, "reviewers": list(reviewers)} for prefix, reviewers in rules]
        )
    }


@contextmanager
def local_mail(folder: Path) -> Iterator[LocalMailServer]:
    """A relay on loopback that takes RELAY_USER / RELAY_PASSWORD and answers lookups."""
    server = LocalMailServer(folder / "mailbox", username=RELAY_USER, password=RELAY_PASSWORD)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def race_notify(job, workers: int = 4) -> list[Disposition]:
    """SQS delivered the notify message to `workers` workers at once (real threads)."""
    start = threading.Barrier(workers)
    dispositions: list[Disposition] = []

    def worker(name: str) -> None:
        start.wait()
        dispositions.append(run_notify(job, name))

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return dispositions
