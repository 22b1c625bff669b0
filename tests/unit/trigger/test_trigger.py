"""The Perforce trigger file, in process: configuration, spooling, resolving versions, sending,
backoff, catch-up. p4 and the API are in-memory fakes here; tests/integration/trigger/test_trigger_process.py
runs the file as the Perforce server would, with the fake p4 and a real HTTP server."""

from __future__ import annotations

import ast
import errno
import json
import os
import sys
from pathlib import Path

import pytest

from p4review.ingest import signing
from p4review_dev.support.trigger import (
    TRIGGER_FILE,
    load_trigger,
    spool_files,
    write_config,
    write_secret,
)

trigger = load_trigger()


def spool_event(config, log, clock, kind: str, change: int, old: int | None = None) -> Path:
    path = trigger.spool_event(config, log, kind, str(change), str(old) if old else None, clock)
    assert path is not None
    clock.now += 0.001  # distinct, ordered file names
    return Path(path)


def log_lines(config) -> list[str]:
    path = Path(config.log_file)
    return path.read_text().splitlines() if path.exists() else []


# --- the file itself ----------------------------------------------------------------------------------
@pytest.mark.spec("TRG-1")
def test_the_trigger_imports_only_the_standard_library():
    tree = ast.parse(TRIGGER_FILE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    imported.discard("__future__")
    assert imported, "found no imports at all"
    assert sorted(name for name in imported if name not in sys.stdlib_module_names) == []


@pytest.mark.spec("TRG-1")
def test_the_trigger_path_imports_almost_nothing():
    """The trigger must start in milliseconds: its module top imports os, sys, time and errno only;
    everything else is loaded by load_sender_modules() for the sender and admin commands."""
    tree = ast.parse(TRIGGER_FILE.read_text())
    top = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    assert top == {"errno", "os", "sys", "time"}


# --- configuration ------------------------------------------------------------------------------------
@pytest.mark.spec("TRG-2")
def test_config_search_order(tmp_path):
    beside = str(tmp_path / "scripts")
    assert trigger.config_candidates("/x/given.conf", {"P4REVIEW_TRIGGER_CONFIG": "/y/env.conf"}, beside) == [
        "/x/given.conf"
    ]
    assert trigger.config_candidates(None, {"P4REVIEW_TRIGGER_CONFIG": "/y/env.conf"}, beside) == ["/y/env.conf"]
    assert trigger.config_candidates(None, {}, beside) == [
        "/etc/perforce/p4review-trigger.conf",
        "/opt/perforce/etc/p4review-trigger.conf",
        os.path.join(beside, "p4review-trigger.conf"),
    ]


def test_config_beside_the_script_is_found_and_an_explicit_file_must_exist(tmp_path):
    (tmp_path / "p4review-trigger.conf").write_text("")
    found = trigger.find_config(None, {}, str(tmp_path))
    assert found == str(tmp_path / "p4review-trigger.conf") or found.startswith(("/etc/", "/opt/"))
    with pytest.raises(trigger.ConfigError, match="does not exist"):
        trigger.find_config(str(tmp_path / "missing.conf"), {}, str(tmp_path))
    with pytest.raises(trigger.ConfigError, match="does not exist"):
        trigger.find_config(None, {"P4REVIEW_TRIGGER_CONFIG": str(tmp_path / "nope.conf")}, str(tmp_path))


def test_config_values_comments_quotes_and_defaults(tmp_path):
    text = (
        "# comment\n\nAPI_URL = \"https://api.example.test/prod\"\nSPOOL_DIR='/var/spool/x'\n"
        "P4=/usr/bin/p4; rm -rf /\nPATHS=//depot/a/... -//depot/a/secret/...\n"
    )
    config = trigger.parse_config_text(text, "t.conf")
    assert config["API_URL"] == "https://api.example.test/prod"
    assert config.spool_dir == "/var/spool/x"
    # Shell metacharacters are a literal file name: the trigger never uses a shell.
    assert config["P4"] == "/usr/bin/p4; rm -rf /"
    assert config.paths == ["//depot/a/...", "-//depot/a/secret/..."]
    assert config.log_file == "/var/spool/x/p4review-trigger.log"
    assert config.number("SEND_TIMEOUT") == 5


@pytest.mark.spec("TRG-2")
@pytest.mark.parametrize(
    "text, problem",
    [
        ("API_URL\n", "expected KEY=value"),
        ("API_KEY=x\n", "unknown key API_KEY"),
        ("P4=p4\nP4=/usr/bin/p4\n", "P4 is set twice"),
        ("P4PORT=ssl:host:1666\x07\n", "control characters"),
        ("SEND_TIMEOUT=5s\n", "SEND_TIMEOUT must be a whole number"),
        ("SEND_TIMEOUT=0\n", "SEND_TIMEOUT must be a whole number from 1"),
        ("API_URL=http://api.example.test/prod\n", "must use https"),
        ("API_URL=https://user:pw@api.example.test/prod\n", "API_URL must look like"),
        ("SPOOL_DIR=relative/spool\n", "SPOOL_DIR must be an absolute path"),
        ("SECRET_FILE=secret.txt\n", "SECRET_FILE must be an absolute path"),
        ("PATHS=depot/...\n", "PATHS entry depot/..."),
        ("SEND_MODE=later\n", "SEND_MODE must be"),
        ("KEY_PREFIX=p4 review\n", "KEY_PREFIX"),
    ],
)
def test_bad_config_is_refused_with_the_line_and_the_reason(text, problem):
    with pytest.raises(trigger.ConfigError, match=problem):
        trigger.parse_config_text(text, "t.conf")


def test_the_trigger_path_spools_despite_a_mistake_the_sender_will_report():
    config = trigger.parse_config_text("API_URL=http://api.example.test/prod\nSPOOL_DIR=/s\n", "t.conf", validate=False)
    assert config.spool_dir == "/s"
    with pytest.raises(trigger.ConfigError, match="absolute"):
        trigger.parse_config_text("SPOOL_DIR=spool\n", "t.conf", validate=False)


def test_http_is_allowed_to_localhost_only():
    assert trigger.parse_config_text("API_URL=http://127.0.0.1:8787/local\n", "t.conf")["API_URL"]
    assert trigger.parse_config_text("API_URL=http://localhost:8787\n", "t.conf")["API_URL"]


@pytest.mark.spec("TRG-3")
def test_secret_file_readable_by_others_is_refused(tmp_path):
    secret = write_secret(tmp_path / "s", mode=0o644)
    with pytest.raises(trigger.ConfigError, match=r"can be read by others \(mode 644\): chmod 600"):
        trigger.read_private_file(str(secret), "SECRET_FILE")
    secret.chmod(0o640)
    with pytest.raises(trigger.ConfigError, match="can be read by others"):
        trigger.read_private_file(str(secret), "SECRET_FILE")
    secret.chmod(0o600)
    assert trigger.read_private_file(str(secret), "SECRET_FILE") == "test-signing-secret-0123456789"


@pytest.mark.parametrize(
    "setup, problem",
    [
        (lambda p: None, "No such file"),
        (lambda p: (p.write_text("  \n"), p.chmod(0o600)), "is empty"),
        (lambda p: p.mkdir(), "not a regular file"),
    ],
)
def test_missing_empty_or_odd_secret_files_are_refused(tmp_path, setup, problem):
    path = tmp_path / "secret"
    setup(path)
    with pytest.raises(trigger.ConfigError, match=problem):
        trigger.read_private_file(str(path), "SECRET_FILE")


# --- the trigger table ---------------------------------------------------------------------------------
@pytest.mark.spec("TRG-10")
def test_trigger_table_lines(tmp_path):
    text = trigger.trigger_table(
        "/etc/perforce/p4review-trigger.conf",
        ["//depot/a/...", "//depot/my path/..."],
        script="/opt/p4review/p4review-trigger.py",
        python="/usr/bin/python3",
    )
    lines = text.splitlines()
    assert len(lines) == 6
    command = (
        '"%quote%/usr/bin/python3%quote% %quote%/opt/p4review/p4review-trigger.py%quote% '
        "-c %quote%/etc/perforce/p4review-trigger.conf%quote%"
    )
    assert (
        lines[0]
        == f'\tp4review.commit change-commit //depot/a/... {command} -t change-commit -v %change% -w %oldchangelist%"'
    )
    assert lines[1].startswith('\tp4review.commit change-commit "//depot/my path/..." ')
    assert lines[2] == f'\tp4review.shelve shelve-commit //depot/a/... {command} -t shelve-commit -v %change%"'
    assert lines[4] == f'\tp4review.shelvedel shelve-delete //depot/a/... {command} -t shelve-delete -v %change%"'


@pytest.mark.spec("TRG-3")
def test_trigger_table_never_contains_the_secret(tmp_path, capsys, config_file):
    args = trigger.build_parser().parse_args(["-c", str(config_file), "-o"])
    assert trigger.run_print_table(args) == 0
    printed = capsys.readouterr().out
    assert "test-signing-secret" not in printed and "SECRET" not in printed
    assert f"-c %quote%{config_file}%quote%" in printed


# --- trigger mode: spool and exit 0 --------------------------------------------------------------------
def test_trigger_spools_durably_and_returns_zero(tmp_path, config_file, config, capsys):
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213", "-w", "48213"]) == 0
    [event] = spool_files(Path(config.spool_dir), "pending")
    assert event["trigger"] == "change-commit" and event["change"] == 48213 and event["old_change"] == 48213
    assert event["received_at"].endswith("Z")
    assert os.listdir(Path(config.spool_dir) / "tmp") == []
    assert capsys.readouterr() == ("", "")  # nothing reaches the user's terminal
    assert "event_spooled trigger=change-commit change=48213" in log_lines(config)[-1]


def test_joined_options_and_an_unexpanded_oldchangelist(config_file, config):
    assert trigger.main([f"-c{config_file}", "-tchange-commit", "-v48220", "-w", "%oldchangelist%"]) == 0
    [event] = spool_files(Path(config.spool_dir), "pending")
    assert event["change"] == 48220 and event["old_change"] is None


@pytest.mark.spec("TRG-4")
@pytest.mark.parametrize(
    "value",
    [
        "48213; rm -rf /",
        "$(touch /tmp/pwned)",
        "0",
        "-5",
        "",
        "99999999999",
        "2147483648",
        "4821\u0663",
        "48213\n",
        "`id`",
    ],
)
def test_bad_change_numbers_spool_nothing_log_clearly_and_return_zero(config_file, config, capsys, value):
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", value]) == 0
    assert spool_files(Path(config.spool_dir), "pending") == []
    last = log_lines(config)[-1]
    assert "ERROR" in last and "trigger_arguments_invalid" in last
    assert "\n" not in last and "\\x0a" in last if "\n" in value else True
    assert capsys.readouterr() == ("", "")
    assert not Path("/tmp/pwned").exists()


def test_unknown_trigger_type_and_unknown_arguments(config_file, config):
    assert trigger.main(["-c", str(config_file), "-t", "change-content", "-v", "48213"]) == 0
    assert "trigger_arguments_invalid" in log_lines(config)[-1]
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213", "--extra"]) == 0
    assert any("trigger_arguments_ignored" in line and "--extra" in line for line in log_lines(config))
    assert len(spool_files(Path(config.spool_dir), "pending")) == 1


@pytest.mark.spec("TRG-4")
def test_missing_or_broken_config_returns_zero_and_prints_nothing(tmp_path, capsys):
    assert trigger.main(["-c", str(tmp_path / "missing.conf"), "-t", "change-commit", "-v", "1"]) == 0
    (tmp_path / "bad.conf").write_text("NOT A CONFIG\n")
    assert trigger.main(["-c", str(tmp_path / "bad.conf"), "-t", "shelve-commit", "-v", "1"]) == 0
    assert trigger.main(["-t"]) == 0
    assert capsys.readouterr() == ("", "")


@pytest.mark.spec("TRG-4")
def test_a_full_spool_disk_is_logged_and_the_trigger_returns_zero(config_file, config, monkeypatch, capsys):
    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trigger.os, "fsync", disk_full)
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213"]) == 0
    spool = Path(config.spool_dir)
    assert list((spool / "pending").iterdir()) == [] and list((spool / "tmp").iterdir()) == []
    last = log_lines(config)[-1]
    assert "spool_write_failed" in last and "No space left on device" in last
    assert "the spool disk is full" in last and "--catch-up will find this submit" in last
    assert capsys.readouterr() == ("", "")


