"""p4review.perforce against the fixture-backed fake p4 (events/bin/p4)."""

from __future__ import annotations

import json
import logging
import marshal
import stat
import time
from functools import cache
from pathlib import Path

import pytest

from p4review.change.depot_paths import DepotAllowList
from p4review.errors import AuthError, ConfigError, ErrorClass, NotFoundError
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff
from p4review.models.job import ChangeKind
from p4review.perforce import (
    ChangeFetcher,
    P4ArgumentError,
    P4AuthError,
    P4CommandError,
    P4ConnectionError,
    P4NotFoundError,
    P4Runner,
    P4ServerBusyError,
    P4TimeoutError,
    added_file_diff,
    decode_marshal_stream,
    is_binary_type,
)
from p4review.perforce.access import p4_environment
from p4review_dev.support.harness import fake_p4, p4_commands

ROOT = Path(__file__).resolve().parents[3]
FAKE_P4 = str(ROOT / "events" / "bin" / "p4")
INDEX = json.loads((ROOT / "events" / "depot" / "index.json").read_text())["changelists"]
TICKET = "A1B2C3D4E5F60718293A4B5C6D7E8F90"


@pytest.fixture
def log_file(tmp_path):
    return tmp_path / "p4-argv.jsonl"


def fetcher_for(runner, allow_list=("//depot/...",), **options) -> ChangeFetcher:
    return ChangeFetcher(runner, allow_list=DepotAllowList(allow_list), **options)


def make_runner(log_file=None, timeout=30.0, **env):
    if log_file is not None:
        env["P4FAKE_LOG"] = str(log_file)
    return P4Runner(fake_p4(), timeout_seconds=timeout, env=env)


def logged(log_file) -> list[dict]:
    if not log_file.exists():
        return []
    return [json.loads(line) for line in log_file.read_text().splitlines()]


def fetch_one(fetcher: ChangeFetcher, description: ChangeDescription, changed: ChangedFile) -> FileDiff:
    """One file through the batched path: the change's description holding only that file."""
    [diff] = fetcher.iter_file_diffs(description.model_copy(update={"files": [changed]}))
    return diff


def statuses(snapshot: ChangeSnapshot) -> dict[str, tuple[str, str | None]]:
    return {d.depot_path.rsplit("/", 1)[1]: (d.status.value, d.skip_reason) for d in snapshot.diffs}


# --- runner construction ------------------------------------------------------------------------
@pytest.mark.spec("SEC-12")
@pytest.mark.parametrize("executable", ["p4", "events/bin/p4", "./p4", ""])
def test_non_absolute_executable_is_a_config_error(executable):
    with pytest.raises(ConfigError) as caught:
        P4Runner(executable, timeout_seconds=5)
    assert caught.value.error_class is ErrorClass.CONFIG_ERROR and not caught.value.retryable


@pytest.mark.spec("SEC-12")
def test_missing_or_non_executable_executable_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError):
        P4Runner(str(tmp_path / "p4"), timeout_seconds=5)
    plain = tmp_path / "p4"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(ConfigError):
        P4Runner(str(plain), timeout_seconds=5)
    with pytest.raises(ConfigError):
        P4Runner(str(tmp_path), timeout_seconds=5)  # a directory


@pytest.mark.spec("SEC-14")
def test_timeout_must_be_positive():
    with pytest.raises(ConfigError):
        P4Runner(FAKE_P4, timeout_seconds=0)


# --- marshal --------------------------------------------------------------------------------------
def test_run_marshal_returns_records_with_bytes_keys():
    [record] = make_runner().run_marshal(["describe", "-s", "48213"])
    assert record[b"change"] == b"48213" and all(isinstance(key, bytes) for key in record)


def test_decoder_matches_marshal_and_refuses_other_types():
    sample = [{b"code": b"error", b"data": b"x\xff", b"severity": 3, b"generic": -17}, {b"a": b""}]
    stream = b"".join(marshal.dumps(record, 0) for record in sample)
    assert decode_marshal_stream(stream) == sample
    assert decode_marshal_stream(b"") == []
    with pytest.raises(ValueError):
        decode_marshal_stream(marshal.dumps(compile("1", "f", "eval"), 0))
    with pytest.raises(ValueError):
        decode_marshal_stream(stream[:-3])  # truncated


# --- no shell, one token per argument --------------------------------------------------------------
SHELL_BAIT = "//depot/engine/main/src/x; rm -rf / $(id) `touch pwned` | cat > out.c"


@pytest.mark.spec("SEC-9", "SEC-10", "SEC-13")
def test_shell_metacharacters_are_one_literal_token(log_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fetcher = fetcher_for(make_runner(log_file))
    description = fetcher.describe(48213, ChangeKind.SUBMITTED)
    changed = ChangedFile(depot_path=SHELL_BAIT, action="add", file_type="text", revision=1)
    assert fetch_one(fetcher, description, changed).skip_reason == "not_found"  # one literal path, not found
    assert p4_commands(log_file)[-1] == ["-G", "print", f"{SHELL_BAIT}#1"]
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "out.c").exists()


@pytest.mark.spec("SEC-11")
@pytest.mark.parametrize(
    "bad", ["//depot/a\nb.c", "//depot/a\x00b.c", "//depot/a\rb", "//depot/\x1b[31mred", "//depot/a\x85b.c"]
)
def test_control_characters_are_refused_before_running(log_file, bad):
    runner = make_runner(log_file)
    with pytest.raises(P4ArgumentError):
        runner.run_text(["print", "-q", bad])
    with pytest.raises(P4ArgumentError):  # in an argument file, "\n" would make two operands
        list(runner.stream_marshal(["print"], ["//depot/ok.c#1", bad]))
    fetcher = fetcher_for(runner)
    description = fetcher.describe(48213, ChangeKind.SUBMITTED)
    diff = fetch_one(fetcher, description, ChangedFile(depot_path=bad, action="add", file_type="text", revision=1))
    assert (diff.status, diff.skip_reason) == (DiffStatus.SKIPPED, "outside_allow_list")
    assert [entry["argv"][1] for entry in logged(log_file)] == ["describe"]  # nothing else ran


