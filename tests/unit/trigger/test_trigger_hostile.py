"""The trigger host as a trust boundary (issue 27): a spool, log or lock path another local
account can change, a config file others can write, planted or malformed spool events, text
that could forge a log line or drive a terminal, and a hostile or broken Perforce server."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
from pathlib import Path

import pytest

from p4review_dev.support.trigger import load_trigger, spool_files, write_config

trigger = load_trigger()

NOBODY = 65534  # another local account's uid
# Text that forges a log line for `str.splitlines` or drives a terminal: a C1 CSI, NEL, the
# Unicode line and paragraph separators, a right-to-left override, ESC and a newline.
HOSTILE = "\x9b2J\x85x\u2028FORGED INFO [1] review_requested\u2029\u202e\x1b]0;pwned\x07\n"
UNSAFE_CHARACTERS = {chr(code) for code in list(range(0x20)) + list(range(0x7F, 0xA0))} | set(
    "\u2028\u2029\u202e\u200e\u2066"
)


def log_text(config) -> str:
    path = Path(config.log_file)
    return path.read_text() if path.exists() else ""


def assert_one_safe_line_per_entry(text: str) -> None:
    """Each entry is one line, starting with its UTC time, and carries nothing unsafe."""
    lines = text.split("\n")[:-1] if text else []
    assert text.splitlines() == lines
    for line in lines:
        assert line[:4].isdigit() and line[4] == "-", line
        assert not UNSAFE_CHARACTERS & set(line), line


@pytest.fixture
def syslog(monkeypatch) -> list[str]:
    lines: list[str] = []
    monkeypatch.setattr(trigger, "_syslog", lambda level, text: lines.append(f"{level} {text}"))
    return lines


def needs_root_to_chown() -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another account needs root (the world-writable tests cover the rule)")


def event(change: int = 48213, trigger_type: str = "change-commit", **fields) -> dict:
    base = {
        "format": 1,
        "trigger": trigger_type,
        "change": change,
        "old_change": None,
        "received_at": "2026-01-01T00:00:00.000000Z",
        "host": "perforce",
    }
    base.update(fields)
    return {key: value for key, value in base.items() if value is not ...}


def plant(config, name: str, document: object) -> Path:
    trigger.Spool(config.spool_dir).ensure()
    path = Path(config.spool_dir) / "pending" / name
    path.write_text(json.dumps(document))
    path.chmod(0o600)
    return path


def submit_request(change: int, version: int = 1, **extra) -> dict:
    return {
        "changelist_id": change,
        "review_version": version,
        "kind": "submitted",
        "rerun": version > 1,
        "idempotency_key": f"p4-submitted-{change}-v{version}",
        **extra,
    }


# --- 1. the spool, the log and the lock: owned by this account, writable by nobody else -------------
@pytest.mark.spec("TRG-4")
def test_a_spool_dir_others_can_write_is_refused_and_the_trigger_still_exits_0(tmp_path, syslog, capsys):
    spool = tmp_path / "shared" / "spool"
    spool.mkdir(parents=True)
    spool.chmod(0o777)  # created beforehand by another local user
    config_file = write_config(tmp_path, SPOOL_DIR=str(spool))
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213"]) == 0
    assert not (spool / "pending").exists() or list((spool / "pending").iterdir()) == []
    assert not (spool / "p4review-trigger.log").exists()  # the log there is refused too: syslog
    refused = [line for line in syslog if "spool_refused" in line]
    assert refused and "writable by group or others (mode 777)" in refused[0]
    assert "--catch-up will find this submit" in refused[0]
    assert capsys.readouterr() == ("", "")


def test_a_spool_dir_owned_by_another_account_is_refused(tmp_path, syslog):
    needs_root_to_chown()
    spool = tmp_path / "spool"
    spool.mkdir(mode=0o700)
    os.chown(spool, NOBODY, -1)
    config_file = write_config(tmp_path, SPOOL_DIR=str(spool))
    assert trigger.main(["-c", str(config_file), "-t", "shelve-commit", "-v", "48240"]) == 0
    assert not (spool / "pending").exists()
    assert any("spool_refused" in line and f"owned by uid {NOBODY}" in line for line in syslog)
    assert any("this shelve is not reviewed" in line for line in syslog)


def test_a_spool_in_a_folder_others_can_write_is_refused_unless_sticky(tmp_path):
    """Our own spool (0700) in a shared folder that is not sticky: anyone can rename it away
    (and with it a spooled shelve, which catch-up would not find) or put their own in its place."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    spool = trigger.Spool(str(shared / "spool"))
    with pytest.raises(trigger.UnsafeSpool, match=r"shared, which others can write \(mode 777\)"):
        spool.ensure()
    shared.chmod(0o1777)  # like /tmp: others cannot rename or delete what is not theirs
    spool.ensure()


