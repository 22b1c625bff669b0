"""The hardened `p4` subprocess runner.

Rules (spec "Safe subprocess invocation for p4"): argument lists only, never a shell; a fixed,
validated absolute executable; an explicit timeout; credentials only in the child's (minimal)
environment; logs carry command name, argument count and changelist id, never raw values."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from p4review import faults
from p4review.errors import ConfigError
from p4review.faults import FaultPoint
from p4review.observability import logger
from p4review.perforce.errors import CLASSIFY, P4ArgumentError, P4CommandError, P4TimeoutError
from p4review.perforce.marshal import decode_marshal_stream
from p4review.perforce.values import CONTROL_CHARACTERS

# Read-only commands and the only options we ever pass to each: anything else is a bug or
# an injection attempt, refused before a process is started.
_ALLOWED_OPTIONS: dict[str, frozenset[str]] = {
    "describe": frozenset({"-s", "-S"}),
    "diff2": frozenset({"-du"}),
    "files": frozenset(),
    "print": frozenset({"-q"}),
    "user": frozenset({"-o"}),
    # Only to list one server property (P4.Swarm.URL): `-l -n NAME`.
    "property": frozenset({"-l", "-n"}),
}
# Options a command must carry: `describe` without -s prints every file's diff, i.e. the content
# of the whole change, including files the depot allow-list refuses.
_REQUIRED_OPTIONS: dict[str, frozenset[str]] = {"describe": frozenset({"-s"})}
_SECRET_ENV = ("P4PASSWD", "P4TICKET")


class P4Runner:
    """Runs the configured `p4` with an argument list and a minimal environment.

    `env` carries the connection settings and credentials (P4PORT, P4USER, P4PASSWD holding a
    ticket, P4CLIENT, ...); they never appear in argv, where any local user could read them.
    """

    def __init__(self, executable: str, *, timeout_seconds: float, env: Mapping[str, str] | None = None):
        if not isinstance(executable, str) or not os.path.isabs(executable):
            raise ConfigError(f"p4 executable {executable!r} must be an absolute path")
        if not os.path.isfile(executable) or not os.access(executable, os.X_OK):
            raise ConfigError(f"p4 executable {executable!r} does not exist or is not executable")
        if not timeout_seconds or timeout_seconds <= 0:
            raise ConfigError("p4 timeout must be positive")
        self._executable = executable
        self._timeout = float(timeout_seconds)
        # Minimal base: nothing else of the parent's environment (AWS keys, P4CONFIG) leaks in, and
        # P4ENVIRO points p4 away from a ~/.p4enviro file that could set P4PORT or P4USER.
        child_env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "LANG": "C.UTF-8",
            "HOME": os.environ.get("HOME", tempfile.gettempdir()),
            "P4ENVIRO": os.devnull,
        }
        for key, value in (env or {}).items():
            if "\x00" in key or "=" in key or "\x00" in value:
                raise ConfigError("invalid p4 environment entry")
            child_env[key] = value
        self._env = child_env
        self._secrets = [child_env[k] for k in _SECRET_ENV if len(child_env.get(k, "")) >= 4]

    def run_marshal(self, args: Sequence[str], *, changelist_id: int | None = None) -> list[dict[bytes, Any]]:
        """Run `p4 -G ARGS` and return its records; an error record raises even on exit 0."""
        return self._marshal(args, changelist_id, missing_ok=False)

    def run_marshal_found(self, args: Sequence[str], *, changelist_id: int | None = None) -> list[dict[bytes, Any]]:
        """`p4 -G ARGS` over several files: the records of those found. p4 reports each missing
        file as a warning record ("no such file(s)", severity 2) among the others; those are
        dropped, and any other error record raises."""
        return self._marshal(args, changelist_id, missing_ok=True)

    def _marshal(self, args: Sequence[str], changelist_id: int | None, *, missing_ok: bool) -> list[dict[bytes, Any]]:
        stdout, stderr, code = self._run(["-G", *args], args, changelist_id)
        try:
            records = decode_marshal_stream(stdout)
        except ValueError:
            raise P4CommandError(f"p4 {args[0]}: unparseable -G output") from None
        found, missing = [], 0
        for record in records:
            if record.get(b"code") != b"error":
                found.append(record)
                continue
            message = _text(record.get(b"data", b""))
            if missing_ok and _is_warning(record) and "no such file" in message:
                missing += 1
                continue
            raise self._error(args[0], message)
        # A warning about a missing file may come with a non-zero exit; any other failure raises.
        if code != 0 and not missing:
            raise self._error(args[0], _text(stderr) or f"exit status {code}")
        return found

    def run_text(self, args: Sequence[str], *, changelist_id: int | None = None) -> bytes:
        """Run `p4 ARGS` and return raw stdout bytes."""
        stdout, stderr, code = self._run(list(args), args, changelist_id)
        message = _text(stderr)
        # p4 reports some failures (e.g. "no such file(s).") on stderr with exit 0.
        if code != 0 or (message and any(pattern.search(message) for pattern, _ in CLASSIFY)):
            raise self._error(args[0], message or f"exit status {code}")
        return stdout

    def _run(self, argv: list[str], args: Sequence[str], changelist_id: int | None) -> tuple[bytes, bytes, int]:
        command = self._check(args)
        if faults.fires(FaultPoint.P4_TIMEOUT):
            raise P4TimeoutError("p4 timed out (injected fault)")
        started = time.monotonic()
        try:
            # New session so a timeout kills the whole process group, not just the parent.
            proc = subprocess.Popen(
                [self._executable, *argv],
                shell=False,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError:
            raise ConfigError("p4 executable could not be started") from None
        try:
            stdout, stderr = proc.communicate(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            self._log(command, args, changelist_id, started, None)
            raise P4TimeoutError(f"p4 {command} timed out after {self._timeout:g}s") from None
        self._log(command, args, changelist_id, started, proc.returncode)
        return stdout, stderr, proc.returncode

    @staticmethod
    def _check(args: Sequence[str]) -> str:
        if isinstance(args, (str, bytes)) or not args or args[0] not in _ALLOWED_OPTIONS:
            raise P4ArgumentError("p4 command is not allowed")
        command = args[0]
        for arg in args:
            if not isinstance(arg, str) or CONTROL_CHARACTERS.search(arg):
                raise P4ArgumentError(f"p4 {command}: argument contains control characters")
            if arg.startswith("-") and arg not in _ALLOWED_OPTIONS[command]:
                raise P4ArgumentError(f"p4 {command}: option not allowed")
        if not _REQUIRED_OPTIONS.get(command, frozenset()) <= set(args):
            raise P4ArgumentError(f"p4 {command}: a required option is missing")
        return command

    def _error(self, command: str, message: str) -> Exception:
        safe = self._sanitize(message)
        for pattern, exc_type in CLASSIFY:
            if pattern.search(message):
                return exc_type(f"p4 {command}: {safe}")
        return P4CommandError(f"p4 {command}: {safe}")

    def _sanitize(self, message: str) -> str:
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return CONTROL_CHARACTERS.sub(" ", message).strip()[:300]

    @staticmethod
    def _log(command: str, args: Sequence[str], changelist_id: int | None, started: float, code: int | None) -> None:
        logger.info(
            "p4 command finished",
            extra={
                "p4_command": command,
                "p4_arg_count": len(args),
                "changelist_id": changelist_id,
                "exit_code": code,
                "duration_ms": round((time.monotonic() - started) * 1000),
            },
        )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").strip()


def _is_warning(record: dict[bytes, Any]) -> bool:
    """p4's severity: 2 is E_WARN (e.g. "no such file(s)"), 3 and 4 are failures."""
    severity = record.get(b"severity")
    return isinstance(severity, int) and severity <= 2
