"""The embedded local stack: moto (AWS) + a real SMTP server + a fake Helix Swarm + API Gateway
and SQS event source emulation, running the real Lambda handlers from functions/ in this process.

No AWS account, no network beyond loopback, no Docker."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from p4review import faults
from p4review import resources as spec
from p4review.models.job import STAGE_ORDER, StageName
from p4review.stores.factory import reset_data_access

REGION = "us-east-1"
LOCAL_FROM_ADDRESS = "p4review@p4review.localhost"
# The fake Swarm's service user; its ticket is drawn per stack and kept in the Swarm secret.
LOCAL_SWARM_USER = "p4review-swarm"
# The Swarm secret's key when the specs (p4review.resources.SECRETS) do not list one.
LOCAL_SWARM_SECRET_KEY = "swarm"
SWARM_SECRET_ENV_VAR = "P4REVIEW_SWARM_SECRET_ID"
# What stack.env carries: the functions' settings, the AWS endpoint and Powertools' settings.
# (Fake-p4 options cannot travel this way: the p4 runner gives its child a minimal environment.)
STACK_ENV_PREFIXES = ("P4REVIEW_", "AWS_", "POWERTOOLS_")


def repo_root() -> Path:
    """The checkout this package runs from (functions/ and events/ live there)."""
    configured = os.environ.get("P4REVIEW_REPO_ROOT")
    root = Path(configured) if configured else Path(__file__).resolve().parents[2]
    if not (root / "functions").is_dir():
        raise RuntimeError(f"cannot find functions/ under {root}; set P4REVIEW_REPO_ROOT to the checkout")
    return root


@dataclass(frozen=True)
class StackInfo:
    api_url: str
    aws_endpoint: str
    mailbox_dir: str
    signing_secret_file: str
    smtp_port: int
    state_dir: str
    log_file: str | None = None
    # The fake p4's record of each change's current shelf version (P4FAKE_SHELVES); absent: latest.
    p4_shelves_file: str | None = None
    # The fake Helix Swarm the notify stage comments on (None: started without one).
    swarm_url: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def write_fake_p4_wrapper(path: Path, settings: dict[str, str]) -> Path:
    """An executable `p4` that runs the fake p4 with `settings` (P4FAKE_*) fixed: the trigger and
    the service give p4 a minimal environment. Runs the fake with this interpreter, not a
    version-manager shim, and with `-S`: the fake needs only the standard library, and the
    site-packages' start-up hooks cost a third of each call. Replaced atomically, so a running
    trigger sees the old or the new one."""
    exports = "".join(f"export {name}='{value}'\n" for name, value in settings.items())
    fake = repo_root() / "events" / "bin" / "p4"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(f"#!/bin/sh\n{exports}exec '{sys.executable}' -S '{fake}' \"$@\"\n")
    temporary.chmod(0o755)
    temporary.replace(path)
    return path


def load_function(name: str) -> ModuleType:
    """Import functions/<name>/handler.py under a unique module name (all are `handler.py`)."""
    path = repo_root() / "functions" / name / "handler.py"
    module_spec = importlib.util.spec_from_file_location(f"p4review_function_{name}", path)
    if module_spec is None or module_spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    module_spec.loader.exec_module(module)
    return module


class ScheduledInvoker:
    """EventBridge's schedule, locally: invoke a handler every `interval` seconds until stopped."""

    def __init__(self, handler: Any, interval: float, function_name: str):
        self._handler = handler
        self._interval = interval
        self._function_name = function_name
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"schedule-{function_name}", daemon=True)
        self.invocations = 0

    def start(self) -> ScheduledInvoker:
        self._thread.start()
        return self

    def _loop(self) -> None:
        from p4review_dev.lambda_context import FakeLambdaContext

        while not self._stopping.wait(self._interval):
            try:
                self._handler(
                    {"source": "aws.events", "detail-type": "Scheduled Event"}, FakeLambdaContext(self._function_name)
                )
            except Exception:  # noqa: BLE001 - a failed run is retried at the next tick, as in AWS
                pass
            self.invocations += 1

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)


