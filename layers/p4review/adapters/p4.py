"""The Perforce boundary: a hardened `p4` subprocess runner and the changelist fetcher.

Rules (spec "Safe subprocess invocation for p4"): argument lists only, never a shell; a fixed,
validated absolute executable; an explicit timeout; credentials only in the child's (minimal)
environment; logs carry command name, argument count and changelist id, never raw values.
`ChangeFetcher` is the only code that asks Perforce for anything, and the enforcement point of
the depot allow-list (spec "Depot path allow-list policy"; docs/security.md).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from p4review.errors import (
    AuthError,
    ConfigError,
    ErrorClass,
    NonRetryableError,
    NotFoundError,
    RetryableError,
    ValidationError,
)
from p4review.logic.depot_paths import DepotAllowList, PathDecision, sanitize_for_log
from p4review.models.change import (
    ChangedFile,
    ChangeDescription,
    ChangeSnapshot,
    DiffStatus,
    FileDiff,
    P4User,
    SkipReason,
)
from p4review.models.job import ChangeKind
from p4review.observability import logger, metrics
from p4review.runtime.faults import FaultPoint, fault

DEFAULT_MAX_FILE_BYTES = 1024 * 1024

# Read-only commands and the only options we ever pass to each: anything else is a bug or
# an injection attempt, refused before a process is started.
_ALLOWED_OPTIONS: dict[str, frozenset[str]] = {
    "describe": frozenset({"-s", "-S"}),
    "diff2": frozenset({"-du"}),
    "print": frozenset({"-q"}),
    "user": frozenset({"-o"}),
}
# Options a command must carry: `describe` without -s prints every file's diff, i.e. the content
# of the whole change, including files the depot allow-list refuses.
_REQUIRED_OPTIONS: dict[str, frozenset[str]] = {"describe": frozenset({"-s"})}
_SECRET_ENV = ("P4PASSWD", "P4TICKET")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1


# --- errors -----------------------------------------------------------------------------------
class P4ConnectionError(RetryableError):
    """The server could not be reached (refused, DNS, reset). Transient by nature."""

    error_class = ErrorClass.NETWORK_ERROR


class P4TimeoutError(RetryableError):
    """p4 did not finish within the configured timeout; the child was killed."""

    error_class = ErrorClass.NETWORK_TIMEOUT


class P4ServerBusyError(RetryableError):
    """The server said to try again later (database busy, too many clients, partner exited)."""

    error_class = ErrorClass.UPSTREAM_ERROR


class P4NotFoundError(NotFoundError):
    """Unknown changelist, or no such file revision."""


class P4AuthError(AuthError):
    """Password/ticket invalid or expired, or protections deny the service user. Retrying
    cannot help until an operator rotates the ticket or fixes the protections table."""


class P4ArgumentError(ValidationError):
    """An untrusted value (depot path, user name) would be unsafe as a p4 argument."""


class P4CommandError(NonRetryableError):
    """Any other p4 failure: a non-zero exit or an error record we do not recognise, or
    output we cannot parse. Classified INTERNAL_BUG (non-retryable) on purpose: UPSTREAM_ERROR
    is retryable in errors.RETRYABLE_CLASSES, and an unrecognised p4 answer (usage error,
    unsupported server, malformed output) repeats identically on retry and would only burn
    the stage budget. Known-transient server messages map to P4ServerBusyError instead."""

    error_class = ErrorClass.INTERNAL_BUG


# (pattern in p4's message, exception) in priority order; first match wins.
_CLASSIFY: tuple[tuple[re.Pattern[str], type[Exception]], ...] = (
    (re.compile(r"connection timed out|operation timed out|receive exceeded maximum", re.I), P4TimeoutError),
    (re.compile(r"connect to server failed|tcp connect|connection refused|connection reset|"
                r"tcp (send|receive) failed|ssl (connect|receive|send)|name or service not known", re.I),
     P4ConnectionError),
    (re.compile(r"password \(p4passwd\) invalid|password invalid|password must be set|session has expired|"
                r"ticket.*expired|please login|login again|don't have permission|no permission|"
                r"protections|p4 protect", re.I),
     P4AuthError),
    (re.compile(r"change \d+ unknown|no such file|no such changelist|unknown user", re.I), P4NotFoundError),
    (re.compile(r"busy|try again|too many clients|partner exited unexpectedly|server is shutting down", re.I),
     P4ServerBusyError),
)


# --- runner -----------------------------------------------------------------------------------
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
        child_env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8",
                     "HOME": os.environ.get("HOME", "/tmp"), "P4ENVIRO": os.devnull}
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

    def run_text(self, args: Sequence[str], *, changelist_id: int | None = None) -> bytes:
        """Run `p4 ARGS` and return raw stdout bytes."""
        stdout, stderr, code = self._run(list(args), args, changelist_id)
        message = _text(stderr)
        # p4 reports some failures (e.g. "no such file(s).") on stderr with exit 0.
        if code != 0 or (message and any(pattern.search(message) for pattern, _ in _CLASSIFY)):
            raise self._error(args[0], message or f"exit status {code}")
        return stdout

    def _run(self, argv: list[str], args: Sequence[str], changelist_id: int | None) -> tuple[bytes, bytes, int]:
        command = self._check(args)
        fault(FaultPoint.P4_TIMEOUT)
        started = time.monotonic()
        try:
            # New session so a timeout kills the whole process group, not just the parent.
            proc = subprocess.Popen(
                [self._executable, *argv], shell=False, env=self._env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
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
            if not isinstance(arg, str) or _CONTROL.search(arg):
                raise P4ArgumentError(f"p4 {command}: argument contains control characters")
            if arg.startswith("-") and arg not in _ALLOWED_OPTIONS[command]:
                raise P4ArgumentError(f"p4 {command}: option not allowed")
        if not _REQUIRED_OPTIONS.get(command, frozenset()) <= set(args):
            raise P4ArgumentError(f"p4 {command}: a required option is missing")
        return command

    def _error(self, command: str, message: str) -> Exception:
        safe = self._sanitize(message)
        for pattern, exc_type in _CLASSIFY:
            if pattern.search(message):
                return exc_type(f"p4 {command}: {safe}")
        return P4CommandError(f"p4 {command}: {safe}")

    def _sanitize(self, message: str) -> str:
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return _CONTROL.sub(" ", message).strip()[:300]

    @staticmethod
    def _log(command: str, args: Sequence[str], changelist_id: int | None, started: float, code: int | None) -> None:
        logger.info("p4 command finished", extra={
            "p4_command": command, "p4_arg_count": len(args), "changelist_id": changelist_id,
            "exit_code": code, "duration_ms": round((time.monotonic() - started) * 1000),
        })


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").strip()


def decode_marshal_stream(data: bytes) -> list[dict[bytes, Any]]:
    """Decode concatenated `p4 -G` records (marshal version 0 dicts of bytes/int).

    A strict hand-written reader instead of `marshal.loads`: the stdlib module is documented
    as unsafe for untrusted data, and these records carry user-controlled descriptions.
    """
    records: list[dict[bytes, Any]] = []
    pos = 0

    def take(count: int) -> bytes:
        nonlocal pos
        if pos + count > len(data):
            raise ValueError("truncated marshal data")
        chunk = data[pos:pos + count]
        pos += count
        return chunk

    def value() -> Any:
        tag = take(1)
        if tag == b"s":  # bytes (p4 strings)
            return take(int.from_bytes(take(4), "little"))
        if tag == b"u":  # str, as Python itself would write a text value
            return take(int.from_bytes(take(4), "little"))
        if tag == b"i":
            return int.from_bytes(take(4), "little", signed=True)
        if tag == b"N":
            return None
        raise ValueError(f"unsupported marshal type {tag!r}")

    while pos < len(data):
        if take(1) != b"{":
            raise ValueError("expected a dict record")
        record: dict[bytes, Any] = {}
        while data[pos:pos + 1] != b"0":
            key = value()
            if not isinstance(key, bytes):
                raise ValueError("non-bytes key")
            record[key] = value()
        pos += 1
        records.append(record)
    return records


# --- fetcher ----------------------------------------------------------------------------------
_ADD_ACTIONS = frozenset({"add", "branch", "move/add", "import"})
_EDIT_ACTIONS = frozenset({"edit", "integrate"})
_DELETE_ACTIONS = frozenset({"delete", "move/delete", "purge"})
_BINARY_BASES = frozenset({"binary", "ubinary", "xbinary", "uxbinary", "apple", "resource", "uresource",
                           "tempobj", "xtempobj"})


def is_binary_type(file_type: str) -> bool:
    """`binary+l`, `ubinary`, `apple`... (modifiers after `+` never make text binary)."""
    return file_type.split("+", 1)[0].strip().lower() in _BINARY_BASES


def _untrusted(value: str, what: str) -> str:
    """Values from the server or a request: refuse option look-alikes and control chars."""
    if not value or value.startswith("-") or _CONTROL.search(value):
        raise P4ArgumentError(f"unsafe {what}")
    return value


def _depot_path(path: str) -> str:
    _untrusted(path, "depot path")
    # p4 escapes @ # % * in file names, so raw ones (or "...") would be revision specifiers or
    # wildcards: they could widen a one-file command to many files.
    if not path.startswith("//") or any(token in path for token in ("@", "#", "*", "...")):
        raise P4ArgumentError("unsafe depot path")
    return path


def _decode(value: bytes | None) -> str:
    return decode_text(value or b"")


def decode_text(raw: bytes) -> str:
    """UTF-8, else Windows-1252: a non-unicode Perforce server stores whatever bytes the
    client sent, and on such servers that is almost always cp1252 (a superset of Latin-1)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def _int(value: bytes | None) -> int | None:
    text = _decode(value)
    return int(text) if text.isascii() and text.isdigit() else None