def test_a_spool_that_cannot_exist_is_logged(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    config_file = write_config(tmp_path, SPOOL_DIR=str(blocker / "spool"), LOG_FILE=str(tmp_path / "t.log"))
    assert trigger.main(["-c", str(config_file), "-t", "shelve-commit", "-v", "48240"]) == 0
    assert "spool_write_failed" in (tmp_path / "t.log").read_text()
    assert capsys.readouterr() == ("", "")


def test_log_lines_escape_control_characters_and_quote_spaces(tmp_path, clock):
    log = trigger.Log(str(tmp_path / "t.log"), clock=clock)
    log.error("something", reason='line one\nline "two"', empty="", ok="plain")
    [line] = (tmp_path / "t.log").read_text().splitlines()
    assert line.startswith("2026-09-21T")  # UTC
    assert 'reason="line one\\x0aline \\"two\\""' in line and 'empty=""' in line and "ok=plain" in line


def test_the_flat_json_of_the_trigger_path_is_json():
    event = {"trigger": "change-commit", "change": 1, "old_change": None, "host": 'we"ird\\host\x01\u00e9'}
    assert json.loads(trigger._encode_flat(event)) == event


# --- resolving versions -----------------------------------------------------------------------------------
def shelf(*digests: str) -> list[tuple[str, str, str, str]]:
    return [(f"//depot/a/f{index}.c", "edit", "text", digest) for index, digest in enumerate(digests)]


def test_a_submit_never_shelved_is_version_1_and_writes_no_key(p4):
    keys = trigger.Keys("p4review")
    request = trigger.resolve_submit(p4, keys, 48213, 48213)
    assert request == {
        "changelist_id": 48213,
        "review_version": 1,
        "kind": "submitted",
        "rerun": False,
        "idempotency_key": "p4-submitted-48213-v1",
    }
    assert p4.keys == {} and p4.increments == 0


def test_shelf_versions_count_up_and_an_identical_reshelve_creates_none(p4):
    keys = trigger.Keys("p4review")
    p4.shelves[48240] = shelf("AA", "BB")
    first = trigger.resolve_shelve(p4, keys, 48240)
    assert (first["review_version"], first["rerun"], first["idempotency_key"]) == (1, False, "p4-shelved-48240-v1")
    trigger.record_shelf(p4, keys, 48240, 1, first["fingerprint"])
    assert trigger.resolve_shelve(p4, keys, 48240) == {"skip": "identical to shelf version 1"}
    p4.shelves[48240] = shelf("AA", "CC")
    second = trigger.resolve_shelve(p4, keys, 48240)
    assert (second["review_version"], second["rerun"]) == (2, True)
    # The file list, types and digests count; their order does not.
    trigger.record_shelf(p4, keys, 48240, 2, second["fingerprint"])
    p4.shelves[48240] = list(reversed(shelf("AA", "CC")))
    assert trigger.resolve_shelve(p4, keys, 48240)["skip"] == "identical to shelf version 2"
    p4.shelves[48240] = [("//depot/a/f0.c", "edit", "text+x", "AA"), ("//depot/a/f1.c", "edit", "text", "CC")]
    assert trigger.resolve_shelve(p4, keys, 48240)["review_version"] == 3


def test_a_shelve_with_no_files_left_needs_no_review(p4):
    assert trigger.resolve_shelve(p4, trigger.Keys("p4review"), 48240) == {
        "skip": "no shelved files (deleted or submitted since)"
    }
    assert p4.increments == 0


def test_submit_after_shelve_takes_the_next_version_once_and_says_what_it_follows(p4):
    keys = trigger.Keys("p4review")
    p4.shelves[48240] = shelf("AA")
    for version in (1, 2):
        p4.shelves[48240] = shelf("A%d" % version)
        request = trigger.resolve_shelve(p4, keys, 48240)
        trigger.record_shelf(p4, keys, 48240, request["review_version"], request["fingerprint"])
    submit = trigger.resolve_submit(p4, keys, 48240, 48240)
    assert submit == {
        "changelist_id": 48240,
        "review_version": 3,
        "kind": "submitted",
        "rerun": True,
        "idempotency_key": "p4-submitted-48240-v3",
        "follows_shelf": {"changelist_id": 48240, "review_version": 2},
    }
    # A re-fired trigger or --catch-up gets the same version: the same idempotency key.
    assert trigger.resolve_submit(p4, keys, 48240, None) == submit
    assert p4.keys["p4review-version-48240"] == "3"


@pytest.mark.spec("TRG-8")
def test_a_renumbered_submit_counts_on_from_its_pending_number(p4):
    keys = trigger.Keys("review")
    p4.shelves[48240] = shelf("AA")
    request = trigger.resolve_shelve(p4, keys, 48240)
    trigger.record_shelf(p4, keys, 48240, request["review_version"], request["fingerprint"])
    p4.old_changes[48277] = 48240  # what describe reports as oldChange
    submit = trigger.resolve_submit(p4, keys, 48277, None)
    assert submit["changelist_id"] == 48277 and submit["review_version"] == 2 and submit["rerun"] is True
    assert submit["follows_shelf"] == {"changelist_id": 48240, "review_version": 1}
    assert p4.keys["review-submit-48277"] == "2:48240:1"
    # A later re-shelve of the old number never collides with the submit's version.
    p4.shelves[48240] = shelf("BB")
    assert trigger.resolve_shelve(p4, keys, 48240)["review_version"] == 3


def test_after_a_shelve_delete_an_identical_shelve_is_a_new_version(p4):
    keys = trigger.Keys("p4review")
    p4.shelves[48240] = shelf("AA")
    first = trigger.resolve_shelve(p4, keys, 48240)
    trigger.record_shelf(p4, keys, 48240, 1, first["fingerprint"])
    trigger.forget_shelf(p4, keys, 48240)
    assert trigger.resolve_shelve(p4, keys, 48240)["review_version"] == 2


def test_a_change_keeps_one_digest_key(p4):
    keys = trigger.Keys("p4review")
    for _version, digest in enumerate(("AA", "BB", "CC"), start=1):
        p4.shelves[48240] = shelf(digest)
        request = trigger.resolve_shelve(p4, keys, 48240)
        trigger.record_shelf(p4, keys, 48240, request["review_version"], request["fingerprint"])
    assert sorted(p4.keys) == ["p4review-shelf-48240-v3", "p4review-version-48240"]


def test_a_digest_recorded_late_by_a_slower_host_does_not_hide_a_newer_version(p4):
    """Two hosts resolve re-shelves of one change at once: versions differ (key -i), and each
    writes only its own version's digest, so the order of their writes does not matter."""
    keys = trigger.Keys("p4review")
    p4.shelves[7] = shelf("AA")
    slow = trigger.resolve_shelve(p4, keys, 7)
    p4.shelves[7] = shelf("BB")
    fast = trigger.resolve_shelve(p4, keys, 7)
    trigger.record_shelf(p4, keys, 7, fast["review_version"], fast["fingerprint"])
    trigger.record_shelf(p4, keys, 7, slow["review_version"], slow["fingerprint"])
    assert (slow["review_version"], fast["review_version"]) == (1, 2)
    assert trigger.resolve_shelve(p4, keys, 7) == {"skip": "identical to shelf version 2"}


# --- sending ---------------------------------------------------------------------------------------------
def test_a_spooled_submit_is_resolved_posted_and_moved_to_done(config, log, clock, sender, api):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["done"], result["left"], result["stopped"]) == (1, 0, None)
    assert api.requests == [
        {
            "changelist_id": 48213,
            "review_version": 1,
            "kind": "submitted",
            "rerun": False,
            "idempotency_key": "p4-submitted-48213-v1",
        }
    ]
    [done] = spool_files(Path(config.spool_dir), "done")
    assert done["outcome"]["status"] == 201 and done["outcome"]["job_id"] == "job-1" and done["attempts"] == 1
    assert any(
        "review_requested change=48213 version=1" in line and "job_id=job-1" in line for line in log_lines(config)
    )