@pytest.mark.spec("SEC-11")
@pytest.mark.parametrize(
    "args",
    [
        ["print", "-x", "//depot/a#1"],
        ["print", "-q", "-o", "/tmp/x", "//depot/a#1"],
        ["describe", "-s", "-du", "48213"],
        ["obliterate", "-y", "//depot/..."],
        ["user", "-d", "victim"],
        [],
    ],
)
def test_runner_refuses_commands_and_options_outside_the_allow_list(log_file, args):
    with pytest.raises(P4ArgumentError):
        make_runner(log_file).run_text(args)
    assert logged(log_file) == []


@pytest.mark.spec("SEC-11")
@pytest.mark.parametrize("name", ["-x", "-d", "--help", "", "a\nb"])
def test_user_name_option_injection_is_rejected(log_file, name):
    with pytest.raises(P4ArgumentError) as caught:
        fetcher_for(make_runner(log_file)).user(name)
    assert caught.value.error_class is ErrorClass.SCHEMA_INVALID
    assert logged(log_file) == []


UNSAFE_PATHS = ["-q", "-G", "//depot/...", "//depot/src/*.c", "//depot/a.c@48000", "//depot/a.c#head", "relative/a.c"]


@pytest.mark.parametrize("path", UNSAFE_PATHS)
def test_unsafe_depot_paths_are_refused_by_the_allow_list(log_file, path):
    fetcher = fetcher_for(make_runner(log_file))
    description = fetcher.describe(48213, ChangeKind.SUBMITTED)
    diff = fetch_one(fetcher, description, ChangedFile(depot_path=path, action="edit", file_type="text", revision=3))
    assert diff.skip_reason == "outside_allow_list"
    assert len(logged(log_file)) == 1


@pytest.mark.parametrize("path", UNSAFE_PATHS)
def test_operand_backstop_refuses_unsafe_depot_paths(path):
    from p4review.perforce.values import depot_path_operand as _depot_path

    with pytest.raises(P4ArgumentError):
        _depot_path(path)


@pytest.mark.spec("SEC-6")
def test_describe_without_minus_s_is_refused(log_file):
    # `describe N` would print the whole change's diffs: content of every file, allowed or not.
    with pytest.raises(P4ArgumentError):
        make_runner(log_file).run_marshal(["describe", "48213"])
    with pytest.raises(P4ArgumentError):
        make_runner(log_file).run_marshal(["describe", "-S", "48240"])
    assert logged(log_file) == []


@pytest.mark.parametrize("args", ["describe -s 48213", b"describe -s 48213", ("describe -s 48213",)])
def test_runner_takes_an_argument_list_never_a_command_string(log_file, args):
    with pytest.raises(P4ArgumentError):
        make_runner(log_file).run_marshal(args)
    assert logged(log_file) == []


@pytest.mark.parametrize("changelist_id", [0, -1, True])
def test_changelist_id_must_be_a_positive_int(changelist_id):
    with pytest.raises(P4ArgumentError):
        fetcher_for(make_runner()).describe(changelist_id, ChangeKind.SUBMITTED)


