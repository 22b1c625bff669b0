"""The Perforce trigger run as the Perforce server runs it: a file executed by a python3, with
the fake p4 (events/bin/p4) for its own p4 calls and the real ingest API (local API Gateway front,
moto) behind a front door that can hold its answers. The whole service is in
tests/e2e/test_trigger_outage.py."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from p4review_dev.http_front import LocalApiGateway
from p4review_dev.stack import load_function
from p4review_dev.support.harness import provisioned_service
from p4review_dev.support.trigger import (
    TRIGGER_FILE,
    TriggerApi,
    fake_p4_wrapper,
    load_trigger,
    spool_files,
    write_config,
    write_secret,
)
from p4review_dev.trigger_host import FrontDoor

trigger = load_trigger()
# Long enough that a request held at the front door is never given up by the trigger mid-test.
HELD_SEND_TIMEOUT = "60"


def run(
    config: Path, *args: str, python: str = sys.executable, timeout: float = 60, **kwargs
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, str(TRIGGER_FILE), "-c", str(config), *args], capture_output=True, text=True, timeout=timeout, **kwargs
    )


def wait_until(condition, timeout: float = 60.0, what: str = "condition") -> None:
    """Poll a condition that real processes make true; the margin is generous on purpose."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def api(moto_endpoint, aws_reset):
    with provisioned_service(moto_endpoint) as service:
        gateway = LocalApiGateway(load_function("ingest").lambda_handler)
        gateway.start()
        door = FrontDoor(urlsplit(gateway.url).port)
        door.open()
        try:
            yield TriggerApi(service, gateway, door)
        finally:
            door.close()
            gateway.stop()


@pytest.fixture
def p4(tmp_path) -> Path:
    return fake_p4_wrapper(tmp_path, tmp_path / "p4state")


@pytest.fixture
def config(tmp_path, api, p4) -> Path:
    write_secret(tmp_path / "signing.secret", api.secret)
    return write_config(tmp_path, API_URL=api.url, P4=str(p4), SEND_TIMEOUT=HELD_SEND_TIMEOUT)


def spool(config: Path) -> Path:
    return config.parent / "spool"


def log_text(config: Path) -> str:
    path = spool(config) / "p4review-trigger.log"
    return path.read_text() if path.exists() else ""


