"""A real SMTP server on loopback that files every message it accepts in a mailbox directory.

Each accepted message is written to ``<mailbox_dir>/<queue-id>.eml`` and indexed in
``<mailbox_dir>/index.jsonl`` (one JSON object per line: queue_id, message_id, token,
sender, recipients, received_at, size, file), so a delivery can be looked up by its
``Message-ID`` or ``X-P4Review-Token`` header. The final DATA reply is
``250 OK: queued as <queue-id>``, as many relays answer; the notify stage records the queue id
as the provider message id.

Unlike a real relay, this server can say whether it accepted a message: it advertises the
``XP4RLOOKUP`` EHLO keyword and answers ``XP4RLOOKUP <message-id>`` (after AUTH, when AUTH is
required) with ``250 <queue-id>`` or ``550 5.1.0 no such message``. The notify stage uses it to
decide whether an unconfirmed earlier attempt arrived (so the local stack can prove zero
duplicates); against a relay without the keyword it falls back to its resend policy.

Fault injection (thread-safe, for tests):

* ``fail_next(n, code=451, text="4.3.0 temporary failure")``: the next ``n`` DATA commands
  are answered ``<code> <text>`` and nothing is stored.
* ``drop_connection_after_data_next(n)``: the next ``n`` messages are stored, then the
  connection is closed before the DATA reply ("sent, but the reply was lost").

Usage::

    with LocalMailServer(tmp_path / "mail", username="u", password="p") as mail:
        ... smtplib.SMTP(mail.host, mail.port) ...
        mail.find_by_token(token)
"""

from __future__ import annotations

import asyncio
import email.parser
import email.policy
import json
import logging
import secrets
import socket
import threading
import time
from dataclasses import asdict, dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from p4review.notify.email.smtp import LOOKUP_EXTENSION

log = logging.getLogger(__name__)

__all__ = ["LocalMailServer", "StoredMessage", "TOKEN_HEADER"]

TOKEN_HEADER = "X-P4Review-Token"


class _QuietAiosmtpdLog(logging.Filter):
    """Drop aiosmtpd's per-session deprecation notice about Session.login_data."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "login_data is deprecated" not in record.getMessage()


logging.getLogger("mail.log").addFilter(_QuietAiosmtpdLog())


class _LookupSMTP(SMTP):
    """aiosmtpd's SMTP plus the delivery lookup verb (``smtp_<VERB>`` methods become commands)."""

    async def smtp_XP4RLOOKUP(self, arg: str) -> None:
        if self._auth_required and not self.session.authenticated:
            await self.push("530 5.7.0 Authentication required")
            return
        if not arg or not arg.strip():
            await self.push(f"501 Syntax: {LOOKUP_EXTENSION} <message-id>")
            return
        mail_server = self.event_handler.mail_server
        if not mail_server.lookup_enabled:
            await self.push(f'500 Error: command "{LOOKUP_EXTENSION}" not recognized')
            return
        stored = mail_server.find_by_message_id(arg)
        await self.push(f"250 {stored.queue_id}" if stored else "550 5.1.0 no such message")


