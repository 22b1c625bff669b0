"""Test harness: provision the service's resources on the session's moto server and
point the real functions at them."""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from p4review import faults
from p4review import resources as spec
from p4review.fetch.settings import FetchSettings
from p4review.fetch.stage import FetchWork
from p4review.ingest.service import create_review
from p4review.models.api import CreateReviewRequest
from p4review.models.job import ReviewJob
from p4review.models.messages import StageMessage
from p4review.pipeline.stage_runner import Disposition, StageWork, run_stage
from p4review.stores.factory import get_data_access, reset_data_access
from p4review_dev.provision import LocalResources, provision
from p4review_dev.stack import write_fake_p4_wrapper
from p4review_dev.support.aws import moto_client, shared_session

REGION = "us-east-1"


@cache
def fake_p4() -> str:
    """The fake p4 behind a wrapper that starts it with this interpreter: through a version-manager
    shim each p4 call would cost a tenth of a second or more."""
    directory = tempfile.mkdtemp(prefix="p4review-fake-p4-")
    atexit.register(shutil.rmtree, directory, True)
    return str(write_fake_p4_wrapper(Path(directory) / "p4", {}))


def p4_commands(log_file: Path) -> list[list[str]]:
    """Each p4 invocation the fake logged (P4FAKE_LOG) as one argument list: an argument file's
    lines (`-x ARGFILE`) follow the command's own arguments, where p4 puts them, and the `-x`
    option and the file's (temporary) name are left out."""
    if not log_file.exists():
        return []
    commands = []
    for line in log_file.read_text().splitlines():
        entry = json.loads(line)
        argv: list[str] = entry["argv"]
        if "-x" in argv:
            at = argv.index("-x")
            argv = argv[:at] + argv[at + 2 :] + entry["argfile"]
        commands.append(argv)
    return commands


@dataclass
class Provisioned:
    resources: LocalResources
    signing_secret: str
    env: dict[str, str]
    endpoint: str

    def client(self, service: str) -> Any:
        return moto_client(service, self.endpoint)


@contextmanager
def provisioned_service(
    endpoint: str,
    *,
    environment: str = "test",
    smtp: dict | None = None,
    extra_env: dict[str, str] | None = None,
    llm_key: str | None = None,
) -> Iterator[Provisioned]:
    """Provision every resource, export the functions' environment, restore it afterwards.
    `llm_key`: the LLM secret's API key, for a provider that reads one (openai, anthropic)."""
    signing_secret = secrets.token_urlsafe(24)
    resources = provision(
        shared_session(),
        environment,
        endpoint_url=endpoint,
        region=REGION,
        secret_values={
            spec.SIGNING_SECRET.key: signing_secret,
            spec.SMTP_SECRET.key: smtp
            or {"host": "127.0.0.1", "port": 1, "tls_mode": "none", "from_address": "p4review@example.test"},
            spec.LLM_SECRET.key: {"api_key": llm_key} if llm_key else {"provider": "offline"},
            spec.P4_SECRET.key: {"P4PORT": "ssl:perforce.test:1666", "P4USER": "p4review-bot", "P4TICKET": "T" * 32},
        },
    )
    env = {
        **resources.env(),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "P4REVIEW_P4_EXECUTABLE": fake_p4(),
        "P4REVIEW_SECRET_CACHE_SECONDS": "0",
        **(extra_env or {}),
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    reset_data_access()
    faults.reset()  # the fault plan is re-read from the environment too
    try:
        yield Provisioned(resources=resources, signing_secret=signing_secret, env=env, endpoint=endpoint)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset_data_access()
        faults.reset()  # the fault plan is re-read from the environment too


def drain(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Receive (and delete) everything currently visible on a queue."""
    messages: list[dict[str, Any]] = []
    while True:
        answer = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        batch = answer.get("Messages", [])
        if not batch:
            return messages
        for message in batch:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        messages.extend(batch)


def new_job(idempotency_key: str, changelist_id: int, review_version: int = 1, kind: str = "submitted") -> ReviewJob:
    """A job created through the ingest service's own path, as a signed POST would create it."""
    dal = get_data_access()
    request = CreateReviewRequest(
        idempotency_key=idempotency_key, changelist_id=changelist_id, review_version=review_version, kind=kind
    )
    return create_review(request, jobs=dal.jobs, queues=dal.queues, request_id=None).job


def fetch_work(**settings: object) -> FetchWork:
    """`settings`: FetchSettings fields to override (e.g. review_generated=True)."""
    dal = get_data_access()
    return FetchWork(
        FetchSettings.from_env().model_copy(update=settings), dal.raw_artifacts, dal.redacted_artifacts, dal.secrets
    )


def run_once(job: ReviewJob, work: StageWork, worker_id: str = "setup") -> tuple[Disposition, ReviewJob]:
    """One delivery of `work.stage`'s message for `job` through the shared runtime: what the
    runtime answered the event source, and the job as stored afterwards."""
    dal = get_data_access()
    message = StageMessage(job_id=job.job_id, stage=work.stage)
    disposition = run_stage(message, work, jobs=dal.jobs, queues=dal.queues, worker_id=worker_id, lease_seconds=60)
    stored = dal.jobs.get_job(job.job_id)
    assert stored is not None
    return disposition, stored


def run_through(job: ReviewJob, *works: StageWork, worker_id: str = "setup") -> ReviewJob:
    """Run each stage's work for `job` through the shared runtime, in order; each must be
    acknowledged. Returns the job as stored afterwards."""
    for work in works:
        disposition, job = run_once(job, work, worker_id)
        assert disposition.ack, (work.stage, disposition.reason)
    return job


def fetched_job(idempotency_key: str, changelist_id: int, **settings: object) -> ReviewJob:
    """A new job for `changelist_id` (version 1, submitted) whose fetch stage completed."""
    return run_through(new_job(idempotency_key, changelist_id), fetch_work(**settings), worker_id="fetcher")


@contextmanager
def ingest_api(service: Provisioned) -> Iterator[Provisioned]:
    """The real ingest function behind the local API front, on a provisioned service: the
    service gains `gateway`, `api` (a signing client) and `sqs`."""
    from p4review.cli.api_client import ReviewApiClient
    from p4review_dev.http_front import LocalApiGateway
    from p4review_dev.stack import load_function

    gateway = LocalApiGateway(load_function("ingest").lambda_handler)
    gateway.start()
    try:
        service.gateway = gateway  # type: ignore[attr-defined]
        service.api = ReviewApiClient(gateway.url, service.signing_secret)  # type: ignore[attr-defined]
        service.sqs = service.client("sqs")  # type: ignore[attr-defined]
        yield service
    finally:
        gateway.stop()