def test_a_spool_dir_that_is_another_accounts_symbolic_link_is_refused(tmp_path):
    needs_root_to_chown()
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)  # a folder of the trigger's account, where it never meant to spool
    link = tmp_path / "spool"
    link.symlink_to(ours)
    os.lchown(link, NOBODY, -1)  # planted by another user
    with pytest.raises(trigger.UnsafeSpool, match=f"symbolic link owned by uid {NOBODY}"):
        trigger.Spool(str(link)).ensure()
    assert list(ours.iterdir()) == []
    os.lchown(link, 0, -1)  # an admin's link is fine
    trigger.Spool(str(link)).ensure()


@pytest.mark.parametrize("folder", ["pending", "tmp", "corrupt"])
def test_a_spool_folder_others_can_write_is_refused(tmp_path, syslog, folder):
    config = trigger.load_config(str(write_config(tmp_path)))
    spool = trigger.Spool(config.spool_dir)
    spool.ensure()
    Path(spool.path(folder)).chmod(0o733)
    with pytest.raises(trigger.UnsafeSpool, match=f"{folder} is writable by group or others"):
        spool.ensure()


@pytest.mark.parametrize(
    "make_log",
    [
        lambda log, target: log.symlink_to(target),
        lambda log, target: os.link(target, log),
        lambda log, target: (log.write_text(""), log.chmod(0o666)),
    ],
    ids=["symlink", "hard-link", "world-writable"],
)
def test_a_log_file_another_account_could_redirect_is_refused(tmp_path, syslog, make_log):
    """The log as a symlink (or hard link) to the trigger account's ~/.bashrc: no line is ever
    appended to it; the lines go to syslog, and the event is still spooled."""
    bashrc = tmp_path / "bashrc"
    bashrc.write_text("# the account's shell start-up file\n")
    bashrc.chmod(0o644)
    log_path = tmp_path / "spool" / "p4review-trigger.log"
    log_path.parent.mkdir(mode=0o700)
    make_log(log_path, bashrc)
    config_file = write_config(tmp_path)
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213"]) == 0
    assert bashrc.read_text() == "# the account's shell start-up file\n"
    assert len(spool_files(tmp_path / "spool", "pending")) == 1
    assert any("log_file_refused" in line for line in syslog)
    assert any("event_spooled" in line for line in syslog)


def test_a_log_file_owned_by_another_account_is_refused(tmp_path, syslog):
    needs_root_to_chown()
    log_path = tmp_path / "t.log"
    log_path.write_text("")
    log_path.chmod(0o644)
    os.chown(log_path, NOBODY, -1)
    trigger.Log(str(log_path)).info("something")
    assert log_path.read_text() == ""
    assert any("log_file_refused" in line and f"owned by uid {NOBODY}" in line for line in syslog)


def test_a_drain_lock_symlink_creates_nothing_through_it(tmp_path, config, log, clock, sender):
    trigger.Spool(config.spool_dir).ensure()
    target = tmp_path / "created-through-the-lock"
    (Path(config.spool_dir) / "drain.lock").symlink_to(target)
    with pytest.raises(trigger.UnsafeSpool, match="drain.lock is a symbolic link"):
        trigger.drain(config, log, clock=clock, sender=sender)
    assert not target.exists()


def test_spool_files_are_created_owner_only(config, log, clock):
    trigger.spool_event(config, log, "change-commit", "48213", None, clock)
    [pending] = (Path(config.spool_dir) / "pending").iterdir()
    assert pending.stat().st_mode & 0o777 == 0o600
    assert Path(config.log_file).stat().st_mode & 0o777 == 0o600
    assert (Path(config.spool_dir) / "corrupt").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize(
    "plant_file",
    [
        lambda path, target: path.symlink_to(target),
        lambda path, target: (path.write_text(target.read_text()), path.chmod(0o666)),
    ],
    ids=["symlink", "world-writable"],
)
def test_a_pending_file_another_account_could_have_written_goes_to_corrupt(
    tmp_path, config, log, clock, sender, api, plant_file
):
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps(event(48213)))
    trigger.Spool(config.spool_dir).ensure()
    plant_file(Path(config.spool_dir) / "pending" / "20260101T000000000000Z-1-aaaaaa-change-commit-48213.json", real)
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["corrupt"], api.requests) == (1, [])