# --- credentials and environment ---------------------------------------------------------------------
@pytest.mark.spec("SEC-13")
def test_credentials_go_in_the_child_env_never_argv(log_file, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "parent-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "parent-token")
    monkeypatch.setenv("P4CONFIG", ".p4config")
    runner = make_runner(
        log_file, P4PORT="ssl:perforce:1666", P4USER="svc-p4review", P4PASSWD=TICKET, P4FAKE_TICKET=TICKET
    )  # the fake refuses unless P4PASSWD carries the ticket
    assert fetcher_for(runner).user("pnair").email == "priya.nair@northwind-games.example"
    [entry] = logged(log_file)
    assert {"P4PORT", "P4USER", "P4PASSWD", "PATH", "HOME", "LANG", "P4ENVIRO"} <= set(entry["env"])
    assert not any(name.startswith("AWS_") for name in entry["env"]) and "P4CONFIG" not in entry["env"]
    assert not any(TICKET in arg or "svc-p4review" in arg or "perforce:1666" in arg for arg in entry["argv"])
    assert entry["argv"] == ["-G", "user", "-o", "pnair"]


def test_p4_secret_becomes_p4_environment_with_the_ticket_in_p4passwd():
    # p4 reads no P4TICKET variable; a ticket is accepted in P4PASSWD.
    secret = {
        "P4PORT": "ssl:perforce:1666",
        "P4USER": "svc",
        "P4TICKET": TICKET,
        "P4CONFIG": ".p4config",
        "AWS_SECRET_ACCESS_KEY": "x",
        "P4CLIENT": "",
    }
    assert p4_environment(secret) == {"P4PORT": "ssl:perforce:1666", "P4USER": "svc", "P4PASSWD": TICKET}
    assert p4_environment({"P4PASSWD": "pw"}) == {"P4PASSWD": "pw"}


@pytest.mark.spec("SEC-15")
def test_wrong_ticket_is_auth_error_without_the_ticket_in_the_message():
    runner = make_runner(P4PASSWD="WRONG-" + TICKET, P4FAKE_TICKET=TICKET)
    with pytest.raises(P4AuthError) as caught:
        fetcher_for(runner).describe(48213, ChangeKind.SUBMITTED)
    assert TICKET not in str(caught.value) and "WRONG" not in caught.value.message


@pytest.mark.spec("SEC-15", "SEC-18")
def test_error_messages_redact_secrets_and_control_characters():
    runner = make_runner(P4PASSWD=TICKET)
    error = runner._error("print", f"login failed for ticket {TICKET}\n\x1b[2J")
    assert TICKET not in error.message and "\x1b" not in error.message and "\n" not in error.message


# --- failure classification ---------------------------------------------------------------------------
@pytest.mark.spec("SEC-14", "ERR-2")
def test_timeout_is_retryable_network_timeout_and_kills_the_child():
    runner = make_runner(timeout=1, P4FAKE_FAIL="hang")
    started = time.monotonic()
    with pytest.raises(P4TimeoutError) as caught:
        runner.run_marshal(["describe", "-s", "48213"], changelist_id=48213)
    assert time.monotonic() - started < 15
    assert caught.value.error_class is ErrorClass.NETWORK_TIMEOUT and caught.value.retryable


@pytest.mark.spec("ERR-2")
def test_connect_failure_is_retryable_network_error():
    with pytest.raises(P4ConnectionError) as caught:
        fetcher_for(make_runner(P4FAKE_FAIL="connect")).describe(48213, ChangeKind.SUBMITTED)
    assert caught.value.error_class is ErrorClass.NETWORK_ERROR and caught.value.retryable
    assert "Connect to server failed" in caught.value.message


@pytest.mark.spec("ERR-7")
@pytest.mark.parametrize("fail", ["auth", "expired"])
def test_auth_failures_are_non_retryable_auth_errors_in_both_modes(fail):
    runner = make_runner(P4FAKE_FAIL=fail)
    with pytest.raises(AuthError) as tagged:
        runner.run_marshal(["describe", "-s", "48213"])
    with pytest.raises(AuthError) as text:
        runner.run_text(["print", "-q", "//depot/engine/main/src/net/packet.cpp#7"])
    for caught in (tagged, text):
        assert caught.value.error_class is ErrorClass.AUTH_DENIED and not caught.value.retryable


@pytest.mark.spec("ERR-8")
def test_unknown_change_and_unknown_file_are_not_found():
    runner = make_runner()
    with pytest.raises(NotFoundError) as caught:
        fetcher_for(runner).describe(99999, ChangeKind.SUBMITTED)
    assert caught.value.error_class is ErrorClass.NOT_FOUND and not caught.value.retryable
    assert "Change 99999 unknown." in caught.value.message
    with pytest.raises(P4NotFoundError):
        runner.run_text(["print", "-q", "//depot/engine/main/src/net/packet.cpp#99"])


@pytest.mark.spec("SEC-14", "ERR-4")
def test_busy_server_is_retryable_and_unknown_failures_are_not():
    with pytest.raises(P4ServerBusyError) as busy:
        make_runner(P4FAKE_FAIL="busy").run_marshal(["describe", "-s", "48213"])
    assert busy.value.retryable and busy.value.error_class is ErrorClass.UPSTREAM_ERROR
    for fail in ("crash", "garbage"):
        with pytest.raises(P4CommandError) as caught:
            make_runner(P4FAKE_FAIL=fail).run_marshal(["describe", "-s", "48213"])
        assert not caught.value.retryable


@pytest.mark.parametrize(
    ("message", "error_type"),
    [
        ("TCP connect to perforce:1666 failed.\nconnect: 10.0.0.5:1666: Connection timed out", P4TimeoutError),
        ("TCP receive exceeded maximum configured duration of 60 seconds.", P4TimeoutError),
        ("Connect to server failed; check $P4PORT.\nconnect: 127.0.0.1:1666: Connection refused", P4ConnectionError),
        ("Access for user 'svc' has not been enabled by 'p4 protect'.", P4AuthError),
        ("Password must be set before access can be granted.", P4AuthError),
        ("Your session has expired, please login again.", P4AuthError),
        ("Change 77 unknown.", P4NotFoundError),
        ("Usage: describe [-d<flags> -m -s -S -f -O -I] changelist# ...", P4CommandError),
    ],
)
def test_error_classification(message, error_type):
    assert type(make_runner()._error("describe", message)) is error_type


@pytest.mark.spec("SEC-14")
def test_error_dict_with_exit_status_zero_still_raises(tmp_path):
    script = tmp_path / "p4"
    script.write_text(
        "#!/usr/bin/env python3\nimport marshal, sys\n"
        "sys.stdout.buffer.write(marshal.dumps({b'code': b'error', b'data': b'Change 5 unknown.\\n',"
        " b'severity': 3, b'generic': 17}, 0))\n"
    )
    script.chmod(0o755)
    with pytest.raises(P4NotFoundError):
        P4Runner(str(script), timeout_seconds=10).run_marshal(["describe", "-s", "5"])


def test_kind_mismatch_is_not_found():
    fetcher = fetcher_for(make_runner())
    with pytest.raises(P4NotFoundError):
        fetcher.describe(48213, ChangeKind.SHELVED)
    with pytest.raises(P4NotFoundError):
        fetcher.describe(48240, ChangeKind.SUBMITTED)


@pytest.mark.spec("SEC-15")
def test_logs_carry_only_sanitized_metadata(caplog):
    caplog.set_level(logging.INFO, logger="p4review")
    fetcher = fetcher_for(make_runner(P4PASSWD=TICKET))
    fetcher.fetch(48234, ChangeKind.SUBMITTED)
    records = [r for r in caplog.records if getattr(r, "p4_command", None)]
    # describe, one lookup of the depot policy in the 7 directories above the files, then one print
    # of the 3 files' 4 sides (an edit's two, each add's one).
    assert [(r.p4_command, r.p4_arg_count) for r in records] == [("describe", 3), ("files", 8), ("print", 5)]
    assert all(r.changelist_id == 48234 for r in records)
    dumped = " ".join(f"{r.getMessage()} {r.__dict__}" for r in records)
    assert "//depot" not in dumped and TICKET not in dumped and "AKIA" not in dumped


# --- fetching every fixture ---------------------------------------------------------------------------------
EXPECTED = {
    48213: {
        "net_overlay_icons.png": ("skipped", "binary"),
        "conn_stats.cpp": ("fetched", None),
        "conn_stats.h": ("fetched", None),
        "legacy_codec.cpp": ("skipped", "deleted"),
        "packet.cpp": ("fetched", None),
        "packet.h": ("fetched", None),
    },
    48220: {
        "build_index.py": ("fetched", None),
        "paths.py": ("fetched", None),
        "pathutil.py": ("skipped", "deleted"),
        "validate_manifest.py": ("fetched", None),
    },
    48234: {
        "uploader-staging.key": ("fetched", None),
        "staging.ini": ("fetched", None),
        "settings.py": ("fetched", None),
    },
    48240: {"main.go": ("fetched", None), "bucket.go": ("fetched", None), "bucket_test.go": ("fetched", None)},
    48261: {
        "cafe_menu.cpp": ("fetched", None),
        "fr_FR.txt": ("fetched", None),
        "cafe_menu_bg.dds": ("skipped", "binary"),
    },
    48270: {
        "conn_stats.cpp": ("fetched", None),
        "conn_stats.h": ("fetched", None),
        "packet.cpp": ("fetched", None),
        "packet.h": ("skipped", "identical"),
    },
    48277: {"bucket.go": ("fetched", None), "bucket_test.go": ("fetched", None)},  # 48240, renumbered on submit
    48284: {
        name: ("fetched", None)
        for name in (
            "chunks.py",
            "cli.py",
            "config.py",
            "manifest.py",
            "progress.py",
            "retry.py",
            "transfer.py",
        )
    },
}


# Fetching every fixture starts p4 some 350 times: under `make test`'s two workers, the tests that
# read the snapshots share one worker, and the worker fetches them once (a module fixture would
# be fetched again whenever the worker runs another module's test in between).
ON_THE_SNAPSHOTS_WORKER = pytest.mark.xdist_group("p4-fixture-snapshots")


@cache
def _every_fixture_fetched() -> dict[int, ChangeSnapshot]:
    fetcher = fetcher_for(make_runner())
    return {entry["change"]: fetcher.fetch(entry["change"], ChangeKind(entry["kind"])) for entry in INDEX}


@pytest.fixture
def snapshots() -> dict[int, ChangeSnapshot]:
    return _every_fixture_fetched()


def test_every_indexed_fixture_is_covered():
    assert {entry["change"] for entry in INDEX} == set(EXPECTED) | {48255}


@ON_THE_SNAPSHOTS_WORKER
@pytest.mark.parametrize("number", sorted(EXPECTED))
def test_fetch_fixture_statuses(snapshots, number):
    snapshot = snapshots[number]
    assert statuses(snapshot) == EXPECTED[number]
    assert snapshot.changed_files == [d.depot_path for d in snapshot.diffs]
    for diff in snapshot.diffs:
        if diff.status is DiffStatus.FETCHED:
            first, second, third = diff.unified_diff.split("\n")[:3]
            assert first.startswith("--- ") and second == "+++ b/" + diff.depot_path[2:]
            assert third.startswith("@@ -")
        else:
            assert diff.unified_diff == ""


@ON_THE_SNAPSHOTS_WORKER
def test_cpp_change_content(snapshots):
    diffs = {d.depot_path.rsplit("/", 1)[1]: d.unified_diff for d in snapshots[48213].diffs}
    assert diffs["packet.cpp"].startswith(
        "--- a/depot/engine/main/src/net/packet.cpp\n+++ b/depot/engine/main/src/net/packet.cpp\n"
    )
    assert "+    strcpy(peerName_, name);" in diffs["packet.cpp"] and "+    sprintf(buf" in diffs["packet.cpp"]
    assert "TODO(dkowalski)" in diffs["packet.cpp"] and "====" not in diffs["packet.cpp"]
    added = diffs["conn_stats.cpp"].split("\n")
    assert added[:2] == ["--- /dev/null", "+++ b/depot/engine/main/src/net/conn_stats.cpp"]
    line_count = len(
        (ROOT / "events/depot/archive/depot/engine/main/src/net/conn_stats.cpp,d/1").read_text().splitlines()
    )
    assert added[2] == f"@@ -0,0 +1,{line_count} @@" and all(line.startswith("+") for line in added[3:-1])


@ON_THE_SNAPSHOTS_WORKER
def test_python_and_credential_changes_carry_the_flaggable_lines(snapshots):
    py = {d.depot_path.rsplit("/", 1)[1]: d.unified_diff for d in snapshots[48220].diffs}
    assert "+    except:" in py["build_index.py"] and '+    print("DEBUG' in py["build_index.py"]
    assert "eval(rule" in py["validate_manifest.py"]
    creds = "".join(d.unified_diff for d in snapshots[48234].diffs)
    assert "AKIAIOSFODNN7EXAMPLE" in creds and 'password = "' in creds
    assert "+-----BEGIN RSA PRIVATE KEY-----" in creds


@ON_THE_SNAPSHOTS_WORKER
def test_shelved_change_serves_the_latest_shelf_and_version_1_on_request(snapshots):
    latest = snapshots[48240]
    assert latest.description.kind is ChangeKind.SHELVED and latest.description.status == "pending"
    first = fetcher_for(make_runner(P4FAKE_SHELF_VERSION="1")).fetch(48240, ChangeKind.SHELVED)
    assert [d.depot_path.rsplit("/", 1)[1] for d in first.diffs] == ["main.go", "bucket.go"]
    assert "sync.Mutex" in latest.diffs[1].unified_diff and "sync.Mutex" not in first.diffs[1].unified_diff
    assert latest.diffs[0].unified_diff != first.diffs[0].unified_diff


@ON_THE_SNAPSHOTS_WORKER
def test_non_utf8_description_and_content_are_decoded_as_cp1252(snapshots):
    snapshot = snapshots[48261]
    assert snapshot.description.description.startswith("Café menu: fix « Reprendre » button")
    assert snapshot.description.owner == "jbeaulieu"
    strings = next(d for d in snapshot.diffs if d.depot_path.endswith("fr_FR.txt"))
    assert "+CAFE_RESUME=« Reprendre »" in strings.unified_diff


def test_utf8_text_is_never_reinterpreted():
    from p4review.perforce import decode_text

    assert decode_text("Café — ok".encode()) == "Café — ok"
    assert decode_text(b"Caf\xe9") == "Café"


@ON_THE_SNAPSHOTS_WORKER
def test_large_change_has_hundreds_of_files(snapshots):
    snapshot = snapshots[48255]
    assert len(snapshot.description.files) == len(snapshot.diffs) == 300
    counts: dict[tuple[str, str | None], int] = {}
    for diff in snapshot.diffs:
        counts[(diff.action, diff.skip_reason)] = counts.get((diff.action, diff.skip_reason), 0) + 1
    assert counts == {("edit", None): 260, ("add", None): 30, ("delete", "deleted"): 10}


class StubRunner:
    """A describe record of many edited files, and two versions of each file's content for the
    batched print (no processes). Records are produced as the consumer asks for them."""

    OLD, NEW = b"a\n", b"b\n"

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.prints: list[list[str]] = []
        self.policy_lookups: list[list[str]] = []
        self.records_sent = 0

    def run_marshal(self, args, *, changelist_id=None):
        record = {
            b"code": b"stat",
            b"change": b"9",
            b"status": b"submitted",
            b"user": b"u",
            b"client": b"c",
            b"desc": b"d",
            b"time": b"1",
        }
        for index, path in enumerate(self.paths):
            record[b"depotFile%d" % index] = path.encode()
            record[b"action%d" % index], record[b"type%d" % index], record[b"rev%d" % index] = b"edit", b"text", b"2"
        return [record]

    def content(self, spec: str) -> bytes | None:
        return self.OLD if spec.endswith("#1") else self.NEW

    def stream_marshal(self, args, operands, *, changelist_id=None):
        if args == ["files"]:
            self.policy_lookups.append(list(operands))
            return  # no depot policy anywhere
        self.prints.append(list(operands))
        for spec in operands:
            content = self.content(spec)
            path = spec.split("#")[0]
            if content is None:
                self.records_sent += 1
                yield {b"code": b"error", b"data": f"{spec} - no such file(s).\n".encode(), b"severity": 2}
                continue
            for record in (
                {b"code": b"stat", b"depotFile": path.encode(), b"rev": spec.split("#")[1].encode(), b"type": b"text"},
                {b"code": b"text", b"data": content},
            ):
                self.records_sent += 1
                yield record


def test_thousands_of_files_are_checked_and_fetched_in_one_print(monkeypatch):
    monkeypatch.setattr("p4review.perforce.fetcher.metrics", type("M", (), {"add_metric": lambda self, **_: None})())
    paths = [f"//depot/big/dir{i % 40}/file{i}.c" for i in range(4000)] + [f"//secret/f{i}.c" for i in range(25)]
    runner = StubRunner(paths)
    fetcher = ChangeFetcher(runner, allow_list=DepotAllowList(["//depot/big/..."]))  # type: ignore[arg-type]
    snapshot = fetcher.fetch(9, ChangeKind.SUBMITTED)
    reasons = [diff.skip_reason for diff in snapshot.diffs]
    assert reasons == [None] * 4000 + ["outside_allow_list"] * 25
    assert (
        snapshot.diffs[0].unified_diff
        == "--- a/depot/big/dir0/file0.c\n+++ b/depot/big/dir0/file0.c\n@@ -1 +1 @@\n-a\n+b\n"
    )
    # One print of every side, each edit's old side just before its new one.
    [printed] = runner.prints
    assert printed == [f"{path}#{rev}" for path in paths[:4000] for rev in (1, 2)]
    # One `p4 files` for the depot policy naming every directory above the files the allow-list
    # allows (the 40 and //depot/big/): no policy is missed.
    [lookup] = runner.policy_lookups
    assert len(lookup) == 41
    assert not any("//secret" in arg for arg in printed + lookup)


class GeneratedFilesRunner(StubRunner):
    """An added generated file, an edit of a generated header, an edit further down a generated
    Python file (its header shows only in the new content) and an ordinary edit."""

    GENERATED = b"# Code generated by protoc-gen-py. DO NOT EDIT.\nimport os\n"
    CONTENT = {
        "added_pb2.py#1": GENERATED,
        "header.h#1": b"// @generated v1\nint x;\n",
        "header.h#2": b"// @generated v2\nint x;\n",
        "deep_pb2.py#1": GENERATED + b"\n" * 40 + b"a = 1\n",
        "deep_pb2.py#2": GENERATED + b"\n" * 40 + b"a = 2\n",
        "hand.py#1": b"\n" * 40 + b"a = 1\n",
        "hand.py#2": b"\n" * 40 + b"a = 2\n",
    }

    def run_marshal(self, args, *, changelist_id=None):
        [record] = super().run_marshal(args, changelist_id=changelist_id)
        record[b"action0"], record[b"rev0"] = b"add", b"1"
        return [record]

    def content(self, spec: str) -> bytes | None:
        return self.CONTENT[spec.rsplit("/", 1)[1]]


@pytest.mark.spec("RV-17")
@pytest.mark.parametrize("review_generated", [False, True])
def test_generated_files_are_skipped_by_their_header_unless_configured(monkeypatch, review_generated):
    monkeypatch.setattr("p4review.perforce.fetcher.metrics", type("M", (), {"add_metric": lambda self, **_: None})())
    names = ["added_pb2.py", "header.h", "deep_pb2.py", "hand.py"]
    runner = GeneratedFilesRunner([f"//depot/gen/{name}" for name in names])
    fetcher = ChangeFetcher(
        runner,  # type: ignore[arg-type]
        allow_list=DepotAllowList(["//depot/gen/..."]),
        keep_content=lambda path: True,
        skip_generated=not review_generated,
    )
    reasons = [diff.skip_reason for diff in fetcher.fetch(9, ChangeKind.SUBMITTED).diffs]
    assert reasons == ([None] * 4 if review_generated else ["generated", "generated", "generated", None])


def test_file_diffs_stream_holding_one_file_at_a_time(monkeypatch):
    """A change of any size holds one file's two sides at a time: the fetch stage streams the
    diffs to S3 as p4's answer arrives."""
    monkeypatch.setattr("p4review.perforce.fetcher.metrics", type("M", (), {"add_metric": lambda self, **_: None})())
    runner = StubRunner([f"//depot/big/file{i}.c" for i in range(500)])
    fetcher = ChangeFetcher(runner, allow_list=DepotAllowList(["//depot/big/..."]))  # type: ignore[arg-type]
    description = fetcher.describe(9, ChangeKind.SUBMITTED)
    stream = fetcher.iter_file_diffs(description)
    first = next(stream)
    assert first.depot_path == "//depot/big/file0.c"
    # The first file's 4 records (stat and content of each side), and the next file's stat, which
    # tells the first file's content is complete: not 2,000.
    assert runner.records_sent == 5
    rest = list(stream)
    assert [d.depot_path for d in [first, *rest]] == [f"//depot/big/file{i}.c" for i in range(500)]


class VanishingRunner(StubRunner):
    """file1's new side is gone by the time of the print (obliterated, or a shelf replaced)."""

    def content(self, spec: str) -> bytes | None:
        return None if spec == "//depot/big/file1.c#2" else super().content(spec)


def test_a_file_that_disappears_between_describe_and_print_is_skipped_alone(monkeypatch):
    monkeypatch.setattr("p4review.perforce.fetcher.metrics", type("M", (), {"add_metric": lambda self, **_: None})())
    runner = VanishingRunner([f"//depot/big/file{i}.c" for i in range(3)])
    fetcher = ChangeFetcher(runner, allow_list=DepotAllowList(["//depot/big/..."]))  # type: ignore[arg-type]
    diffs = fetcher.fetch(9, ChangeKind.SUBMITTED).diffs
    assert [(d.depot_path[-7:], d.skip_reason) for d in diffs] == [
        ("file0.c", None),
        ("file1.c", "not_found"),
        ("file2.c", None),
    ]
    assert diffs[2].unified_diff and "+b" in diffs[2].unified_diff  # the answers after it stay matched


class MisorderedRunner(StubRunner):
    """A server (or a man in the middle) that answers with another file than the one asked for."""

    def stream_marshal(self, args, operands, *, changelist_id=None):
        for record in super().stream_marshal(args, operands, changelist_id=changelist_id):
            if record.get(b"depotFile") == b"//depot/big/file1.c":
                record = {**record, b"depotFile": b"//secret/keys.pem"}
            yield record


def test_an_answer_naming_another_file_fails_the_fetch_before_its_content_is_kept(monkeypatch):
    monkeypatch.setattr("p4review.perforce.fetcher.metrics", type("M", (), {"add_metric": lambda self, **_: None})())
    runner = MisorderedRunner([f"//depot/big/file{i}.c" for i in range(3)])
    fetcher = ChangeFetcher(runner, allow_list=DepotAllowList(["//depot/big/..."]))  # type: ignore[arg-type]
    stream = fetcher.iter_file_diffs(fetcher.describe(9, ChangeKind.SUBMITTED))
    assert next(stream).skip_reason is None
    with pytest.raises(P4CommandError, match="another file"):
        next(stream)


def test_a_change_is_fetched_in_three_commands(log_file):
    fetcher_for(make_runner(log_file)).fetch(48213, ChangeKind.SUBMITTED)
    argvs = p4_commands(log_file)
    assert argvs[0] == ["-G", "describe", "-s", "48213"]
    # One lookup of the depot policy in the 7 directories above the files (none has one).
    assert argvs[1][:2] == ["-G", "files"] and len(argvs[1]) == 9
    assert all(arg.endswith("/.p4review.toml@48212") for arg in argvs[1][2:])  # in force before 48213
    base = "//depot/engine/main/src/net/"
    # One print of every file's sides, in describe order; the binary and deleted files are not named.
    assert argvs[2:] == [
        [
            "-G",
            "print",
            f"{base}conn_stats.cpp#1",
            f"{base}conn_stats.h#1",
            f"{base}packet.cpp#6",
            f"{base}packet.cpp#7",
            f"{base}packet.h#3",
            f"{base}packet.h#4",
        ]
    ]


def test_shelved_commands_use_at_equals(log_file):
    fetcher_for(make_runner(log_file)).fetch(48240, ChangeKind.SHELVED)
    argvs = p4_commands(log_file)
    main_go = "//depot/services/matchmaking/main/cmd/server/main.go"
    bucket_go = "//depot/services/matchmaking/main/internal/ratelimit/bucket.go"
    bucket_test = "//depot/services/matchmaking/main/internal/ratelimit/bucket_test.go"
    assert argvs[0] == ["-G", "describe", "-s", "-S", "48240"]
    # The shelved content against the depot head it would replace.
    assert argvs[-1] == ["-G", "print", main_go, f"{main_go}@=48240", f"{bucket_go}@=48240", f"{bucket_test}@=48240"]


def test_too_large_uses_describe_file_size_before_fetching(log_file):
    fetcher = fetcher_for(make_runner(log_file), max_file_bytes=1500)
    snapshot = fetcher.fetch(48213, ChangeKind.SUBMITTED)
    result = statuses(snapshot)
    assert result["packet.cpp"] == ("skipped", "too_large") and result["conn_stats.cpp"] == ("skipped", "too_large")
    assert result["packet.h"] == ("fetched", None)
    assert not any("packet.cpp" in " ".join(entry["argv"]) for entry in logged(log_file))


@pytest.mark.spec("SEC-3")
def test_files_outside_the_allow_list_are_skipped_before_any_p4_command(log_file):
    fetcher = fetcher_for(make_runner(log_file), allow_list=["//depot/services/telemetry/main/uploader/..."])
    result = statuses(fetcher.fetch(48234, ChangeKind.SUBMITTED))
    assert result == {
        "uploader-staging.key": ("skipped", "outside_allow_list"),
        "staging.ini": ("skipped", "outside_allow_list"),
        "settings.py": ("fetched", None),
    }
    argvs = p4_commands(log_file)
    # describe, the one depot-policy candidate inside the list, then the allowed file's two sides.
    assert argvs[0] == ["-G", "describe", "-s", "48234"] and len(argvs) == 3
    assert argvs[1] == ["-G", "files", "//depot/services/telemetry/main/uploader/.p4review.toml@48233"]
    settings_py = "//depot/services/telemetry/main/uploader/settings.py"
    assert argvs[2] == ["-G", "print", f"{settings_py}#2", f"{settings_py}#3"]


def test_case_insensitive_server_compares_ascii_folded(log_file):
    upper = ["//DEPOT/Engine/Main/src/..."]
    sensitive = statuses(fetcher_for(make_runner(), allow_list=upper).fetch(48213, ChangeKind.SUBMITTED))
    assert {reason for _status, reason in sensitive.values()} == {"outside_allow_list"}
    insensitive = ChangeFetcher(make_runner(), allow_list=DepotAllowList(upper, case_insensitive=True))
    folded = statuses(insensitive.fetch(48213, ChangeKind.SUBMITTED))
    assert folded == dict(EXPECTED[48213], **{"net_overlay_icons.png": ("skipped", "outside_allow_list")})


def test_user_lookup_and_default_email_form():
    fetcher = fetcher_for(make_runner())
    assert fetcher.user("agarcia").full_name == "Ana Garc\u00eda"
    assert fetcher.user("jbeaulieu").email == "jbeaulieu@jbeaulieu-mtl-ws"
    ghost = fetcher_for(make_runner(P4CLIENT="svc-p4review-fetch")).user("ghost")
    assert (ghost.user, ghost.email) == ("ghost", "ghost@svc-p4review-fetch")


# --- pure helpers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("file_type", "binary"),
    [
        ("binary", True),
        ("binary+l", True),
        ("binary+Fl", True),
        ("ubinary", True),
        ("apple", True),
        ("resource", True),
        ("xbinary", True),
        ("text", False),
        ("text+x", False),
        ("text+ko", False),
        ("utf8", False),
        ("unicode", False),
        ("symlink", False),
    ],
)
def test_binary_types(file_type, binary):
    assert is_binary_type(file_type) is binary


