"""`p4review deliveries list|retry|skip` against the moto server: operator decisions on outbox
rows are single conditional writes with an audit trail; a retry hands the job back to notify
(the DLQ replay path for a dead-lettered job, a bare notify message otherwise)."""

from __future__ import annotations

import argparse
import json
import threading

import pytest

from p4review.cli import deliveries as deliveries_cli
from p4review.clock import now_iso
from p4review.errors import ErrorClass, NonRetryableError, StaleWriteError
from p4review.ingest.service import create_review
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, StageName, StageStatus
from p4review.models.messages import StageMessage
from p4review.models.outbox import DeliveryAction, DeliveryStatus, OutboxRow
from p4review.notify.delivery import delivery_token
from p4review.notify.settings import NotifySettings
from p4review.pipeline.stage_runner import StageOutput, run_stage
from p4review.review.settings import ReviewSettings
from p4review.stores.dynamo_codec import to_item
from p4review.stores.dynamo_outbox import DynamoOutboxRepository, outbox_key
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import drain, fetch_work, new_job, provisioned_service, run_through
from tests.unit.cli.terminal import HOSTILE, PLANTED, assert_terminal_safe

TICKET = "INC-5150"
NOTE = "mailbox restored by IT; address verified"
ADDRESS = "dkowalski@example.test"


class ScriptedWork:
    def __init__(self, stage, outcome="ok"):
        self.stage = stage
        self.outcome = outcome

    def run(self, job, lease=None):
        if self.outcome != "ok":
            raise self.outcome
        if self.stage == StageName.FETCH:
            return StageOutput(updates={"artifacts": {"change_key": f"changes/{job.job_id}.json", "result_key": None}})
        if self.stage == StageName.NOTIFY:
            return StageOutput(finish_job=JobStatus.SUCCEEDED)
        return StageOutput()


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        provisioned.sqs = provisioned.client("sqs")
        yield provisioned


def _run(stage, job, outcome="ok"):
    dal = get_data_access()
    return run_stage(
        StageMessage(job_id=job.job_id, stage=stage),
        ScriptedWork(stage, outcome),
        jobs=dal.jobs,
        queues=dal.queues,
        worker_id="w1",
        lease_seconds=60,
    )


def _queue(service, stage=StageName.NOTIFY):
    return [json.loads(message["Body"]) for message in drain(service.sqs, service.resources.queue_for_stage(stage).url)]


def _job(service, change, notify="dead_letter"):
    """A job whose fetch and review completed; notify then dead-letters it (a permanent delivery
    failure), finishes it, or has not run yet (`notify=None`: the job is still in progress)."""
    dal = get_data_access()
    job = create_review(
        CreateReviewRequest(idempotency_key=f"k-{change}", changelist_id=change, review_version=1, kind="submitted"),
        jobs=dal.jobs,
        queues=dal.queues,
        request_id=None,
    ).job
    for stage in (StageName.FETCH, StageName.REVIEW):
        assert _run(stage, job).ack
    if notify == "dead_letter":
        assert _run(
            StageName.NOTIFY,
            job,
            NonRetryableError("SMTP delivery refused (550)", error_class=ErrorClass.POLICY_DENIED),
        ).ack
    elif notify == "succeed":
        assert _run(StageName.NOTIFY, job).ack
    for stage in StageName:
        drain(service.sqs, service.resources.queue_for_stage(stage).url)
    return dal.jobs.get_job(job.job_id)


def _row(job, status, recipient=ADDRESS):
    outbox = get_data_access().outbox
    now = now_iso()
    row = outbox.ensure_row(
        OutboxRow(
            changelist_id=job.changelist_id,
            recipient=recipient,
            review_version=job.review_version,
            job_id=job.job_id,
            provider_token=delivery_token(job.changelist_id, recipient, job.review_version),
            created_at=now,
            updated_at=now,
        )
    )
    if status != DeliveryStatus.PENDING:
        row = outbox.record_attempt(row, owner="test", fence=1, locked_until="2000-01-01T00:00:00.000000Z")
    if status == DeliveryStatus.FAILED:
        row = outbox.mark_failed(row, "550: 5.1.1 mailbox unavailable")
    elif status == DeliveryStatus.SENT:
        row = outbox.mark_sent(row, "queue-id-1")
    return row


