"""Operator replay of dead-lettered work (spec "Operator remediation and replay workflow")
against the moto server: listing is non-destructive, a redrive replays the job in one
conditional write, enqueues the restart stage and only then deletes the DLQ message."""

from __future__ import annotations

import argparse
import json

import pytest

from p4review.cli import dlq as dlq_cli
from p4review.errors import AuthError, IllegalTransitionError, NotFoundError, StorageError
from p4review.ingest.service import create_review
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, StageName, StageStatus
from p4review.models.messages import StageMessage
from p4review.pipeline.replay import parse_dead_letter, redrive
from p4review.pipeline.stage_runner import StageOutput, run_stage
from p4review.stores.factory import get_data_access
from p4review_dev.support.harness import drain

TICKET = "INC-4711"
NOTE = "p4 ticket refreshed in p4review/test/p4; verified with p4 login -s"


class ScriptedWork:
    def __init__(self, stage, *outcomes):
        self.stage = stage
        self.outcomes = list(outcomes)
        self.calls = 0

    def run(self, job, lease=None):
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if outcome != "ok":
            raise outcome
        if self.stage == StageName.FETCH:
            return StageOutput(updates={"artifacts": {"change_key": f"changes/{job.job_id}.json", "result_key": None}})
        return StageOutput()


@pytest.fixture
def service(dal_provisioned):
    with dal_provisioned() as provisioned:
        provisioned.sqs = provisioned.client("sqs")
        yield provisioned


def _new_job(service, key="k1", change=48213):
    dal = get_data_access()
    answer = create_review(
        CreateReviewRequest(idempotency_key=key, changelist_id=change, review_version=1, kind="submitted"),
        jobs=dal.jobs,
        queues=dal.queues,
        request_id="r-1",
    )
    drain(service.sqs, service.resources.queue_for_stage(StageName.FETCH).url)
    return answer.job


def _run(stage, job, *outcomes, worker="w1"):
    dal = get_data_access()
    return run_stage(
        StageMessage(job_id=job.job_id, stage=stage, request_id="r-1"),
        ScriptedWork(stage, *outcomes),
        jobs=dal.jobs,
        queues=dal.queues,
        worker_id=worker,
        lease_seconds=60,
        message_id="m-1",
    )


def _dead_lettered(service, stage=StageName.FETCH, key="k1", change=48213):
    """A job dead-lettered at `stage` (earlier stages completed) by a non-retryable failure."""
    job = _new_job(service, key, change)
    for earlier in (StageName.FETCH, StageName.REVIEW):
        if earlier == stage:
            break
        assert _run(earlier, job, "ok").ack
        _queue(service, StageName.REVIEW if earlier == StageName.FETCH else StageName.NOTIFY)
    assert _run(stage, job, AuthError("ticket expired")).ack
    stored = get_data_access().jobs.get_job(job.job_id)
    assert stored.status == JobStatus.DEAD_LETTERED
    return stored


def _queue(service, stage):
    return [json.loads(message["Body"]) for message in drain(service.sqs, service.resources.queue_for_stage(stage).url)]