@pytest.mark.spec("TRG-6")
def test_events_are_sent_oldest_first(config, log, clock, sender, api, p4):
    for change in (48270, 48213, 48261):
        spool_event(config, log, clock, "change-commit", change, change)
    trigger.drain(config, log, clock=clock, sender=sender)
    assert [request["changelist_id"] for request in api.requests] == [48270, 48213, 48261]


class Killed(BaseException):
    """The sender dies (SIGKILL) while its request is on the wire: no bookkeeping runs."""


def test_the_version_is_recorded_before_the_post_so_a_resend_reuses_it(config, log, clock, sender, api, p4):
    p4.shelves[48240] = shelf("AA")
    spool_event(config, log, clock, "shelve-commit", 48240)
    api.script = [Killed()]
    with pytest.raises(Killed):
        trigger.drain(config, log, clock=clock, sender=sender, scheduled=False)
    [pending] = spool_files(Path(config.spool_dir), "pending")
    assert pending["request"]["idempotency_key"] == "p4-shelved-48240-v1"
    api.script = [trigger.Unreachable("connection refused")]
    result = trigger.drain(config, log, clock=clock, sender=sender, scheduled=False)
    assert result["stopped"] == "API unreachable: connection refused" and result["left"] == 1
    [pending] = spool_files(Path(config.spool_dir), "pending")
    assert pending["request"]["review_version"] == 1 and pending["attempts"] == 1
    assert pending["last_error"] == "unreachable: connection refused"
    trigger.drain(config, log, clock=clock, sender=sender, scheduled=False)
    assert p4.increments == 1  # one version, however many sends
    assert [r["idempotency_key"] for r in api.requests] == ["p4-shelved-48240-v1"] * 3
    assert spool_files(Path(config.spool_dir), "done")[0]["attempts"] == 2


