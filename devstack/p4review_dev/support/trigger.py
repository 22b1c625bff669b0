"""The Perforce trigger (`trigger/p4review-trigger.py`) for tests: load the file as a module,
write its config and secret, and in-memory stand-ins for p4 and the API."""

from __future__ import annotations

import importlib.util
import json
import sys
from http import HTTPStatus
from pathlib import Path
from types import ModuleType
from typing import Any

from p4review_dev.stack import repo_root, write_fake_p4_wrapper
from p4review_dev.trigger_host import trigger_file

TRIGGER_FILE = trigger_file()
FAKE_P4 = repo_root() / "events" / "bin" / "p4"


def load_trigger() -> ModuleType:
    """The trigger file imported as a module (its name has a dash, so not via `import`)."""
    name = "p4review_trigger_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TRIGGER_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def write_secret(path: Path, value: str = "test-signing-secret-0123456789", mode: int = 0o600) -> Path:
    path.write_text(value + "\n")
    path.chmod(mode)
    return path


def write_config(directory: Path, **overrides: str) -> Path:
    """A config file in `directory` with a spool, a log and a secret there; keys can be overridden
    (a value of None leaves the key out)."""
    secret = directory / "signing.secret"
    if not secret.exists():
        write_secret(secret)
    values: dict[str, str | None] = {
        "API_URL": "http://127.0.0.1:9/prod",
        "SECRET_FILE": str(secret),
        "SPOOL_DIR": str(directory / "spool"),
        "P4": str(FAKE_P4),
        "SEND_MODE": "spool-only",
        "PATHS": "//depot/...",
    }
    values.update(overrides)
    config = directory / "p4review-trigger.conf"
    config.write_text("".join(f"{key}={value}\n" for key, value in values.items() if value is not None))
    return config


def spool_files(spool: Path, folder: str) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted((spool / folder).glob("*.json"))]


class FakeP4:
    """In-memory p4 for resolution logic: keys, shelves, submitted changes. Counts increments."""

    def __init__(self, trigger: ModuleType):
        self.trigger = trigger
        self.keys: dict[str, str] = {}
        self.shelves: dict[int, list[tuple[str, str, str, str]]] = {}
        self.old_changes: dict[int, int] = {}
        self.submitted_files: dict[int, list[str]] = {}
        self.changes: list[tuple[int, int]] = []  # (change, unix time) submitted
        self.pending_changes: set[int] = set()
        self.increments = 0
        self.fail: Any = None  # a P4Error to raise from the next call

    def _check(self) -> None:
        if self.fail is not None:
            raise self.fail

    def key_get(self, name: str) -> str:
        self._check()
        return self.keys.get(name, "0")

    def key_set(self, name: str, value: str) -> None:
        self._check()
        self.keys[name] = value

    def key_increment(self, name: str) -> int:
        self._check()
        self.increments += 1
        value = int(self.keys.get(name, "0")) + 1
        self.keys[name] = str(value)
        return value

    def key_delete(self, name: str) -> None:
        self._check()
        if name not in self.keys:
            raise self.trigger.P4Error(f"p4 key: No such key '{name}'.")
        del self.keys[name]

    def key_compare_and_set(self, name: str, old: str, new: str) -> bool:
        self._check()
        if name not in self.keys or self.keys[name] != old:
            return False
        self.keys[name] = new
        return True

    def describe(self, change: int, shelved: bool = False) -> dict:
        self._check()
        # As `p4 -G describe -s [-S]` answers (events/bin/p4 cmd_describe): a shelf belongs to a
        # pending change; everything else here is submitted.
        status = b"pending" if shelved or change in self.pending_changes else b"submitted"
        record: dict[bytes, bytes] = {b"code": b"stat", b"change": str(change).encode(), b"status": status}
        if shelved:
            for index, (path, action, file_type, digest) in enumerate(self.shelves.get(change, [])):
                record[b"depotFile%d" % index] = path.encode()
                record[b"action%d" % index] = action.encode()
                record[b"type%d" % index] = file_type.encode()
                record[b"digest%d" % index] = digest.encode()
        else:
            if change in self.old_changes:
                record[b"oldChange"] = str(self.old_changes[change]).encode()
            for index, path in enumerate(self.submitted_files.get(change, [])):
                record[b"depotFile%d" % index] = path.encode()
        return record

    def submitted_changes(self, since: int, paths: list, limit: int) -> list:
        self._check()
        return sorted(item for item in self.changes if item[0] >= since)[:limit]

    def latest_submitted(self, paths: list) -> int:
        self._check()
        return max((change for change, _ in self.changes), default=0)

    def change_counter(self) -> int:
        """`p4 counter change`: at least every change number the server gave out."""
        self._check()
        return max([change for change, _ in self.changes] + list(self.pending_changes), default=0)