def _dlq_count(service, stage):
    attributes = service.sqs.get_queue_attributes(
        QueueUrl=service.resources.queue_for_stage(stage).dlq_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


def _redrive(letters, **overrides):
    dal = get_data_access()
    lines: list[str] = []
    options = dict(
        jobs_replay=dal.job_replay,
        queues=dal.queues,
        dead_letters=dal.dead_letters,
        ticket=TICKET,
        note=NOTE,
        from_start=False,
        dry_run=False,
        actor="operator:test",
        progress=lines.append,
    )
    options.update(overrides)
    summary = redrive(letters, **options)
    return summary, lines


def _take_all(stage=StageName.FETCH):
    return get_data_access().dead_letters.take_all(stage, 100)


# ---- parsing ------------------------------------------------------------------------------


@pytest.mark.spec("ERR-25")
def test_parse_recognises_the_envelope_the_bare_message_and_nothing_else():
    job_id = "6f1f7c3e-1d0b-4e55-9a8e-6b1f0a2d9c41"
    envelope = {
        "envelope_version": "1",
        "error_class": "AUTH_DENIED",
        "stage": "review",
        "last_stack": "",
        "sanitized_context": {"job_id": job_id, "stage": "review", "request_id": "r-9", "changelist_id": 7},
        "first_failure_at": "t",
        "last_failure_at": "t",
    }
    target = parse_dead_letter(envelope)
    assert (target.job_id, target.stage, target.error_class, target.kind, target.escalated) == (
        job_id,
        StageName.REVIEW,
        "AUTH_DENIED",
        "envelope",
        False,
    )
    assert target.request_id == "r-9" and target.changelist_id == 7
    assert parse_dead_letter(json.dumps({**envelope, "escalated": True})).escalated
    bare = parse_dead_letter(json.dumps({"schema_version": "1", "job_id": job_id, "stage": "notify"}))
    assert (bare.job_id, bare.stage, bare.error_class, bare.kind) == (job_id, StageName.NOTIFY, None, "bare")
    # The runtime's envelope for a malformed message has no usable job id: not replayable.
    assert parse_dead_letter({**envelope, "sanitized_context": {"job_id": "x"}}) is None
    assert parse_dead_letter({"job_id": job_id, "stage": "notify", "diff": "+secret"}) is None
    assert parse_dead_letter("not json") is None
    assert parse_dead_letter({"job_id": job_id, "stage": "deploy"}) is None


# ---- listing ------------------------------------------------------------------------------


@pytest.mark.spec("ERR-22")
def test_listing_is_non_destructive(service):
    job = _dead_lettered(service)
    dead_letters = get_data_access().dead_letters
    first = dead_letters.peek(StageName.FETCH, 10)
    second = dead_letters.peek(StageName.FETCH, 10)
    assert [letter.message_id for letter in first] == [letter.message_id for letter in second]
    (letter,) = second
    assert letter.body["error_class"] == "AUTH_DENIED"
    assert letter.body["sanitized_context"]["job_id"] == job.job_id
    assert letter.received_count >= 2 and letter.sent_at.endswith("Z")
    assert _dlq_count(service, StageName.FETCH) == 1


@pytest.mark.spec("ERR-22")
def test_listing_paginates_up_to_the_limit(service):
    dead_letters = get_data_access().dead_letters
    for number in range(23):
        dead_letters.send(StageName.REVIEW, {"schema_version": "1", "job_id": f"{number:04x}", "stage": "review"})
    assert len(dead_letters.peek(StageName.REVIEW, 100)) == 23
    assert len(dead_letters.peek(StageName.REVIEW, 12)) == 12
    assert len(dead_letters.peek(StageName.REVIEW, 100)) == 23


# ---- redrive ------------------------------------------------------------------------------


@pytest.mark.spec("ERR-24")
def test_dry_run_changes_nothing(service):
    job = _dead_lettered(service)
    summary, lines = _redrive(_take_all(), dry_run=True, ticket=None, note=None)
    assert [outcome.result for outcome in summary.outcomes] == ["would_replay"]
    assert lines == [f"[1/1] job {job.job_id} fetch -> would replay: would enqueue fetch"]
    stored = get_data_access().jobs.get_job(job.job_id)
    assert stored == job
    assert _queue(service, StageName.FETCH) == []
    assert len(get_data_access().dead_letters.peek(StageName.FETCH, 10)) == 1  # released, still visible


@pytest.mark.spec("ERR-24", "ERR-25", "ERR-26")
def test_redrive_replays_the_failed_stage_with_the_ticket_in_the_audit(service):
    job = _dead_lettered(service)
    summary, lines = _redrive(_take_all())
    assert summary.ok and [outcome.result for outcome in summary.outcomes] == ["replayed"]
    assert lines == [f"[1/1] job {job.job_id} fetch -> replayed"]
    stored = get_data_access().jobs.get_job(job.job_id)
    assert stored.status == JobStatus.IN_PROGRESS
    fetch = stored.stages[StageName.FETCH]
    assert (fetch.status, fetch.attempts, fetch.claimed_by, fetch.first_failure_at) == (
        StageStatus.PENDING,
        0,
        None,
        None,
    )
    assert fetch.last_dead_letter_class == "AUTH_DENIED"
    assert stored.replays == 1
    replayed = next(event for event in stored.audit if event.event == "replayed")
    assert (replayed.actor, replayed.stage, replayed.from_status, replayed.to_status) == (
        "operator:test",
        StageName.FETCH,
        JobStatus.DEAD_LETTERED,
        JobStatus.IN_PROGRESS,
    )
    assert replayed.detail == f"ticket={TICKET} note={NOTE}"
    assert stored.audit[-1].event == "replay_enqueued"
    assert _queue(service, StageName.FETCH) == [
        {"schema_version": "1", "job_id": job.job_id, "stage": "fetch", "request_id": "r-1"}
    ]
    assert _dlq_count(service, StageName.FETCH) == 0
    # The runtime picks the replayed job up with a fresh budget.
    assert _run(StageName.FETCH, stored, "ok", worker="after-replay").ack
    finished = get_data_access().jobs.get_job(job.job_id)
    assert finished.stages[StageName.FETCH].status == StageStatus.COMPLETED
    assert finished.stages[StageName.FETCH].attempts == 1


@pytest.mark.spec("ERR-25")
def test_redrive_of_a_bare_sqs_redrive_message(service):
    job = _dead_lettered(service)
    drain(service.sqs, service.resources.queue_for_stage(StageName.FETCH).dlq_url)
    get_data_access().dead_letters.send(
        StageName.FETCH, {"schema_version": "1", "job_id": job.job_id, "stage": "fetch"}
    )
    summary, _ = _redrive(_take_all())
    assert [outcome.result for outcome in summary.outcomes] == ["replayed"]
    assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.IN_PROGRESS
    assert _queue(service, StageName.FETCH) == [{"schema_version": "1", "job_id": job.job_id, "stage": "fetch"}]
    assert _dlq_count(service, StageName.FETCH) == 0


@pytest.mark.spec("ERR-24")
def test_a_body_that_claims_another_stage_than_its_dlq_is_refused_and_kept(service):
    """Issue 27: the DLQ a message sits in says which stage failed; a body claiming another stage
    (forged, or moved between queues by hand) replays nothing and stays in the DLQ."""
    job = _dead_lettered(service)
    drain(service.sqs, service.resources.queue_for_stage(StageName.FETCH).dlq_url)
    get_data_access().dead_letters.send(
        StageName.FETCH, {"schema_version": "1", "job_id": job.job_id, "stage": "notify"}
    )
    summary, _ = _redrive(_take_all(), from_start=True)
    (skipped,) = summary.skipped
    assert skipped.reason == "refused: the body says stage notify, but it sits in the fetch DLQ"
    assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.DEAD_LETTERED
    assert _queue(service, StageName.NOTIFY) == [] and _queue(service, StageName.FETCH) == []
    assert _dlq_count(service, StageName.FETCH) == 1


@pytest.mark.spec("ERR-24")
def test_a_second_redrive_of_the_same_job_is_refused_and_its_message_kept(service):
    job = _dead_lettered(service)
    # A duplicate envelope for the same job (e.g. a crash after the envelope was sent).
    duplicate = get_data_access().dead_letters.peek(StageName.FETCH, 10)[0].body
    get_data_access().dead_letters.send(StageName.FETCH, duplicate)
    summary, lines = _redrive(_take_all())
    assert sorted(outcome.result for outcome in summary.outcomes) == ["replayed", "skipped"]
    (skipped,) = summary.skipped
    assert skipped.reason == "refused: job is in_progress, not dead_lettered"
    assert any(line.endswith("-> skipped: refused: job is in_progress, not dead_lettered") for line in lines)
    assert not summary.ok
    assert [
        message["MessageId"]
        for message in drain(service.sqs, service.resources.queue_for_stage(StageName.FETCH).dlq_url)
    ] == [skipped.message_id]
    stored = get_data_access().jobs.get_job(job.job_id)
    assert stored.replays == 1 and [event.event for event in stored.audit].count("replayed") == 1
    assert len(_queue(service, StageName.FETCH)) == 1


def test_replay_stage_refuses_a_missing_job_and_a_job_that_is_not_dead_lettered(service):
    replay = get_data_access().job_replay
    with pytest.raises(NotFoundError):
        replay.replay_stage("0000-0000", StageName.FETCH, actor="op", ticket=TICKET, note=NOTE, from_start=False)
    job = _new_job(service)
    with pytest.raises(IllegalTransitionError, match="job is queued, not dead_lettered"):
        replay.replay_stage(job.job_id, StageName.FETCH, actor="op", ticket=TICKET, note=NOTE, from_start=False)
    assert get_data_access().jobs.get_job(job.job_id) == job


@pytest.mark.spec("ERR-25")
def test_replay_resumes_at_the_failed_stage_and_keeps_completed_work(service):
    job = _dead_lettered(service, stage=StageName.REVIEW)
    summary, _ = _redrive(_take_all(StageName.REVIEW))
    assert summary.ok
    stored = get_data_access().jobs.get_job(job.job_id)
    assert stored.stages[StageName.FETCH].status == StageStatus.COMPLETED
    assert stored.stages[StageName.FETCH].attempts == 1
    assert (stored.stages[StageName.REVIEW].status, stored.stages[StageName.REVIEW].attempts) == (
        StageStatus.PENDING,
        0,
    )
    assert [m["stage"] for m in _queue(service, StageName.REVIEW)] == ["review"]
    assert _queue(service, StageName.FETCH) == []


@pytest.mark.spec("ERR-25")
def test_from_start_resets_every_stage_and_enqueues_fetch(service):
    job = _dead_lettered(service, stage=StageName.REVIEW)
    summary, lines = _redrive(_take_all(StageName.REVIEW), from_start=True)
    assert summary.ok
    assert lines == [f"[1/1] job {job.job_id} review (restart at fetch) -> replayed"]
    stored = get_data_access().jobs.get_job(job.job_id)
    assert {name: (state.status, state.attempts) for name, state in stored.stages.items()} == {
        name: (StageStatus.PENDING, 0) for name in StageName
    }
    assert stored.stages[StageName.REVIEW].last_dead_letter_class == "AUTH_DENIED"
    replayed = next(event for event in stored.audit if event.event == "replayed")
    assert replayed.stage == StageName.REVIEW and replayed.detail == f"ticket={TICKET} from_start note={NOTE}"
    assert [m["stage"] for m in _queue(service, StageName.FETCH)] == ["fetch"]
    assert _queue(service, StageName.REVIEW) == []
    assert _dlq_count(service, StageName.REVIEW) == 0


@pytest.mark.spec("ERR-25")
def test_a_failed_enqueue_keeps_the_message_and_running_the_redrive_again_completes_it(service, monkeypatch):
    job = _dead_lettered(service)
    queues = get_data_access().queues

    def broken(message):
        raise StorageError("enqueue fetch: throttled (ThrottlingException)")

    monkeypatch.setattr(queues, "send", broken)
    summary, lines = _redrive(_take_all())
    (failed,) = summary.failed
    assert "enqueue of fetch failed" in failed.reason and "run the same redrive again" in failed.reason
    assert _dlq_count(service, StageName.FETCH) == 1
    stranded = get_data_access().jobs.get_job(job.job_id)
    assert stranded.status == JobStatus.IN_PROGRESS and stranded.audit[-1].event == "replayed"

    monkeypatch.undo()
    summary, _ = _redrive(_take_all())
    assert [outcome.result for outcome in summary.outcomes] == ["replayed"]
    stored = get_data_access().jobs.get_job(job.job_id)
    assert [event.event for event in stored.audit][-3:] == ["replayed", "replay_resumed", "replay_enqueued"]
    assert stored.replays == 1
    assert [m["stage"] for m in _queue(service, StageName.FETCH)] == ["fetch"]
    assert _dlq_count(service, StageName.FETCH) == 0


@pytest.mark.spec("ERR-25")
def test_an_unrecognised_message_is_skipped_and_never_deleted(service):
    get_data_access().dead_letters.send(StageName.NOTIFY, "password=hunter2 not json")
    summary, lines = _redrive(_take_all(StageName.NOTIFY))
    assert [outcome.result for outcome in summary.outcomes] == ["skipped"]
    assert "hunter2" not in "".join(lines)
    assert _dlq_count(service, StageName.NOTIFY) == 1


@pytest.mark.spec("ERR-24")
def test_a_real_redrive_requires_ticket_and_note(service):
    with pytest.raises(ValueError, match="ticket and note"):
        _redrive([], ticket=TICKET, note="  ")


# ---- the CLI ------------------------------------------------------------------------------


def _cli(args, tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="p4review")
    parser.add_argument("--state-dir", default=str(tmp_path))
    commands = parser.add_subparsers(dest="command", required=True)
    dlq_cli.register(commands)
    parsed = parser.parse_args(args)
    capsys.readouterr()  # the setup's output (a stage's metric documents) is not the command's
    code = parsed.func(parsed)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.spec("ERR-22", "ERR-24")
def test_cli_list_show_and_redrive_through_an_env_file(service, tmp_path, capsys, monkeypatch):
    job = _dead_lettered(service, change=48299)
    get_data_access().dead_letters.send(StageName.NOTIFY, "password=hunter2 not json")
    env_file = tmp_path / "stack.env"
    env_file.write_text(
        "# written by p4review local up\n"
        + "".join(
            f"export {name}='{value}'\n" if index % 2 else f"{name}={value}\n"
            for index, (name, value) in enumerate(service.env.items())
        )
    )
    for name in service.env:  # the CLI process starts without the service's environment
        monkeypatch.delenv(name, raising=False)
    env = ["--env-file", str(env_file)]

    code, out, _ = _cli(["dlq", "list", *env], tmp_path, capsys)
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == [
        "MESSAGE",
        "ID",
        "STAGE",
        "ERROR",
        "CLASS",
        "JOB",
        "ID",
        "CHANGE",
        "ATTEMPTS",
        "LAST",
        "FAILURE",
        "ESCALATED",
    ]
    (row,) = [line for line in rows if job.job_id in line]
    message_id, stage, error_class, job_id, change, attempts, _last, escalated = row.split()
    assert (stage, error_class, job_id, change, attempts, escalated) == (
        "fetch",
        "AUTH_DENIED",
        job.job_id,
        "48299",
        "1",
        "no",
    )
    assert any("(unrecognised)" in line for line in rows)
    assert "hunter2" not in out

    code, out, _ = _cli(["dlq", "list", "--stage", "fetch", "--json", *env], tmp_path, capsys)
    (listed,) = json.loads(out)
    assert listed["message_id"] == message_id and listed["envelope"]["error_class"] == "AUTH_DENIED"

    code, out, _ = _cli(["dlq", "show", message_id, *env], tmp_path, capsys)
    assert code == 0 and json.loads(out)["envelope"]["sanitized_context"]["job_id"] == job.job_id

    code, _, err = _cli(["dlq", "redrive", message_id, *env], tmp_path, capsys)
    assert code == 2 and "--ticket and --note are required" in err

    code, out, err = _cli(["dlq", "redrive", message_id, "--dry-run", *env], tmp_path, capsys)
    assert code == 0 and json.loads(out)["replayed"][0]["result"] == "would_replay"
    assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.DEAD_LETTERED

    code, out, err = _cli(
        ["dlq", "redrive", message_id, "--ticket", TICKET, "--note", NOTE, "--actor", "op:ann", *env], tmp_path, capsys
    )
    assert code == 0, err
    assert err.strip() == f"[1/1] job {job.job_id} fetch -> replayed"
    assert json.loads(out)["replayed"][0]["job_id"] == job.job_id
    stored = get_data_access().jobs.get_job(job.job_id)
    assert stored.status == JobStatus.IN_PROGRESS
    assert any(event.actor == "op:ann" and f"ticket={TICKET}" in (event.detail or "") for event in stored.audit)

    code, out, err = _cli(["dlq", "redrive", "--all", "--ticket", TICKET, "--note", NOTE, *env], tmp_path, capsys)
    assert code == 1  # the unrecognised message is skipped, and kept
    assert json.loads(out)["skipped"][0]["dlq_stage"] == "notify"
    assert _dlq_count(service, StageName.NOTIFY) == 1

    code, _, err = _cli(["dlq", "show", message_id, *env], tmp_path, capsys)
    assert code == 2 and "not in the dead-letter queue" in err


def _dlq_bodies(service, stage=StageName.FETCH):
    url = service.resources.queue_for_stage(stage).dlq_url
    return [json.loads(message["Body"]) for message in drain(service.sqs, url)]


@pytest.mark.spec("ERR-27")
def test_a_replay_that_fails_again_the_same_way_is_escalated(service):
    job = _dead_lettered(service)
    (first,) = _dlq_bodies(service)
    assert first["escalated"] is False
    get_data_access().job_replay.replay_stage(
        job.job_id, StageName.FETCH, actor="op", ticket=TICKET, note=NOTE, from_start=False
    )
    assert _run(StageName.FETCH, job, AuthError("ticket still expired"), worker="w2").ack
    (again,) = _dlq_bodies(service)
    assert again["escalated"] is True and again["error_class"] == "AUTH_DENIED"
    assert again["sanitized_context"]["replays"] == 1
    assert parse_dead_letter(again).escalated


@pytest.mark.spec("ERR-27")
def test_a_replay_that_fails_differently_is_not_escalated(service):
    job = _dead_lettered(service)
    _dlq_bodies(service)
    get_data_access().job_replay.replay_stage(
        job.job_id, StageName.FETCH, actor="op", ticket=TICKET, note=NOTE, from_start=False
    )
    assert _run(StageName.FETCH, job, NotFoundError("change vanished"), worker="w2").ack
    (again,) = _dlq_bodies(service)
    assert again["error_class"] == "NOT_FOUND" and again["escalated"] is False


def test_an_envelope_moved_back_by_the_sqs_console_is_replayed_without_a_ticket(service):
    from p4review_dev.lambda_context import FakeLambdaContext
    from p4review_dev.sqs_poller import build_sqs_event
    from p4review_dev.stack import load_function

    job = _dead_lettered(service)
    (envelope,) = _dlq_bodies(service)
    # "Start DLQ redrive" moves the envelope, as is, back to the fetch queue.
    queue = service.resources.queue_for_stage(StageName.FETCH)
    service.sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(envelope))
    received = service.sqs.receive_message(
        QueueUrl=queue.url, MaxNumberOfMessages=1, MessageSystemAttributeNames=["All"]
    )["Messages"]
    answer = load_function("fetch").lambda_handler(
        build_sqs_event(received, queue.arn), FakeLambdaContext("p4review-test-fetch")
    )
    assert answer == {"batchItemFailures": []}
    stored = get_data_access().jobs.get_job(job.job_id)
    replayed = [event for event in stored.audit if event.event == "replayed"]
    assert replayed and replayed[-1].actor == "sqs-dlq-redrive" and "ticket=none" in replayed[-1].detail
    assert stored.stages[StageName.FETCH].status == StageStatus.COMPLETED  # the real fetch ran
    assert [m["job_id"] for m in _queue(service, StageName.REVIEW)] == [job.job_id]


