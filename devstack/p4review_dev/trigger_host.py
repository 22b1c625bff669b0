"""A Perforce trigger host on this machine, for `make demo` and the tests: the real trigger file
(`trigger/p4review-trigger.py`, run by a python3 as p4d would run it), its config, secret file and
spool, the fake p4 behind a wrapper (the trigger gives p4 a minimal environment, so the fake's
settings are fixed in the wrapper), and a front door to the API that can be closed to take the API
offline without stopping the local stack."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from p4review_dev.stack import repo_root, write_fake_p4_wrapper

TRIGGER_FILE_NAME = "p4review-trigger.py"


def trigger_file() -> Path:
    return repo_root() / "trigger" / TRIGGER_FILE_NAME


def host_python() -> str:
    """The interpreter a Perforce host would use: the system python3 when there is one (a
    version-manager shim costs ~0.3 s per start), else this one."""
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


class TriggerHost:
    """One trigger installation: `home/` holds the config, the secret file, the p4 wrapper and the spool."""

    def __init__(
        self,
        home: Path,
        *,
        api_url: str,
        signing_secret: str,
        send_mode: str = "background",
        p4_state: Path | None = None,
        depot: Path | None = None,
        extra_config: dict[str, str] | None = None,
    ):
        self.home = home.resolve()
        self.home.mkdir(parents=True, exist_ok=True)
        self.spool = self.home / "spool"
        self.p4_state = (p4_state or self.home / "p4state").resolve()
        self.depot = depot
        self.secret_file = self.home / "signing.secret"
        self.secret_file.write_text(signing_secret + "\n")
        self.secret_file.chmod(0o600)
        self.p4 = self.home / "p4"
        self.set_shelf_version(None)
        self.config = self.home / "p4review-trigger.conf"
        values = {
            "API_URL": api_url,
            "SECRET_FILE": str(self.secret_file),
            "SPOOL_DIR": str(self.spool),
            "P4": str(self.p4),
            "P4USER": "p4review-trigger",
            "SEND_MODE": send_mode,
            "PATHS": "//depot/...",
            "CATCHUP_GRACE": "0",
            **(extra_config or {}),
        }
        self.config.write_text("".join(f"{key}={value}\n" for key, value in values.items()))

    def set_shelf_version(
        self, version: int | None, change: int | None = None, shelves_file: Path | None = None
    ) -> None:
        """Which shelf version the fake p4 serves to the trigger (as if the user had just
        shelved it); with `change` and `shelves_file` (the service's P4FAKE_SHELVES), the server
        holds that version from now on, as a re-shelve replaces a shelf."""
        if version is not None and change is not None and shelves_file is not None:
            current = json.loads(shelves_file.read_text()) if shelves_file.exists() else {}
            current[str(change)] = version
            temporary = shelves_file.with_name(shelves_file.name + ".tmp")
            temporary.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(current))
            temporary.replace(shelves_file)
        settings = {"P4FAKE_STATE": str(self.p4_state)}
        if self.depot is not None:
            settings["P4FAKE_DEPOT"] = str(self.depot)
        if version is not None:
            settings["P4FAKE_SHELF_VERSION"] = str(version)
        write_fake_p4_wrapper(self.p4, settings)

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [host_python(), str(trigger_file()), "-c", str(self.config), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def fire(self, trigger_type: str, change: int, old_change: int | None = None) -> tuple[int, float]:
        """Run the trigger as p4d would; returns (exit status, wall seconds)."""
        args = ["-t", trigger_type, "-v", str(change)]
        if trigger_type == "change-commit":
            args += ["-w", str(old_change or change)]
        started = time.perf_counter()
        result = self.run(*args)
        return result.returncode, time.perf_counter() - started

    def drain(self, *extra: str) -> subprocess.CompletedProcess:
        return self.run("--drain", *extra)

    def events(self, folder: str) -> list[dict[str, Any]]:
        return [json.loads(path.read_text()) for path in sorted((self.spool / folder).glob("*.json"))]

    def wait_until_answered(self, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        """Until `count` events are in done/ or rejected/ (the detached senders run on their own)."""
        deadline = time.monotonic() + timeout
        while True:
            answered = self.events("done") + self.events("rejected")
            if len(answered) >= count or time.monotonic() > deadline:
                return answered
            time.sleep(0.1)


class FrontDoor:
    """A TCP relay in front of the API on a fixed loopback port. `close()` stops listening (and
    drops open connections): to a client the API is down (connection refused). `open()` listens
    on the same port again. While `hold_answers` is set, requests reach the API but its answers
    wait at the door (a client can die after the API acted and before it heard)."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        probe = socket.create_server(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._listener: socket.socket | None = None
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self.hold_answers = threading.Event()

    def url(self, stage: str) -> str:
        return f"http://127.0.0.1:{self.port}/{stage}"

    def open(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="front-door", daemon=True).start()

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in the other thread
            except OSError:
                pass
            listener.close()
        with self._lock:
            for connection in self._connections:
                _close(connection)
            self._connections.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._connections += [client, upstream]
            for source, target, gate in ((client, upstream, None), (upstream, client, self.hold_answers)):
                threading.Thread(target=_pump, args=(source, target, gate), daemon=True).start()


def _pump(source: socket.socket, target: socket.socket, gate: threading.Event | None) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            while gate is not None and gate.is_set():
                time.sleep(0.02)
            target.sendall(data)
    except OSError:
        pass
    finally:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _close(connection: socket.socket) -> None:
    try:
        connection.close()
    except OSError:
        pass