class FakeApi:
    """The review API as the sender sees it: answers from a script, then 201/200 by key."""

    def __init__(self, trigger: ModuleType):
        self.trigger = trigger
        self.requests: list[dict[str, Any]] = []
        self.script: list[Any] = []  # Answers or exceptions for the next calls, in order
        self.jobs: dict[str, str] = {}
        self.clock = lambda: 0.0

    def answer(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        raw = json.dumps(body).encode() if body is not None else b""
        return self.trigger.Answer(status, {k.lower(): v for k, v in (headers or {}).items()}, body, raw)

    def error(self, status: int, code: str, headers: dict[str, str] | None = None, details: Any = None) -> Any:
        return self.answer(
            status, {"error": {"code": code, "message": code.replace("_", " "), "details": details}}, headers
        )

    def post_review(self, request: dict[str, Any]) -> Any:
        self.requests.append(dict(request))
        if self.script:
            outcome = self.script.pop(0)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        key = request["idempotency_key"]
        if key in self.jobs:
            return self.answer(HTTPStatus.OK, {"job_id": self.jobs[key]}, {"X-P4Review-Replay": "idempotency-key"})
        self.jobs[key] = f"job-{len(self.jobs) + 1}"
        return self.answer(HTTPStatus.CREATED, {"job_id": self.jobs[key]})


def fake_p4_wrapper(directory: Path, state: Path, **env: str) -> Path:
    """`directory/p4`: the fake p4 with its state directory (and any other P4FAKE_* settings) fixed."""
    return write_fake_p4_wrapper(directory / "p4", {"P4FAKE_STATE": str(state), **env})


class TriggerApi:
    """The real ingest function behind the local API Gateway front (on the tests' moto server),
    reached through a FrontDoor so a test can hold its answers. What the trigger talks to in
    tests/integration/trigger/test_trigger_process.py."""

    def __init__(self, service: Any, gateway: Any, door: Any):
        self.service = service
        self.gateway = gateway
        self.door = door

    @property
    def url(self) -> str:
        return self.door.url(self.gateway.stage)

    @property
    def secret(self) -> str:
        return self.service.signing_secret

    def job(self, idempotency_key: str) -> dict[str, Any] | None:
        """The job the API created for this key, or None (read behind the door, never held)."""
        from p4review.cli.api_client import ReviewApiClient
        from p4review.models.job import job_id_for

        answer = ReviewApiClient(self.gateway.url, self.secret).get_job(job_id_for(idempotency_key))
        return answer.body if answer.ok else None

    def job_keys(self) -> list[str]:
        """The idempotency key of every job the API created, sorted."""
        items = self.service.client("dynamodb").scan(TableName=self.service.resources.tables["jobs"])["Items"]
        return sorted(item["idempotency_key"]["S"] for item in items if item["pk"]["S"].startswith("JOB#"))

    def rotate_secret(self, new_value: str) -> None:
        self.service.client("secretsmanager").put_secret_value(
            SecretId=self.service.resources.secrets["trigger-signing"], SecretString=new_value
        )