@pytest.mark.spec("TRG-10")
def test_ping_and_status_report_a_spool_others_can_write(tmp_path, capsys):
    spool = tmp_path / "spool"
    spool.mkdir()
    spool.chmod(0o777)
    config_file = write_config(tmp_path)
    config = trigger.load_config(str(config_file))
    checks = trigger.Checks()
    trigger._ping_spool(config, checks, lambda: 0.0)
    out = capsys.readouterr().out
    assert checks.failed == 2, out
    assert f"FAIL  spool      {spool} is writable by group or others (mode 777)" in out
    assert "FAIL  log" in out
    args = trigger.build_parser().parse_args(["-c", str(config_file), "--status"])
    assert trigger.run_status(args) == 1
    assert f"unsafe     {spool} is writable by group or others (mode 777)" in capsys.readouterr().out


# --- 2. untrusted text never reaches the log or a terminal unescaped ----------------------------------
def test_file_names_p4_answers_and_api_answers_are_escaped_in_the_log(config, log, clock, sender, api, p4):
    trigger.Spool(config.spool_dir).ensure()
    (Path(config.spool_dir) / "pending" / f"0-{HOSTILE}.json").write_text("{not json")
    plant(config, "1-change-commit-48213.json", event(48213))
    api.script = [api.error(400, "invalid_request")]
    api.script[0].body["error"]["message"] = HOSTILE
    api.script[0].body["error"]["code"] = "invalid_request" + HOSTILE
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["corrupt"], result["rejected"]) == (1, 1)
    plant(config, "2-shelve-commit-48240.json", event(48240, "shelve-commit"))
    p4.fail = trigger.P4Error("p4 describe: " + HOSTILE, unreachable=True)
    assert trigger.drain(config, log, clock=clock, sender=sender, force=True)["stopped"]
    text = log_text(config)
    assert "spool_file_corrupt" in text and "event_rejected" in text and "drain_stopped" in text
    assert "\\u2028FORGED" in text
    assert_one_safe_line_per_entry(text)


def test_printable_escapes_every_line_break_and_terminal_control():
    shown = trigger.printable(HOSTILE + "\udcff", 1000)
    assert not UNSAFE_CHARACTERS & set(shown) and "\udcff" not in shown
    assert shown.splitlines() == [shown]


# --- 3. what is signed is re-derived from Perforce, not taken from the spool file --------------------
@pytest.mark.spec("TRG-8")
def test_a_planted_review_version_is_never_signed_or_posted(config, log, clock, sender, api, p4):
    p4.keys["p4review-version-48240"] = "1"  # the shelf's one real version
    plant(
        config,
        "1-shelve-commit-48240.json",
        event(
            48240,
            "shelve-commit",
            request={
                "changelist_id": 48240,
                "review_version": 1000000,
                "kind": "shelved",
                "rerun": True,
                "idempotency_key": "p4-shelved-48240-v1000000",
            },
        ),
    )
    plant(
        config,
        "2-change-commit-48213.json",
        event(
            48213,
            request=submit_request(48213, 1000000, follows_shelf={"changelist_id": 48213, "review_version": 999999}),
        ),
    )
    plant(config, "3-change-commit-48220.json", event(48220, request=submit_request(48220)))  # a genuine resend
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["corrupt"], result["done"]) == (2, 1)
    assert [request["idempotency_key"] for request in api.requests] == ["p4-submitted-48220-v1"]
    corrupt = [line for line in log_text(config).splitlines() if "spool_file_corrupt" in line]
    assert len(corrupt) == 2 and all("1000000" in line and "Perforce" in line for line in corrupt)