def test_added_file_diff_edge_cases():
    assert added_file_diff("//depot/a.txt", b"") == "--- /dev/null\n+++ b/depot/a.txt\n"
    assert added_file_diff("//depot/a.txt", b"x\ny") == (
        "--- /dev/null\n+++ b/depot/a.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
    )
    assert (
        added_file_diff("//depot/a.txt", b"a\x0cb\n") == "--- /dev/null\n+++ b/depot/a.txt\n@@ -0,0 +1,1 @@\n+a\x0cb\n"
    )


def test_the_cp1252_fallback_is_a_diagnostic_without_the_text(caplog):
    """Spec G-4: a coerced value says so (what kind of text, how many bytes), never the text."""
    from p4review.perforce import decode_text

    caplog.set_level(logging.INFO, logger="p4review")
    assert decode_text("Café".encode()) == "Café"
    assert not [r for r in caplog.records if getattr(r, "diagnostic", None)]
    assert decode_text(b"Caf\xe9 secret", "describe record") == "Café secret"
    [record] = [r for r in caplog.records if getattr(r, "diagnostic", None)]
    assert record.diagnostic == "p4_text_cp1252_fallback"
    assert record.field == "describe record" and record.byte_count == 11
    assert "secret" not in record.getMessage() and "secret" not in json.dumps(record.__dict__, default=str)


