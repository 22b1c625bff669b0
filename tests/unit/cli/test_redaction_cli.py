"""`p4review redact`: stdin to stdout, bytes kept as they are, stats on stderr, fails closed."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from p4review.change.redaction import RedactionError
from p4review.cli import redact as redact_cli


def run(argv: list[str], data: bytes) -> tuple[int, bytes]:
    parser = argparse.ArgumentParser(prog="p4review")
    redact_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["redact", *argv])
    stdout = io.BytesIO()
    status = args.func(args, stdin=io.BytesIO(data), stdout=stdout)
    return status, stdout.getvalue()


def test_redacts_stdin_to_stdout_keeping_crlf_and_undecodable_bytes():
    data = b'+password = "hunter2"\r\n+caf\xe9 = 1\r\n+key = AKIAIOSFODNN7EXAMPLE'
    status, out = run([], data)
    assert status == 0
    assert out == b'+password = "[REDACTED:password]"\r\n+caf\xe9 = 1\r\n+key = [REDACTED:aws_access_key]'


def test_policy_options_and_stats_on_stderr(capsys):
    data = b"+owner: a.b@example.com\n+host: ci.corp.example\n+ip: 10.1.2.3\n+lo: 127.0.0.1\n"
    status, out = run(
        [
            "--secrets-only",
            "--deidentify-emails",
            "--confidential-host-suffix",
            ".corp.example",
            "--confidential-cidr",
            "10.0.0.0/8",
            "--confidential-cidr",
            "192.168.0.0/16",
            "--stats",
        ],
        data,
    )
    assert status == 0
    assert out == (
        b"+owner: [REDACTED:email]\n+host: [REDACTED:internal_host]\n+ip: [REDACTED:internal_ip]\n+lo: 127.0.0.1\n"
    )
    stats = json.loads(capsys.readouterr().err)
    assert stats["counts"] == {"email": 1, "internal_host": 1, "internal_ip": 1}
    assert stats["ruleset_version"].startswith("redaction-rules/") and len(stats["sha256"]) == 64


@pytest.mark.spec("SEC-37")
def test_by_default_the_service_policy_redacts_emails_internal_names_and_private_addresses():
    data = b"+owner: a.b@example.com\n+ip: 10.1.2.3\n+host: db01.prod.internal\n+dns: 8.8.8.8\n"
    assert run([], data) == (
        0,
        b"+owner: [REDACTED:email]\n+ip: [REDACTED:internal_ip]\n+host: [REDACTED:internal_host]\n+dns: 8.8.8.8\n",
    )


def test_secrets_only_keeps_policy_classes():
    data = b"+owner: a.b@example.com\n+ip: 10.1.2.3\n"
    assert run(["--secrets-only"], data) == (0, data)


def test_bad_policy_is_a_usage_error(capsys):
    status, out = run(["--confidential-cidr", "10.0.0.0/99"], b"x\n")
    assert (status, out) == (2, b"")
    assert "10.0.0.0/99" in capsys.readouterr().err


def test_guard_failure_writes_nothing_to_stdout(monkeypatch, capsys):
    class Refuses:
        def __init__(self, policy):
            pass

        def redact(self, text):
            raise RedactionError("redacted output still matches redaction rules (password=1)")

    monkeypatch.setattr(redact_cli, "Redactor", Refuses)
    status, out = run([], b'+password = "hunter2"\n')
    assert (status, out) == (1, b"")
    error = capsys.readouterr().err
    assert "password=1" in error and "hunter2" not in error


@pytest.mark.parametrize("argv", [["--help"]])
def test_help_exits_cleanly(argv):
    with pytest.raises(SystemExit) as leaving:
        run(argv, b"")
    assert leaving.value.code == 0