NESTED = "[" * 100_000 + "]" * 100_000  # ~200 KB: deeper than json.loads can follow (RecursionError)


def test_parse_treats_a_body_nested_too_deep_as_unrecognised():
    assert parse_dead_letter(NESTED) is None
    assert parse_dead_letter('{"a": ' * 50_000 + "1" + "}" * 50_000) is None


@pytest.mark.spec("CH-4")
def test_a_nested_body_in_a_dlq_is_listed_as_unrecognised_and_left_visible(service, tmp_path, capsys):
    """Found by a hostile-input probe: `dlq list` died with a RecursionError, and the messages it
    had received stayed invisible, so the next `dlq list` said there were none."""
    job = _dead_lettered(service, change=48298)
    get_data_access().dead_letters.send(StageName.FETCH, NESTED)
    for args in (["dlq", "list"], ["dlq", "list", "--json"], ["dlq", "redrive", "--all", "--dry-run"]):
        code, out, _ = _cli(args, tmp_path, capsys)
        assert "Traceback" not in out
        assert code in (0, 1) and job.job_id in out, args
    code, out, _ = _cli(["dlq", "list"], tmp_path, capsys)
    rows = out.splitlines()[1:]
    assert any("(unrecognised)" in line for line in rows) and any(job.job_id in line for line in rows)
    attributes = service.sqs.get_queue_attributes(
        QueueUrl=service.resources.queue_for_stage(StageName.FETCH).dlq_url,
        AttributeNames=["ApproximateNumberOfMessages"],
    )["Attributes"]
    assert int(attributes["ApproximateNumberOfMessages"]) == 2  # both still there, and visible