def test_a_resent_submit_must_match_the_version_perforce_recorded(config, log, clock, sender, api, p4):
    p4.keys["p4review-submit-48277"] = "3:48240:2"
    genuine = submit_request(48277, 3, follows_shelf={"changelist_id": 48240, "review_version": 2})
    plant(config, "1-change-commit-48277.json", event(48277, old_change=48240, request=genuine))
    forged = submit_request(48277, 3, follows_shelf={"changelist_id": 48240, "review_version": 1})
    plant(config, "2-change-commit-48277.json", event(48277, old_change=48240, request=forged))
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["done"], result["corrupt"]) == (1, 1)
    assert api.requests == [genuine]


# --- 4. the config file: nobody else may write it ------------------------------------------------------
@pytest.mark.spec("TRG-2")
def test_a_config_file_others_can_write_is_refused_everywhere(config_file, syslog, capsys):
    config_file.chmod(0o666)  # another user could set P4= to their own program
    with pytest.raises(trigger.ConfigError, match=r"writable by group or others \(mode 666\)"):
        trigger.load_config(str(config_file))
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213"]) == 0
    assert not (config_file.parent / "spool").exists()
    assert any("config_error" in line and "writable by group or others" in line for line in syslog)
    assert trigger.main(["-c", str(config_file), "--ping"]) == 1
    assert "FAIL  config" in capsys.readouterr().out
    config_file.chmod(0o644)  # readable by others is fine: it holds no secret
    assert trigger.load_config(str(config_file)).source == str(config_file)


def test_a_p4_program_others_can_write_is_never_run(tmp_path, config, capsys):
    """P4= names a program the trigger runs as its account: one another account could replace is
    refused like the config that names it."""
    ran = tmp_path / "ran"
    program = tmp_path / "p4"
    program.write_text(f"#!/bin/sh\ntouch {ran}\n")
    program.chmod(0o777)
    config = trigger.load_config(str(write_config(tmp_path, P4=str(program))))
    with pytest.raises(trigger.P4Error, match=r"writable by group or others \(mode 777\)") as refused:
        trigger.P4(config).run(["login", "-s"])
    assert refused.value.unreachable  # the event waits for the fix, it is not rejected
    checks = trigger.Checks()
    trigger._ping_p4(config, checks)
    assert checks.failed == 1 and "FAIL  p4" in capsys.readouterr().out
    assert not ran.exists()


def test_a_fifo_in_the_spool_never_blocks_the_drain(config, log, clock, sender):
    trigger.Spool(config.spool_dir).ensure()
    fifo = Path(config.spool_dir) / "pending" / "20260101T000000000000Z-1-aaaaaa-change-commit-1.json"
    os.mkfifo(fifo, 0o600)  # opening it to read would wait for a writer for ever
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["corrupt"], result["left"]) == (1, 0)
    os.mkfifo(Path(config.spool_dir) / "state.json", 0o600)
    with pytest.raises(trigger.UnsafeSpool, match="state.json is not a regular file"):
        trigger.drain(config, log, clock=clock, sender=sender)


def test_a_config_file_owned_by_another_account_is_refused(config_file):
    needs_root_to_chown()
    os.chown(config_file, NOBODY, -1)
    with pytest.raises(trigger.ConfigError, match=f"owned by uid {NOBODY}"):
        trigger.load_config(str(config_file))


# --- 5. one malformed event never stops the drain ------------------------------------------------------
MALFORMED = {
    "change is text": event(change="abc"),
    "review_version is text": event(request=dict(submit_request(48213), review_version="1")),
    "change is null": event(change=None),
    "old_change is a list": event(old_change=[48213]),
    "change is negative": event(change=-5),
    "old_change is a bool": event(old_change=True),
    "change is huge": event(change=2**70),
    "request misses kind": event(request={k: v for k, v in submit_request(48213).items() if k != "kind"}),
    "extra field": event(script="rm -rf /"),
    "attempts is text": event(attempts="many"),
}


@pytest.mark.spec("TRG-6")
def test_malformed_events_go_to_corrupt_and_the_valid_ones_behind_them_are_sent(config, log, clock, sender, api):
    for index, (_, document) in enumerate(MALFORMED.items()):
        plant(config, f"{index:02d}a-change-commit-1.json", document)
        plant(config, f"{index:02d}b-change-commit-{48300 + index}.json", event(48300 + index))
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["corrupt"], result["done"], result["stopped"]) == (len(MALFORMED), len(MALFORMED), None)
    assert [r["changelist_id"] for r in api.requests] == [48300 + index for index in range(len(MALFORMED))]
    assert len(list((Path(config.spool_dir) / "corrupt").iterdir())) == len(MALFORMED)
    lines = [line for line in log_text(config).splitlines() if "spool_file_corrupt" in line]
    assert len(lines) == len(MALFORMED) and all("reason=" in line for line in lines)