@pytest.mark.spec("TRG-5")
@pytest.mark.parametrize(
    "status, code",
    [
        (400, "invalid_request"),
        (409, "rerun_not_requested"),
        (409, "stale_review_version"),
        (409, "review_records_expired"),
        (413, "body_too_large"),
        (422, "idempotency_key_reused"),
    ],
)
def test_an_answer_the_api_will_never_accept_moves_the_event_to_rejected(config, log, clock, sender, api, status, code):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    spool_event(config, log, clock, "change-commit", 48220, 48220)
    api.script = [api.error(status, code, details={"latest_version": 2})]
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["rejected"], result["done"], result["stopped"]) == (1, 1, None)
    [rejected] = spool_files(Path(config.spool_dir), "rejected")
    assert rejected["change"] == 48213
    assert rejected["outcome"]["status"] == status and rejected["outcome"]["code"] == code
    assert rejected["outcome"]["details"] == {"latest_version": 2}
    line = next(line for line in log_lines(config) if "event_rejected" in line)
    assert f"code={code}" in line and "moved to rejected/" in line
    # The version was dealt with before: a warning with a note, not an error to act on.
    dealt_with_before = code in ("stale_review_version", "review_records_expired")
    assert (" WARN " in line) == dealt_with_before and ("note=" in line) == dealt_with_before, line