@pytest.mark.spec("RV-15")
def test_a_lookup_over_several_files_passes_only_the_missing_file_warnings():
    runner = make_runner()
    policy = "//depot/tools/main/pipeline/.p4review.toml"
    found, missing = runner.stream_marshal(["files"], [f"{policy}#head", "//depot/nope/.p4review.toml#head"])
    assert (found[b"depotFile"], found[b"rev"]) == (policy.encode(), b"1")
    assert missing[b"code"] == b"error" and missing[b"severity"] == 2  # in its operand's place
    with pytest.raises(P4ServerBusyError):  # a real error is not a missing file
        list(make_runner(P4FAKE_FAIL="busy").stream_marshal(["files"], [f"{policy}#head"]))
    with pytest.raises(P4NotFoundError):  # the strict reader refuses the warning
        runner.run_marshal(["files", "//depot/nope/.p4review.toml"])


@pytest.mark.spec("SW-6")
def test_a_server_property_is_read_and_an_unset_one_is_none(log_file):
    fetcher = fetcher_for(make_runner(log_file))
    assert fetcher.server_property("P4.Swarm.URL") == "https://swarm.northwind-games.example"
    assert fetcher.server_property("P4.Unset.Property") is None
    assert [entry["argv"] for entry in logged(log_file)][0] == ["-G", "property", "-l", "-n", "P4.Swarm.URL"]
    with pytest.raises(P4ArgumentError):
        fetcher.server_property("-a")  # an option look-alike never reaches p4