class LocalStack:
    def __init__(
        self,
        state_dir: Path | str,
        *,
        api_port: int = 0,
        smtp_port: int = 0,
        environment: str = "local",
        visibility_timeouts: dict[str, int] | None = None,
        lease_seconds: int | None = None,
        sweep_interval_seconds: float = 30.0,
        extra_env: dict[str, str] | None = None,
        workers: bool = True,
        swarm: bool = True,
        worker_concurrency: int | None = None,
        batch_sizes: dict[str, int] | None = None,
    ):
        self.state_dir = Path(state_dir).resolve()
        self.shelves_file = self.state_dir / "fake-p4" / "shelves.json"
        self._api_port = api_port
        self._smtp_port = smtp_port
        self._environment = environment
        self._visibility_timeouts = visibility_timeouts
        self._lease_seconds = lease_seconds
        self._sweep_interval = sweep_interval_seconds
        self._extra_env = extra_env or {}
        # False: no in-process stage pollers; run `p4review local worker --stage S` processes
        # instead (separately killable, as the chaos test needs).
        self._workers = workers
        # W, the concurrent invocations each stage's poller makes; None: the queue's own
        # (`QueueSpec.max_concurrency`, the CDK stack's default event source maximum concurrency).
        self._worker_concurrency = worker_concurrency
        # Messages per invocation by stage ("fetch": 5, ...); absent: the queue's `QueueSpec.batch_size`.
        self._batch_sizes = batch_sizes or {}
        # True: a fake Helix Swarm on loopback, and notify comments on every change's review
        # (created when missing: P4REVIEW_SWARM_CREATE_REVIEWS). `extra_env` may override.
        self._swarm = swarm
        self.swarm_server: Any = None
        self._started: list[Any] = []
        self.pollers: dict[StageName, Any] = {}
        self.info: StackInfo | None = None
        self.mail_server: Any = None
        self.aws: Any = None
        self.resources: Any = None
        self.signing_secret = ""
        self._saved_environ: dict[str, str] | None = None

    def start(self) -> StackInfo:
        from p4review.stores.factory import new_session
        from p4review_dev.http_front import LocalApiGateway
        from p4review_dev.moto_server import LocalAwsServer
        from p4review_dev.provision import provision
        from p4review_dev.smtp_server import LocalMailServer
        from p4review_dev.sqs_poller import SqsPoller
        from p4review_dev.swarm_server import FakeSwarmServer

        self._saved_environ = dict(os.environ)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        mailbox = self.state_dir / "mailbox"
        mailbox.mkdir(exist_ok=True)
        self.signing_secret = secrets.token_urlsafe(32)
        secret_file = self.state_dir / "signing-secret"
        secret_file.write_text(self.signing_secret)
        secret_file.chmod(0o600)

        self.aws = LocalAwsServer()
        endpoint = self.aws.start()
        self._started.append(self.aws)
        smtp_user, smtp_password = "p4review", secrets.token_urlsafe(16)
        self.mail_server = LocalMailServer(mailbox, port=self._smtp_port, username=smtp_user, password=smtp_password)
        self.mail_server.start()
        self._started.append(self.mail_server)
        swarm_secret: dict[str, str] | None = None
        swarm_env: dict[str, str] = {}
        if self._swarm:
            ticket = secrets.token_hex(16)
            # Seeded: faults set on it later (`make chaos`) draw the same sequence every run.
            self.swarm_server = FakeSwarmServer(user=LOCAL_SWARM_USER, ticket=ticket, seed=0)
            self.swarm_server.start()
            self._started.append(self.swarm_server)
            swarm_secret = {"user": LOCAL_SWARM_USER, "ticket": ticket}
            swarm_env = {"P4REVIEW_SWARM_URL": self.swarm_server.url, "P4REVIEW_SWARM_CREATE_REVIEWS": "true"}
        # The specs may list a Swarm secret (provision then maps it to its variable); if they do
        # not, it is a secret of the local stack's own.
        swarm_spec = next((secret for secret in spec.SECRETS if secret.env_var == SWARM_SECRET_ENV_VAR), None)
        swarm_key = swarm_spec.key if swarm_spec else LOCAL_SWARM_SECRET_KEY

        os.environ.update(
            {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_DEFAULT_REGION": REGION,
                "AWS_REGION": REGION,
                "AWS_ACCESS_KEY_ID": "local",
                "AWS_SECRET_ACCESS_KEY": "local",
            }
        )
        session = new_session(region_name=REGION, aws_access_key_id="local", aws_secret_access_key="local")
        self.resources = provision(
            session,
            self._environment,
            endpoint_url=endpoint,
            region=REGION,
            visibility_timeouts=self._visibility_timeouts,
            secret_values={
                spec.SIGNING_SECRET.key: self.signing_secret,
                spec.SMTP_SECRET.key: {
                    "host": "127.0.0.1",
                    "port": self.mail_server.port,
                    "tls_mode": "none",
                    "username": smtp_user,
                    "password": smtp_password,
                    "from_address": LOCAL_FROM_ADDRESS,
                },
                spec.LLM_SECRET.key: {"provider": "offline"},
                spec.P4_SECRET.key: {
                    "P4PORT": "ssl:perforce.local:1666",
                    "P4USER": "p4review-bot",
                    "P4TICKET": secrets.token_hex(16),
                },
                **({swarm_key: swarm_secret} if swarm_spec and swarm_secret else {}),
            },
            extra_secrets={swarm_key: swarm_secret} if swarm_secret and not swarm_spec else None,
        )
        if swarm_secret:
            swarm_env[SWARM_SECRET_ENV_VAR] = self.resources.secrets[swarm_key]
        function_env = {
            **self.resources.env(),
            # The fake p4 started by this interpreter: through a version-manager shim every p4 call
            # would cost a tenth of a second or more.
            "P4REVIEW_P4_EXECUTABLE": str(
                write_fake_p4_wrapper(self.state_dir / "fake-p4" / "p4", {"P4FAKE_SHELVES": str(self.shelves_file)})
            ),
            "POWERTOOLS_SERVICE_NAME": "p4review",
            "POWERTOOLS_METRICS_NAMESPACE": "P4Review",
            # Reviewers per depot prefix, as an admin would set them: the fixture depot's UI tree has
            # a review list. Its only change (48261) belongs to a user whose Email is Perforce's
            # unverified `user@client` default, so the demo shows both: a failed row for the owner,
            # the review emailed to the UI leads.
            "P4REVIEW_REVIEWERS": json.dumps(
                [{"prefix": "//depot/game/main/ui/...", "reviewers": ["ui-leads@northwind-games.example"]}]
            ),
            **({"P4REVIEW_LEASE_SECONDS": str(self._lease_seconds)} if self._lease_seconds else {}),
            **swarm_env,
            **self._extra_env,
        }
        if not self._swarm and SWARM_SECRET_ENV_VAR not in self._extra_env:
            function_env.pop(SWARM_SECRET_ENV_VAR, None)  # no fake Swarm: no comments
        os.environ.update(function_env)
        # The fake p4 starts with `#!/usr/bin/env python3`: resolve that to this interpreter,
        # not a version-manager shim that costs ~0.3 s per call.
        interpreter_dir = str(Path(sys.executable).parent)
        if not os.environ.get("PATH", "").startswith(interpreter_dir + os.pathsep):
            os.environ["PATH"] = interpreter_dir + os.pathsep + os.environ.get("PATH", "")
        reset_data_access()
        faults.reset()  # the fault plan is re-read from the environment too

        ingest = load_function("ingest")
        gateway = LocalApiGateway(ingest.lambda_handler, port=self._api_port)
        gateway.start()
        self._started.append(gateway)

        def sqs_client() -> Any:
            return new_session(region_name=REGION, aws_access_key_id="local", aws_secret_access_key="local").client(
                "sqs", endpoint_url=endpoint
            )

        for stage in STAGE_ORDER if self._workers else ():
            queue = self.resources.queue_for_stage(stage)
            handler = load_function(stage.value).lambda_handler
            poller = SqsPoller(
                sqs_client,
                queue.url,
                queue.arn,
                handler,
                batch_size=self._batch_sizes.get(stage.value, queue.batch_size),
                concurrency=self._worker_concurrency or queue.max_concurrency,
                function_name=f"p4review-{self._environment}-{stage}",
                function_timeout_seconds=spec.QUEUE_FOR_STAGE[stage].function_timeout_seconds,
            )
            poller.start()
            self._started.append(poller)
            self.pollers[stage] = poller

        self.sweeper = ScheduledInvoker(
            load_function("sweeper").lambda_handler, self._sweep_interval, f"p4review-{self._environment}-sweeper"
        ).start()
        self._started.append(self.sweeper)

        self.info = StackInfo(
            api_url=gateway.url,
            aws_endpoint=endpoint,
            mailbox_dir=str(mailbox),
            signing_secret_file=str(secret_file),
            smtp_port=self.mail_server.port,
            state_dir=str(self.state_dir),
            p4_shelves_file=str(self.shelves_file),
            swarm_url=self.swarm_server.url if self.swarm_server is not None else None,
        )
        (self.state_dir / "stack.json").write_text(self.info.to_json())
        # Operator commands that talk to AWS directly (`p4review dlq ...`) and worker processes
        # (`p4review local worker`) load this environment.
        env_file = self.state_dir / "stack.env"
        env_file.write_text(
            "".join(
                f"{name}={value}\n" for name, value in sorted(os.environ.items()) if name.startswith(STACK_ENV_PREFIXES)
            )
        )
        env_file.chmod(0o600)
        return self.info

    def stop(self) -> None:
        # Every poller's workers end their long polls at once, not one poller after another.
        for poller in self.pollers.values():
            poller.request_stop()
        while self._started:
            component = self._started.pop()
            try:
                component.stop()
            except Exception:  # noqa: BLE001 - best effort: stop the rest
                pass
        for state_file in (self.state_dir / "stack.json", self.state_dir / "stack.env"):
            if state_file.exists():
                state_file.unlink()
        if self._saved_environ is not None:
            # The stack exported AWS endpoints and function settings; give the process its own back.
            os.environ.clear()
            os.environ.update(self._saved_environ)
            self._saved_environ = None
            reset_data_access()
            faults.reset()  # the fault plan is re-read from the environment too

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
