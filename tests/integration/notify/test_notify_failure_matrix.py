"""The notify stage's failure matrix (issue 6 "Proof"), against the serialized moto server and
a real SMTP server on loopback:

- a process killed between every pair of consecutive steps of a notify run, then a new worker;
- concurrent workers on the same delivery row (real threads);
- a worker whose lease runs out while its SMTP conversation is still going;
- the SMTP password rotated mid-run.

The rows "email sent but DB write failed", "DB marked sent but send failed", transient and
permanent provider errors are in test_notify_stage.py."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from p4review.clock import to_iso, utc_now
from p4review.errors import ErrorClass, RetryableError
from p4review.models.job import JobStatus, StageName
from p4review.models.outbox import DeliveryStatus
from p4review.notify import stage as notify_module
from p4review.notify.email.transport import EmailTransport
from p4review.notify.settings import NotifySettings
from p4review.pipeline.heartbeat import Lease
from p4review.stores.dynamo_jobs import job_pk
from p4review.stores.factory import get_data_access
from p4review_dev.smtp_server import LocalMailServer
from p4review_dev.support.notify import (
    FROM_ADDRESS,
    RELAY_PASSWORD,
    RELAY_USER,
    notify_dead_letters,
    notify_service,
    notify_work,
    outbox_rows,
    race_notify,
    reviewed_job,
    reviewers_env,
    run_notify,
)

OWNER = "dariusz.kowalski@northwind-games.example"
REVIEWER = "net-lead@northwind-games.example"
SECOND_REVIEWER = "qa@northwind-games.example"
TWO_RECIPIENTS = reviewers_env(("//depot/engine/...", [REVIEWER]))
THREE_RECIPIENTS = reviewers_env(("//depot/engine/...", [REVIEWER, SECOND_REVIEWER]))


@pytest.fixture
def mail(tmp_path):
    server = LocalMailServer(tmp_path / "mailbox", username=RELAY_USER, password=RELAY_PASSWORD)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def plain_relay(tmp_path):
    """A relay that cannot look deliveries up (like every real one)."""
    server = LocalMailServer(tmp_path / "relay", username=RELAY_USER, password=RELAY_PASSWORD, lookup_enabled=False)
    server.start()
    yield server
    server.stop()


# ---- a process killed between every pair of steps ---------------------------------------------


class ProcessKilled(BaseException):
    """SIGKILL: not an Exception, so nothing in the runtime catches it, releases or dead-letters."""


class StepJournal:
    """Records each step a notify run takes (every outbox, provider and job-record call, in
    order) and kills the run right after step number `kill_after` has completed."""

    # Calls that are not steps of the run: heartbeat renewals come from another thread at times
    # of their own choosing.
    NOT_STEPS = frozenset({"jobs.renew_lease"})

    def __init__(self, kill_after: int | None = None):
        self.steps: list[str] = []
        self.kill_after = kill_after
        self._lock = threading.Lock()

    def wrap(self, name: str, target):
        journal = self

        class Journaled:
            def __getattr__(self, attribute):
                value = getattr(target, attribute)
                step = f"{name}.{attribute}"
                if not callable(value) or attribute.startswith("_") or step in journal.NOT_STEPS:
                    return value

                def call(*args, **kwargs):
                    result = value(*args, **kwargs)
                    journal.completed(step)
                    return result

                return call

        return Journaled()

    def completed(self, step: str) -> None:
        with self._lock:
            self.steps.append(step)
            if len(self.steps) == self.kill_after:
                raise ProcessKilled(f"killed after step {len(self.steps)}: {step}")


def _journaled_run(job, journal: StepJournal, monkeypatch, worker: str):
    dal = get_data_access()

    class JournaledTransport(EmailTransport):
        def _build(self):
            sender, from_address = super()._build()
            return journal.wrap("provider", sender), from_address

    monkeypatch.setattr(notify_module, "EmailTransport", JournaledTransport)
    try:
        return run_notify(
            job, worker, work=notify_work(journal.wrap("outbox", dal.outbox)), jobs=journal.wrap("jobs", dal.jobs)
        )
    finally:
        monkeypatch.undo()


def _lease_runs_out(service, job):
    """What time does to a dead worker's lease, without waiting for it. Its send locks are left
    as they are: the next claim of the stage outranks them."""
    service.client("dynamodb").update_item(
        TableName=service.resources.tables["jobs"],
        Key={"pk": {"S": job_pk(job.job_id)}},
        UpdateExpression="SET stages.#stage.lease_expires_at = :past",
        ExpressionAttributeNames={"#stage": StageName.NOTIFY.value},
        ExpressionAttributeValues={":past": {"S": "2000-01-01T00:00:00.000000Z"}},
    )


def _steps_of_a_clean_run(moto_endpoint, mail, monkeypatch, extra_env):
    with notify_service(moto_endpoint, mail, extra_env=extra_env) as service:
        job = reviewed_job(service)
        journal = StepJournal()
        assert _journaled_run(job, journal, monkeypatch, "observer").ack
    mail.clear()
    return journal.steps


def _kill_then_recover(moto_endpoint, local_aws_server, mail, monkeypatch, extra_env, recipients):
    """For every k: a fresh service, a run killed right after its k-th step, the lease running
    out, and a second worker. Returns {step killed after: copies of each recipient's email}."""
    steps = _steps_of_a_clean_run(moto_endpoint, mail, monkeypatch, extra_env)
    # The run's shape: claim, then per recipient start (intent + attempt)/send/mark, then the finish.
    assert steps[0] == "jobs.claim_stage" and steps.count("provider.send") == len(recipients)
    outcomes = {}
    for kill_after in range(1, len(steps) + 1):
        local_aws_server.reset()
        mail.clear()
        with notify_service(moto_endpoint, mail, extra_env=extra_env) as service:
            job = reviewed_job(service)
            with pytest.raises(ProcessKilled):
                _journaled_run(job, StepJournal(kill_after), monkeypatch, "doomed")
            _lease_runs_out(service, job)
            recovered = run_notify(job, "survivor")
            if not recovered.ack:  # the kill came before the job record said so; one more delivery
                recovered = run_notify(job, "survivor")
            assert recovered.ack, f"killed after {steps[kill_after - 1]} (#{kill_after})"
            copies = {r: sum(r in m.recipients for m in mail.messages()) for r in recipients}
            outcomes[f"{kill_after}:{steps[kill_after - 1]}"] = copies
            finished = get_data_access().jobs.get_job(job.job_id)
            assert finished.status == JobStatus.SUCCEEDED, kill_after
            assert all(row.status == DeliveryStatus.SENT and row.notification_id for row in outbox_rows(job))
            assert notify_dead_letters(service) == []
    return steps, outcomes


@pytest.mark.spec("NOT-13", "NOT-17", "NE-4", "IDEM-5", "IDEM-6")
def test_a_worker_killed_between_any_two_steps_leaves_every_recipient_emailed_exactly_once(
    moto_endpoint, local_aws_server, aws_reset, mail, monkeypatch
):
    """The mailbox answers lookups (as the local stack's does): no kill point duplicates or
    loses an email."""
    steps, outcomes = _kill_then_recover(
        moto_endpoint, local_aws_server, mail, monkeypatch, TWO_RECIPIENTS, [OWNER, REVIEWER]
    )
    per_recipient = ["outbox.start_delivery", "provider.send", "outbox.mark_sent"]
    # No outbox re-read after the sends: the job is finished from what the writes answered.
    assert steps[1:-1] == per_recipient * 2 and steps[-1] == "jobs.complete_stage"
    assert len(outcomes) == len(steps)
    assert {point: copies for point, copies in outcomes.items() if set(copies.values()) != {1}} == {}


@pytest.mark.spec("NOT-16")
def test_with_a_relay_that_cannot_look_up_only_a_kill_between_send_and_mark_duplicates(
    moto_endpoint, local_aws_server, aws_reset, plain_relay, monkeypatch
):
    """The documented SMTP policy (resend an unconfirmed attempt with the same Message-ID):
    the one window that can duplicate is "the relay took the message, the outbox does not say
    so yet"; every other kill point delivers exactly once."""
    steps, outcomes = _kill_then_recover(
        moto_endpoint, local_aws_server, plain_relay, monkeypatch, TWO_RECIPIENTS, [OWNER, REVIEWER]
    )
    duplicated = {point for point, copies in outcomes.items() if max(copies.values()) > 1}
    assert all(min(copies.values()) == 1 for copies in outcomes.values())  # nothing lost
    between_send_and_mark = {f"{i + 1}:{step}" for i, step in enumerate(steps) if step == "provider.send"}
    assert duplicated == between_send_and_mark and len(duplicated) == 2


# ---- concurrent workers on the same row -------------------------------------------------------


def test_workers_racing_for_the_same_notify_message_send_each_email_once(moto_endpoint, aws_reset, mail):
    """SQS delivered the message to four workers at once (real threads, the serialized moto
    server): one claims the stage; the others are told the lease is held."""
    with notify_service(moto_endpoint, mail, extra_env=THREE_RECIPIENTS) as service:
        job = reviewed_job(service)
        dispositions = race_notify(job)
        assert len(dispositions) == 4 and sum(d.ack for d in dispositions) >= 1
        assert sorted(r for m in mail.messages() for r in m.recipients) == sorted([OWNER, REVIEWER, SECOND_REVIEWER])
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED


class GatedOutbox:
    """The real outbox; the first attempt's write (start_delivery: the row and its attempt) first
    waits at a barrier, so two workers that find no row reach the conditional write together."""

    def __init__(self, outbox, barrier: threading.Barrier):
        self._outbox = outbox
        self._barrier = barrier

    def __getattr__(self, name):
        return getattr(self._outbox, name)

    def start_delivery(self, intent, **kwargs):
        self._barrier.wait(timeout=30)
        return self._outbox.start_delivery(intent, **kwargs)


def _as_worker(job, worker_id):
    """The job as the notify stage's claimant `worker_id` sees it (who holds the send lock)."""
    stages = {**job.stages, StageName.NOTIFY: job.stages[StageName.NOTIFY].model_copy(update={"claimed_by": worker_id})}
    return job.model_copy(update={"stages": stages})


def _lease(minutes=5):
    return Lease(to_iso(utc_now() + timedelta(minutes=minutes)))


@pytest.mark.spec("G-3")
def test_two_workers_that_read_the_same_row_together_only_one_sends(moto_endpoint, aws_reset, mail, monkeypatch):
    """Bypassing the stage lease altogether (as a lease bug would): two threads run notify's
    work on the same job; both find no row; the conditional attempt write lets one through and
    the other raises a retryable error without calling the provider. The winner's send waits
    until the loser is answered, so the loser meets the row in flight (not already sent)."""
    loser_answered = threading.Event()

    class WaitingTransport(EmailTransport):
        def _build(self):
            sender, from_address = super()._build()
            return WaitingSender(sender), from_address

    class WaitingSender:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            return getattr(self._inner, name)

        def send(self, **kwargs):
            assert loser_answered.wait(30)
            return self._inner.send(**kwargs)

    monkeypatch.setattr(notify_module, "EmailTransport", WaitingTransport)
    with notify_service(moto_endpoint, mail) as service:
        job = reviewed_job(service)
        barrier = threading.Barrier(2)
        outcomes: dict[str, object] = {}

        def worker(name):
            try:
                notify_work(GatedOutbox(get_data_access().outbox, barrier)).run(_as_worker(job, name), _lease())
                outcomes[name] = "sent"
            except RetryableError as exc:
                outcomes[name] = exc
                loser_answered.set()

        threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        (refused,) = [outcome for outcome in outcomes.values() if outcome != "sent"]
        assert list(outcomes.values()).count("sent") == 1
        assert "another worker is delivering to this recipient" in str(refused)
        assert refused.error_class == ErrorClass.CONFLICT
        assert mail.count() == 1
        (row,) = outbox_rows(job)
        assert row.attempts == 1 and row.status == DeliveryStatus.SENT and row.locked_by is None


class HeldProvider:
    """Wraps a sender: `send` signals that it started, then waits to be released."""

    def __init__(self, inner):
        self._inner = inner
        self.started = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def send(self, **kwargs):
        self.started.set()
        assert self.release.wait(30)
        return self._inner.send(**kwargs)


def _wait_until(condition, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.spec("G-3")
def test_a_worker_arriving_while_another_is_mid_send_does_not_send(moto_endpoint, aws_reset, mail, monkeypatch):
    """Worker a has counted its attempt and is inside the provider call; worker b reads the row
    (attempt recorded, nothing delivered), looks the message up (not there yet) and would send
    again: the send lock stops it. Then a finishes, and b's retry finds the row delivered."""
    with notify_service(moto_endpoint, mail) as service:
        job = reviewed_job(service)
        held: list[HeldProvider] = []

        class HoldingTransport(EmailTransport):
            def _build(self):
                sender, from_address = super()._build()
                if not held:
                    held.append(HeldProvider(sender))
                    return held[0], from_address
                return sender, from_address

        monkeypatch.setattr(notify_module, "EmailTransport", HoldingTransport)
        first = threading.Thread(target=lambda: notify_work().run(_as_worker(job, "a"), _lease()))
        first.start()
        _wait_until(lambda: held and held[0].started.is_set())
        with pytest.raises(RetryableError, match="another worker is delivering") as refused:
            notify_work().run(_as_worker(job, "b"), _lease())
        assert refused.value.retry_after and refused.value.retry_after > 60  # a's lock: its lease
        assert mail.count() == 0
        held[0].release.set()
        first.join(30)
        notify_work().run(_as_worker(job, "b"), _lease())
        assert mail.count() == 1
        (row,) = outbox_rows(job)
        assert row.attempts == 1 and row.status == DeliveryStatus.SENT


def test_a_worker_whose_lease_ends_during_a_slow_smtp_conversation_does_not_hand_the_message_over(
    moto_endpoint, aws_reset, mail
):
    """Its heartbeat is dead (the lease is never renewed). The relay is slow to answer RCPT;
    by the time DATA would start, less than the minimum is left before the lease's acting end,
    so the worker abandons the conversation: nothing reaches the mailbox. The next owner then
    sends exactly once."""
    with notify_service(moto_endpoint, mail) as service:
        job = reviewed_job(service)
        mail.slow_rcpt_next(3.0)
        # Acting end = lease end - 2 s skew budget: 3.5 s from now, 0.5 s after RCPT's reply.
        doomed = Lease(to_iso(utc_now() + timedelta(seconds=5.5)))
        with pytest.raises(RetryableError, match="ownership_ending"):
            notify_work().run(_as_worker(job, "zombie"), doomed)
        assert mail.count() == 0
        (row,) = outbox_rows(job)
        assert row.attempts == 1 and row.locked_by is None and "ownership_ending" in row.last_error
        notify_work().run(_as_worker(job, "next-owner"), _lease())
        assert mail.count() == 1


# ---- never failed before reconciliation -------------------------------------------------------


@pytest.mark.spec("NE-5")
def test_a_row_whose_earlier_attempt_may_have_arrived_is_reconciled_before_it_can_be_failed(
    moto_endpoint, aws_reset, mail
):
    """The relay stored the first attempt but its reply was lost; it would refuse the next DATA
    with a permanent 550. The retry asks first, finds the message and backfills the row, so the
    550 that would have failed it permanently is never provoked."""
    with notify_service(moto_endpoint, mail) as service:
        job = reviewed_job(service)
        mail.drop_connection_after_data_next(1)
        mail.fail_next(1, code=550, text="5.7.1 refused")
        assert not run_notify(job).ack
        assert run_notify(job, "second").ack
        (row,) = outbox_rows(job)
        assert row.status == DeliveryStatus.SENT and row.attempts == 1 and mail.count() == 1
        assert notify_dead_letters(service) == []


# ---- SMTP password rotation mid-run -----------------------------------------------------------


def _rotate(service, mail, new_password):
    """Secrets Manager rotation as the alternating-password runbook does it: AWSCURRENT moves to
    the new value, and the relay then accepts only the new password."""
    service.client("secretsmanager").put_secret_value(
        SecretId=NotifySettings.from_env().needed("smtp_secret_id"),
        SecretString=f'{{"host": "127.0.0.1", "port": {mail.port}, "tls_mode": "none", '
        f'"username": "{RELAY_USER}", "password": "{new_password}", "from_address": "{FROM_ADDRESS}"}}',
    )
    mail.password = new_password


@pytest.mark.spec("SEC-21", "SEC-22", "NE-1")
def test_smtp_password_rotated_between_two_recipients_is_picked_up_without_a_lost_or_extra_email(
    moto_endpoint, aws_reset, mail, monkeypatch
):
    """The secret is cached (300 s, as in Lambda). After the first recipient's email the
    password is rotated; the second send is refused, notify re-reads the secret, finds a new
    version and sends with it, in the same run. A later job uses the new password directly."""
    env = {**THREE_RECIPIENTS, "P4REVIEW_SECRET_CACHE_SECONDS": "300"}
    with notify_service(moto_endpoint, mail, extra_env=env) as service:
        job = reviewed_job(service)

        class RotatingTransport(EmailTransport):
            def _build(self):
                sender, from_address = super()._build()

                class RotateAfterFirstEmail:
                    def __getattr__(self, name):
                        return getattr(sender, name)

                    def send(self, **kwargs):
                        result = sender.send(**kwargs)
                        if mail.count() == 1 and mail.password == RELAY_PASSWORD:
                            _rotate(service, mail, "rotated-password-2")
                        return result

                return RotateAfterFirstEmail(), from_address

        monkeypatch.setattr(notify_module, "EmailTransport", RotatingTransport)
        assert run_notify(job).ack
        monkeypatch.undo()
        assert sorted(r for m in mail.messages() for r in m.recipients) == sorted([OWNER, REVIEWER, SECOND_REVIEWER])
        assert mail.auth_failures > 0  # smtplib tries PLAIN, then LOGIN
        rows = {row.recipient: row for row in outbox_rows(job)}
        assert all(row.status == DeliveryStatus.SENT for row in rows.values())
        # The refused call counted as an attempt: attempts are counted once per provider call.
        assert sorted(row.attempts for row in rows.values()) == [1, 1, 2]
        assert get_data_access().jobs.get_job(job.job_id).status == JobStatus.SUCCEEDED
        assert notify_dead_letters(service) == []


def test_a_wrong_password_that_no_rotation_explains_still_dead_letters_as_auth_denied(moto_endpoint, aws_reset, mail):
    """Re-reading the secret finds nothing new: the credentials are wrong, an operator must act."""
    with notify_service(
        moto_endpoint, mail, password="wrong", extra_env={"P4REVIEW_SECRET_CACHE_SECONDS": "300"}
    ) as service:
        job = reviewed_job(service)
        assert run_notify(job).ack
        (envelope,) = notify_dead_letters(service)
        assert envelope["error_class"] == "AUTH_DENIED"
        assert mail.count() == 0 and mail.auth_failures > 0