# --- one print of many files: p4 -x ARGFILE ---------------------------------------------------------------
PACKET = "//depot/engine/main/src/net/packet.cpp"


def test_streamed_print_matches_each_operand_and_removes_its_argument_file(log_file):
    records = list(make_runner(log_file).stream_marshal(["print"], [f"{PACKET}#6", "//depot/nope.c#1", f"{PACKET}#7"]))
    stats = [r for r in records if r.get(b"code") == b"stat"]
    assert [(r[b"depotFile"], r[b"rev"]) for r in stats] == [(PACKET.encode(), b"6"), (PACKET.encode(), b"7")]
    [missing] = [r for r in records if r.get(b"code") == b"error"]  # in its operand's place, not an error
    assert records.index(missing) < records.index(stats[1]) and b"no such file" in missing[b"data"]
    [entry] = logged(log_file)
    assert entry["argv"][:2] == ["-G", "-x"] and entry["argv"][3:] == ["print"]
    assert entry["argfile"] == [f"{PACKET}#6", "//depot/nope.c#1", f"{PACKET}#7"]
    assert not Path(entry["argv"][2]).exists()  # written privately, removed when the command ended


@pytest.mark.parametrize("count", [1, 127, 128, 129, 1000])
def test_a_batch_at_the_argument_file_limits(log_file, count):
    """p4 reads an argument file 128 operands at a time (-b): every batch boundary keeps the
    answers in operand order, each file once. 1,000 operands of the longest path the fixture has."""
    operands = [f"{PACKET}#{6 + index % 2}" for index in range(count)]
    records = list(make_runner(log_file).stream_marshal(["print"], operands))
    assert [r[b"rev"] for r in records if r.get(b"code") == b"stat"] == [op[-1].encode() for op in operands]
    assert len(logged(log_file)) == 1


