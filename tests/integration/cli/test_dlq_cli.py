"""`p4review dlq list|show|redrive` at the operator's terminal: what it shows of a dead letter
comes from where the message sits, and nothing of a forged body reaches the terminal raw."""

from __future__ import annotations

import json

import pytest

from p4review.models.job import StageName
from p4review.stores.factory import get_data_access
from tests.integration.pipeline.test_dlq_replay import _cli, _dead_lettered, _take_all
from tests.unit.cli.terminal import HOSTILE, assert_terminal_safe


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        provisioned.sqs = provisioned.client("sqs")
        yield provisioned


def _rows(out):
    return out.splitlines()[1:]


@pytest.mark.spec("CH-4")
def test_the_stage_column_is_the_dlq_the_message_sits_in_and_a_contrary_claim_is_marked(service, tmp_path, capsys):
    """Found by a hostile-input probe: STAGE showed the stage the body claims, so an envelope
    planted in the fetch DLQ claiming `review` was listed as a review failure."""
    job = _dead_lettered(service, change=48296)
    (real,) = get_data_access().dead_letters.peek(StageName.FETCH, 10)  # left visible
    get_data_access().dead_letters.send(StageName.FETCH, {**real.body, "stage": "review"})

    code, out, _ = _cli(["dlq", "list", "--stage", "fetch"], tmp_path, capsys)
    assert code == 0
    stages = sorted(row.split("  ")[1].strip() for row in _rows(out) if job.job_id in row)
    assert stages == ["fetch", "fetch (body says review)"]

    code, out, _ = _cli(["dlq", "list", "--stage", "fetch", "--json"], tmp_path, capsys)
    listed = json.loads(out)
    assert sorted((row["dlq_stage"], row["stage"], row["stage_mismatch"]) for row in listed) == [
        ("fetch", "fetch", False),
        ("fetch", "review", True),
    ]
    for row in listed:
        code, shown, _ = _cli(["dlq", "show", row["message_id"]], tmp_path, capsys)
        assert json.loads(shown)["dlq_stage"] == "fetch"


@pytest.mark.spec("CH-4")
def test_every_dlq_command_shows_a_forged_envelope_escaped_and_redacted(service, tmp_path, capsys):
    job = _dead_lettered(service, change=48295)
    (real,) = _take_all(StageName.FETCH)
    forged = {
        **real.body,
        "job_id": job.job_id + HOSTILE,
        "error_class": "AUTH_DENIED" + HOSTILE,
        "last_failure_at": HOSTILE,
        "sanitized_context": {
            **real.body["sanitized_context"],
            "changelist_id": HOSTILE,
            "attempts": {"fetch": HOSTILE},
        },
    }
    get_data_access().dead_letters.send(StageName.FETCH, forged)
    get_data_access().dead_letters.send(StageName.FETCH, "not json " + HOSTILE)
    for args in (["dlq", "list"], ["dlq", "list", "--json"], ["dlq", "redrive", "--all", "--dry-run"]):
        code, out, err = _cli(args, tmp_path, capsys)
        assert_terminal_safe(out, err)
    code, out, _ = _cli(["dlq", "list", "--json"], tmp_path, capsys)
    for row in json.loads(out):
        for args in (["dlq", "show", row["message_id"]], ["dlq", "redrive", row["message_id"], "--dry-run"]):
            code, out, err = _cli(args, tmp_path, capsys)
            assert_terminal_safe(out, err)