# --- the file: standard library, Python 3.8 ---------------------------------------------------------------
@pytest.mark.spec("TRG-1")
def test_vermin_finds_nothing_newer_than_python_3_8():
    vermin = Path(sys.executable).parent / "vermin"
    result = subprocess.run(
        [str(vermin), "-t=3.8-", "--violations", "--no-tips", "--eval-annotations", str(TRIGGER_FILE)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _python38() -> str | None:
    """A real Python 3.8 (pyenv's shim named python3.8 only works when 3.8 is selected)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8")))
    return candidates[0] if candidates else shutil.which("python3.8", path="/usr/bin:/usr/local/bin")


@pytest.mark.spec("TRG-1")
@pytest.mark.skipif(_python38() is None, reason="no Python 3.8 on this machine")
def test_the_trigger_runs_on_python_3_8(config, api):
    python = _python38()
    assert run(config, "-o", python=python).returncode == 0
    assert run(config, "-t", "change-commit", "-v", "48213", "-w", "48213", python=python).returncode == 0
    drained = run(config, "--drain", python=python)
    assert drained.returncode == 0, drained.stderr
    assert api.job_keys() == ["p4-submitted-48213-v1"]
    assert run(config, "--status", python=python).returncode == 0


# --- trigger mode as a process -----------------------------------------------------------------------------
@pytest.mark.spec("TRG-3")
def test_the_trigger_detaches_its_sender_and_exits_at_once(tmp_path, api, p4):
    write_secret(tmp_path / "signing.secret", api.secret)
    config = write_config(tmp_path, API_URL=api.url, P4=str(p4), SEND_MODE="background", SEND_TIMEOUT=HELD_SEND_TIMEOUT)
    api.door.hold_answers.set()  # the API acts, its answer waits at the door
    try:
        result = run(config, "-t", "change-commit", "-v", "48213", "-w", "48213")
        # run() read the trigger's stdout and stderr to their end: the sender holds neither.
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        wait_until(lambda: api.job("p4-submitted-48213-v1") is not None, what="the sender's request")
        senders = subprocess.run(["pgrep", "-f", f"{config} --send"], capture_output=True, text=True).stdout.split()
        assert len(senders) == 1  # still waiting for the API, after the trigger is long gone
        sender = int(senders[0])
        assert os.getsid(sender) == sender  # its own session: p4d's signals and pipes do not reach it
        command_line = Path(f"/proc/{sender}/cmdline").read_bytes()
        assert b"--send" in command_line and api.secret.encode() not in command_line  # never on a command line
        assert len(spool_files(spool(config), "pending")) == 1
    finally:
        api.door.hold_answers.clear()
    wait_until(lambda: len(spool_files(spool(config), "done")) == 1, what="the event to be done")
    assert api.job_keys() == ["p4-submitted-48213-v1"]


@pytest.mark.spec("TRG-7")
def test_spool_only_mode_leaves_the_send_to_the_drain(config, api):
    """(That no sender starts in this mode: unit/trigger/test_trigger.py::test_in_spool_only_mode_no_sender_starts.)"""
    assert run(config, "-t", "change-commit", "-v", "48213", "-w", "48213").returncode == 0
    assert len(spool_files(spool(config), "pending")) == 1
    drained = run(config, "--drain")
    assert drained.returncode == 0 and "review_requested change=48213 version=1" in drained.stderr
    assert api.job_keys() == ["p4-submitted-48213-v1"]


def test_a_trigger_killed_between_write_and_rename_loses_nothing(config, api):
    """SIGKILL at the worst moment: the event is written and fsynced in tmp/, not yet renamed."""
    killer = config.parent / "kill_before_rename.py"
    killer.write_text(
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})\n"
        "from p4review_dev.support.trigger import load_trigger\n"
        "trigger = load_trigger()\n"
        "real_replace = os.replace\n"
        "def replace(source, target):\n"
        "    if os.sep + 'pending' + os.sep in str(target):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real_replace(source, target)\n"
        "trigger.os.replace = replace\n"
        "sys.exit(trigger.main(sys.argv[1:]))\n"
    )
    killed = subprocess.run(
        [sys.executable, str(killer), "-c", str(config), "-t", "change-commit", "-v", "48213", "-w", "48213"],
        capture_output=True,
    )
    assert killed.returncode == -signal.SIGKILL
    [orphan] = (spool(config) / "tmp").iterdir()
    assert list((spool(config) / "pending").iterdir()) == []
    assert run(config, "--drain").returncode == 0  # too young: it may still be being written
    assert api.job_keys() == []
    old = time.time() - 120
    os.utime(orphan, (old, old))
    result = run(config, "--drain")
    assert result.returncode == 0 and "spool_file_recovered" in result.stderr
    assert api.job_keys() == ["p4-submitted-48213-v1"]
    assert run(config, "--drain").returncode == 0  # the timer's next run
    [done] = spool_files(spool(config), "done")
    assert done["outcome"]["status"] == 201 and "replay" not in done["outcome"]  # sent once


def test_a_drain_killed_mid_send_sends_nothing_twice(config, api):
    for change in ("48213", "48220"):
        assert run(config, "-t", "change-commit", "-v", change, "-w", change).returncode == 0
    api.door.hold_answers.set()  # the API acts, its answer waits at the door
    drain = subprocess.Popen(
        [sys.executable, str(TRIGGER_FILE), "-c", str(config), "--drain"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: api.job("p4-submitted-48213-v1") is not None, what="the first request to reach the API")
        drain.send_signal(signal.SIGKILL)  # the drain dies before hearing the 201
        drain.wait(timeout=30)
    finally:
        api.door.hold_answers.clear()
    assert api.job_keys() == ["p4-submitted-48213-v1"]  # it reached the API; the drain never heard
    assert len(spool_files(spool(config), "pending")) == 2
    result = run(config, "--drain")
    assert result.returncode == 0, result.stderr
    outcomes = {event["change"]: event["outcome"] for event in spool_files(spool(config), "done")}
    assert (outcomes[48213]["status"], outcomes[48213]["replay"]) == (200, "idempotency-key")  # a replay
    assert outcomes[48220]["status"] == 201
    assert api.job_keys() == ["p4-submitted-48213-v1", "p4-submitted-48220-v1"]  # one review each


# --- versions from Perforce itself ---------------------------------------------------------------------------
def _depot_with_shelf_versions(root: Path, versions: int) -> Path:
    """A copy of the fixture depot whose change 48240 has `versions` shelf versions, each with
    different content (the fake serves version K when P4FAKE_SHELF_VERSION=K)."""
    from p4review_dev.stack import repo_root

    depot = root / "depot"
    shutil.copytree(repo_root() / "events" / "depot", depot)
    change_file = depot / "changes" / "48240.json"
    change = json.loads(change_file.read_text())
    template = change["shelf_versions"][0]
    change["shelf_versions"] = []
    for version in range(1, versions + 1):
        change["shelf_versions"].append(dict(template, version=version))
        for entry in template["files"]:
            parts = entry["depotFile"][2:].split("/")
            blob = depot / "archive" / Path(*parts[:-1]) / (parts[-1] + ",d") / f"shelf-48240-v{version}"
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_text(f"// shelf version {version} of {parts[-1]}\n")
    change_file.write_text(json.dumps(change))
    return depot


@pytest.mark.spec("TRG-8")
def test_ten_hosts_reshelving_one_change_at_once_get_ten_distinct_increasing_versions(tmp_path, api):
    """Ten trigger hosts (say, edge servers: each its own spool) resolve ten re-shelves of one
    change at the same moment; the version is a server-side atomic `p4 key -i`. The API keeps
    the newest: a version that arrives after a higher one is refused as stale (rejected/)."""
    depot = _depot_with_shelf_versions(tmp_path, 10)
    state = tmp_path / "p4state"
    configs = []
    for host in range(1, 11):
        home = tmp_path / f"host{host}"
        home.mkdir()
        wrapper = fake_p4_wrapper(home, state, P4FAKE_DEPOT=str(depot), P4FAKE_SHELF_VERSION=str(host))
        write_secret(home / "signing.secret", api.secret)
        configs.append(write_config(home, API_URL=api.url, P4=str(wrapper)))
        assert run(configs[-1], "-t", "shelve-commit", "-v", "48240").returncode == 0
    drains = [
        subprocess.Popen(
            [sys.executable, str(TRIGGER_FILE), "-c", str(c), "--drain"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for c in configs
    ]
    assert [d.wait(timeout=120) for d in drains] == [0] * 10
    answered = [(spool_files(spool(c), "done") + spool_files(spool(c), "rejected"))[0] for c in configs]
    requests = [event["request"] for event in answered]
    assert sorted(r["review_version"] for r in requests) == list(range(1, 11))
    assert len({r["idempotency_key"] for r in requests}) == 10
    assert all(r["rerun"] == (r["review_version"] > 1) for r in requests)
    # The host whose re-shelve got version 10 shelves the same files again: no new version.
    latest = configs[[r["review_version"] for r in requests].index(10)]
    assert run(latest, "-t", "shelve-commit", "-v", "48240").returncode == 0
    assert run(latest, "--drain").returncode == 0
    assert spool_files(spool(latest), "done")[-1]["outcome"]["skipped"] == "identical to shelf version 10"
    accepted = {e["request"]["idempotency_key"] for e in answered if e["outcome"]["status"] in (200, 201)}
    assert "p4-shelved-48240-v10" in accepted and api.job_keys() == sorted(accepted)
    assert all(e["outcome"]["code"] == "stale_review_version" for e in answered if e["outcome"]["status"] == 409)


@pytest.mark.spec("TRG-8")
def test_shelve_twice_then_submit_renumbered_is_the_next_version(tmp_path, api):
    state = tmp_path / "p4state"
    versions = {}
    for shelf_version in (1, 2):
        home = tmp_path / f"v{shelf_version}"
        home.mkdir()
        wrapper = fake_p4_wrapper(home, state, P4FAKE_SHELF_VERSION=str(shelf_version))
        write_secret(home / "signing.secret", api.secret)
        config = write_config(home, API_URL=api.url, P4=str(wrapper))
        assert run(config, "-t", "shelve-commit", "-v", "48240").returncode == 0
        assert run(config, "--drain").returncode == 0
        versions[shelf_version] = spool_files(spool(config), "done")[0]["request"]["review_version"]
    assert versions == {1: 1, 2: 2}
    # 48240 submitted and renumbered to 48277; the trigger table passes %oldchangelist%.
    assert run(config, "-t", "change-commit", "-v", "48277", "-w", "48240").returncode == 0
    assert run(config, "--drain").returncode == 0
    submit = [e for e in spool_files(spool(config), "done") if e["trigger"] == "change-commit"][0]["request"]
    assert submit == {
        "changelist_id": 48277,
        "review_version": 3,
        "kind": "submitted",
        "rerun": True,
        "idempotency_key": "p4-submitted-48277-v3",
        "follows_shelf": {"changelist_id": 48240, "review_version": 2},
    }
    assert api.job("p4-submitted-48277-v3")["follows_shelf"] == {"changelist_id": 48240, "review_version": 2}


# --- catch-up ------------------------------------------------------------------------------------------------
@pytest.mark.spec("TRG-9")
def test_catch_up_finds_submits_that_never_reached_the_spool(config, api, p4):
    first = run(config, "--catch-up")  # no mark yet: set it at the newest submitted change, post nothing
    assert first.returncode == 0 and "catch_up_started mark=48277" in first.stderr
    assert api.job_keys() == []
    subprocess.run([str(p4), "key", "p4review-catchup-mark", "48213"], check=True, capture_output=True)
    # 48220's trigger ran (spooled and sent); 48234 onwards never reached the spool.
    assert run(config, "-t", "change-commit", "-v", "48220", "-w", "48220").returncode == 0
    result = run(config, "--drain", "--catch-up")
    assert result.returncode == 0, result.stderr
    assert api.job_keys() == sorted(f"p4-submitted-{c}-v1" for c in (48220, 48234, 48255, 48261, 48270, 48277))
    assert "caught_up change=48234" in result.stderr and "caught_up change=48220" not in result.stderr
    assert "catch_up_finished posted=5 already_there=1" in result.stderr  # 48220 arrived: a replay
    mark = subprocess.run([str(p4), "key", "p4review-catchup-mark"], capture_output=True, text=True).stdout.strip()
    assert mark == "48277"
    again = run(config, "--catch-up")  # nothing after the mark: nothing posted
    assert again.returncode == 0 and "catch_up_finished posted=0 already_there=0" in again.stderr


# --- ping -------------------------------------------------------------------------------------------------------
def test_ping_passes_when_everything_is_right(config, api):
    result = run(config, "--ping")
    assert result.returncode == 0, result.stdout
    for line in (
        "ok    config",
        "ok    secret",
        "ok    spool",
        "ok    p4 ",
        "ok    p4 keys",
        "ok    api",
        "ok    clock",
    ):
        assert line in result.stdout, result.stdout
    assert api.secret not in result.stdout + result.stderr


@pytest.mark.spec("TRG-10")
def test_ping_says_the_secret_is_wrong(tmp_path, config, api):
    (tmp_path / "signing.secret").write_text("not-the-secret\n")
    result = run(config, "--ping")
    assert result.returncode == 1
    assert "FAIL  secret     the API refused the signature (signature_invalid)" in result.stdout


def test_ping_warns_about_the_previous_secret(config, api):
    api.rotate_secret("the-new-secret")  # the trigger host still holds the old one
    result = run(config, "--ping")
    assert result.returncode == 0 and "warn  secret     signed with the PREVIOUS secret" in result.stdout


@pytest.mark.spec("TRG-10")
def test_ping_says_the_api_is_unreachable(tmp_path, p4):
    config = write_config(tmp_path, API_URL="http://127.0.0.1:9/prod", P4=str(p4))
    result = run(config, "--ping")
    assert (
        result.returncode == 1
        and "FAIL  api        http://127.0.0.1:9/prod unreachable: connection refused" in result.stdout
    )


@pytest.mark.spec("TRG-10")
def test_ping_says_the_clock_is_off(config, api):
    skewed = config.parent / "skewed.py"
    skewed.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})\n"
        "real = time.time\n"
        "time.time = lambda: real() - 3600\n"  # an hour slow
        "from p4review_dev.support.trigger import load_trigger\n"
        "sys.exit(load_trigger().main(sys.argv[1:]))\n"
    )
    result = subprocess.run([sys.executable, str(skewed), "-c", str(config), "--ping"], capture_output=True, text=True)
    assert result.returncode == 1 and "FAIL  clock" in result.stdout
    # The API's clock comes in whole seconds, so the measured offset is the injected hour give or take one.
    offset = re.search(r"clock is ([+-]\d+) s off", result.stdout)
    assert offset and abs(int(offset.group(1)) + 3600) <= 1, result.stdout


@pytest.mark.spec("TRG-10")
def test_ping_fails_a_spool_and_a_config_another_account_could_change(tmp_path, p4):
    """A spool made beforehand by another local user (mode 777): --ping says so, and the trigger
    spools nothing there. A config others can write (P4= names what the trigger runs): refused."""
    shared = tmp_path / "spool"
    shared.mkdir()
    shared.chmod(0o777)
    config = write_config(tmp_path, P4=str(p4))
    result = run(config, "--ping")
    assert result.returncode == 1
    assert f"FAIL  spool      {shared} is writable by group or others (mode 777)" in result.stdout
    assert "FAIL  log" in result.stdout
    assert run(config, "-t", "change-commit", "-v", "48213").returncode == 0
    assert not (shared / "pending").exists()
    shared.chmod(0o700)
    config.chmod(0o666)
    result = run(config, "--ping")
    assert result.returncode == 1
    assert "FAIL  config     config file" in result.stdout and "writable by group or others (mode 666)" in result.stdout


def test_ping_reports_a_secret_file_others_can_read(tmp_path, config):
    (tmp_path / "signing.secret").chmod(0o644)
    result = run(config, "--ping")
    assert result.returncode == 1 and "can be read by others (mode 644): chmod 600 it" in result.stdout


@pytest.mark.spec("TRG-10")
def test_ping_reports_p4_without_review_access(tmp_path, api):
    wrapper = fake_p4_wrapper(tmp_path, tmp_path / "p4state", P4FAKE_ACCESS="list")
    write_secret(tmp_path / "signing.secret", api.secret)
    config = write_config(tmp_path, API_URL=api.url, P4=str(wrapper))
    result = run(config, "--ping")
    assert result.returncode == 1 and "FAIL  p4 keys" in result.stdout and "'review' access" in result.stdout


def test_ping_reports_a_bad_p4_ticket(tmp_path, api):
    wrapper = fake_p4_wrapper(tmp_path, tmp_path / "p4state", P4FAKE_TICKET="the-right-ticket")
    ticket = tmp_path / "ticket"
    ticket.write_text("a-wrong-ticket\n")
    ticket.chmod(0o600)
    write_secret(tmp_path / "signing.secret", api.secret)
    config = write_config(tmp_path, API_URL=api.url, P4=str(wrapper), P4TICKET_FILE=str(ticket))
    result = run(config, "--ping")
    assert result.returncode == 1 and "FAIL  p4 " in result.stdout and "P4PASSWD" in result.stdout
    assert "a-wrong-ticket" not in result.stdout
    ticket.write_text("the-right-ticket\n")
    assert run(config, "--ping").returncode == 0


# --- bad input never fails the user's command --------------------------------------------------------------------
def test_shell_metacharacters_in_config_values_stay_literal(tmp_path, api):
    marker = tmp_path / "pwned"
    wrapper = fake_p4_wrapper(tmp_path, tmp_path / "p4state", P4FAKE_LOG=str(tmp_path / "p4.log"))
    write_secret(tmp_path / "signing.secret", api.secret)
    config = write_config(
        tmp_path,
        API_URL=api.url,
        P4=str(wrapper),
        P4PORT=f"ssl:perforce:1666;touch {marker}",
        P4USER=f"$(touch {marker})",
    )
    assert run(config, "-t", "change-commit", "-v", "48213", "-w", "48213").returncode == 0
    assert run(config, "--drain").returncode == 0
    calls = [json.loads(line)["argv"] for line in (tmp_path / "p4.log").read_text().splitlines()]
    assert all(
        ["-p", f"ssl:perforce:1666;touch {marker}"] == call[call.index("-p") : call.index("-p") + 2] for call in calls
    )
    assert all(f"$(touch {marker})" in call for call in calls)
    assert not marker.exists() and api.job_keys() == ["p4-submitted-48213-v1"]

    bad_p4 = write_config(tmp_path, API_URL=api.url, P4=f"/bin/sh -c 'touch {marker}'")
    assert run(bad_p4, "-t", "change-commit", "-v", "48220").returncode == 0
    result = run(bad_p4, "--drain")
    assert result.returncode == 1 and "cannot run p4" in result.stderr and not marker.exists()


def test_a_hostile_description_reaches_neither_the_log_nor_the_request(tmp_path, api):
    from p4review_dev.stack import repo_root

    depot = tmp_path / "depot"
    shutil.copytree(repo_root() / "events" / "depot", depot)
    change_file = depot / "changes" / "48213.json"
    change = json.loads(change_file.read_text())
    change["desc"] = "'; rm -rf / #\n$(reboot)\x1b[2J\u202e" + "A" * 100_000 + "\x00\n"
    change_file.write_text(json.dumps(change))
    wrapper = fake_p4_wrapper(tmp_path, tmp_path / "p4state", P4FAKE_DEPOT=str(depot))
    write_secret(tmp_path / "signing.secret", api.secret)
    config = write_config(tmp_path, API_URL=api.url, P4=str(wrapper))
    assert run(config, "-t", "change-commit", "-v", "48213").returncode == 0  # no -w: the trigger asks describe
    assert run(config, "--drain").returncode == 0
    assert api.job_keys() == ["p4-submitted-48213-v1"]
    assert "rm -rf" not in log_text(config) and "reboot" not in log_text(config)


def test_a_world_readable_secret_keeps_events_and_says_how_to_fix_it(tmp_path, config, api):
    (tmp_path / "signing.secret").chmod(0o644)
    assert run(config, "-t", "change-commit", "-v", "48213", "-w", "48213").returncode == 0
    result = run(config, "--drain")
    assert result.returncode == 1 and "chmod 600 it" in result.stderr and api.secret not in result.stderr
    assert api.job_keys() == [] and len(spool_files(spool(config), "pending")) == 1


@pytest.mark.spec("TRG-4")
def test_a_spool_on_a_full_disk_never_fails_the_command(tmp_path, config):
    import resource

    def no_room() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # every write to a file fails (EFBIG)

    result = subprocess.run(
        [sys.executable, str(TRIGGER_FILE), "-c", str(config), "-t", "change-commit", "-v", "48213"],
        capture_output=True,
        preexec_fn=no_room,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert list((spool(config) / "pending").iterdir()) == [] and list((spool(config) / "tmp").iterdir()) == []