@pytest.mark.parametrize("operand", ["", "-q", "//depot/a\nb.c", "//depot/a\rb.c", "//depot/\x00.c"])
def test_an_argument_file_refuses_operands_that_would_be_options_or_two_lines(log_file, operand):
    with pytest.raises(P4ArgumentError):
        list(make_runner(log_file).stream_marshal(["print"], [f"{PACKET}#7", operand]))
    assert logged(log_file) == []


@pytest.mark.parametrize("args", [["describe", "-s"], ["diff2", "-du"], ["print", "-o", "/tmp/x"], ["user", "-o"]])
def test_only_files_and_print_take_an_argument_file(log_file, args):
    with pytest.raises(P4ArgumentError):
        list(make_runner(log_file).stream_marshal(args, [f"{PACKET}#7"]))
    assert logged(log_file) == []


def test_a_consumer_that_stops_early_leaves_no_p4_running_and_no_argument_file(monkeypatch):
    import subprocess

    import p4review.perforce.runner as p4_runner

    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def recording_popen(args, **kwargs):
        started.append(real_popen(args, **kwargs))
        return started[-1]

    monkeypatch.setattr(p4_runner.subprocess, "Popen", recording_popen)
    stream = make_runner().stream_marshal(["print"], [f"{PACKET}#7"] * 300)
    next(stream)
    [child] = started
    argument_file = Path(child.args[child.args.index("-x") + 1])
    assert child.poll() is None and argument_file.exists()  # still answering: 300 files fill the pipe
    stream.close()
    assert child.poll() is not None and not argument_file.exists()