@pytest.mark.spec("TRG-5")
@pytest.mark.parametrize(
    "answer",
    [
        lambda api: api.error(401, "signature_invalid"),
        lambda api: api.error(408, "timeout"),
        lambda api: api.error(429, "throttled"),
        lambda api: api.error(503, "service_unavailable"),
        lambda api: api.answer(502, None),
        lambda api: api.answer(403, {"message": "Missing Authentication Token"}),  # API Gateway: wrong URL
        lambda api: api.answer(404, None),
        lambda api: api.error(404, "route_not_found"),
        lambda api: api.answer(301, None, {"Location": "https://elsewhere"}),
    ],
)
def test_answers_that_are_not_about_the_event_keep_it_spooled(config, log, clock, sender, api, answer):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    spool_event(config, log, clock, "change-commit", 48220, 48220)
    api.script = [answer(api)]
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert result["left"] == 2 and result["stopped"] and len(api.requests) == 1  # stop at the first failure
    assert spool_files(Path(config.spool_dir), "rejected") == []


def test_a_401_says_secret_or_clock(config, log, clock, sender, api):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    api.script = [api.error(401, "signature_invalid")]
    assert (
        "SECRET_FILE does not hold the current signing secret"
        in trigger.drain(config, log, clock=clock, sender=sender, scheduled=False)["stopped"]
    )
    api.script = [
        api.error(
            401, "signature_expired", details={"server_time": int(clock.now) - 400, "max_signature_age_seconds": 300}
        )
    ]
    assert (
        "this host's clock is +400 s off"
        in trigger.drain(config, log, clock=clock, sender=sender, scheduled=False)["stopped"]
    )
    api.script = [api.answer(401, {"error": "Unauthorized"})]  # not p4review's shape: still no crash
    assert "SECRET_FILE" in trigger.drain(config, log, clock=clock, sender=sender, scheduled=False)["stopped"]


@pytest.mark.spec("TRG-6")
def test_a_failed_scheduled_drain_backs_off_with_full_jitter(config, log, clock, sender, api):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    api.script = [trigger.Unreachable("timed out")] * 3
    spool = trigger.Spool(config.spool_dir, clock)
    start = clock.now
    trigger.drain(config, log, clock=clock, sender=sender, rng=lambda: 1.0)
    state = spool.load_state()
    assert state["failures"] == 1 and state["next_attempt_at"] == start + 30  # base 30 s, rng at its top
    # Not due: no request at all, and the reason is given.
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert "backing off until" in result["skipped"] and len(api.requests) == 1
    clock.now = state["next_attempt_at"]
    trigger.drain(config, log, clock=clock, sender=sender, rng=lambda: 1.0)
    assert spool.load_state()["next_attempt_at"] == clock.now + 60  # doubles
    # --force tries now; a success clears the backoff.
    trigger.drain(config, log, clock=clock, sender=sender, force=True, rng=lambda: 0.5)
    api.script = []
    result = trigger.drain(config, log, clock=clock, sender=sender, force=True)
    assert result["done"] == 1 and spool.load_state() == {}


def test_retry_after_is_honoured_and_a_sender_run_sets_no_backoff(config, log, clock, sender, api):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    spool = trigger.Spool(config.spool_dir, clock)
    api.script = [api.error(503, "service_unavailable", {"Retry-After": "120"})]
    trigger.drain(config, log, clock=clock, sender=sender, scheduled=False)
    assert spool.load_state() == {}  # the trigger's own sender: one attempt, no schedule
    api.script = [api.error(503, "service_unavailable", {"Retry-After": "120"})]
    trigger.drain(config, log, clock=clock, sender=sender, rng=lambda: 0.0)
    assert spool.load_state()["next_attempt_at"] == clock.now + 120


@pytest.mark.parametrize(
    "failures, rng, expected",
    [(1, 1.0, 30), (2, 1.0, 60), (5, 1.0, 480), (6, 1.0, 600), (30, 1.0, 600), (3, 0.0, 0), (3, 0.25, 30)],
)
def test_backoff_delay_is_full_jitter_capped(failures, rng, expected):
    assert trigger.backoff_delay(failures, 30, 600, lambda: rng) == expected