@pytest.mark.spec("CH-4")
def test_a_forged_envelope_reaches_the_terminal_escaped_and_redacted(service, tmp_path, capsys):
    """Found by a hostile-input probe: escape sequences passed through `dlq list`, and a planted
    last_stack was printed verbatim by `dlq show`."""
    job = _dead_lettered(service, change=48297)
    (real,) = [letter for letter in _take_all(StageName.FETCH)]
    forged = {
        **real.body,
        "error_class": "AUTH_DENIED\x1b]0;owned\x07\x1b[2J\u202e",
        "last_stack": "Traceback\n  password = 'Tr0ub4dor&3xyz'\n\x1b[31mred\x9b",
        "sanitized_context": {**real.body["sanitized_context"], "changelist_id": "48297\r\nSubject: x"},
    }
    get_data_access().dead_letters.send(StageName.FETCH, forged)
    for args in (["dlq", "list"], ["dlq", "list", "--json"]):
        code, out, _ = _cli(args, tmp_path, capsys)
        assert code == 0, args
        assert not any(char in out for char in "\x1b\x07\x9b\u202e\r"), args
    code, out, _ = _cli(["dlq", "list"], tmp_path, capsys)
    assert "AUTH_DENIED\\x1b]0;owned" in out and job.job_id in out
    shown_ids = [line.split()[0] for line in out.splitlines()[1:]]
    for message_id in shown_ids:
        code, out, _ = _cli(["dlq", "show", message_id], tmp_path, capsys)
        assert "Tr0ub4dor" not in out and not any(char in out for char in "\x1b\x07\x9b\u202e")