def _stored(row):
    return get_data_access().outbox.get_row(row.changelist_id, row.recipient, row.review_version)


def _cli(args, tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="p4review")
    parser.add_argument("--state-dir", default=str(tmp_path))
    commands = parser.add_subparsers(dest="command", required=True)
    deliveries_cli.register(commands)
    parsed = parser.parse_args(args)
    capsys.readouterr()  # the setup's output (a stage's metric documents) is not the command's
    code = parsed.func(parsed)
    out, err = capsys.readouterr()
    return code, out, err


def _decide(action, row, tmp_path, capsys, *extra):
    return _cli(
        [
            "deliveries",
            action,
            "--change",
            str(row.changelist_id),
            "--version",
            str(row.review_version),
            "--recipient",
            row.recipient,
            "--ticket",
            TICKET,
            "--note",
            NOTE,
            "--actor",
            "op:ann",
            *extra,
        ],
        tmp_path,
        capsys,
    )


# ---- list ---------------------------------------------------------------------------------


def test_list_filters_by_status_newest_first(service, tmp_path, capsys):
    job = _job(service, 48213)
    failed_old = _row(job, DeliveryStatus.FAILED, "old@example.test")
    pending = _row(job, DeliveryStatus.PENDING, "new@example.test")
    sent = _row(job, DeliveryStatus.SENT, "sent@example.test")
    failed_new = _row(job, DeliveryStatus.FAILED, "late@example.test")

    code, out, _ = _cli(["deliveries", "list", "--status", "failed", "--json"], tmp_path, capsys)
    assert code == 0
    assert [row["recipient"] for row in json.loads(out)] == [failed_new.recipient, failed_old.recipient]

    code, out, _ = _cli(["deliveries", "list", "--limit", "3"], tmp_path, capsys)
    header, *lines = out.splitlines()
    assert header.split() == ["CHANGE", "VERSION", "RECIPIENT", "STATUS", "ATTEMPTS", "LAST", "ERROR", "UPDATED", "AT"]
    assert [line.split()[2] for line in lines] == [failed_new.recipient, sent.recipient, pending.recipient]
    change, version, _, status, attempts, *error, updated = lines[0].split()
    assert (change, version, status, attempts, updated) == ("48213", "1", "failed", "1", failed_new.updated_at)
    assert " ".join(error) == "550: 5.1.1 mailbox unavailable"

    code, out, err = _cli(["deliveries", "list", "--status", "skipped"], tmp_path, capsys)
    assert (code, out, err.strip()) == (0, "", "no delivery rows with status skipped")


@pytest.mark.spec("CH-4")
def test_one_malformed_row_is_named_and_the_good_rows_are_still_listed(service, tmp_path, capsys):
    """Found by a hostile-input probe: `deliveries list` failed whole (`scan outbox rows:
    ValidationError`) without naming the row."""
    job = _job(service, 48215)
    good = _row(job, DeliveryStatus.FAILED, "good@example.test")
    broken = {
        "changelist_id": job.changelist_id,
        "recipient": "bad@example.test",
        "review_version": 1,
        "job_id": job.job_id,
        "status": "lost-in-space",
        "attempts": "many",
        "created_at": now_iso(),
        "updated_at": now_iso(),
    }
    service.client("dynamodb").put_item(
        TableName=service.env["P4REVIEW_OUTBOX_TABLE"],
        Item={**outbox_key(job.changelist_id, "bad@example.test", 1), **to_item(broken)},
    )

    code, out, err = _cli(["deliveries", "list"], tmp_path, capsys)
    assert code == 1
    assert good.recipient in out
    (line,) = err.splitlines()
    assert "bad@example.test" in line and "attempts" in line and "status" in line
    assert "lost-in-space" not in line and "many" not in line  # field names, never values

    code, out, err = _cli(["deliveries", "list", "--json"], tmp_path, capsys)
    assert code == 1 and [row["recipient"] for row in json.loads(out)] == [good.recipient]


