"""LocalMailServer: a real SMTP server on loopback, driven with smtplib."""

from __future__ import annotations

import json
import re
import smtplib
import threading
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest

from p4review_dev.smtp_server import LocalMailServer

QUEUED = re.compile(r"^OK: queued as (?P<qid>[A-Za-z0-9-]+)$")


def _message(token: str | None = None, to: str = "dev@example.test") -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "p4review@example.test"
    msg["To"] = to
    msg["Subject"] = "Review of change 1234"
    msg["Message-ID"] = make_msgid(domain="p4review.test")
    if token:
        msg["X-P4Review-Token"] = token
    msg.set_content("Looks good.\n")
    return msg


def _send(server: LocalMailServer, msg: EmailMessage, *, login: tuple[str, str] | None = None) -> tuple[int, bytes]:
    with smtplib.SMTP(server.host, server.port, timeout=10) as smtp:
        smtp.ehlo()
        if login:
            smtp.login(*login)
        code, _ = smtp.mail(msg["From"])
        assert code == 250
        code, _ = smtp.rcpt(msg["To"])
        assert code == 250
        return smtp.data(msg.as_bytes())


@pytest.fixture
def mail(tmp_path: Path):
    with LocalMailServer(tmp_path / "mailbox") as server:
        yield server


def test_stores_message_indexes_it_and_replies_queued_as(mail: LocalMailServer) -> None:
    assert mail.port != 0
    msg = _message(token="tok-1")
    code, reply = _send(mail, msg)
    assert code == 250
    match = QUEUED.match(reply.decode())
    assert match, reply
    qid = match["qid"]

    assert mail.count() == 1
    stored = mail.find_by_message_id(msg["Message-ID"])
    assert stored is not None and stored.queue_id == qid
    assert mail.find_by_message_id(msg["Message-ID"].strip("<>")) == stored  # brackets optional
    assert mail.find_by_token("tok-1") == [stored]
    assert mail.find_by_token("other") == []
    assert stored.recipients == ("dev@example.test",) and stored.sender == "p4review@example.test"
    assert stored.path == mail.mailbox_dir / f"{qid}.eml" and stored.path.exists()
    assert stored.parsed()["Subject"] == "Review of change 1234"
    assert "Looks good." in stored.parsed().get_content()

    lines = (mail.mailbox_dir / "index.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    assert record["queue_id"] == qid and record["message_id"] == msg["Message-ID"]
    assert record["token"] == "tok-1" and record["recipients"] == ["dev@example.test"]


def test_queue_ids_are_unique_and_index_survives_restart(tmp_path: Path) -> None:
    box = tmp_path / "box"
    with LocalMailServer(box) as server:
        replies = [_send(server, _message(token=f"t{i}"))[1].decode() for i in range(5)]
    ids = [QUEUED.match(r)["qid"] for r in replies]
    assert len(set(ids)) == 5
    again = LocalMailServer(box)
    assert again.count() == 5 and [m.queue_id for m in again.messages()] == ids
    assert again.find_by_token("t3")[0].queue_id == ids[3]


def test_auth_required_and_bad_credentials_rejected(tmp_path: Path) -> None:
    with LocalMailServer(tmp_path / "auth", username="relay", password="s3cret") as server:
        with smtplib.SMTP(server.host, server.port, timeout=10) as smtp:
            smtp.ehlo()
            assert smtp.has_extn("auth")
            with pytest.raises(smtplib.SMTPAuthenticationError) as bad:
                smtp.login("relay", "wrong")
            assert bad.value.smtp_code == 535
        # Without AUTH, MAIL is refused.
        with smtplib.SMTP(server.host, server.port, timeout=10) as smtp:
            smtp.ehlo()
            code, _ = smtp.mail("a@example.test")
            assert code == 530
        for mechanism in ("PLAIN", "LOGIN"):
            with smtplib.SMTP(server.host, server.port, timeout=10) as smtp:
                smtp.ehlo()
                smtp.user, smtp.password = "relay", "s3cret"
                code, _ = smtp.auth(mechanism, getattr(smtp, f"auth_{mechanism.lower()}"), initial_response_ok=True)
                assert code == 235
        code, reply = _send(server, _message(), login=("relay", "s3cret"))
        assert code == 250 and QUEUED.match(reply.decode())
        # login() tried PLAIN, then LOGIN: both refused.
        assert server.count() == 1 and server.auth_failures == 2


def test_fail_next_answers_451_then_recovers(mail: LocalMailServer) -> None:
    mail.fail_next(2)
    for _ in range(2):
        code, reply = _send(mail, _message())
        assert code == 451 and b"4.3.0 temporary failure" in reply
    assert mail.count() == 0
    code, _ = _send(mail, _message())
    assert code == 250 and mail.count() == 1
    mail.fail_next(1, code=554, text="5.7.1 rejected")
    code, reply = _send(mail, _message())
    assert code == 554 and b"5.7.1 rejected" in reply


def test_drop_connection_after_data_stores_but_loses_reply(mail: LocalMailServer) -> None:
    mail.drop_connection_after_data_next(1)
    msg = _message(token="lost-reply")
    with pytest.raises(smtplib.SMTPServerDisconnected):
        _send(mail, msg)
    assert mail.wait_for_count(1, timeout=5)
    assert mail.find_by_token("lost-reply")[0].message_id == msg["Message-ID"]
    code, _ = _send(mail, _message())  # the server is still fine afterwards
    assert code == 250 and mail.count() == 2


def test_concurrent_senders(mail: LocalMailServer) -> None:
    errors: list[BaseException] = []

    def send(i: int) -> None:
        try:
            code, _ = _send(mail, _message(token=f"c{i}"))
            assert code == 250
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert mail.count() == 20
    assert len({m.queue_id for m in mail.messages()}) == 20
    assert len((mail.mailbox_dir / "index.jsonl").read_text().splitlines()) == 20


# -- the delivery lookup extension (XP4RLOOKUP) -----------------------------------------------


def test_lookup_extension_is_advertised_and_answers_found_or_not_found(mail: LocalMailServer) -> None:
    msg = _message()
    _send(mail, msg)
    stored = mail.find_by_message_id(msg["Message-ID"])
    with smtplib.SMTP(mail.host, mail.port, timeout=10) as smtp:
        smtp.ehlo()
        assert smtp.has_extn("xp4rlookup")
        assert smtp.docmd("XP4RLOOKUP", msg["Message-ID"]) == (250, stored.queue_id.encode())
        assert smtp.docmd("XP4RLOOKUP", "<never-sent@p4review.test>")[0] == 550
        assert smtp.docmd("XP4RLOOKUP")[0] == 501


def test_lookup_requires_auth_when_the_server_does(tmp_path: Path) -> None:
    with LocalMailServer(tmp_path / "m", username="relay", password="pw") as server:
        with smtplib.SMTP(server.host, server.port, timeout=10) as smtp:
            smtp.ehlo()
            assert smtp.docmd("XP4RLOOKUP", "<x@y>")[0] == 530
            smtp.login("relay", "pw")
            assert smtp.docmd("XP4RLOOKUP", "<x@y>")[0] == 550


def test_lookup_can_be_hidden_like_a_plain_relay(tmp_path: Path) -> None:
    with LocalMailServer(tmp_path / "m", lookup_enabled=False) as server:
        with smtplib.SMTP(server.host, server.port, timeout=10) as smtp:
            smtp.ehlo()
            assert not smtp.has_extn("xp4rlookup")
            assert smtp.docmd("XP4RLOOKUP", "<x@y>")[0] == 500


@pytest.mark.spec("NOT-16")
def test_sender_lookup_outcomes(tmp_path: Path) -> None:
    from p4review.models.outbox import LookupOutcome
    from p4review.notify.email.smtp import SmtpSender, SmtpSettings

    def sender(server: LocalMailServer, password: str = "pw") -> SmtpSender:
        return SmtpSender(
            SmtpSettings(
                host=server.host,
                port=server.port,
                tls_mode="none",
                username="relay",
                password=password,
                from_address="p4review@example.test",
            )
        )

    with LocalMailServer(tmp_path / "a", username="relay", password="pw") as server:
        msg = _message()
        _send(server, msg, login=("relay", "pw"))
        found = sender(server).lookup(msg["Message-ID"])
        assert found.outcome == LookupOutcome.FOUND
        assert found.notification_id == server.find_by_message_id(msg["Message-ID"]).queue_id
        assert sender(server).lookup("<other@x>").outcome == LookupOutcome.NOT_FOUND
        assert sender(server, password="wrong").lookup(msg["Message-ID"]).outcome == LookupOutcome.UNAVAILABLE
        port = server.port
    with LocalMailServer(tmp_path / "b", username="relay", password="pw", lookup_enabled=False) as plain:
        assert sender(plain).lookup("<x@y>").outcome == LookupOutcome.UNSUPPORTED
    stopped = SmtpSender(
        SmtpSettings(host="127.0.0.1", port=port, tls_mode="none", from_address="a@b.c", timeout_seconds=2)
    )
    assert stopped.lookup("<x@y>").outcome == LookupOutcome.UNAVAILABLE