def test_p4_unreachable_keeps_the_event_and_a_change_that_no_longer_exists_is_rejected(
    config, log, clock, sender, p4, api
):
    spool_event(config, log, clock, "change-commit", 48213, None)
    p4.fail = trigger.P4Error("p4 describe: Perforce password (P4PASSWD) invalid or unset.", unreachable=True)
    assert "P4PASSWD" in trigger.drain(config, log, clock=clock, sender=sender)["stopped"]
    p4.fail = trigger.P4Error("p4 key: You don't have permission for this operation.")
    assert "permission" in trigger.drain(config, log, clock=clock, sender=sender, force=True)["stopped"]
    assert len(spool_files(Path(config.spool_dir), "pending")) == 1
    p4.fail = trigger.P4Error("p4 describe: Change 48213 unknown.")
    result = trigger.drain(config, log, clock=clock, sender=sender, force=True)
    assert result["rejected"] == 1 and api.requests == []
    assert spool_files(Path(config.spool_dir), "rejected")[0]["outcome"]["p4_error"].endswith("unknown.")


def test_a_shelve_delete_is_recorded_without_a_review(config, log, clock, sender, p4, api):
    p4.keys.update({"p4review-version-48240": "2", "p4review-shelf-48240-v2": "abc"})
    spool_event(config, log, clock, "shelve-delete", 48240)
    assert trigger.drain(config, log, clock=clock, sender=sender)["done"] == 1
    assert api.requests == [] and "p4review-shelf-48240-v2" not in p4.keys
    assert spool_files(Path(config.spool_dir), "done")[0]["outcome"]["recorded"] == "shelf deleted; no review"


def test_an_identical_reshelve_is_done_without_a_request(config, log, clock, sender, p4, api):
    p4.shelves[48240] = shelf("AA")
    spool_event(config, log, clock, "shelve-commit", 48240)
    spool_event(config, log, clock, "shelve-commit", 48240)
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert result["done"] == 2 and len(api.requests) == 1
    skipped = spool_files(Path(config.spool_dir), "done")[1]
    assert skipped["outcome"]["skipped"] == "identical to shelf version 1"


@pytest.mark.spec("TRG-6")
def test_an_orphan_of_a_writer_killed_before_its_rename_is_recovered_once(config, log, clock, sender, api):
    spool = trigger.Spool(config.spool_dir, clock)
    spool.ensure()
    whole = Path(config.spool_dir) / "tmp" / "20260101T000000000000Z-1-aaaaaa-change-commit-48213.json"
    whole.write_bytes(
        trigger._encode_flat(
            {
                "format": 1,
                "trigger": "change-commit",
                "change": 48213,
                "old_change": None,
                "received_at": "x",
                "host": "h",
            }
        )
    )
    torn = Path(config.spool_dir) / "tmp" / "20260101T000000000001Z-1-bbbbbb-change-commit-48220.json"
    torn.write_bytes(b'{"format": 1, "trig')
    young = Path(config.spool_dir) / "tmp" / "20260101T000000000002Z-1-cccccc-change-commit-48234.json"
    young.write_bytes(b'{"format": 1, "trig')
    leftover = Path(config.spool_dir) / "tmp" / "x.json.123.abcdef.rewrite"
    leftover.write_bytes(b"{}")
    for path in (whole, torn, leftover):
        os.utime(path, (clock.now - 61, clock.now - 61))
    os.utime(young, (clock.now - 5, clock.now - 5))
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert result["done"] == 1 and [r["changelist_id"] for r in api.requests] == [48213]
    assert [p.name for p in (Path(config.spool_dir) / "corrupt").iterdir()] == [torn.name]
    assert [p.name for p in (Path(config.spool_dir) / "tmp").iterdir()] == [young.name]  # still being written?
    assert any("spool_file_recovered" in line for line in log_lines(config))


def test_an_unreadable_pending_file_goes_to_corrupt(config, log, clock, sender):
    trigger.Spool(config.spool_dir, clock).ensure()
    (Path(config.spool_dir) / "pending" / "bad-change-commit-1.json").write_text("[]")
    assert trigger.drain(config, log, clock=clock, sender=sender)["corrupt"] == 1


@pytest.mark.spec("TRG-6")
def test_one_drain_at_a_time(config, log, clock, sender, api):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    held = trigger.Spool(config.spool_dir, clock).try_lock()
    try:
        result = trigger.drain(config, log, clock=clock, sender=sender)
        assert result["skipped"] == "another drain is running" and api.requests == []
    finally:
        trigger._release(held)
    assert trigger.drain(config, log, clock=clock, sender=sender)["done"] == 1


def test_a_missing_secret_keeps_events_and_says_why(tmp_path, clock, p4):
    config = trigger.load_config(str(write_config(tmp_path, SECRET_FILE=str(tmp_path / "absent"))))
    log = trigger.Log(config.log_file, clock=clock)
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    result = trigger.drain(config, log, clock=clock, sender=trigger.Sender(config, log, clock, p4=p4))
    assert "SECRET_FILE" in result["stopped"] and result["left"] == 1


def test_done_events_are_pruned_after_the_retention(config, log, clock, sender):
    spool_event(config, log, clock, "change-commit", 48213, 48213)
    trigger.drain(config, log, clock=clock, sender=sender)
    [done] = (Path(config.spool_dir) / "done").iterdir()
    os.utime(done, (clock.now - 8 * 86400, clock.now - 8 * 86400))
    trigger.drain(config, log, clock=clock, sender=sender)
    assert list((Path(config.spool_dir) / "done").iterdir()) == []