@pytest.mark.spec("SEC-14", "ERR-2")
def test_a_streamed_command_that_stops_answering_times_out_and_is_killed():
    runner = make_runner(timeout=1, P4FAKE_FAIL="hang")
    with pytest.raises(P4TimeoutError) as caught:
        list(runner.stream_marshal(["print"], [f"{PACKET}#7"], changelist_id=48213))
    assert caught.value.error_class is ErrorClass.NETWORK_TIMEOUT and caught.value.retryable


@pytest.mark.parametrize(
    ("fail", "error"), [("auth", AuthError), ("busy", P4ServerBusyError), ("garbage", P4CommandError)]
)
def test_a_streamed_command_classifies_failures_as_the_others_do(fail, error):
    with pytest.raises(error):
        list(make_runner(P4FAKE_FAIL=fail).stream_marshal(["print"], [f"{PACKET}#7"]))


def test_a_streamed_command_failing_on_stderr_raises_with_its_message_sanitized():
    with pytest.raises(P4ConnectionError) as caught:
        list(make_runner(P4FAKE_FAIL="connect", P4PASSWD=TICKET).stream_marshal(["print"], [f"{PACKET}#7"]))
    assert "Connect to server failed" in caught.value.message and "\n" not in caught.value.message


class InfoAndJunkRunner(StubRunner):
    """An informational message between a file's stat and its content; or a record of no known kind."""

    def __init__(self, paths: list[str], extra: dict):
        super().__init__(paths)
        self.extra = extra

    def stream_marshal(self, args, operands, *, changelist_id=None):
        for record in super().stream_marshal(args, operands, changelist_id=changelist_id):
            yield record
            if record.get(b"code") == b"stat":
                yield self.extra


def test_an_info_message_in_a_print_is_no_content_and_an_unknown_record_fails(monkeypatch):
    monkeypatch.setattr("p4review.perforce.fetcher.metrics", type("M", (), {"add_metric": lambda self, **_: None})())
    info = InfoAndJunkRunner(["//depot/big/a.c"], {b"code": b"info", b"data": b"a note", b"level": 0})
    fetcher = ChangeFetcher(info, allow_list=DepotAllowList(["//depot/big/..."]))  # type: ignore[arg-type]
    [diff] = fetcher.fetch(9, ChangeKind.SUBMITTED).diffs
    assert diff.unified_diff is not None and "note" not in diff.unified_diff
    junk = InfoAndJunkRunner(["//depot/big/a.c"], {b"code": b"mystery", b"data": b"x"})
    fetcher = ChangeFetcher(junk, allow_list=DepotAllowList(["//depot/big/..."]))  # type: ignore[arg-type]
    with pytest.raises(P4CommandError, match="unknown kind"):
        fetcher.fetch(9, ChangeKind.SUBMITTED)
