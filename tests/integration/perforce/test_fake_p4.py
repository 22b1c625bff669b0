"""The fixture-backed fake `p4` (events/bin/p4) speaks the real CLI's forms and -G format."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FAKE_P4 = ROOT / "events" / "bin" / "p4"
DEPOT = ROOT / "events" / "depot"
INDEX = json.loads((DEPOT / "index.json").read_text())["changelists"]


def p4(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    child_env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", **env}
    return subprocess.run([str(FAKE_P4), *args], env=child_env, capture_output=True, timeout=30)


def records(stdout: bytes) -> list[dict]:
    out, rest = [], stdout
    while rest:
        out.append(marshal.loads(rest))
        rest = rest[len(marshal.dumps(out[-1], 0)) :]
    return out


def change_json(number: int) -> dict:
    return json.loads((DEPOT / "changes" / f"{number}.json").read_text())


def test_fake_is_an_executable_python3_script():
    assert os.access(FAKE_P4, os.X_OK)
    assert FAKE_P4.read_text().startswith("#!/usr/bin/env python3\n")


def test_index_lists_every_change_file_and_the_required_kinds():
    numbers = {entry["change"] for entry in INDEX}
    assert numbers == {int(path.stem) for path in (DEPOT / "changes").glob("*.json")}
    assert {entry["kind"] for entry in INDEX} == {"submitted", "shelved"}
    assert [entry["review_versions"] for entry in INDEX if entry["kind"] == "shelved"] == [2, 2]
    assert all(entry["review_versions"] == 1 for entry in INDEX if entry["kind"] == "submitted")


@pytest.mark.parametrize("entry", INDEX, ids=lambda entry: str(entry["change"]))
def test_describe_every_fixture_returns_one_real_looking_record(entry):
    args = ["-G", "describe", "-s", *(["-S"] if entry["kind"] == "shelved" else []), str(entry["change"])]
    result = p4(*args)
    assert result.returncode == 0, result.stderr
    [record] = records(result.stdout)
    assert all(isinstance(key, bytes) and isinstance(value, bytes) for key, value in record.items())
    assert record[b"change"] == str(entry["change"]).encode()
    assert record[b"user"] == entry["owner"].encode()
    assert record[b"changeType"] == b"public"
    assert record[b"status"] == (b"pending" if entry["kind"] == "shelved" else b"submitted")
    assert (b"shelved" in record) == (entry["kind"] == "shelved")
    assert record[b"time"].isdigit()
    change = change_json(entry["change"])
    files = change["shelf_versions"][-1]["files"] if entry["kind"] == "shelved" else change["files"]
    assert record[b"depotFile%d" % (len(files) - 1)] and b"depotFile%d" % len(files) not in record
    for index, expected in enumerate(files):
        assert record[b"depotFile%d" % index] == expected["depotFile"].encode()
        assert record[b"action%d" % index] == expected["action"].encode()
        assert record[b"rev%d" % index] == str(expected["rev"]).encode()
        live = expected["action"] not in ("delete", "move/delete")
        assert (b"digest%d" % index in record) == live
        if live:
            assert len(record[b"digest%d" % index]) == 32 and int(record[b"fileSize%d" % index]) > 0


def test_marshal_output_is_version_0_with_bytes_strings():
    result = p4("-G", "describe", "-s", "48213")
    assert result.stdout.startswith(b"{s") and result.stdout.endswith(b"0")  # dict of 's' strings


def test_non_utf8_description_is_emitted_as_raw_latin1_bytes():
    [record] = records(p4("-G", "describe", "-s", "48261").stdout)
    assert record[b"desc"].startswith(b"Caf\xe9 menu: fix \xab Reprendre \xbb")
    with pytest.raises(UnicodeDecodeError):
        record[b"desc"].decode("utf-8")
    assert b"Caf\xe9" in p4("describe", "-s", "48261").stdout  # text form too


def test_unknown_change_with_G_is_an_error_dict_and_exit_1():
    result = p4("-G", "describe", "-s", "99999")
    assert result.returncode == 1
    assert records(result.stdout) == [
        {b"code": b"error", b"data": b"Change 99999 unknown.\n", b"severity": 3, b"generic": 17}
    ]


def test_unknown_change_without_G_goes_to_stderr_and_exit_1():
    result = p4("describe", "-s", "99999")
    assert (result.returncode, result.stdout, result.stderr) == (1, b"", b"Change 99999 unknown.\n")


def test_global_options_are_accepted_and_ignored():
    result = p4(
        "-p",
        "ssl:perforce:1666",
        "-u",
        "svc-p4review",
        "-c",
        "ws",
        "-P",
        "TICKET",
        "-z",
        "tag",
        "-G",
        "describe",
        "-s",
        "48213",
    )
    assert result.returncode == 0 and records(result.stdout)[0][b"change"] == b"48213"


def test_shelf_flag_on_submitted_and_missing_flag_on_pending_list_no_files():
    [submitted] = records(p4("-G", "describe", "-s", "-S", "48213").stdout)
    assert b"depotFile0" not in submitted and b"shelved" not in submitted
    [pending] = records(p4("-G", "describe", "-s", "48240").stdout)
    assert pending[b"status"] == b"pending" and b"depotFile0" not in pending


def test_shelf_version_selection():
    [latest] = records(p4("-G", "describe", "-s", "-S", "48240").stdout)
    [first] = records(p4("-G", "describe", "-s", "-S", "48240", P4FAKE_SHELF_VERSION="1").stdout)
    assert b"depotFile2" in latest and b"depotFile2" not in first
    assert latest[b"digest1"] != first[b"digest1"]  # bucket.go re-shelved with new content
    spec = "//depot/services/matchmaking/main/internal/ratelimit/bucket.go@=48240"
    assert b"sync.Mutex" in p4("print", "-q", spec).stdout
    assert b"sync.Mutex" not in p4("print", "-q", spec, P4FAKE_SHELF_VERSION="1").stdout
    missing = p4("print", "-q", spec.replace("bucket.go", "bucket_test.go"), P4FAKE_SHELF_VERSION="1")
    assert missing.returncode == 1 and b"no such file(s)." in missing.stderr


def test_user_o_known_default_email_and_unknown_user():
    [known] = records(p4("-G", "user", "-o", "dkowalski").stdout)
    assert known[b"Email"] == b"dariusz.kowalski@northwind-games.example"
    assert known[b"FullName"] == b"Dariusz Kowalski" and known[b"Type"] == b"standard"
    assert {b"User", b"Update", b"Access"} <= known.keys()
    [default_form] = records(p4("-G", "user", "-o", "jbeaulieu").stdout)
    assert default_form[b"Email"] == b"jbeaulieu@jbeaulieu-mtl-ws"
    result = p4("-c", "build-ws-07", "-G", "user", "-o", "ghost")
    assert result.returncode == 0
    [unknown] = records(result.stdout)
    assert unknown[b"Email"] == b"ghost@build-ws-07" and b"Update" not in unknown


def test_diff2_submitted_edit_is_p4_header_plus_unified_diff():
    path = "//depot/engine/main/src/net/packet.cpp"
    out = p4("diff2", "-du", f"{path}#6", f"{path}#7").stdout.decode()
    lines = out.splitlines()
    assert lines[0] == f"==== {path}#6 (text) - {path}#7 (text) ==== content"
    assert lines[1].startswith("--- ") and lines[2].startswith("+++ ") and lines[3].startswith("@@ -")
    assert "+    strcpy(peerName_, name);" in lines
    assert any(line.startswith("+") and "sprintf(buf" in line for line in lines)


def test_diff2_identical_binary_and_shelved():
    path = "//depot/engine/rel-2.4/src/net/packet.h"
    assert p4("diff2", "-du", f"{path}#2", f"{path}#3").stdout.decode().endswith("==== identical\n")
    png = "//depot/engine/main/assets/ui/net_overlay_icons.png"
    binary = p4("diff2", "-du", f"{png}#1", f"{png}#2").stdout.decode()
    assert binary.count("\n") == 1 and "(binary+F)" in binary  # header only, no text diff
    go = "//depot/services/matchmaking/main/cmd/server/main.go"
    shelved = p4("diff2", "-du", go, f"{go}@=48240").stdout.decode()
    assert shelved.startswith(f"==== {go}#9 (text) - {go}@=48240 (text) ==== content\n")
    assert '+	burst := flag.Int("rate-burst", 20, "per-player request burst")' in shelved


def test_print_add_delete_and_unknown_revision():
    assert p4("print", "-q", "//depot/engine/main/src/net/conn_stats.cpp#1").stdout.startswith(b"// conn_stats.cpp")
    deleted = p4("print", "-q", "//depot/engine/main/src/net/legacy_codec.cpp#3").stdout
    assert b"decodeVarint" in deleted  # a deleted revision prints the previous one
    result = p4("print", "-q", "//depot/engine/main/src/net/packet.cpp#99")
    assert (result.returncode, result.stderr) == (1, b"//depot/engine/main/src/net/packet.cpp#99 - no such file(s).\n")


def test_latin1_file_content_is_raw_bytes():
    out = p4("print", "-q", "//depot/game/main/ui/strings/fr_FR.txt#14").stdout
    assert b"CAFE_TITLE=Caf\xe9\n" in out


def test_large_change_has_300_files():
    [record] = records(p4("-G", "describe", "-s", "48255").stdout)
    assert b"depotFile299" in record and b"depotFile300" not in record


def test_fault_injection_connect_auth_and_hang():
    connect = p4("-G", "describe", "-s", "48213", P4FAKE_FAIL="connect")
    assert connect.returncode == 1 and connect.stdout == b""
    assert connect.stderr == (
        b"Perforce client error:\n\tConnect to server failed; check $P4PORT.\n"
        b"\tTCP connect to perforce:1666 failed.\n\tconnect: 127.0.0.1:1666: Connection refused\n"
    )
    auth = p4("print", "-q", "//depot/x#1", P4FAKE_FAIL="auth")
    assert (auth.returncode, auth.stderr) == (1, b"Perforce password (P4PASSWD) invalid or unset.\n")
    [auth_record] = records(p4("-G", "describe", "-s", "48213", P4FAKE_FAIL="auth").stdout)
    assert auth_record[b"code"] == b"error"
    env = {"PATH": os.environ["PATH"], "P4FAKE_FAIL": "hang"}
    with pytest.raises(subprocess.TimeoutExpired):  # the fake sleeps 60 s
        subprocess.run([str(FAKE_P4), "describe", "-s", "48213"], env=env, capture_output=True, timeout=1)


def test_log_records_argv_verbatim_and_env_names(tmp_path):
    log = tmp_path / "argv.jsonl"
    odd = "//depot/a b; rm -rf / $(id) `id`.c"
    p4("-G", "print", "-q", odd, P4FAKE_LOG=str(log), P4PASSWD="s3cr3t-ticket")
    entry = json.loads(log.read_text())
    assert entry["argv"] == ["-G", "print", "-q", odd]
    assert "P4PASSWD" in entry["env"] and "s3cr3t-ticket" not in log.read_text()


def test_ticket_check_and_depot_override(tmp_path):
    assert p4("-G", "user", "-o", "pnair", P4FAKE_TICKET="T1", P4PASSWD="T1").returncode == 0
    assert p4("-G", "user", "-o", "pnair", P4FAKE_TICKET="T1", P4PASSWD="T2").returncode == 1
    (tmp_path / "changes").mkdir()
    (tmp_path / "users.json").write_text("{}")
    result = p4("-G", "describe", "-s", "48213", P4FAKE_DEPOT=str(tmp_path))
    assert records(result.stdout)[0][b"data"] == b"Change 48213 unknown.\n"


def test_generators_reproduce_the_committed_fixtures(tmp_path):
    for script in ("gen_large_change.py", "gen_blobs.py"):
        subprocess.run([sys.executable, str(ROOT / "events" / "tools" / script), "--depot", str(tmp_path)], check=True)
    generated = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(generated) == 9
    for path in generated:
        assert path.read_bytes() == (DEPOT / path.relative_to(tmp_path)).read_bytes(), path


# --- keys and counters (what the trigger numbers versions and keeps its catch-up mark with) -----------
@pytest.fixture
def state(tmp_path) -> dict[str, str]:
    return {"P4FAKE_STATE": str(tmp_path / "state")}


def key(*args: str, state: dict[str, str], tagged: bool = True, **env: str) -> subprocess.CompletedProcess[bytes]:
    return p4(*(["-G"] if tagged else []), "key", *args, **state, **env)


def test_key_get_set_increment_delete(state):
    assert records(key("mark", state=state).stdout) == [{b"code": b"stat", b"key": b"mark", b"value": b"0"}]
    assert records(key("mark", "48213", state=state).stdout)[0][b"value"] == b"48213"
    assert records(key("-v", "mark", "48220", state=state).stdout)[0][b"value"] == b"48213"  # the previous value
    assert key("mark", state=state, tagged=False).stdout == b"48220\n"
    assert records(key("-i", "v", state=state).stdout)[0][b"value"] == b"1"
    assert records(key("-i", "v", state=state).stdout)[0][b"value"] == b"2"
    assert records(key("-i", "-v", "v", state=state).stdout)[0][b"value"] == b"2"  # -v: before the increment
    assert key("v", state=state, tagged=False).stdout == b"3\n"
    assert key("-d", "v", state=state).returncode == 0
    assert key("v", state=state, tagged=False).stdout == b"0\n"


def test_key_compare_and_set(state):
    key("mark", "100", state=state)
    assert key("--from=100", "--to=200", "mark", state=state).returncode == 0
    assert key("mark", state=state, tagged=False).stdout == b"200\n"
    result = key("--from", "100", "--to", "300", "mark", state=state)
    [error] = records(result.stdout)
    assert result.returncode == 1 and error[b"code"] == b"error" and error[b"severity"] == 3
    assert b"'mark' value is not '100'" in error[b"data"]
    assert key("mark", state=state, tagged=False).stdout == b"200\n"
    unset = key("--from=0", "--to=1", "never-set", state=state)
    assert unset.returncode == 1 and b"is not set" in records(unset.stdout)[0][b"data"]


def test_counters_are_separate_from_keys(state):
    p4("counter", "-i", "n", **state)
    assert records(p4("-G", "counter", "n", **state).stdout) == [{b"code": b"stat", b"counter": b"n", b"value": b"1"}]
    assert key("n", state=state, tagged=False).stdout == b"0\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (("-i", "text"), b"not numeric"),
        (("-x", "k"), b"Invalid option: -x."),
        ((), b"Usage:"),
        (("a", "b", "c"), b"Usage:"),
        (("--from=1", "k"), b"Usage:"),
    ],
)
def test_key_errors_are_error_records(state, args, message):
    key("text", "abc", state=state)
    result = key(*args, state=state)
    [error] = records(result.stdout)
    assert result.returncode == 1 and message in error[b"data"]
    assert isinstance(error[b"severity"], int) and isinstance(error[b"generic"], int)


def test_list_access_reads_keys_but_cannot_set_them(state):
    key("k", "5", state=state)
    assert key("k", state=state, tagged=False, P4FAKE_ACCESS="list").stdout == b"5\n"
    for args in (("k", "6"), ("-i", "k"), ("-d", "k"), ("--from=5", "--to=6", "k")):
        result = key(*args, state=state, P4FAKE_ACCESS="list")
        [error] = records(result.stdout)
        assert error[b"data"] == b"You don't have permission for this operation.\n" and error[b"generic"] == 6


@pytest.mark.spec("TRG-11")
def test_ten_processes_incrementing_one_key_get_one_to_ten(state):
    children = [
        subprocess.Popen(
            [str(FAKE_P4), "key", "-i", "version"], stdout=subprocess.PIPE, env={"PATH": os.environ["PATH"], **state}
        )
        for _ in range(10)
    ]
    values = sorted(int(child.communicate(timeout=60)[0]) for child in children)
    assert values == list(range(1, 11))


@pytest.mark.spec("TRG-11")
def test_ten_processes_compare_and_set_from_one_value_one_wins(state):
    key("mark", "1", state=state)
    children = [
        subprocess.Popen(
            [str(FAKE_P4), "key", "--from=1", f"--to={10 + n}", "mark"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.environ["PATH"], **state},
        )
        for n in range(10)
    ]
    codes = [child.wait(timeout=60) for child in children]
    assert codes.count(0) == 1
    assert int(key("mark", state=state, tagged=False).stdout) == 10 + codes.index(0)


# --- changes, oldChange, login ------------------------------------------------------------------------------
@pytest.mark.spec("TRG-11")
def test_changes_lists_submitted_changes_newest_first_with_filters():
    numbers = lambda result: [int(r[b"change"]) for r in records(result.stdout)]
    submitted = sorted((e["change"] for e in INDEX if e["kind"] == "submitted"), reverse=True)
    assert numbers(p4("-G", "changes", "-s", "submitted")) == submitted
    assert numbers(p4("-G", "changes", "-s", "submitted", "-e", "48255")) == [n for n in submitted if n >= 48255]
    assert numbers(p4("-G", "changes", "-s", "submitted", "-m", "2")) == submitted[:2]
    assert numbers(p4("-G", "changes", "-s", "submitted", "//depot/tools/...", "//depot/game/*/ui/...")) == [
        48261,
        48220,
    ]
    assert numbers(p4("-G", "changes", "-s", "submitted", "//depot/game/*/menus/...")) == []  # * stops at /
    assert numbers(p4("-G", "changes", "-s", "shelved")) == [48284, 48240]
    assert numbers(p4("-G", "changes", "-s", "pending", "//depot/services/...")) == [48240]


def test_changes_records_and_text_look_like_p4():
    [record] = records(p4("-G", "changes", "-s", "submitted", "-m", "1", "//depot/tools/...").stdout)
    assert record[b"change"] == b"48220" and record[b"status"] == b"submitted" and record[b"user"] == b"pnair"
    assert len(record[b"desc"]) == 31 and record[b"path"] == b"//depot/tools/main/pipeline/..."
    # The newest change under //depot/tools/... is pending 48284 (shelved files): -s submitted skips it.
    [pending] = records(p4("-G", "changes", "-m", "1", "//depot/tools/...").stdout)
    assert (pending[b"change"], pending[b"status"]) == (b"48284", b"pending")
    [full] = records(p4("-G", "changes", "-s", "submitted", "-l", "-m", "1", "//depot/tools/...").stdout)
    assert full[b"desc"] == change_json(48220)["desc"].encode()
    text = p4("changes", "-s", "submitted", "-m", "1", "//depot/tools/...").stdout
    assert text.startswith(b"Change 48220 on 2024/05/") and b"by pnair@" in text and text.endswith(b"'\n")
    bad = p4("-G", "changes", "-s", "lost")
    assert bad.returncode == 1 and b"Invalid changelist status" in records(bad.stdout)[0][b"data"]


def test_describe_reports_old_change_for_a_change_renumbered_on_submit():
    [renumbered] = records(p4("-G", "describe", "-s", "48277").stdout)
    assert renumbered[b"oldChange"] == b"48240"
    [plain] = records(p4("-G", "describe", "-s", "48213").stdout)
    assert b"oldChange" not in plain


def test_the_renumbered_submit_holds_the_shelf_v2_content():
    for name in ("bucket.go", "bucket_test.go"):
        path = f"//depot/services/matchmaking/main/internal/ratelimit/{name}"
        assert p4("print", "-q", f"{path}#1").stdout == p4("print", "-q", f"{path}@=48240").stdout != b""


def test_login_status_checks_the_ticket():
    [record] = records(p4("-G", "-u", "p4review-trigger", "login", "-s").stdout)
    assert record == {b"code": b"stat", b"user": b"p4review-trigger", b"TicketExpiration": b"43200"}
    refused = p4("-G", "login", "-s", P4FAKE_TICKET="right", P4PASSWD="wrong")
    assert refused.returncode == 1 and b"P4PASSWD" in records(refused.stdout)[0][b"data"]
    assert p4("login", "-s", P4FAKE_TICKET="right", P4PASSWD="right").stdout.startswith(b"User ")


@pytest.mark.spec("RV-15")
def test_files_reports_each_file_found_and_a_warning_for_each_missing_one():
    """As p4 does: one command over several files; a missing file is a severity-2 warning record
    (EV_EMPTY) among the others, and the command still succeeds."""
    policy = "//depot/tools/main/pipeline/.p4review.toml"
    run = p4("-G", "files", f"{policy}@48220", "//depot/tools/.p4review.toml@48220", "//depot/engine/.p4review.toml")
    assert run.returncode == 0
    found, missing, absent = records(run.stdout)
    assert (found[b"code"], found[b"depotFile"], found[b"rev"]) == (b"stat", policy.encode(), b"1")
    for warning in (missing, absent):
        assert (warning[b"code"], warning[b"severity"], warning[b"generic"]) == (b"error", 2, 17)
        assert warning[b"data"].endswith(b" - no such file(s).\n")
    text = p4("files", f"{policy}#head", "//depot/nope/.p4review.toml")
    assert text.stdout == f"{policy}#1 - add change 1 (text)\n".encode()
    assert text.stderr == b"//depot/nope/.p4review.toml - no such file(s).\n"


# --- -x ARGFILE and -b BATCHSIZE (Helix Core command reference, "Global options") ------------------------
PACKET = "//depot/engine/main/src/net/packet.cpp"


def test_argument_file_operands_follow_the_command_in_batches(tmp_path):
    argfile = tmp_path / "args.txt"
    argfile.write_text(f"{PACKET}#6\n//depot/nope.c#1\n{PACKET}#7\n")
    log = tmp_path / "log.jsonl"
    result = p4("-G", "-x", str(argfile), "-b", "2", "print", P4FAKE_LOG=str(log))
    assert result.returncode == 0, result.stderr
    answers = records(result.stdout)
    stats = [(r[b"depotFile"], r[b"rev"]) for r in answers if r[b"code"] == b"stat"]
    assert stats == [(PACKET.encode(), b"6"), (PACKET.encode(), b"7")]
    assert [r[b"severity"] for r in answers if r[b"code"] == b"error"] == [2]  # the missing one, in its place
    assert json.loads(log.read_text())["argfile"] == [f"{PACKET}#6", "//depot/nope.c#1", f"{PACKET}#7"]
    # Batches change nothing in the answer: -b 1, the default 128, and the operands on the command line.
    assert p4("-G", "-x", str(argfile), "-b", "1", "print").stdout == result.stdout
    assert p4("-G", "-x", str(argfile), "print").stdout == result.stdout
    assert p4("-G", "print", f"{PACKET}#6", "//depot/nope.c#1", f"{PACKET}#7").stdout == result.stdout


def test_argument_file_from_standard_input_and_refusals(tmp_path):
    piped = subprocess.run(
        [str(FAKE_P4), "-G", "-x", "-", "files"], input=f"{PACKET}\n".encode(), capture_output=True, timeout=30
    )
    [record] = records(piped.stdout)
    assert record[b"depotFile"] == PACKET.encode()
    assert p4("-G", "-x", str(tmp_path / "absent.txt"), "print").returncode == 1
    assert p4("-G", "-x", "-", "-b", "0", "print").returncode == 1


def test_a_command_run_in_batches_fails_if_any_batch_fails(tmp_path):
    argfile = tmp_path / "args.txt"
    argfile.write_text(f"{PACKET}#7\n")
    result = p4("-G", "-x", str(argfile), "describe", "-s")  # "describe -s //depot/...": not a change number
    assert result.returncode == 1 and records(result.stdout)[0][b"code"] == b"error"


def test_delay_models_a_remote_server_per_server_command(tmp_path):
    """P4FAKE_DELAY_MS waits before each server command: one per -x batch. Measured by the
    fake's own log of waits, not by a clock."""
    argfile = tmp_path / "args.txt"
    argfile.write_text("".join(f"{PACKET}#7\n" for _ in range(5)))
    log = tmp_path / "delays.jsonl"
    p4("-G", "-x", str(argfile), "-b", "2", "print", P4FAKE_DELAY_MS="1", P4FAKE_DELAY_LOG=str(log))
    assert log.read_text().splitlines() == ["1", "1", "1"]  # batches of 2, 2 and 1