def test_a_row_written_before_the_audit_trail_still_loads_and_can_be_retried(service):
    job = _job(service, 48214)
    now = now_iso()
    legacy = {
        "changelist_id": job.changelist_id,
        "recipient": ADDRESS,
        "review_version": 1,
        "job_id": job.job_id,
        "status": "failed",
        "provider_token": "t",
        "notification_id": None,
        "notified_at": None,
        "attempts": 2,
        "last_error": "550",
        "created_at": now,
        "updated_at": now,
    }
    service.client("dynamodb").put_item(
        TableName=service.env["P4REVIEW_OUTBOX_TABLE"],
        Item={**outbox_key(job.changelist_id, ADDRESS, 1), **to_item(legacy)},
    )
    row = get_data_access().outbox.get_row(job.changelist_id, ADDRESS, 1)
    assert row.audit == [] and row.status == DeliveryStatus.FAILED
    retried = get_data_access().outbox.retry_row(row, "op", TICKET, NOTE)
    assert retried.status == DeliveryStatus.PENDING and len(retried.audit) == 1


# ---- retry --------------------------------------------------------------------------------


@pytest.mark.spec("NE-3")
def test_retry_of_a_failed_row_resets_it_audits_it_and_replays_notify_of_the_dead_lettered_job(
    service, tmp_path, capsys
):
    job = _job(service, 48215)
    assert (job.status, job.stages[StageName.NOTIFY].status) == (JobStatus.DEAD_LETTERED, StageStatus.FAILED)
    row = _row(job, DeliveryStatus.FAILED)

    code, out, err = _decide("retry", row, tmp_path, capsys, "--dry-run")
    assert code == 0, err
    assert json.loads(out)["notify"] == "would_replay"
    assert _stored(row) == row and _queue(service) == []

    code, out, err = _decide("retry", row, tmp_path, capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["notify"], summary["row_status"], summary["job_status"], summary["resumed"]) == (
        "replayed",
        "pending",
        "in_progress",
        False,
    )

    stored = _stored(row)
    assert (stored.status, stored.attempts, stored.last_error, stored.notified_at) == (
        DeliveryStatus.PENDING,
        0,
        None,
        None,
    )
    (event,) = stored.audit
    assert (event.actor, event.action, event.ticket, event.note, event.from_status, event.to_status) == (
        "op:ann",
        DeliveryAction.RETRY,
        TICKET,
        NOTE,
        DeliveryStatus.FAILED,
        DeliveryStatus.PENDING,
    )
    assert event.at.endswith("Z")

    replayed = get_data_access().jobs.get_job(job.job_id)
    assert replayed.status == JobStatus.IN_PROGRESS
    notify = replayed.stages[StageName.NOTIFY]
    assert (notify.status, notify.attempts) == (StageStatus.PENDING, 0)
    assert [event.event for event in replayed.audit][-2:] == ["replayed", "replay_enqueued"]
    assert f"ticket={TICKET}" in replayed.audit[-2].detail

    # The message carries ids only: no recipient, no error text.
    assert _queue(service) == [{"schema_version": "1", "job_id": job.job_id, "stage": "notify"}]