class ChangeFetcher:
    """Fetches a change's metadata and per-file unified diffs, one p4 command per file, and
    enforces the depot allow-list.

    The list is checked twice: on the paths `describe -s` reports (metadata, no content), and
    again in `file_diff` before any per-file command. A refused file is never fetched in any
    form (there is no whole-change diff: `describe` always carries -s, and every p4 command
    names one file); it stays in the coverage as skipped, and its denial is a security event.
    """

    def __init__(self, runner: P4Runner, *, allow_list: DepotAllowList,
                 max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self._runner = runner
        self._allow_list = allow_list
        self._max_bytes = max_file_bytes
        # fileSize from describe, keyed by (change, kind, path, rev): ChangedFile has no size field.
        self._sizes: dict[tuple[int, str, str, int], int] = {}

    def describe(self, changelist_id: int, kind: ChangeKind) -> ChangeDescription:
        """`p4 -G describe -s [-S] N`: metadata only (no content), every file the server lists."""
        if isinstance(changelist_id, bool) or not isinstance(changelist_id, int) or changelist_id <= 0:
            raise P4ArgumentError("changelist id must be a positive integer")
        kind = ChangeKind(kind)
        args = ["describe", "-s", *(["-S"] if kind is ChangeKind.SHELVED else []), str(changelist_id)]
        records = self._runner.run_marshal(args, changelist_id=changelist_id)
        if len(records) != 1:
            raise P4CommandError(f"p4 describe: expected one record, got {len(records)}")
        record = records[0]
        status = _decode(record.get(b"status"))
        # p4 follows a renumbered (submitted) change, so trust the number it answers with.
        number = _int(record.get(b"change")) or changelist_id
        # `describe -S` of a submitted change answers with no shelf; a pending change is not
        # (yet) a submitted one. Either way the change the caller asked for does not exist.
        if (kind is ChangeKind.SHELVED) != (status in ("pending", "shelved")):
            raise P4NotFoundError(f"change {changelist_id} is not a {kind.value} change")
        files = []
        index = 0
        while b"depotFile%d" % index in record:
            suffix = str(index).encode()
            changed = ChangedFile(
                depot_path=_decode(record[b"depotFile" + suffix]), action=_decode(record.get(b"action" + suffix)),
                file_type=_decode(record.get(b"type" + suffix)),
                revision=_int(record.get(b"rev" + suffix)) or 0,  # a shelved add may say "none"
            )
            size = _int(record.get(b"fileSize" + suffix))
            if size is not None:
                self._sizes[(number, kind.value, changed.depot_path, changed.revision)] = size
            files.append(changed)
            index += 1
        return ChangeDescription(
            changelist_id=number, kind=kind, owner=_decode(record.get(b"user")),
            client=_decode(record.get(b"client")), status=status, description=_decode(record.get(b"desc")),
            time=_int(record.get(b"time")), files=files,
        )

    def user(self, name: str) -> P4User:
        records = self._runner.run_marshal(["user", "-o", _untrusted(name, "user name")])
        if len(records) != 1:
            raise P4CommandError(f"p4 user: expected one record, got {len(records)}")
        record = records[0]
        return P4User(
            user=_decode(record.get(b"User")) or name,
            email=_decode(record.get(b"Email")) or None,
            full_name=_decode(record.get(b"FullName")) or None,
        )

    def denied_files(self, description: ChangeDescription, *, job_id: str | None = None) -> set[str]:
        """First check, on the metadata: the listed paths the allow-list refuses (each reported)."""
        denied = set()
        for changed in description.files:
            decision = self._allow_list.check(changed.depot_path)
            if not decision.allowed:
                report_path_denied(decision, check="describe", description=description, job_id=job_id)
                denied.add(changed.depot_path)
        return denied

    def file_diff(self, description: ChangeDescription, changed: ChangedFile, *,
                  job_id: str | None = None) -> FileDiff:
        path, action, number = changed.depot_path, changed.action, description.changelist_id

        def skipped(reason: SkipReason) -> FileDiff:
            return FileDiff(depot_path=path, action=action, status=DiffStatus.SKIPPED, skip_reason=reason)

        # Second check: nothing below names this file to p4 unless the list allows it here.
        decision = self._allow_list.check(path)
        if not decision.allowed:
            report_path_denied(decision, check="fetch", description=description, job_id=job_id)
            return skipped(SkipReason.OUTSIDE_ALLOW_LIST)
        if action in _DELETE_ACTIONS:
            return skipped(SkipReason.DELETED)
        if action == "archive":
            return skipped(SkipReason.ARCHIVED)
        if is_binary_type(changed.file_type):
            return skipped(SkipReason.BINARY)
        size = self._sizes.get((number, description.kind.value, path, changed.revision))
        if size is not None and size > self._max_bytes:
            return skipped(SkipReason.TOO_LARGE)
        # The server's own spelling (escaped), never the normalized form: that is what was allowed.
        operand = _depot_path(path)
        shelved = description.kind is ChangeKind.SHELVED
        if action in _ADD_ACTIONS or (action in _EDIT_ACTIONS and not shelved and changed.revision <= 1):
            spec = f"{operand}@={number}" if shelved else f"{operand}#{changed.revision}"
            content = self._runner.run_text(["print", "-q", spec], changelist_id=number)
            if len(content) > self._max_bytes:
                return skipped(SkipReason.TOO_LARGE)
            return FileDiff(depot_path=path, action=action, status=DiffStatus.FETCHED,
                            unified_diff=added_file_diff(path, content))
        if action in _EDIT_ACTIONS:
            if shelved:  # shelved content against the depot head it would replace
                left, right = operand, f"{operand}@={number}"
            else:
                left, right = f"{operand}#{changed.revision - 1}", f"{operand}#{changed.revision}"
            output = self._runner.run_text(["diff2", "-du", left, right], changelist_id=number)
            if len(output) > self._max_bytes:
                return skipped(SkipReason.TOO_LARGE)
            diff = normalize_diff2(path, output)
            if diff is None:
                return skipped(SkipReason.IDENTICAL)
            return FileDiff(depot_path=path, action=action, status=DiffStatus.FETCHED, unified_diff=diff)
        return skipped(SkipReason.UNSUPPORTED_ACTION)

    def fetch(self, changelist_id: int, kind: ChangeKind, *, parallelism: int = 8,
              job_id: str | None = None) -> ChangeSnapshot:
        """The whole change in memory (tests, benchmarks); the fetch stage streams instead."""
        description = self.describe(changelist_id, kind)
        diffs = list(self.iter_file_diffs(description, parallelism=parallelism, job_id=job_id))
        return ChangeSnapshot(description=description, diffs=diffs)

    def iter_file_diffs(self, description: ChangeDescription, *, parallelism: int = 8,
                        job_id: str | None = None) -> Iterator[FileDiff]:
        """Check the paths, then one p4 command per allowed file, yielding the diffs in describe
        order. Per-file commands are latency-bound (a server round trip each), so a few run at
        once; at most 2 x `parallelism` diffs are held at a time, whatever the change's size."""
        denied = self.denied_files(description, job_id=job_id)

        def one(changed: ChangedFile) -> FileDiff:
            if changed.depot_path in denied:  # already reported by the first check
                return FileDiff(depot_path=changed.depot_path, action=changed.action,
                                status=DiffStatus.SKIPPED, skip_reason=SkipReason.OUTSIDE_ALLOW_LIST)
            try:
                return self.file_diff(description, changed, job_id=job_id)
            except P4NotFoundError:
                # Obliterated or re-shelved between describe and diff: skip this file only.
                return FileDiff(depot_path=changed.depot_path, action=changed.action,
                                status=DiffStatus.SKIPPED, skip_reason=SkipReason.NOT_FOUND)

        if parallelism <= 1 or len(description.files) <= 1:
            for changed in description.files:
                yield one(changed)
            return
        pool = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="p4-file")
        window: deque[Future[FileDiff]] = deque()
        try:
            for changed in description.files:
                window.append(pool.submit(one, changed))
                if len(window) >= 2 * parallelism:
                    yield window.popleft().result()
            while window:
                yield window.popleft().result()
        finally:
            # A consumer that stops early (an error downstream) must not leave commands queued.
            pool.shutdown(wait=True, cancel_futures=True)