class _Controller(Controller):
    """aiosmtpd Controller that requires AUTH without TLS (loopback) without aiosmtpd's
    per-connection "AUTH without TLS" warning: the SMTP instance is built with
    auth_required=False, then switched to required."""

    def __init__(self, *args: Any, require_auth: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._require_auth = require_auth

    def factory(self) -> SMTP:
        smtp = _LookupSMTP(self.handler, **self.SMTP_kwargs)
        if self._require_auth:
            smtp._auth_required = True
        return smtp


INDEX_FILE = "index.jsonl"


@dataclass(frozen=True)
class StoredMessage:
    """One accepted message, as recorded in the index."""

    queue_id: str
    message_id: str | None  # the Message-ID header as sent (with its angle brackets)
    token: str | None  # the X-P4Review-Token header, if any
    sender: str  # MAIL FROM
    recipients: tuple[str, ...]  # RCPT TO, in order
    received_at: float  # epoch seconds
    size: int  # bytes of the stored message
    path: Path

    def raw(self) -> bytes:
        return self.path.read_bytes()

    def parsed(self) -> EmailMessage:
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(self.raw())
        assert isinstance(message, EmailMessage)
        return message

    def to_index(self) -> dict[str, Any]:
        record = asdict(self)
        record["recipients"] = list(self.recipients)
        record["file"] = self.path.name
        del record["path"]
        return record


def _normalize_message_id(value: str | None) -> str | None:
    if value is None:
        return None
    return value.strip().strip("<>").strip().lower() or None


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class _Handler:
    """aiosmtpd handler: runs on the controller's event loop thread."""

    def __init__(self, server: LocalMailServer) -> None:
        self._server = server

    @property
    def mail_server(self) -> LocalMailServer:
        return self._server

    async def handle_EHLO(
        self,
        server: Any,
        session: Any,
        envelope: Any,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        session.host_name = hostname
        if not self._server.lookup_enabled:
            return responses
        # Advertise the lookup keyword before the closing "250 HELP" line.
        return [*responses[:-1], f"250-{LOOKUP_EXTENSION}", responses[-1]]

    async def handle_RCPT(
        self,
        server: Any,
        session: Any,
        envelope: Any,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        delay = self._server._take_rcpt_delay()
        if delay:
            await asyncio.sleep(delay)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        fault = self._server._take_fault()
        if fault is not None and fault[0] == "fail":
            _, code, text = fault
            return f"{code} {text}"
        content = envelope.original_content if envelope.original_content is not None else envelope.content
        if isinstance(content, str):
            content = content.encode("utf-8", errors="surrogateescape")
        stored = self._server._store(content, envelope.mail_from or "", list(envelope.rcpt_tos))
        if fault is not None and fault[0] == "drop":
            transport = getattr(server, "transport", None)
            if transport is not None:
                transport.abort()
            return f"250 OK: queued as {stored.queue_id}"  # written to a closed transport: lost
        return f"250 OK: queued as {stored.queue_id}"


class LocalMailServer:
    """An SMTP server (aiosmtpd) on ``host:port`` that stores messages in ``mailbox_dir``.

    With ``username``/``password`` set, AUTH PLAIN and LOGIN are offered without TLS
    (loopback only), AUTH is required before MAIL, and bad credentials get
    ``535 5.7.8 Authentication credentials invalid``. ``port=0`` picks a free port (read it
    from ``.port`` after ``start()``). Messages already in ``mailbox_dir/index.jsonl`` from
    an earlier run are kept and still found by the lookups. ``lookup_enabled=False`` hides the
    ``XP4RLOOKUP`` extension, as a real relay would."""

    def __init__(
        self,
        mailbox_dir: Path | str,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        username: str | None = None,
        password: str | None = None,
        server_hostname: str = "p4review-local-smtp",
        lookup_enabled: bool = True,
    ) -> None:
        if (username is None) != (password is None):
            raise ValueError("set both username and password, or neither")
        self.mailbox_dir = Path(mailbox_dir)
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.server_hostname = server_hostname
        # False: behave like a plain relay that cannot say whether it accepted a message.
        self.lookup_enabled = lookup_enabled
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._messages: list[StoredMessage] = []
        self._counter = 0
        self._faults: list[tuple[Any, ...]] = []
        self._rcpt_delays: list[float] = []
        self._controller: Controller | None = None
        self.auth_failures = 0
        self.mailbox_dir.mkdir(parents=True, exist_ok=True)
        self._load_index()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> LocalMailServer:
        if self._controller is not None:
            return self
        kwargs: dict[str, Any] = {}
        if self.username is not None:
            kwargs.update(authenticator=self._authenticate, auth_require_tls=False, require_auth=True)
        last_error: Exception | None = None
        for _ in range(5):
            port = self.port or _free_port(self.host)
            controller = _Controller(
                _Handler(self),
                hostname=self.host,
                port=port,
                server_hostname=self.server_hostname,
                ready_timeout=10.0,
                **kwargs,
            )
            try:
                controller.start()
            except Exception as exc:  # port taken between probe and bind: try another
                last_error = exc
                if self.port:
                    raise
                continue
            self._controller = controller
            self.port = port
            return self
        raise RuntimeError(f"could not start the SMTP server: {last_error}")

    def stop(self) -> None:
        controller, self._controller = self._controller, None
        if controller is not None:
            controller.stop()

    def __enter__(self) -> LocalMailServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._controller is not None

    # -- fault injection ---------------------------------------------------------------------
    def fail_next(self, n: int = 1, code: int = 451, text: str = "4.3.0 temporary failure") -> None:
        """Answer the next ``n`` DATA commands with ``<code> <text>`` (nothing is stored)."""
        with self._lock:
            self._faults.extend(("fail", code, text) for _ in range(n))

    def drop_connection_after_data_next(self, n: int = 1) -> None:
        """Store the next ``n`` messages, then close the connection before the DATA reply."""
        with self._lock:
            self._faults.extend(("drop",) for _ in range(n))

    def slow_rcpt_next(self, seconds: float, n: int = 1) -> None:
        """Delay the reply to the next ``n`` RCPT commands by ``seconds`` (a slow relay)."""
        with self._lock:
            self._rcpt_delays.extend(seconds for _ in range(n))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._rcpt_delays.clear()

    def clear(self) -> None:
        """Forget every stored message (files and index): a fresh mailbox for the next case."""
        with self._changed:
            for stored in self._messages:
                stored.path.unlink(missing_ok=True)
            (self.mailbox_dir / INDEX_FILE).unlink(missing_ok=True)
            self._messages.clear()

    def _take_rcpt_delay(self) -> float:
        with self._lock:
            return self._rcpt_delays.pop(0) if self._rcpt_delays else 0.0

    def _take_fault(self) -> tuple[Any, ...] | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else None

    # -- lookups -----------------------------------------------------------------------------
    def messages(self) -> list[StoredMessage]:
        with self._lock:
            return list(self._messages)

    def count(self) -> int:
        with self._lock:
            return len(self._messages)

    def find_by_message_id(self, message_id: str) -> StoredMessage | None:
        """The first message whose Message-ID matches (angle brackets and case ignored)."""
        wanted = _normalize_message_id(message_id)
        with self._lock:
            for message in self._messages:
                if wanted is not None and _normalize_message_id(message.message_id) == wanted:
                    return message
        return None

    def find_by_token(self, token: str) -> list[StoredMessage]:
        """Every message carrying ``X-P4Review-Token: token`` (duplicates show up here)."""
        with self._lock:
            return [message for message in self._messages if message.token == token]

    def find_by_queue_id(self, queue_id: str) -> StoredMessage | None:
        with self._lock:
            for message in self._messages:
                if message.queue_id == queue_id:
                    return message
        return None

    def wait_for_count(self, n: int, timeout: float = 10.0) -> bool:
        """Block until at least ``n`` messages are stored; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._messages) >= n, timeout=timeout)

    # -- internals ---------------------------------------------------------------------------
    def _authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        if mechanism not in ("PLAIN", "LOGIN") or not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = auth_data.login.decode("utf-8", "replace") if isinstance(auth_data.login, bytes) else auth_data.login
        password = (
            auth_data.password.decode("utf-8", "replace")
            if isinstance(auth_data.password, bytes)
            else auth_data.password
        )
        ok = secrets.compare_digest(str(login), str(self.username)) and secrets.compare_digest(
            str(password), str(self.password)
        )
        if not ok:
            with self._lock:
                self.auth_failures += 1
            # handled=False: aiosmtpd answers "535 5.7.8 Authentication credentials invalid".
            return AuthResult(success=False, handled=False)
        return AuthResult(success=True, auth_data=auth_data)

    def _new_queue_id(self) -> str:
        # Called with self._lock held.
        self._counter += 1
        now = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}Z"
        return f"{stamp}-{self._counter:06d}-{secrets.token_hex(4)}"

    def _store(self, content: bytes, sender: str, recipients: list[str]) -> StoredMessage:
        headers = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(content)
        message_id = headers.get("Message-ID")
        token = headers.get(TOKEN_HEADER)
        with self._changed:
            queue_id = self._new_queue_id()
            path = self.mailbox_dir / f"{queue_id}.eml"
            path.write_bytes(content)
            stored = StoredMessage(
                queue_id=queue_id,
                message_id=str(message_id).strip() if message_id is not None else None,
                token=str(token).strip() if token is not None else None,
                sender=sender,
                recipients=tuple(recipients),
                received_at=time.time(),
                size=len(content),
                path=path,
            )
            with (self.mailbox_dir / INDEX_FILE).open("a", encoding="utf-8") as index:
                index.write(json.dumps(stored.to_index(), sort_keys=True) + "\n")
            self._messages.append(stored)
            self._changed.notify_all()
        log.info("local SMTP queued %s for %s", queue_id, ", ".join(recipients))
        return stored

    def _load_index(self) -> None:
        index = self.mailbox_dir / INDEX_FILE
        if not index.exists():
            return
        for line in index.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                self._messages.append(
                    StoredMessage(
                        queue_id=record["queue_id"],
                        message_id=record.get("message_id"),
                        token=record.get("token"),
                        sender=record.get("sender", ""),
                        recipients=tuple(record.get("recipients", ())),
                        received_at=float(record.get("received_at", 0.0)),
                        size=int(record.get("size", 0)),
                        path=self.mailbox_dir / record.get("file", f"{record['queue_id']}.eml"),
                    )
                )
            except (ValueError, KeyError, TypeError):
                log.warning("skipping a bad line in %s", index)
        self._counter = len(self._messages)