@pytest.mark.parametrize("name", list(MALFORMED))
def test_each_malformed_shape_is_named(name):
    assert trigger.event_problem(MALFORMED[name])


def test_a_valid_event_and_a_rejected_one_moved_back_are_accepted():
    assert trigger.event_problem(event()) is None
    moved_back = {
        "format": 1,
        "trigger": "change-commit",
        "change": 101,
        "source": "catch-up",
        "request": submit_request(101),
        "outcome": {"status": 400, "code": "invalid_request"},
    }
    assert trigger.event_problem(moved_back) is None


# --- 6. a hostile or broken Perforce server ------------------------------------------------------------
def p4_server(config, changes: list[tuple[bytes, bytes]], counter: bytes, keys: dict[str, str]):
    """The trigger's P4 talking to a server that answers these records, shaped as `p4 -G` (and
    p4python's P4.run) gives them: `changes` -> {code, change, time, user, client, desc, status,
    changeType, path}, newest first; `counter change` -> {code, counter, value}; `key` ->
    {code, key, value}; `describe -s` -> {code, change, ..., status}."""
    p4 = trigger.P4(config)

    def run(args: list[str]) -> list[dict[bytes, bytes]]:
        command = args[0]
        if command == "changes":
            listed = [
                {
                    b"code": b"stat",
                    b"change": change,
                    b"time": stamp,
                    b"user": b"u",
                    b"client": b"c",
                    b"desc": b"d",
                    b"status": b"submitted",
                    b"changeType": b"public",
                    b"path": b"//depot/...",
                }
                for change, stamp in sorted(changes, key=lambda item: int(item[0]), reverse=True)
            ]
            return listed[:1] if "-m" in args else listed
        if command == "counter":
            return [{b"code": b"stat", b"counter": b"change", b"value": counter}]
        if command == "describe":
            return [{b"code": b"stat", b"change": args[-1].encode(), b"status": b"submitted"}]
        if command == "key":
            plain = [arg for arg in args[1:] if not arg.startswith("-")]
            for arg in args[1:]:
                if arg.startswith("--to="):
                    keys[plain[0]] = arg[len("--to=") :]
            if len(plain) == 2:
                keys[plain[0]] = plain[1]
            return [{b"code": b"stat", b"key": plain[0].encode(), b"value": keys.get(plain[0], "0").encode()}]
        raise AssertionError(args)

    p4.run = run
    return p4


@pytest.mark.spec("TRG-10")
def test_ping_escapes_the_user_name_p4_answers(config, capsys, monkeypatch):
    answers = {
        "login": [
            {b"code": b"stat", b"user": b"\x1b]0;pwned\x07evil\x1b[2J\xe2\x80\xa8next", b"TicketExpiration": b"1"}
        ],
        "key": [{b"code": b"stat", b"key": b"p4review-catchup-mark", b"value": b"0"}],
    }
    monkeypatch.setattr(trigger.P4, "run", lambda self, args: answers[args[0]])
    checks = trigger.Checks()
    trigger._ping_p4(config, checks)
    out = capsys.readouterr().out
    assert "logged in as \\x1b]0;pwned\\x07evil\\x1b[2J\\u2028next" in out
    assert not UNSAFE_CHARACTERS - {"\n"} & set(out)


@pytest.mark.spec("TRG-9")
def test_a_record_with_an_unreadable_time_is_skipped_and_the_rest_caught_up(config, log, clock, api):
    keys = {"p4review-catchup-mark": "100"}
    p4 = p4_server(config, [(b"101", b"1"), (b"102", b"soon\x1b[31m"), (b"103", b"3")], b"103", keys)
    result = trigger.catch_up(config, log, clock=clock, sender=trigger.Sender(config, log, clock, p4=p4, api=api))
    assert [r["changelist_id"] for r in api.requests] == [101, 103]
    assert (result["mark"], result["stopped"], keys["p4review-catchup-mark"]) == (103, None, "103")
    [skipped] = [line for line in log_text(config).splitlines() if "catch_up_record_ignored" in line]
    assert "change=102" in skipped and "soon\\x1b[31m" in skipped
    assert_one_safe_line_per_entry(log_text(config))