def report_path_denied(decision: PathDecision, *, check: str, description: ChangeDescription,
                       job_id: str | None) -> None:
    """The security event of one denial: what was refused, why and where; never file content."""
    logger.warning("depot path denied", extra={
        "security_event": "depot_path_denied",
        "check": check,  # "describe" (metadata) or "fetch" (before a per-file command)
        "reason": decision.reason.value if decision.reason else None,
        "depot_path": sanitize_for_log(decision.path),
        "normalized_path": sanitize_for_log(decision.normalized) if decision.normalized else None,
        "job_id": job_id,
        "changelist_id": description.changelist_id,
        "change_kind": description.kind.value,
    })
    metrics.add_metric(name="SecurityPathDenied", unit="Count", value=1)


# --- diff text ----------------------------------------------------------------------------------
def _header_name(path: str) -> str:
    return path[2:] if path.startswith("//") else path


def normalize_diff2(path: str, output: bytes) -> str | None:
    """`p4 diff2 -du` output -> standard unified diff (`--- a/...`, `+++ b/...`, hunks).

    Drops p4's `==== ... ====` header and its own ---/+++ lines; None when there is no
    textual difference (`==== identical`, type-only change, binary).
    """
    lines = decode_text(output).split("\n")
    body = [line for line in lines if not line.startswith("==== ")]
    while body and (body[0].startswith("--- ") or body[0].startswith("+++ ")):
        body.pop(0)
    if not any(line.startswith("@@") for line in body):
        return None
    text = "\n".join(body)
    name = _header_name(path)
    return f"--- a/{name}\n+++ b/{name}\n{text if text.endswith(chr(10)) else text + chr(10)}"


def added_file_diff(path: str, content: bytes) -> str:
    """Whole new file as a unified diff: `--- /dev/null`, `+++ b/...`, one `@@ -0,0 +1,N @@`."""
    text = decode_text(content).removeprefix("\ufeff")
    header = f"--- /dev/null\n+++ b/{_header_name(path)}\n"
    if not text:
        return header
    # split("\n"), not splitlines(): the latter also breaks on \x0c, \x1c, \u2028 ...
    lines = text.split("\n")
    missing_newline = lines[-1] != ""
    if not missing_newline:
        lines.pop()
    hunk = "".join(f"+{line}\n" for line in lines)
    tail = "\\ No newline at end of file\n" if missing_newline else ""
    return f"{header}@@ -0,0 +1,{len(lines)} @@\n{hunk}{tail}"
