"""The hardened `p4` subprocess runner.

Rules (spec "Safe subprocess invocation for p4"): argument lists only, never a shell; a fixed,
validated absolute executable; an explicit timeout; credentials only in the child's (minimal)
environment; logs carry command name, argument count and changelist id, never raw values."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from p4review import faults
from p4review.errors import ConfigError
from p4review.faults import FaultPoint
from p4review.observability import logger
from p4review.perforce.errors import CLASSIFY, P4ArgumentError, P4CommandError, P4TimeoutError
from p4review.perforce.marshal import decode_marshal_stream, iter_marshal_records
from p4review.perforce.values import CONTROL_CHARACTERS

# Read-only commands and the only options we ever pass to each: anything else is a bug or
# an injection attempt, refused before a process is started.
_ALLOWED_OPTIONS: dict[str, frozenset[str]] = {
    "describe": frozenset({"-s", "-S"}),
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
# The commands whose file operands may come from an argument file (`p4 -x ARGFILE`): one p4
# process (one connection) for a change's every file instead of a process per file.
_ARGFILE_COMMANDS = frozenset({"files", "print"})
# What the child may write to stderr that is kept for an error message (-G errors go to stdout).
_STDERR_KEPT = 64 * 1024
_PIPE_READ = 256 * 1024


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
        stdout, stderr, code = self._run(["-G", *args], args, changelist_id)
        try:
            records = decode_marshal_stream(stdout)
        except ValueError:
            raise P4CommandError(f"p4 {args[0]}: unparseable -G output") from None
        for record in records:
            if record.get(b"code") == b"error":
                raise self._error(args[0], _text(record.get(b"data", b"")))
        if code != 0:
            raise self._error(args[0], _text(stderr) or f"exit status {code}")
        return records

    def stream_marshal(
        self, args: Sequence[str], operands: Sequence[str], *, changelist_id: int | None = None
    ) -> Iterator[dict[bytes, Any]]:
        """`p4 -G -x ARGFILE ARGS`, ARGFILE holding `operands` one per line: the records as they
        arrive, so a change's whole content is never held at once.

        p4 reads the argument file's lines as further operands of the command, 128 at a time by
        default (`-b batchsize`): each batch is one server command on the same connection (Helix
        Core command reference, "Global options", -x and -b). The records come in operand order;
        p4 answers a missing file with a warning record ("no such file(s)", severity 2) in its
        place, which is yielded like the others for the caller to match to its operand; any other
        error record raises. The timeout bounds each wait for p4's output, not the time the
        caller spends between records."""
        command = self._check(args)
        if command not in _ARGFILE_COMMANDS:
            raise P4ArgumentError("p4 command does not take an argument file")
        for operand in operands:
            # One line each: a newline would make two operands, and a leading "-" an option.
            if not isinstance(operand, str) or not operand or operand.startswith("-"):
                raise P4ArgumentError(f"p4 {command}: unsafe operand in the argument file")
            if CONTROL_CHARACTERS.search(operand):
                raise P4ArgumentError(f"p4 {command}: argument contains control characters")
        if faults.fires(FaultPoint.P4_TIMEOUT):
            raise P4TimeoutError("p4 timed out (injected fault)")
        started = time.monotonic()
        # Private (0600) and removed when the command ends, however it ends.
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", prefix="p4review-args-", suffix=".txt") as argfile:
            argfile.write("".join(operand + "\n" for operand in operands))
            argfile.flush()
            proc = self._start(["-G", "-x", argfile.name, *args])
            pipes = _ChildPipes(proc, self._timeout)
            code: int | None = None
            missing = 0
            try:
                for record in iter_marshal_records(pipes.read_stdout):
                    if record.get(b"code") == b"error":
                        message = _text(record.get(b"data", b""))
                        if not (_is_warning(record) and "no such file" in message):
                            raise self._error(command, message)
                        missing += 1
                    yield record
                code = proc.wait(timeout=self._timeout)
                pipes.read_rest_of_stderr()
            except subprocess.TimeoutExpired:
                raise P4TimeoutError(f"p4 {command} timed out after {self._timeout:g}s") from None
            except ValueError:
                raise P4CommandError(f"p4 {command}: unparseable -G output") from None
            finally:
                if code is None:  # stopped early (an error here or downstream): nothing left running
                    _kill(proc)
                pipes.close()
                self._log(command, [*args, *operands], changelist_id, started, code)
        if code != 0 and not missing:
            raise self._error(command, _text(pipes.stderr) or f"exit status {code}")

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
        proc = self._start(argv)
        try:
            stdout, stderr = proc.communicate(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            self._log(command, args, changelist_id, started, None)
            raise P4TimeoutError(f"p4 {command} timed out after {self._timeout:g}s") from None
        self._log(command, args, changelist_id, started, proc.returncode)
        return stdout, stderr, proc.returncode

    def _start(self, argv: list[str]) -> subprocess.Popen[bytes]:
        """The configured p4 with `argv`: no shell, the minimal environment, no stdin, in a new
        session so a timeout kills the whole process group, not just the parent."""
        try:
            return subprocess.Popen(
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


class _ChildPipes:
    """Reads a streaming child's stdout on demand while draining its stderr (a full stderr pipe
    would stall the child). A wait for output longer than the timeout kills the child and
    raises P4TimeoutError."""

    def __init__(self, proc: subprocess.Popen[bytes], timeout: float):
        assert proc.stdout is not None and proc.stderr is not None
        self._proc, self._timeout = proc, timeout
        self._selector = selectors.DefaultSelector()
        self._selector.register(proc.stdout, selectors.EVENT_READ)
        self._selector.register(proc.stderr, selectors.EVENT_READ)
        self._stdout: IO[bytes] = proc.stdout
        self._buffer = bytearray()
        self._stdout_open = True
        self.stderr = b""

    def read_stdout(self, count: int) -> bytes:
        """Exactly `count` bytes of stdout, fewer only at its end."""
        while len(self._buffer) < count and self._stdout_open:
            events = self._selector.select(timeout=self._timeout)
            if not events:
                _kill(self._proc)
                raise P4TimeoutError(f"p4 sent nothing for {self._timeout:g}s")
            for key, _ in events:
                chunk = os.read(key.fd, _PIPE_READ)
                if key.fileobj is self._stdout:
                    self._buffer += chunk
                    self._stdout_open = bool(chunk)
                elif len(self.stderr) < _STDERR_KEPT:
                    self.stderr += chunk
                if not chunk:
                    self._selector.unregister(key.fileobj)
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def read_rest_of_stderr(self) -> None:
        """After the child exited: what it wrote to stderr and was not read yet (bounded)."""
        assert self._proc.stderr is not None
        while len(self.stderr) < _STDERR_KEPT and self._selector.select(timeout=0):
            chunk = os.read(self._proc.stderr.fileno(), _PIPE_READ)
            if not chunk:
                break
            self.stderr += chunk

    def close(self) -> None:
        self._selector.close()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").strip()


def _is_warning(record: dict[bytes, Any]) -> bool:
    """p4's severity: 2 is E_WARN (e.g. "no such file(s)"), 3 and 4 are failures."""
    severity = record.get(b"severity")
    return isinstance(severity, int) and severity <= 2