@pytest.mark.spec("TRG-9")
def test_a_change_beyond_the_servers_change_counter_never_moves_the_mark(config, log, clock, api):
    keys = {"p4review-catchup-mark": "100"}
    p4 = p4_server(config, [(b"101", b"1"), (b"2147483647", b"1")], b"101", keys)
    sender = trigger.Sender(config, log, clock, p4=p4, api=api)
    result = trigger.catch_up(config, log, clock=clock, sender=sender)
    assert [r["changelist_id"] for r in api.requests] == [101]
    assert (result["mark"], keys["p4review-catchup-mark"]) == (101, "101")
    assert "catch_up_record_ignored change=2147483647" in log_text(config)
    # A first run sets the mark at the newest submitted change, never beyond the counter either.
    keys.clear()
    assert trigger.catch_up(config, log, clock=clock, sender=sender)["mark"] == 101
    assert keys["p4review-catchup-mark"] == "101"


def test_a_mark_already_beyond_the_servers_change_counter_stops_catch_up_and_says_how_to_fix_it(
    config, log, clock, api
):
    keys = {"p4review-catchup-mark": "2147483647"}
    p4 = p4_server(config, [(b"101", b"1")], b"101", keys)
    result = trigger.catch_up(config, log, clock=clock, sender=trigger.Sender(config, log, clock, p4=p4, api=api))
    assert "beyond the server's change counter (101)" in result["stopped"] and "--since" in result["stopped"]
    assert api.requests == [] and keys["p4review-catchup-mark"] == "2147483647"
    result = trigger.catch_up(
        config, log, clock=clock, since=101, sender=trigger.Sender(config, log, clock, p4=p4, api=api)
    )
    assert [r["changelist_id"] for r in api.requests] == [101]
    assert (result["mark"], result["stopped"], keys["p4review-catchup-mark"]) == (101, None, "101")


@pytest.mark.spec("TRG-10")
def test_status_escapes_a_planted_last_error_and_file_name(config_file, config, capsys):
    spool = trigger.Spool(config.spool_dir)
    spool.ensure()
    spool.save_state({"failures": 2, "next_attempt_at": 0, "last_error": HOSTILE})
    plant(config, f"1-{HOSTILE}.json", event(48213, last_error=HOSTILE, attempts=1))
    args = trigger.build_parser().parse_args(["-c", str(config_file), "--status"])
    assert trigger.run_status(args) == 0
    out = capsys.readouterr().out
    assert "last error: \\x9b2J\\x85x\\u2028FORGED" in out
    assert not UNSAFE_CHARACTERS - {"\n"} & set(out)
    assert all(
        line[:10].rstrip() in ("spool", "pending", "rejected", "corrupt", "done", "backoff")
        for line in out.splitlines()
    )


# --- 7. a config saved with a byte-order mark ----------------------------------------------------------
@pytest.mark.spec("TRG-2")
def test_a_config_with_a_utf8_byte_order_mark_is_read(config_file, syslog):
    config_file.write_bytes(b"\xef\xbb\xbf" + config_file.read_bytes().replace(b"\n", b"\r\n"))
    config = trigger.load_config(str(config_file))
    assert config["API_URL"] == "http://127.0.0.1:9/prod"
    assert trigger.main(["-c", str(config_file), "-t", "change-commit", "-v", "48213"]) == 0
    assert len(spool_files(Path(config.spool_dir), "pending")) == 1 and syslog == []


# --- 8. second probe: what the first round's fixes did not reach ----------------------------------------
NESTED = '{"format": 1, "trigger": "change-commit", "change": 1, "host": ' + "[" * 20000 + "]" * 20000 + "}"


@pytest.mark.spec("TRG-6")
def test_an_event_nested_too_deeply_goes_to_corrupt_and_the_events_behind_it_are_sent(config, log, clock, sender, api):
    """A few KB of `[[[[` make json.loads raise RecursionError, which is no ValueError."""
    plant(config, "00-change-commit-1.json", {}).write_text(NESTED)
    plant(config, "01-change-commit-48213.json", event(48213))
    result = trigger.drain(config, log, clock=clock, sender=sender)
    assert (result["corrupt"], result["done"], result["stopped"]) == (1, 1, None)
    assert [r["changelist_id"] for r in api.requests] == [48213]
    assert "spool_file_corrupt" in log_text(config) and "nested too deeply" in log_text(config)