# --- signing ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "method, route, body",
    [
        ("POST", "/v1/reviews", b'{"a": 1}'),
        ("GET", "/v1/ping", b""),
        ("post", "/v1/reviews", "caf\u00e9 \u2603".encode()),
    ],
)
def test_the_trigger_signs_exactly_as_the_api_verifies(method, route, body):
    secret = "s3cr3t-\u00e9"
    signature = trigger.sign(secret, "1790000000", method, route, body)
    assert signature == signing.sign(secret, "1790000000", method, route, body)
    signing.verify(
        secrets=["other", secret],
        timestamp="1790000000",
        signature=signature,
        method=method,
        path=route,
        body=body,
        now=1_790_000_010,
        max_age_seconds=300,
    )


def test_the_post_body_carries_only_the_api_fields(config):
    captured = {}
    client = trigger.ApiClient(config, "s", clock=lambda: 0)
    client.call = lambda method, route, body=b"": captured.update(method=method, route=route, body=json.loads(body))
    client.post_review(
        {
            "changelist_id": 48277,
            "review_version": 3,
            "kind": "submitted",
            "rerun": True,
            "idempotency_key": "p4-submitted-48277-v3",
            "fingerprint": "x",
            "follows_shelf": {"changelist_id": 48240, "review_version": 2},
        }
    )
    assert captured == {
        "method": "POST",
        "route": "/v1/reviews",
        "body": {
            "changelist_id": 48277,
            "review_version": 3,
            "kind": "submitted",
            "rerun": True,
            "idempotency_key": "p4-submitted-48277-v3",
            "follows_shelf": {"changelist_id": 48240, "review_version": 2},
        },
    }


# --- catch-up -----------------------------------------------------------------------------------------------
def test_a_first_catch_up_sets_the_mark_and_posts_nothing(config, log, clock, sender, p4, api):
    p4.changes = [(48213, 1000), (48220, 2000)]
    result = trigger.catch_up(config, log, clock=clock, sender=sender)
    assert result["mark"] == 48220 and api.requests == []
    assert p4.keys["p4review-catchup-mark"] == "48220"


def test_catch_up_posts_what_never_arrived_and_advances_the_mark(config, log, clock, sender, p4, api):
    p4.keys["p4review-catchup-mark"] = "48213"
    p4.changes = [(48213, 1000), (48220, 2000), (48234, 3000), (48261, int(clock.now) - 10)]
    api.jobs["p4-submitted-48220-v1"] = "job-seen"  # this one did arrive
    result = trigger.catch_up(config, log, clock=clock, sender=sender)
    assert (result["posted"], result["already_there"]) == (1, 1)
    # 48261 is younger than CATCHUP_GRACE: its own trigger may still be running.
    assert [r["changelist_id"] for r in api.requests] == [48220, 48234]
    assert result["mark"] == 48234 and p4.keys["p4review-catchup-mark"] == "48234"
    assert any("caught_up change=48234" in line for line in log_lines(config))


@pytest.mark.spec("TRG-9")
def test_catch_up_stops_at_a_failure_and_keeps_the_mark_before_it(config, log, clock, sender, p4, api):
    p4.keys["p4review-catchup-mark"] = "100"
    p4.changes = [(101, 1), (102, 2), (103, 3)]
    api.script = [api.answer(201, {"job_id": "a"}), api.error(503, "service_unavailable")]
    result = trigger.catch_up(config, log, clock=clock, sender=sender)
    assert result["mark"] == 101 and "503" in result["stopped"]
    assert p4.keys["p4review-catchup-mark"] == "101"


@pytest.mark.spec("TRG-9")
def test_catch_up_never_moves_the_mark_backwards(config, log, clock, sender, p4, api):
    p4.keys["p4review-catchup-mark"] = "100"
    p4.changes = [(101, 1)]
    original_post = api.post_review

    def another_host_moves_it(request):
        p4.keys["p4review-catchup-mark"] = "500"  # another trigger host's catch-up went further meanwhile
        return original_post(request)

    api.post_review = another_host_moves_it
    trigger.catch_up(config, log, clock=clock, sender=sender)
    assert p4.keys["p4review-catchup-mark"] == "500"


def test_catch_up_leaves_spooled_changes_to_the_drain_and_records_rejections(config, log, clock, sender, p4, api):
    p4.keys["p4review-catchup-mark"] = "100"
    p4.changes = [(101, 1), (102, 2), (103, 3)]
    api.script = [api.error(400, "invalid_request")]
    spool_event(config, log, clock, "change-commit", 102, 102)
    result = trigger.catch_up(config, log, clock=clock, sender=sender)
    assert result["rejected"] == 1 and result["mark"] == 101 and result["stopped"] == "change 102 is still spooled"
    [rejected] = spool_files(Path(config.spool_dir), "rejected")
    assert rejected["change"] == 101 and rejected["source"] == "catch-up" and rejected["outcome"]["status"] == 400


def test_catch_up_since_backfills(config, log, clock, sender, p4, api):
    p4.changes = [(48213, 1000), (48220, 2000)]
    result = trigger.catch_up(config, log, clock=clock, sender=sender, since=48213)
    assert [r["changelist_id"] for r in api.requests] == [48213, 48220] and result["mark"] == 48220