def test_a_retry_whose_hand_off_failed_is_completed_by_running_it_again(service, tmp_path, capsys, monkeypatch):
    from p4review.errors import StorageError
    from p4review.stores.sqs_queues import SqsStageQueues

    job = _job(service, 48225)
    row = _row(job, DeliveryStatus.FAILED)

    def broken(self, message):
        raise StorageError("enqueue notify: throttled (ThrottlingException)")

    monkeypatch.setattr(SqsStageQueues, "send", broken)
    code, out, err = _decide("retry", row, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert "hand-off to notify did not complete" in err and "run the same retry again" in err
    assert _stored(row).status == DeliveryStatus.PENDING
    assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.IN_PROGRESS  # replayed, not enqueued

    monkeypatch.undo()
    code, out, err = _decide("retry", row, tmp_path, capsys)
    assert code == 0, err
    assert (json.loads(out)["resumed"], json.loads(out)["notify"]) == (True, "enqueued")
    assert len(_stored(row).audit) == 1  # the row was written once
    assert _queue(service) == [{"schema_version": "1", "job_id": job.job_id, "stage": "notify"}]


def test_retry_of_a_running_job_sends_a_notify_message_and_leaves_the_job_to_its_claim(service, tmp_path, capsys):
    job = _job(service, 48216, notify=None)
    row = _row(job, DeliveryStatus.FAILED)
    code, out, err = _decide("retry", row, tmp_path, capsys)
    assert code == 0, err
    assert json.loads(out)["notify"] == "enqueued"
    assert get_data_access().jobs.get_job(job.job_id) == job
    assert _stored(row).status == DeliveryStatus.PENDING
    assert _queue(service) == [{"schema_version": "1", "job_id": job.job_id, "stage": "notify"}]


def test_retry_for_a_succeeded_job_is_refused_before_anything_changes(service, tmp_path, capsys):
    job = _job(service, 48217, notify="succeed")
    row = _row(job, DeliveryStatus.FAILED)
    code, out, err = _decide("retry", row, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert err.startswith("error: ") and "is succeeded" in err and len(err.strip().splitlines()) == 1
    assert _stored(row) == row and _queue(service) == []


def test_retry_of_a_sent_row_is_refused_and_changes_nothing(service, tmp_path, capsys):
    job = _job(service, 48218, notify=None)
    row = _row(job, DeliveryStatus.SENT)
    with pytest.raises(StaleWriteError, match=r"retry delivery: refused, the row is sent \(delivered\)"):
        get_data_access().outbox.retry_row(row, "op", TICKET, NOTE)
    # Even a caller holding a stale copy that says failed loses the conditional write.
    with pytest.raises(StaleWriteError):
        get_data_access().outbox.retry_row(row.model_copy(update={"status": DeliveryStatus.FAILED}), "op", TICKET, NOTE)
    code, out, err = _decide("retry", row, tmp_path, capsys)
    assert (code, out) == (2, "") and "refused, the row is sent (delivered)" in err
    assert _stored(row) == row and _queue(service) == []


def test_a_failed_row_with_notified_at_is_never_retried(service):
    """The inconsistent "marked delivered, then failed" row: notified_at wins, the write is refused."""
    job = _job(service, 48224, notify=None)
    row = _row(job, DeliveryStatus.FAILED)
    service.client("dynamodb").update_item(
        TableName=service.env["P4REVIEW_OUTBOX_TABLE"],
        Key=outbox_key(row.changelist_id, row.recipient, 1),
        UpdateExpression="SET notified_at = :now",
        ExpressionAttributeValues={":now": {"S": now_iso()}},
    )
    marked = _stored(row)
    with pytest.raises(StaleWriteError, match=r"the row is failed \(delivered\)"):
        get_data_access().outbox.retry_row(marked, "op", TICKET, NOTE)
    with pytest.raises(StaleWriteError):
        get_data_access().outbox.skip_row(marked, "op", TICKET, NOTE)
    assert _stored(row) == marked


def test_retry_of_an_unknown_row_names_it(service, tmp_path, capsys):
    code, _, err = _cli(
        [
            "deliveries",
            "retry",
            "--change",
            "1",
            "--version",
            "1",
            "--recipient",
            "x@example.test",
            "--ticket",
            TICKET,
            "--note",
            NOTE,
        ],
        tmp_path,
        capsys,
    )
    assert code == 2 and err.startswith("error: no delivery row for change 1 version 1 recipient x@example.test")


@pytest.mark.spec("NE-3")
def test_two_concurrent_retries_of_the_same_row_exactly_one_wins(service):
    job = _job(service, 48219, notify=None)
    row = _row(job, DeliveryStatus.FAILED)
    table = service.env["P4REVIEW_OUTBOX_TABLE"]
    repositories = [DynamoOutboxRepository(service.client("dynamodb"), table) for _ in range(2)]
    barrier = threading.Barrier(2)
    results: list[object] = [None, None]

    def retry(index):
        barrier.wait()
        try:
            results[index] = repositories[index].retry_row(row, f"op:{index}", TICKET, NOTE)
        except StaleWriteError as exc:
            results[index] = exc

    threads = [threading.Thread(target=retry, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    winners = [result for result in results if isinstance(result, OutboxRow)]
    losers = [result for result in results if isinstance(result, StaleWriteError)]
    assert (len(winners), len(losers)) == (1, 1)
    assert "the row is pending" in losers[0].message
    stored = _stored(row)
    assert stored.status == DeliveryStatus.PENDING and [event.actor for event in stored.audit] == [
        winners[0].audit[0].actor
    ]


# ---- skip ---------------------------------------------------------------------------------


def test_skip_of_a_failed_row_and_the_row_is_then_closed_to_sends_and_retries(service, tmp_path, capsys):
    job = _job(service, 48220)
    row = _row(job, DeliveryStatus.FAILED)
    code, out, err = _decide("skip", row, tmp_path, capsys)
    assert code == 0, err
    assert {key: json.loads(out)[key] for key in ("from_status", "row_status")} == {
        "from_status": "failed",
        "row_status": "skipped",
    }
    stored = _stored(row)
    (event,) = stored.audit
    assert (stored.status, event.action, event.from_status, event.to_status, event.ticket) == (
        DeliveryStatus.SKIPPED,
        DeliveryAction.SKIP,
        DeliveryStatus.FAILED,
        DeliveryStatus.SKIPPED,
        TICKET,
    )
    assert get_data_access().jobs.get_job(job.job_id) == job  # skip does not touch the job
    # A worker cannot start an attempt on a skipped row; an operator cannot retry it.
    with pytest.raises(StaleWriteError):
        get_data_access().outbox.record_attempt(
            stored, owner="test", fence=1, locked_until="2000-01-01T00:00:00.000000Z"
        )
    code, _, err = _decide("retry", row, tmp_path, capsys)
    assert code == 2 and "the row is skipped" in err
    assert _stored(row) == stored


def test_skip_of_a_pending_row(service, tmp_path, capsys):
    job = _job(service, 48221, notify=None)
    row = _row(job, DeliveryStatus.PENDING)
    code, out, err = _decide("skip", row, tmp_path, capsys)
    assert code == 0, err
    assert json.loads(out)["from_status"] == "pending"
    assert _stored(row).audit[0].from_status == DeliveryStatus.PENDING


def test_skip_of_a_sent_row_is_refused(service, tmp_path, capsys):
    job = _job(service, 48222, notify=None)
    row = _row(job, DeliveryStatus.SENT)
    code, out, err = _decide("skip", row, tmp_path, capsys)
    assert (code, out) == (2, "")
    assert err.strip() == (
        "error: skip delivery: refused, the row is sent (delivered): only a failed or pending row "
        "that was never delivered can be skipped"
    )
    assert _stored(row) == row


# ---- usage --------------------------------------------------------------------------------


def test_ticket_and_note_are_required(service, tmp_path, capsys):
    job = _job(service, 48223, notify=None)
    row = _row(job, DeliveryStatus.FAILED)
    base = ["--change", str(row.changelist_id), "--version", "1", "--recipient", row.recipient]
    for action in ("retry", "skip"):
        with pytest.raises(SystemExit) as usage:
            _cli(["deliveries", action, *base, "--note", NOTE], tmp_path, capsys)
        assert usage.value.code == 2
        assert "the following arguments are required: --ticket" in capsys.readouterr().err
    code, _, err = _cli(["deliveries", "retry", *base, "--ticket", TICKET, "--note", "  "], tmp_path, capsys)
    assert code == 2 and "--ticket and --note must not be blank" in err
    assert _stored(row) == row


# ---- the whole path: a real notify after the retry -------------------------------------------


@pytest.mark.spec("NE-3")
def test_a_retried_delivery_is_sent_once_and_the_job_succeeds(moto_endpoint, aws_reset, tmp_path, capsys):
    from p4review.notify.stage import NotifyWork
    from p4review.review.setup import build_review_work
    from p4review_dev.smtp_server import LocalMailServer

    with (
        LocalMailServer(tmp_path / "mailbox") as mail,
        provisioned_service(
            moto_endpoint,
            smtp={"host": "127.0.0.1", "port": mail.port, "tls_mode": "none", "from_address": "p4review@example.test"},
        ) as service,
    ):
        service.sqs = service.client("sqs")
        dal = get_data_access()
        job = run_through(new_job("e2e", 48213), fetch_work(), build_review_work(ReviewSettings.from_env(), dal))
        notify = NotifyWork(NotifySettings.from_env(), dal.redacted_artifacts, dal.outbox, dal.secrets)
        mail.fail_next(1, code=550, text="5.1.1 mailbox unavailable")
        (message,) = _queue(service)
        assert run_stage(
            StageMessage.model_validate(message),
            notify,
            jobs=dal.jobs,
            queues=dal.queues,
            worker_id="n1",
            lease_seconds=60,
        ).ack
        (row,) = dal.outbox.rows_for_version(48213, 1)
        assert row.status == DeliveryStatus.FAILED and mail.count() == 0

        code, _, err = _decide("retry", row, tmp_path, capsys)
        assert code == 0, err
        (message,) = _queue(service)
        assert run_stage(
            StageMessage.model_validate(message),
            notify,
            jobs=dal.jobs,
            queues=dal.queues,
            worker_id="n2",
            lease_seconds=60,
        ).ack
        assert mail.count() == 1
        sent = _stored(row)
        assert sent.status == DeliveryStatus.SENT and sent.attempts == 1 and len(sent.audit) == 1
        assert dal.jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED


@pytest.mark.spec("NE-3")
def test_a_skipped_recipient_is_not_sent_and_no_longer_required(moto_endpoint, aws_reset, tmp_path, capsys):
    """Notify's side of `deliveries skip`: after a 550 fails the owner's row and an operator skips
    it, the replayed notify stage sends nothing and the job succeeds with no required recipient."""
    from p4review.notify.stage import NotifyWork
    from p4review.review.setup import build_review_work
    from p4review_dev.smtp_server import LocalMailServer

    with (
        LocalMailServer(tmp_path / "mailbox") as mail,
        provisioned_service(
            moto_endpoint,
            smtp={"host": "127.0.0.1", "port": mail.port, "tls_mode": "none", "from_address": "p4review@example.test"},
        ),
    ):
        dal = get_data_access()
        job = run_through(new_job("skip-e2e", 48213), fetch_work(), build_review_work(ReviewSettings.from_env(), dal))
        notify = NotifyWork(NotifySettings.from_env(), dal.redacted_artifacts, dal.outbox, dal.secrets)
        mail.fail_next(1, code=550, text="5.1.1 mailbox unavailable")
        run_through(job, notify)
        (row,) = dal.outbox.rows_for_version(48213, 1)
        assert row.status == DeliveryStatus.FAILED and dal.jobs.get_job(job.job_id).status == JobStatus.DEAD_LETTERED

        code, _, err = _decide("skip", row, tmp_path, capsys)
        assert code == 0, err
        dal.job_replay.replay_stage(
            job.job_id, StageName.NOTIFY, actor="operator:test", ticket="INC-9", note="owner left", from_start=False
        )
        assert run_stage(
            StageMessage(job_id=job.job_id, stage=StageName.NOTIFY),
            notify,
            jobs=dal.jobs,
            queues=dal.queues,
            worker_id="n2",
            lease_seconds=60,
        ).ack
        finished = dal.jobs.get_job(job.job_id)
        assert finished.status == JobStatus.SUCCEEDED and finished.recipients_required == 0
        assert mail.count() == 0
        assert _stored(row).status == DeliveryStatus.SKIPPED and _stored(row).attempts == 1


# ---- the operator's terminal --------------------------------------------------------------


def _forged_row(service, job, recipient):
    """An outbox item as anyone who can write the table could plant it."""
    forged = {
        "changelist_id": job.changelist_id,
        "recipient": recipient,
        "review_version": 1,
        "job_id": job.job_id + HOSTILE,
        "status": "failed",
        "provider_token": "t" + HOSTILE,
        "attempts": 1,
        "last_error": "550 " + HOSTILE,
        "created_at": now_iso(),
        "updated_at": now_iso() + HOSTILE,
        "audit": [
            {
                "at": now_iso(),
                "actor": "op" + HOSTILE,
                "action": "retry",
                "ticket": "INC-1" + HOSTILE,
                "note": HOSTILE,
                "from_status": "failed",
                "to_status": "pending",
            }
        ],
    }
    service.client("dynamodb").put_item(
        TableName=service.env["P4REVIEW_OUTBOX_TABLE"],
        Item={**outbox_key(job.changelist_id, recipient, 1), **to_item(forged)},
    )


@pytest.mark.spec("CH-4")
def test_a_forged_row_reaches_the_terminal_escaped_and_redacted(service, tmp_path, capsys):
    """Found by a hostile-input probe: `deliveries list` printed a forged row's escape sequences
    and a planted password as they were (the `dlq` fix covered `dlq` only)."""
    job = _job(service, 48216)
    good = _row(job, DeliveryStatus.FAILED, "good@example.test")
    _forged_row(service, job, "evil@example.test" + HOSTILE)
    # A row the model refuses is named by its key on stderr: the key holds the same payload.
    service.client("dynamodb").put_item(
        TableName=service.env["P4REVIEW_OUTBOX_TABLE"],
        Item={**outbox_key(job.changelist_id, "k" + HOSTILE, 1), **to_item({"attempts": "many" + HOSTILE})},
    )
    for args, status in (
        (["deliveries", "list"], 1),  # 1: the unreadable item
        (["deliveries", "list", "--json"], 1),
        (["deliveries", "list", "--status", "failed"], 0),  # the unreadable item has no status
    ):
        code, out, err = _cli(args, tmp_path, capsys)
        assert code == status, args
        assert_terminal_safe(out, err)
        assert good.recipient in out and "evil@example.test" in out
    code, out, _ = _cli(["deliveries", "list"], tmp_path, capsys)
    assert "\\x1b]52;c;" in out and "password=[REDACTED:password]" in out  # shown, inert
    code, out, _ = _cli(["deliveries", "list", "--json"], tmp_path, capsys)
    (forged,) = [row for row in json.loads(out) if row["recipient"].startswith("evil@")]
    assert forged["last_error"].startswith("550 \\x1b]52;c;")  # escaped in the value too: `jq -r` shows it inert
    assert PLANTED not in forged["last_error"] and "[REDACTED:password]" in forged["audit"][0]["note"]


@pytest.mark.spec("CH-4")
def test_retry_and_skip_of_a_forged_row_show_it_escaped_and_redacted(service, tmp_path, capsys):
    job = _job(service, 48217)
    recipient = "evil@example.test" + HOSTILE
    _forged_row(service, job, recipient)
    row = get_data_access().outbox.get_row(job.changelist_id, recipient, 1)
    for action in ("retry", "skip"):
        code, out, err = _decide(action, row, tmp_path, capsys)
        assert_terminal_safe(out, err)
    code, out, err = _cli(
        [
            "deliveries",
            "retry",
            "--change",
            "1",
            "--version",
            "1",
            "--recipient",
            recipient,
            "--ticket",
            "t",
            "--note",
            "n",
        ],
        tmp_path,
        capsys,
    )
    assert code == 2 and "no delivery row" in err
    assert_terminal_safe(out, err)