def test_an_api_answer_nested_too_deeply_is_an_answer_without_json():
    answer = trigger._answer(404, {}, b"[" * 20000 + b"]" * 20000)
    assert answer.body is None and trigger.classify(answer) == "retry"


@pytest.mark.spec("TRG-10")
@pytest.mark.parametrize("planted", ["Infinity", "-Infinity", "NaN", "1e308", "32503680000"])
def test_a_state_file_with_an_impossible_next_attempt_is_ignored(config_file, config, log, clock, capsys, planted):
    """save_state never puts the next attempt beyond the longest backoff: an infinite, NaN, huge
    or far-future time printed a traceback in --status and stalled (or failed) every --drain."""
    spool = trigger.Spool(config.spool_dir)
    spool.ensure()
    state = Path(config.spool_dir) / "state.json"
    state.write_text('{"failures": 3, "next_attempt_at": %s, "last_error": "x"}' % planted)
    state.chmod(0o600)
    args = trigger.build_parser().parse_args(["-c", str(config_file), "--status"])
    assert trigger.run_status(args) == 0
    assert "backoff" not in capsys.readouterr().out
    assert trigger.Spool(config.spool_dir, clock).load_state() == {}
    assert trigger.drain(config, log, clock=clock, sender=trigger.Sender(config, log, clock))["skipped"] is None


def test_a_state_file_with_a_genuine_backoff_is_kept(config, clock):
    spool = trigger.Spool(config.spool_dir, clock)
    spool.ensure()
    genuine = {"failures": 3, "next_attempt_at": clock() + 600.5, "last_error": "x"}
    spool.save_state(genuine)
    assert spool.load_state() == genuine


@pytest.mark.spec("TRG-10")
def test_ping_survives_p4_records_whose_fields_are_not_bytes(config, capsys, monkeypatch):
    """A broken or hostile server: numbers, text, lists and None where p4 -G writes bytes (the
    records reach P4.run as marshalled output: the p4 process is replaced, not P4.run)."""
    record = {b"code": b"stat", b"user": 7, b"value": 12, b"key": None, "odd": b"x", b"TicketExpiration": [1]}
    output = subprocess.CompletedProcess([], 0, marshal.dumps(record, 0), b"")
    monkeypatch.setattr(trigger.subprocess, "run", lambda *args, **kwargs: output)
    checks = trigger.Checks()
    trigger._ping_p4(config, checks)
    out = capsys.readouterr().out
    assert checks.failed == 0 and "logged in as 7" in out and "catch-up mark 12" in out


def test_p4_records_keep_bytes_and_numbers_only():
    data = marshal.dumps({b"code": b"stat", b"change": 101, b"desc": [1], b"time": 1.5, "user": b"u"}, 0)
    assert trigger._marshal_records(data) == [{b"code": b"stat", b"change": b"101"}]


@pytest.mark.spec("TRG-4")
def test_a_spool_below_a_folder_others_can_write_further_up_is_refused(tmp_path):
    """Not only the spool's own folder: any folder above it that others can write (not sticky)
    lets them rename the branch away, a spooled shelve with it, and put their own in its place."""
    shared = tmp_path / "shared"
    (shared / "p4review").mkdir(parents=True, mode=0o700)
    shared.chmod(0o777)
    spool = trigger.Spool(str(shared / "p4review" / "spool"))
    with pytest.raises(trigger.UnsafeSpool, match=r"shared, which others can write \(mode 777\)"):
        spool.ensure()
    shared.chmod(0o1777)
    spool.ensure()


def test_a_spool_reached_through_another_accounts_symbolic_link_is_refused(tmp_path):
    """A link in a sticky folder is its owner's to replace: the spool would move where they say."""
    needs_root_to_chown()
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    link = shared / "p4review"
    link.symlink_to(ours)
    os.lchown(link, NOBODY, -1)
    with pytest.raises(trigger.UnsafeSpool, match=f"reached through .*p4review, a symbolic link owned by uid {NOBODY}"):
        trigger.Spool(str(link / "spool")).ensure()
    assert list(ours.iterdir()) == []
    os.lchown(link, 0, -1)
    trigger.Spool(str(link / "spool")).ensure()


