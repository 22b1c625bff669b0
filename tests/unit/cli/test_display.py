"""The operator's terminal (layers/p4review/cli/display.py): every `p4review` command shows
what it prints redacted and escaped, through one display path, and `main` guards whatever a
command prints on its own."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from p4review.cli import api_client, check_result, display
from p4review.cli import main as cli_main
from p4review.cli.api_client import ApiAnswer, ReviewApiClient
from tests.unit.cli.terminal import HOSTILE, PLANTED, PLANTED_SECRET, assert_terminal_safe
from tests.unit.cli.test_check_result_cli import BUFFER, answer, finding

JOB = "0a1b2c3d-0000-4000-8000-000000000000"


def _forged_job_view(_client, job_id):
    """An API answer as a compromised or impersonated API could send it."""
    return ApiAnswer(
        status=200,
        headers={},
        body={
            "job_id": job_id,
            "status": "succeeded" + HOSTILE,
            "stages": {"fetch": {"status": "completed", "last_error": HOSTILE}},
            "deliveries": [{"recipient": "a@example.test", "last_error": HOSTILE}],
            "audit": [{"event": "job_created", "detail": HOSTILE}],
            HOSTILE: "a key too",
        },
    )


@pytest.mark.spec("CH-4")
def test_jobs_show_prints_a_forged_answer_escaped_and_redacted(monkeypatch, capsys):
    monkeypatch.setattr(ReviewApiClient, "get_job", _forged_job_view)
    monkeypatch.setenv("P4REVIEW_SIGNING_SECRET", "s")
    assert cli_main.main(["jobs", "show", JOB, "--api", "http://api.invalid"]) == 0
    out, err = capsys.readouterr()
    assert_terminal_safe(out, err)
    shown = json.loads(out)
    assert shown["job_id"] == JOB and shown["status"].startswith("succeeded\\x1b]52;c;")


@pytest.mark.spec("CH-4")
def test_check_result_prints_a_hostile_answer_redacted_and_inert(tmp_path):
    (tmp_path / "files.txt").write_text(BUFFER + "\n")
    hostile = {**finding(), "message": "strcpy " + HOSTILE, "title": "t\x1b[2J"}
    stdout = io.StringIO()
    check_result.main(
        ["--changed-files", str(tmp_path / "files.txt")], stdin=io.BytesIO(answer([hostile])), stdout=stdout
    )
    assert_terminal_safe(stdout.getvalue())
    (shown,) = json.loads(stdout.getvalue())["result"]["findings"]
    assert shown["message"].startswith("strcpy \x1b]52;c;")  # a document: the value kept, the text inert


def test_a_command_that_prints_on_its_own_is_guarded_by_main(monkeypatch, capsys):
    """A new command (here an installed extension's) cannot forget the display path."""

    def register(commands: argparse._SubParsersAction) -> None:
        stray = commands.add_parser("stray")
        stray.set_defaults(func=lambda _args: print("raw", HOSTILE) or print(HOSTILE, file=__import__("sys").stderr))

    class Extension:
        def load(self):
            return register

    monkeypatch.setattr(cli_main, "entry_points", lambda group: [Extension()])
    assert cli_main.main(["stray"]) is None
    out, err = capsys.readouterr()
    assert_terminal_safe(out, err)
    assert out.startswith("raw \\x1b]52;c;") and "password=[REDACTED:password]" in out


@pytest.mark.parametrize(
    "body",
    [
        {"job_id": JOB, "status": "queued", "stages": HOSTILE},
        {"job_id": JOB, "status": "queued", "stages": {"fetch": HOSTILE}},
        HOSTILE,
    ],
    ids=["stages a string", "a stage a string", "not an object"],
)
def test_jobs_show_wait_on_a_job_view_of_another_shape_says_so_without_a_traceback(monkeypatch, capsys, body):
    """A traceback is printed after main's guard has put the raw streams back: none may leave it."""
    monkeypatch.setattr(ReviewApiClient, "get_job", lambda _client, _job_id: ApiAnswer(200, {}, body))
    monkeypatch.setenv("P4REVIEW_SIGNING_SECRET", "s")
    assert cli_main.main(["jobs", "show", JOB, "--api", "http://api.invalid", "--wait", "5"]) == 2
    out, err = capsys.readouterr()
    assert_terminal_safe(out, err)
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_an_api_answer_nested_too_deeply_is_shown_as_text():
    nested = b"[" * 20000 + b"]" * 20000
    assert api_client._answer(200, {}, nested).body == nested.decode()


def test_a_refusal_raised_as_system_exit_is_shown_through_the_guard(monkeypatch, capsys):
    monkeypatch.delenv("P4REVIEW_JOBS_TABLE", raising=False)
    assert cli_main.main(["deliveries", "list", "--env-file", "missing\x1b[2J" + PLANTED]) == 1
    out, err = capsys.readouterr()
    assert_terminal_safe(out, err)
    assert "not found" in err


def test_the_guard_keeps_newlines_and_backslashes_and_the_bytes_below_it():
    raw = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    guarded = display.TerminalStream(raw)
    guarded.write('{"path": "C:\\\\tmp"}\n\ttab\u2028\u00e9\n')
    guarded.flush()
    assert raw.buffer.getvalue().decode() == '{"path": "C:\\\\tmp"}\n\\x09tab\\u2028\u00e9\n'
    assert guarded.buffer is raw.buffer  # `p4review redact` writes its filtered bytes there


def test_a_table_cell_is_one_line_escaped_redacted_and_capped():
    table = display.format_table(["A", "B"], [["x\r\ny", "long " + PLANTED]], widths=[None, 12])
    header, row = table.splitlines()
    assert row.split("  ")[0] == "x y" and row.endswith("...")
    assert display.cell(None) == "-" and display.cell("\u202e") == "\\u202e"
    assert PLANTED_SECRET not in display.format_table(["A"], [[PLANTED]])


def test_json_redacts_a_value_that_is_a_secret_only_beside_its_key():
    text = display.json_text({"token": "930ea017659a5bec50a221bcb36eff063f146076"})
    assert "930ea017" not in text and json.loads(text)["token"].startswith("[REDACTED")


def test_json_keeps_the_services_own_ids_whose_names_read_as_secrets():
    token = "930ea017659a5bec50a221bcb36eff063f146076"  # delivery_token(): a hash, not a secret
    shown = json.loads(
        display.json_text(
            {
                "idempotency_key": "p4-submitted-48213-v1",
                "provider_token": token,
                "planted": {"password": PLANTED_SECRET, "note": PLANTED},
                "provider_tokens": [token],
            }
        )
    )
    assert shown["idempotency_key"] == "p4-submitted-48213-v1" and shown["provider_token"] == token
    assert shown["planted"] == {"password": "[REDACTED:password]", "note": "password=[REDACTED:password]"}
    assert shown["provider_tokens"] != [token]  # only the named fields are ids


def test_the_clis_own_refusals_stay_legible_through_the_guard(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("P4REVIEW_SIGNING_SECRET", raising=False)
    assert cli_main.main(["--state-dir", str(tmp_path), "submit", "--api", "http://api.invalid", "--change", "1"]) == 1
    _, err = capsys.readouterr()
    assert "set P4REVIEW_SIGNING_SECRET or pass --secret-file" in err and "REDACTED" not in err