def test_catch_up_of_a_shelved_then_submitted_change_follows_its_shelf(config, log, clock, sender, p4, api):
    p4.keys.update({"p4review-catchup-mark": "48270", "p4review-version-48240": "2", "p4review-shelf-48240-v2": "abc"})
    p4.old_changes[48277] = 48240
    p4.changes = [(48277, 1000)]
    trigger.catch_up(config, log, clock=clock, sender=sender)
    [request] = api.requests
    assert request["review_version"] == 3 and request["follows_shelf"] == {"changelist_id": 48240, "review_version": 2}


@pytest.mark.spec("TRG-7")
def test_on_windows_the_trigger_only_spools_and_the_timer_sends(tmp_path, monkeypatch, capsys):
    """p4d on Windows: no detached sender; the event waits for the scheduled --drain."""
    config_file = write_config(tmp_path, SEND_MODE="background")
    monkeypatch.setattr(trigger, "IS_WINDOWS", True)
    monkeypatch.setattr(trigger, "start_sender", lambda *args: pytest.fail("no sender on Windows"))
    assert trigger.load_config(str(config_file)).send_mode == "spool-only"
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213"]) == 0
    assert len(spool_files(tmp_path / "spool", "pending")) == 1
    assert capsys.readouterr() == ("", "")


def test_in_spool_only_mode_no_sender_starts(tmp_path, monkeypatch):
    config_file = write_config(tmp_path, SEND_MODE="spool-only")
    monkeypatch.setattr(trigger, "start_sender", lambda *args: pytest.fail("spool-only starts no sender"))
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213"]) == 0
    assert len(spool_files(tmp_path / "spool", "pending")) == 1


def test_in_background_mode_the_trigger_starts_one_sender(tmp_path, monkeypatch):
    config_file = write_config(tmp_path, SEND_MODE="background")
    started = []
    monkeypatch.setattr(trigger, "start_sender", lambda config, log: started.append(config.source))
    assert trigger.main(["-c", str(config_file), "-t", "shelve-commit", "-v", "48240"]) == 0
    assert started == [str(config_file)]
    assert trigger.main(["-c", str(config_file), "-t", "shelve-commit", "-v", "not-a-change"]) == 0
    assert started == [str(config_file)]  # nothing spooled, nothing to send


def test_catch_up_takes_the_oldest_changes_first_when_there_are_more_than_a_run_takes(tmp_path, clock, api):
    """A long outage: more changes since the mark than CATCHUP_MAX. The oldest go first, so the
    mark never jumps past a change nobody posted."""
    config = trigger.load_config(str(write_config(tmp_path, CATCHUP_MAX="2")))
    log = trigger.Log(config.log_file, clock=clock)
    p4 = trigger.P4(config)
    calls = []

    def run(args):
        calls.append(args)
        if args[0] == "changes":  # p4 answers newest first
            return [{b"change": str(n).encode(), b"time": b"1"} for n in (105, 104, 103, 102, 101)]
        if args[0] == "counter":  # `p4 counter change`: the newest change number
            return [{b"code": b"stat", b"counter": b"change", b"value": b"105"}]
        return [{b"code": b"stat", b"value": b"100"}]

    p4.run = run
    p4.key_compare_and_set = lambda name, old, new: True
    result = trigger.catch_up(config, log, clock=clock, sender=trigger.Sender(config, log, clock, p4=p4, api=api))
    assert [r["changelist_id"] for r in api.requests] == [101, 102] and result["mark"] == 102
    assert "-m" not in next(args for args in calls if args[0] == "changes")


def test_catch_up_respects_excluded_paths(tmp_path, clock, p4, api):
    """PATHS=//depot/... -//depot/secret/...: p4 changes gets the included path only, and a
    change under the excluded path alone is passed over, as its trigger would not have fired."""
    config = trigger.load_config(str(write_config(tmp_path, PATHS="//depot/... -//depot/secret/...")))
    log = trigger.Log(config.log_file, clock=clock)
    listed = []
    p4.keys["p4review-catchup-mark"] = "100"
    p4.changes = [(101, 1), (102, 2), (103, 3)]
    p4.submitted_files = {
        101: ["//depot/secret/keys.txt"],
        102: ["//depot/secret/a", "//depot/app/main.c"],
        103: ["//depot/secret/x/y"],
    }
    original = p4.submitted_changes
    p4.submitted_changes = lambda since, paths, limit: listed.append(paths) or original(since, paths, limit)
    result = trigger.catch_up(config, log, clock=clock, sender=trigger.Sender(config, log, clock, p4=p4, api=api))
    assert listed == [["//depot/..."]]
    assert [r["changelist_id"] for r in api.requests] == [102] and result["mark"] == 103


def test_path_scope_matches_like_the_trigger_table():
    scope = trigger.PathScope(["//depot/.../*.c", "-//depot/vendor/..."])
    assert scope.covers_any(["//depot/app/x.c"]) and scope.covers_any(["//depot/a/b/c.c"])
    assert not scope.covers_any(["//depot/app/x.h", "//depot/vendor/lib/y.c"])


def test_an_unreadable_secret_file_is_refused_with_the_reason(tmp_path, monkeypatch):
    """Permission bits do not stop root (the tests' user), so the refusal is simulated at os.open()."""
    secret = write_secret(tmp_path / "secret")
    real_open = os.open

    def refusing_open(path, *args, **kwargs):
        if str(path) == str(secret):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(trigger.os, "open", refusing_open)
    with pytest.raises(trigger.ConfigError, match="cannot read SECRET_FILE .*Permission denied"):
        trigger.read_private_file(str(secret), "SECRET_FILE")