def test_a_spool_reached_through_a_symbolic_link_in_a_folder_others_can_write_is_refused(tmp_path):
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "p4review").symlink_to(ours)
    shared.chmod(0o777)  # anyone can point the link elsewhere
    with pytest.raises(trigger.UnsafeSpool, match=r"shared, which others can write \(mode 777\)"):
        trigger.Spool(str(shared / "p4review" / "spool")).ensure()


def test_a_secret_file_swapped_after_its_name_was_checked_is_refused(tmp_path, monkeypatch):
    """In a folder another account can write, the secret can be swapped between a check of its
    name and its opening (for their own file, or a FIFO that would hold the sender and its lock):
    the open file is what is checked. The race is simulated: the name's check sees the genuine file."""
    needs_root_to_chown()
    genuine = tmp_path / "genuine.secret"
    genuine.write_text("the-genuine-signing-secret-0123")
    genuine.chmod(0o600)
    swapped = tmp_path / "signing.secret"
    swapped.write_text("another-accounts-secret-0123456")
    swapped.chmod(0o600)
    os.chown(swapped, NOBODY, -1)
    real_stat = os.stat
    monkeypatch.setattr(
        trigger.os, "stat", lambda path, *a, **k: real_stat(genuine if str(path) == str(swapped) else path, *a, **k)
    )
    with pytest.raises(trigger.ConfigError, match=f"owned by uid {NOBODY}"):
        trigger.read_private_file(str(swapped), "SECRET_FILE")


def key_server(config, keys: dict[str, str], counter: bytes = b"101"):
    """The trigger's P4 against a server whose keys hold what `keys` says (`key -i` answers the
    key's value as it is), with one shelved file and submitted change 101."""
    p4 = p4_server(config, [(b"101", b"1")], counter, keys)
    answer_changes = p4.run

    def run(args: list[str]) -> list[dict[bytes, bytes]]:
        if args[:2] == ["key", "-i"]:
            return [{b"code": b"stat", b"key": args[2].encode(), b"value": keys.get(args[2], "0").encode()}]
        if args[0] == "describe" and "-S" in args:
            return [
                {
                    b"code": b"stat",
                    b"depotFile0": b"//depot/a.c",
                    b"action0": b"edit",
                    b"type0": b"text",
                    b"digest0": b"D",
                }
            ]
        return answer_changes(args)

    p4.run = run
    return p4


@pytest.mark.spec("TRG-9")
def test_a_catch_up_mark_of_thousands_of_digits_is_reset_by_since(config, log, clock, api):
    """int() of more than 4300 digits raises on Python 3.11+: the documented --since reset failed too."""
    keys = {"p4review-catchup-mark": "9" * 5000}
    p4 = key_server(config, keys)
    result = trigger.catch_up(config, log, clock=clock, sender=trigger.Sender(config, log, clock, p4=p4, api=api))
    assert "beyond the server's change counter (101)" in result["stopped"] and api.requests == []
    result = trigger.catch_up(
        config, log, clock=clock, since=101, sender=trigger.Sender(config, log, clock, p4=p4, api=api)
    )
    assert [r["changelist_id"] for r in api.requests] == [101]
    assert (result["stopped"], keys["p4review-catchup-mark"]) == (None, "101")


@pytest.mark.parametrize("version", ["9" * 5000, "99999999999"], ids=["5000 digits", "above 2^31-1"])
def test_a_version_key_of_too_many_digits_stops_the_drain_with_a_reason(config, log, clock, api, version):
    keys = {"p4review-version-48240": version}
    p4 = key_server(config, keys)
    with pytest.raises(trigger.P4Error, match="answered no number"):
        trigger.resolve_shelve(p4, trigger.Keys("p4review"), 48240)
    keys["p4review-submit-101"] = f"{version}:101:1"
    assert trigger.recorded_submit(p4, trigger.Keys("p4review"), 101) is None


@pytest.mark.parametrize(
    "header", ["\u00b2", "9" * 5000, "\u0663"], ids=["superscript two", "5000 digits", "arabic three"]
)
def test_a_retry_after_that_is_not_ascii_digits_means_no_delay(header):
    """ "²" (byte 0xB2 of a latin-1 header) and "٣" are digits to str.isdigit(), not to int()."""
    answer = trigger.Answer(503, {"retry-after": header}, None, b"")
    assert trigger.retry_after_seconds(answer) == 0.0
