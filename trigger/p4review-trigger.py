#!/usr/bin/env python3
"""p4review-trigger: the Perforce side of p4review.

One self-contained file for the Perforce server host: the system python3 (3.8 or newer) and its
standard library, nothing else. It never slows or fails the user's command and never loses a
changelist:

* As a trigger (change-commit, shelve-commit, shelve-delete) it writes the event durably to a
  spool directory (temporary file, fsync, atomic rename), starts a detached sender and exits 0
  at once, whatever happens. Errors go to its log, never to the user.
* The sender (and `--drain`, run by a timer) turns each spooled event into a review request:
  it asks Perforce for the review version (an atomic `p4 key -i`), records it in the event, signs
  the request and posts it. A failure leaves the event spooled; an answer the API will never
  accept moves it to `rejected/` with that answer. Idempotency keys are deterministic, so a
  re-send is a replay at the API, never a second review.
* `--catch-up` (same timer) posts submitted changes that never reached the spool (trigger host
  down, trigger disabled, spool lost), from the mark kept in a `p4 key`.
* `-o` prints the trigger table lines, `--ping` checks everything end to end, `--status` shows
  the spool.

Usage:
  p4review-trigger.py [-c FILE] -t change-commit -v %change% [-w %oldchangelist%]
  p4review-trigger.py [-c FILE] -t shelve-commit -v %change%
  p4review-trigger.py [-c FILE] -t shelve-delete -v %change%
  p4review-trigger.py [-c FILE] -o [DEPOT_PATH ...]
  p4review-trigger.py [-c FILE] --ping
  p4review-trigger.py [-c FILE] --drain [--force] [--catch-up [--since CHANGE]]
  p4review-trigger.py [-c FILE] --status

Configuration: KEY=value lines, from -c FILE, else $P4REVIEW_TRIGGER_CONFIG, else
/etc/perforce/p4review-trigger.conf, /opt/perforce/etc/p4review-trigger.conf, else
p4review-trigger.conf beside this script. The keys are listed in CONFIG_KEYS below and in
p4review-trigger.conf.example.
"""

from __future__ import annotations

# Only what the trigger path needs is imported here: it must start, spool and exit in a few
# milliseconds (p4d waits for it). The sender and the admin commands load the rest with
# load_sender_modules().
import errno
import os
import sys
import time

VERSION = "1.0.0"
PROGRAM = "p4review-trigger"
CONFIG_NAME = "p4review-trigger.conf"
CONFIG_ENV = "P4REVIEW_TRIGGER_CONFIG"
IS_WINDOWS = os.name == "nt"

# What a trigger table line may pass as -t, and what each becomes.
TRIGGER_TYPES = ("change-commit", "shelve-commit", "shelve-delete")
SUBMITTED, SHELVED = "submitted", "shelved"

# The API contract (see the service's README): route paths are signed, not the URL's path,
# because API Gateway strips the stage before the function sees the request.
REVIEWS_ROUTE = "/v1/reviews"
PING_ROUTE = "/v1/ping"
TIMESTAMP_HEADER = "X-P4Review-Timestamp"
SIGNATURE_HEADER = "X-P4Review-Signature"
MAX_CHANGE = 2147483647  # Perforce change numbers are positive 32-bit integers
# Answers that say "not now" rather than "never": the event stays spooled.
RETRY_LATER_STATUSES = frozenset({401, 408, 429})

# Spool layout (all under SPOOL_DIR).
TMP, PENDING, DONE, REJECTED, CORRUPT = "tmp", "pending", "done", "rejected", "corrupt"
FOLDERS = (TMP, PENDING, DONE, REJECTED, CORRUPT)
SPOOL_FIX = "the spool must belong to the account p4d runs as, writable by it alone (install -d -o ACCOUNT -m 700)"
STATE_FILE, LOCK_FILE = "state.json", "drain.lock"
# A temporary file this old belongs to a writer that died before its rename.
ORPHAN_TMP_AGE_SECONDS = 60.0

CONFIG_KEYS = {
    # key: (default, description)
    "API_URL": ("", "base URL of the p4review API, with its stage, e.g. https://abc.execute-api.eu-west-1.amazonaws.com/prod"),
    "SECRET_FILE": ("", "file holding the request-signing secret; readable by its owner only"),
    "SPOOL_DIR": ("", "spool directory (default: /var/spool/p4review-trigger, or %ProgramData%\\p4review-trigger\\spool)"),
    "LOG_FILE": ("", "log file (default: SPOOL_DIR/p4review-trigger.log)"),
    "PATHS": ("//...", "depot path patterns, space-separated: the -o lines and what --catch-up lists"),
    "SEND_MODE": ("background", "background: start a detached sender after spooling; spool-only: leave it to --drain (forced on Windows)"),
    "SEND_TIMEOUT": ("5", "seconds for each HTTPS request"),
    "CA_FILE": ("", "PEM bundle to verify the API's certificate (default: the system's)"),
    "P4": ("p4", "the p4 executable for the trigger's own p4 calls"),
    "P4PORT": ("", "P4PORT for those calls (empty: p4's default)"),
    "P4USER": ("", "user for those calls: needs 'review' access to set p4 keys"),
    "P4TICKETS": ("", "p4 tickets file holding that user's ticket (p4 login -a)"),
    "P4TICKET_FILE": ("", "or: a file holding just the ticket value; readable by its owner only"),
    "P4TRUST": ("", "p4 trust file for ssl: ports"),
    "P4_TIMEOUT": ("30", "seconds for each p4 command"),
    "KEY_PREFIX": ("p4review", "prefix of the p4 keys the trigger keeps (versions, shelf digests, catch-up mark)"),
    "DRAIN_BACKOFF_BASE": ("30", "seconds: full-jitter backoff of --drain after a failed run starts here"),
    "DRAIN_BACKOFF_MAX": ("600", "seconds: and doubles up to this"),
    "DRAIN_MAX_SECONDS": ("50", "a --drain run stops starting new sends after this long"),
    "CATCHUP_GRACE": ("120", "seconds: --catch-up leaves changes this recent to the trigger"),
    "CATCHUP_MAX": ("500", "at most this many changes per --catch-up run"),
    "DONE_RETENTION_DAYS": ("7", "days to keep answered events in SPOOL_DIR/done"),
}
_INT_KEYS = {"SEND_TIMEOUT": (1, 120), "P4_TIMEOUT": (1, 3600), "DRAIN_BACKOFF_BASE": (1, 86400),
             "DRAIN_BACKOFF_MAX": (1, 86400), "DRAIN_MAX_SECONDS": (1, 86400), "CATCHUP_GRACE": (0, 86400),
             "CATCHUP_MAX": (1, 100000), "DONE_RETENTION_DAYS": (0, 3650)}
# The furthest ahead a failed --drain puts the next one: DRAIN_BACKOFF_MAX's ceiling (and more than
# the 3600 s a Retry-After may ask).
_LONGEST_BACKOFF = _INT_KEYS["DRAIN_BACKOFF_MAX"][1]
_FILE_KEYS = ("SECRET_FILE", "SPOOL_DIR", "LOG_FILE", "CA_FILE", "P4TICKETS", "P4TICKET_FILE", "P4TRUST", "P4")
# What printable() escapes: every character that breaks a line (for a terminal, a log reader or
# Python's str.splitlines), drives a terminal (C0, DEL, C1: ESC, CSI, OSC) or reorders text on
# screen (bidirectional controls). Lone surrogates (undecodable bytes in a file name) too, by
# printable() itself.
_CONTROL_ESCAPES = {code: "\\x%02x" % code for code in list(range(0x20)) + list(range(0x7f, 0xa0))}
_CONTROL_ESCAPES.update({code: "\\u%04x" % code for code in [0x061c, 0x200e, 0x200f, 0x2028, 0x2029] +
                         list(range(0x202a, 0x202f)) + list(range(0x2066, 0x206a))})
# File-open flags: never follow a symbolic link planted at the last component, never wait on a
# FIFO planted there (its owner is checked only once it is open), never leak the descriptor into
# the detached sender or p4.
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | \
    getattr(os, "O_BINARY", 0)


def load_sender_modules() -> None:
    """Import what sending, resolving and the admin commands need (not the trigger path)."""
    global argparse, hashlib, hmac, io, json, marshal, random, re, socket, stat, subprocess
    global _KEY_PREFIX_PATTERN, _DEPOT_PATTERN, _P4_UNREACHABLE, _P4_CHANGE_UNKNOWN
    import argparse
    import hashlib
    import hmac
    import io
    import json
    import marshal
    import random
    import re
    import socket
    import stat
    import subprocess

    _KEY_PREFIX_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    _DEPOT_PATTERN = re.compile(r"^-?//[^\s\"\x00-\x1f\x7f][^\"\x00-\x1f\x7f]*$")
    # p4 errors that mean "the server or our login", not "this change": the event waits.
    _P4_UNREACHABLE = re.compile(r"connect to server failed|tcp connect|P4PASSWD|session has expired|please login|"
                                 r"database is busy|ssl|timed out|fatal client error|check \$P4PORT", re.I)
    # p4 errors that mean the change itself is gone: nothing will ever review it.
    _P4_CHANGE_UNKNOWN = re.compile(r"change [0-9]+ unknown|no such changelist", re.I)


# --- small helpers ------------------------------------------------------------------------------
def utc_iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + ".%06dZ" % int((epoch % 1) * 1e6)


def printable(value: object, limit: int = 200) -> str:
    """A value as it may appear in a log line or on a terminal: line breaks, terminal controls and
    bidirectional controls escaped, length bounded. Every untrusted text (file names, p4 and API
    answers, a spooled last_error) is shown through this one function."""
    text = (value if isinstance(value, str) else str(value)).translate(_CONTROL_ESCAPES)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates -> \udcxx
    return text if len(text) <= limit else text[:limit] + "..."


def parse_change(text: object) -> int | None:
    """A Perforce change number, or None: ASCII digits only, 1..2^31-1. Nothing else reaches p4
    or a file name."""
    if not isinstance(text, str) or not (text.isascii() and text.isdigit()) or len(text) > 10:
        return None
    number = int(text)
    return number if 0 < number <= MAX_CHANGE else None


class TriggerError(Exception):
    """A problem with a clear one-line explanation (config, secret, p4, spool)."""


class ConfigError(TriggerError):
    pass


class UnsafeSpool(TriggerError):
    """A spool, log or lock path that another local account could change or redirect."""


def unsafe_reason(info: os.stat_result, directory: bool, one_link: bool = True) -> str | None:
    """Why a file or folder the trigger trusts could be changed by another local account, or None.
    Trusted: owned by this account (the effective uid) or root, writable by nobody else, not a
    symbolic link; a file has no other hard link (a link to, say, ~/.bashrc). POSIX only: on
    Windows modes and owners mean little, so nothing is checked there (protect it with ACLs)."""
    if IS_WINDOWS:
        return None
    import stat  # already loaded by os: free on the trigger path

    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if directory and not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if not directory and not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_uid not in (os.geteuid(), 0):
        return "is owned by uid %d, not by this account (uid %d) or root" % (info.st_uid, os.geteuid())
    if info.st_mode & 0o022:
        return "is writable by group or others (mode %o)" % stat.S_IMODE(info.st_mode)
    if not directory and one_link and info.st_nlink > 1:
        return "has %d hard links" % info.st_nlink
    return None


def open_trusted(path: str, flags: int, what: str, mode: int = 0o600) -> int:
    """os.open without following a symbolic link, then refuse what another account could have
    planted there (UnsafeSpool). The caller closes the descriptor."""
    try:
        fd = os.open(path, flags | _NO_FOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeSpool("%s %s is a symbolic link" % (what, printable(path)))
        raise
    problem = unsafe_reason(os.fstat(fd), directory=False)
    if problem:
        os.close(fd)
        raise UnsafeSpool("%s %s %s" % (what, printable(path), problem))
    return fd


def read_trusted(path: str, what: str, limit: int = 65536) -> bytes:
    """A spool file's bytes (at most `limit`), refused when another account could have written it."""
    fd = open_trusted(path, os.O_RDONLY, what)
    try:
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError("larger than %d bytes" % limit)
    return data


# --- configuration -----------------------------------------------------------------------------
class Config:
    def __init__(self, values: dict, source: str):
        self.values = values
        self.source = source

    def __getitem__(self, key: str) -> str:
        return self.values[key]

    def number(self, key: str) -> int:
        return int(self.values[key])

    @property
    def spool_dir(self) -> str:
        return self.values["SPOOL_DIR"]

    @property
    def log_file(self) -> str:
        return self.values["LOG_FILE"] or os.path.join(self.spool_dir, PROGRAM + ".log")

    @property
    def paths(self) -> list:
        return self.values["PATHS"].split()

    @property
    def send_mode(self) -> str:
        return "spool-only" if IS_WINDOWS else self.values["SEND_MODE"]


def config_candidates(explicit: str | None, environ: dict, script_dir: str) -> list:
    if explicit:
        return [explicit]
    if environ.get(CONFIG_ENV):
        return [environ[CONFIG_ENV]]
    candidates = [] if IS_WINDOWS else ["/etc/perforce/" + CONFIG_NAME, "/opt/perforce/etc/" + CONFIG_NAME]
    return candidates + [os.path.join(script_dir, CONFIG_NAME)]


def find_config(explicit: str | None = None, environ: dict | None = None, script_dir: str | None = None) -> str:
    """The first config file on the search path; -c and $P4REVIEW_TRIGGER_CONFIG must exist."""
    environ = os.environ if environ is None else environ
    script_dir = script_dir or os.path.dirname(os.path.abspath(__file__))
    candidates = config_candidates(explicit, environ, script_dir)
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    if explicit or environ.get(CONFIG_ENV):
        raise ConfigError("config file %s does not exist" % printable(candidates[0]))
    raise ConfigError("no config file: tried %s" % ", ".join(candidates))


def parse_config_text(text: str, source: str, validate: bool = True) -> Config:
    """KEY=value lines. The trigger path (validate=False) checks only what spooling needs, so a
    mistake elsewhere (say API_URL) still spools the event; the sender reports it."""
    values = {key: default for key, (default, _) in CONFIG_KEYS.items()}
    seen = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ConfigError("%s line %d: expected KEY=value" % (source, number))
        if key not in CONFIG_KEYS:
            raise ConfigError("%s line %d: unknown key %s" % (source, number, printable(key, 40)))
        if key in seen:
            raise ConfigError("%s line %d: %s is set twice" % (source, number, key))
        seen.add(key)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if value != value.translate(_CONTROL_ESCAPES):
            raise ConfigError("%s line %d: %s contains control characters" % (source, number, key))
        values[key] = value
    if not values["SPOOL_DIR"]:
        values["SPOOL_DIR"] = (os.path.join(os.environ.get("ProgramData", "C:\\ProgramData"), PROGRAM, "spool")
                               if IS_WINDOWS else "/var/spool/" + PROGRAM)
    for key in ("SPOOL_DIR", "LOG_FILE"):
        if values[key] and not os.path.isabs(values[key]):
            raise ConfigError("%s: %s must be an absolute path" % (source, key))
    if values["SEND_MODE"] not in ("background", "spool-only"):
        raise ConfigError("%s: SEND_MODE must be background or spool-only" % source)
    if validate:
        validate_config(values, source)
    return Config(values, source)


def validate_config(values: dict, source: str) -> None:
    for key, (low, high) in _INT_KEYS.items():
        text = values[key]
        if not re.fullmatch(r"[0-9]{1,6}", text) or not low <= int(text) <= high:
            raise ConfigError("%s: %s must be a whole number from %d to %d" % (source, key, low, high))
    if not _KEY_PREFIX_PATTERN.match(values["KEY_PREFIX"]):
        raise ConfigError("%s: KEY_PREFIX must be letters, digits, '_', '.', '-'" % source)
    for path in values["PATHS"].split():
        if not _DEPOT_PATTERN.match(path):
            raise ConfigError("%s: PATHS entry %s is not a depot path such as //depot/..." % (source, printable(path, 80)))
    if not values["PATHS"].split():
        raise ConfigError("%s: PATHS is empty" % source)
    for key in _FILE_KEYS:
        if values[key] and key != "P4" and not os.path.isabs(values[key]):
            raise ConfigError("%s: %s must be an absolute path" % (source, key))
    url = values["API_URL"]
    if url:
        match = re.match(r"^(https?)://([^/?#@\s]+)(/[^?#\s]*)?$", url)
        if not match:
            raise ConfigError("%s: API_URL must look like https://host/stage" % source)
        host = match.group(2).rsplit(":", 1)[0].strip("[]").lower()
        if match.group(1) == "http" and host not in ("localhost", "127.0.0.1", "::1"):
            raise ConfigError("%s: API_URL must use https (plain http only to localhost)" % source)


def load_config(explicit: str | None = None, validate: bool = True) -> Config:
    """The config, refused when another account could have written it: it names the program the
    trigger runs (P4) and where it writes. A BOM (Notepad's UTF-8) is accepted."""
    path = find_config(explicit)
    try:
        # It may be a symbolic link an admin made; O_NONBLOCK: a FIFO would hold p4d's command.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "r", encoding="utf-8-sig") as handle:
            problem = unsafe_reason(os.fstat(handle.fileno()), directory=False, one_link=False)
            if problem:
                raise ConfigError("config file %s %s: another account could change what the trigger runs; "
                                  "chown it to this account or root and chmod go-w it" % (printable(path), problem))
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("cannot read config file %s: %s" % (printable(path), printable(exc, 120)))
    return parse_config_text(text, path, validate)


def read_private_file(path: str, what: str) -> str:
    """The stripped content of a credential file that only its owner can read. Checked on the
    open file (fstat), not on its name: a name checked, then opened, may have been swapped between
    the two (for another account's file, or a FIFO that would hold the sender and its lock)."""
    if not path:
        raise ConfigError("%s is not configured" % what)
    try:
        # It may be a symbolic link an admin made; O_NONBLOCK: a FIFO must not hold us.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ConfigError("cannot read %s %s: %s" % (what, printable(path), exc.strerror or exc))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError("%s %s is not a regular file" % (what, printable(path)))
        if not IS_WINDOWS and info.st_mode & 0o077:
            raise ConfigError("%s %s can be read by others (mode %o): chmod 600 it" % (
                what, printable(path), stat.S_IMODE(info.st_mode)))
        if not IS_WINDOWS and info.st_uid not in (os.geteuid(), 0):
            raise ConfigError("%s %s is owned by uid %d, not by this account: chown it" % (
                what, printable(path), info.st_uid))
        value = os.read(fd, 65536).decode("utf-8-sig").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("cannot read %s %s: %s" % (what, printable(path), printable(exc, 120)))
    finally:
        os.close(fd)
    if not value:
        raise ConfigError("%s %s is empty" % (what, printable(path)))
    return value


# --- log ------------------------------------------------------------------------------------------
class Log:
    """One line per event: UTC time, level, pid, event name, key=value fields. Appends to the log
    file; when that fails, to syslog (POSIX). Never to the user's terminal in trigger mode.

    The log file is refused (lines go to syslog, with one line saying why) when another account
    could redirect it: a symbolic link, a hard link, a file or folder it owns or can write."""

    def __init__(self, path: str | None, echo: bool = False, clock=time.time):
        self.path = path
        self.echo = echo
        self.clock = clock
        self._refusal_reported = False

    def line(self, level: str, event: str, fields: dict) -> str:
        parts = ["%s=%s" % (key, _field(value)) for key, value in fields.items() if value is not None]
        return "%s %-5s [%d] %s %s" % (utc_iso(self.clock()), level, os.getpid(), event, " ".join(parts))

    def write(self, level: str, event: str, **fields) -> None:
        text = self.line(level, event, fields).rstrip()
        if self.echo:
            print(text, file=sys.stderr)
        if self.path:
            try:
                fd = self.open()
            except UnsafeSpool as exc:
                if not self._refusal_reported:
                    self._refusal_reported = True
                    _syslog("ERROR", self.line("ERROR", "log_file_refused", {
                        "reason": str(exc), "action": "log lines go to syslog; fix the file, see --ping"}))
            except OSError:
                pass
            else:
                try:
                    # O_APPEND: lines from concurrent trigger processes never interleave mid-line.
                    os.write(fd, (text + "\n").encode("utf-8", "replace"))
                    return
                except OSError:
                    pass
                finally:
                    os.close(fd)
        _syslog(level, text)

    def open(self, create: bool = True) -> int:
        """The log file open for appending (created 0600), or UnsafeSpool / OSError."""
        folder = os.path.dirname(self.path)
        try:
            problem = _root_problem(folder, check_holder=False)
        except FileNotFoundError:  # the first line ever: the spool (the default log's folder) may not exist yet
            if not create:
                raise
            os.makedirs(folder, mode=0o700, exist_ok=True)
            problem = _root_problem(folder, check_holder=False)
        if problem:
            raise UnsafeSpool("the log's folder %s %s" % (printable(folder), problem))
        flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
        return open_trusted(self.path, flags, "LOG_FILE")

    def info(self, event: str, **fields) -> None:
        self.write("INFO", event, **fields)

    def warning(self, event: str, **fields) -> None:
        self.write("WARN", event, **fields)

    def error(self, event: str, **fields) -> None:
        self.write("ERROR", event, **fields)


def _field(value: object) -> str:
    text = printable(value)
    if text and not any(char in text for char in ' "='):
        return text
    return '"%s"' % text.replace('"', '\\"')


def _syslog(level: str, text: str) -> None:
    try:
        import syslog  # POSIX only
    except ImportError:
        return
    priority = {"ERROR": syslog.LOG_ERR, "WARN": syslog.LOG_WARNING}.get(level, syslog.LOG_INFO)
    try:
        syslog.openlog(PROGRAM, 0, syslog.LOG_USER)
        syslog.syslog(priority, text)
    except OSError:
        pass


# --- spool ----------------------------------------------------------------------------------------
class Spool:
    """Events on disk. pending/ holds what must still be sent, oldest first by name; done/ what the
    API answered (or what needs no review); rejected/ what it will never accept, with its answer."""

    def __init__(self, root: str, clock=time.time):
        self.root = root
        self.clock = clock

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def ensure(self) -> None:
        """Create the spool (0700) where needed, and refuse it (UnsafeSpool) when another account
        could change it: it would decide what the trigger sends, logs and locks."""
        problem = _above_problem(self.root)  # before creating it where another account's link points
        if problem:
            raise UnsafeSpool("%s %s: %s" % (printable(self.root), problem, SPOOL_FIX))
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        self.check(self.root)  # before creating anything inside it
        for folder in FOLDERS:
            os.makedirs(self.path(folder), mode=0o700, exist_ok=True)
        for problem in self.problems():
            raise UnsafeSpool(problem)

    def check(self, path: str) -> None:
        problem = self._problem(path)
        if problem:
            raise UnsafeSpool(problem)

    def problems(self) -> list:
        """What another account could change in this spool, for each part that exists."""
        found = []
        for path in [self.root] + [self.path(name) for name in FOLDERS + (LOCK_FILE, STATE_FILE)]:
            problem = self._problem(path)
            if problem:
                found.append(problem)
        return found

    def _problem(self, path: str) -> str | None:
        try:
            problem = (_root_problem(path) if path == self.root else
                       unsafe_reason(os.lstat(path), directory=os.path.basename(path) in FOLDERS))
        except FileNotFoundError:
            return None
        except OSError as exc:
            return "%s: %s" % (printable(path), exc.strerror or exc)
        if problem:
            return "%s %s: %s" % (printable(path), problem, SPOOL_FIX)
        return None

    def read_event(self, path: str) -> dict:
        """A spooled event as written: refused (UnsafeSpool) when another account could have
        written it, ValueError when it is not a JSON object."""
        return _decode(read_trusted(path, "spool file"))

    # -- durable writes --
    def write_new(self, event: dict) -> str:
        """Write a new event into pending/: temporary file, fsync, atomic rename, fsync of the
        directory. Returns its path. On any error nothing is left half-written in pending/."""
        now = self.clock()
        # Names sort oldest first: UTC time to the microsecond, then what makes them unique.
        name = "%s%06dZ-%d-%s-%s-%d.json" % (
            time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)), int((now % 1) * 1e6),
            os.getpid(), os.urandom(3).hex(), event["trigger"], event["change"])
        temporary = self.path(TMP, name)
        _write_durably(temporary, _encode_flat(event))
        final = self.path(PENDING, name)
        os.replace(temporary, final)
        _fsync_directory(self.path(PENDING))
        return final

    def rewrite(self, path: str, event: dict) -> None:
        """Replace an event file atomically (its resolution or attempt count changed)."""
        temporary = self.path(TMP, "%s.%d.%s.rewrite" % (os.path.basename(path), os.getpid(), os.urandom(3).hex()))
        _write_durably(temporary, _encode(event))
        os.replace(temporary, path)
        _fsync_directory(os.path.dirname(path))

    def move(self, path: str, folder: str, event: dict | None = None) -> str:
        """Move an event to done/, rejected/ or corrupt/ (with its final content when given)."""
        target = self.path(folder, os.path.basename(path))
        if event is not None:
            self.rewrite(path, event)
        os.replace(path, target)
        _fsync_directory(self.path(folder))
        return target

    # -- reading --
    def pending(self) -> list:
        try:
            names = sorted(name for name in os.listdir(self.path(PENDING)) if name.endswith(".json"))
        except FileNotFoundError:
            return []
        return [self.path(PENDING, name) for name in names]

    def count(self, folder: str) -> int:
        try:
            return sum(1 for name in os.listdir(self.path(folder)) if name.endswith(".json"))
        except FileNotFoundError:
            return 0

    def recover_orphans(self, log: Log) -> int:
        """A writer killed between its fsync and its rename leaves a whole event in tmp/: move it
        into pending/. A writer killed mid-write leaves a torn file: keep it in corrupt/."""
        recovered = 0
        now = self.clock()
        try:
            names = sorted(os.listdir(self.path(TMP)))
        except FileNotFoundError:
            return 0
        for name in names:
            source = self.path(TMP, name)
            try:
                if now - os.stat(source).st_mtime < ORPHAN_TMP_AGE_SECONDS:
                    continue  # may still be being written
                if not name.endswith(".json"):
                    os.unlink(source)  # a rewrite, state or probe file: its original is intact
                    continue
                event = self.read_event(source)
            except FileNotFoundError:
                continue
            except (OSError, ValueError, UnsafeSpool) as exc:
                os.replace(source, self.path(CORRUPT, name))
                log.error("spool_file_corrupt", file=name, reason=str(exc), action="moved to corrupt/")
                continue
            os.replace(source, self.path(PENDING, name))
            _fsync_directory(self.path(PENDING))
            recovered += 1
            log.warning("spool_file_recovered", file=name, change=event.get("change"),
                        reason="its writer stopped before the rename")
        return recovered

    def put(self, folder: str, name: str, event: dict) -> str:
        """Write an event straight into done/ or rejected/ (catch-up posts without spooling)."""
        temporary = self.path(TMP, "%s.%d.%s.rewrite" % (name, os.getpid(), os.urandom(3).hex()))
        _write_durably(temporary, _encode(event))
        target = self.path(folder, name)
        os.replace(temporary, target)
        _fsync_directory(self.path(folder))
        return target

    def prune_done(self, retention_days: int) -> int:
        cutoff = self.clock() - retention_days * 86400
        removed = 0
        for name in os.listdir(self.path(DONE)):
            target = self.path(DONE, name)
            try:
                if os.stat(target).st_mtime < cutoff:
                    os.unlink(target)
                    removed += 1
            except OSError:
                pass
        return removed

    # -- drain state (backoff) --
    def load_state(self) -> dict:
        """The timer's backoff; {} when there is none or it is not what save_state writes."""
        try:
            state = self.read_event(self.path(STATE_FILE))
        except (OSError, ValueError, UnsafeSpool):
            return {}
        # save_state never sets the next attempt further ahead than the longest backoff: a time
        # beyond it (or infinite, or NaN) would stall every scheduled drain, or fail to print.
        next_attempt_at = state.get("next_attempt_at", 0)
        well_formed = _is_number(state.get("failures", 0), 0, 10 ** 6) and \
            type(next_attempt_at) in (int, float) and 0 <= next_attempt_at <= self.clock() + _LONGEST_BACKOFF and \
            isinstance(state.get("last_error", ""), str)
        return state if well_formed else {}

    def save_state(self, state: dict) -> None:
        temporary = self.path(TMP, "%s.%d.state" % (STATE_FILE, os.getpid()))
        _write_durably(temporary, _encode(state))
        os.replace(temporary, self.path(STATE_FILE))

    # -- one drain at a time --
    def try_lock(self):
        """An open lock file held exclusively, or None if another process holds it."""
        # Never through a symbolic link: it would create or lock a file elsewhere.
        handle = os.fdopen(open_trusted(self.path(LOCK_FILE), os.O_RDWR | os.O_CREAT, "the lock"), "r+b")
        try:
            if IS_WINDOWS:
                import msvcrt
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        return handle


def _root_problem(root: str, check_holder: bool = True) -> str | None:
    """SPOOL_DIR (or the log's folder) may be a symbolic link an admin (root or this account)
    made, never another account's. No folder above the spool (up to /, as named in the config and
    as resolved) may let another account rename it away (with a spooled shelve, which catch-up
    would not find) or put its own in its place: each owned by this account or root, writable by
    others only with the sticky bit (as /tmp), and no symbolic link on the way another account's.
    Not checked above the log's folder: /var/log is group-writable on Debian, and a log swapped
    away loses lines, not events."""
    link = os.lstat(root)
    if not IS_WINDOWS and link.st_uid not in (os.geteuid(), 0):
        import stat
        if stat.S_ISLNK(link.st_mode):
            return "is a symbolic link owned by uid %d" % link.st_uid
    problem = unsafe_reason(os.stat(root), directory=True)
    if problem or IS_WINDOWS or not check_holder:
        return problem
    return _above_problem(root)


def _above_problem(root: str) -> str | None:
    """Why a folder above the spool, or a symbolic link on the way to it, lets another account move
    it, or None. Folders not created yet are skipped (checked again once they are). POSIX only,
    as unsafe_reason."""
    if IS_WINDOWS:
        return None
    import stat
    # Every folder above it, as named and as resolved, up to /: whoever can rename any of them can
    # move the whole spool away or put another in its place. And every symbolic link on the way.
    named = os.path.abspath(root)
    prefixes = []
    while os.path.dirname(named) != named:
        named = os.path.dirname(named)
        prefixes.append(named)
    resolved = os.path.realpath(root)
    while os.path.dirname(resolved) != resolved:
        resolved = os.path.dirname(resolved)
        prefixes.append(resolved)
    for folder in dict.fromkeys(prefixes):
        try:
            link, info = os.lstat(folder), os.stat(folder)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.geteuid(), 0):
            return "is reached through %s, a symbolic link owned by uid %d" % (printable(folder), link.st_uid)
        if info.st_uid not in (os.geteuid(), 0):
            return "is in %s, owned by uid %d, who could replace it" % (printable(folder), info.st_uid)
        if info.st_mode & 0o022 and not info.st_mode & 0o1000:
            return "is in %s, which others can write (mode %o): they could replace it" % (
                printable(folder), info.st_mode & 0o7777)
    return None


def _encode_flat(document: dict) -> bytes:
    """JSON for a flat event of strings, ints and None, without importing json (trigger path)."""
    def value(item: object) -> str:
        if item is None:
            return "null"
        if isinstance(item, bool):
            return "true" if item else "false"
        if isinstance(item, int):
            return str(item)
        text = str(item).replace("\\", "\\\\").replace('"', '\\"')
        return '"%s"' % "".join(char if char >= " " and char != "\x7f" else "\\u%04x" % ord(char) for char in text)
    return ("{%s}\n" % ", ".join('"%s": %s' % (key, value(document[key])) for key in sorted(document))).encode("utf-8")


def _encode(document: dict) -> bytes:
    return (json.dumps(document, sort_keys=True, indent=1) + "\n").encode("utf-8")


def _decode(data: bytes) -> dict:
    try:
        document = json.loads(data.decode("utf-8"))
    except RecursionError:  # a few KB of "[[[[": a file to set aside, not a drain to stop
        raise ValueError("nested too deeply")
    if not isinstance(document, dict):
        raise ValueError("not an object")
    return document


def _write_durably(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    os.close(fd)


def _fsync_directory(path: str) -> None:
    if IS_WINDOWS:
        return  # NTFS renames are journaled; a directory cannot be opened for fsync
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- p4 ------------------------------------------------------------------------------------------
class P4Error(TriggerError):
    """p4 failed. `unreachable` is True when the server, not the request, is the problem (connect,
    login, timeout, busy): the event waits; otherwise the answer is about this change."""

    def __init__(self, message: str, unreachable: bool = False):
        super().__init__(message)
        self.unreachable = unreachable


class P4:
    """The trigger's own p4 calls: argument lists only (never a shell), a minimal environment,
    the credentials in environment variables (never on the command line), a timeout."""

    def __init__(self, config: Config):
        self.executable = config["P4"]
        self.timeout = config.number("P4_TIMEOUT")
        self.global_args = ["-zprog=" + PROGRAM, "-zversion=" + VERSION]
        if config["P4PORT"]:
            self.global_args += ["-p", config["P4PORT"]]
        if config["P4USER"]:
            self.global_args += ["-u", config["P4USER"]]
        env = {"PATH": os.environ.get("PATH", os.defpath), "P4ENVIRO": os.devnull, "LANG": "C.UTF-8"}
        for name in ("HOME", "SYSTEMROOT", "TEMP", "TMP", "USERPROFILE"):
            if os.environ.get(name):
                env[name] = os.environ[name]
        if config["P4TICKETS"]:
            env["P4TICKETS"] = config["P4TICKETS"]
        if config["P4TRUST"]:
            env["P4TRUST"] = config["P4TRUST"]
        self.env = env
        self.ticket_file = config["P4TICKET_FILE"]
        self.ticket = ""

    def run(self, args: list) -> list:
        """`p4 -G ARGS`: its records, or P4Error (an error record fails even on exit status 0)."""
        env = dict(self.env)
        if self.ticket_file:
            self.ticket = self.ticket or read_private_file(self.ticket_file, "P4TICKET_FILE")
            env["P4PASSWD"] = self.ticket  # p4 accepts a ticket as the password
        self._check_executable()
        argv = [self.executable, "-G"] + self.global_args + list(args)
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, timeout=self.timeout, shell=False)
        except subprocess.TimeoutExpired:
            raise P4Error("p4 %s timed out after %ds" % (args[0], self.timeout), unreachable=True)
        except OSError as exc:
            raise P4Error("cannot run p4 (%s): %s" % (printable(self.executable, 80), exc.strerror or exc),
                          unreachable=True)
        try:
            records = _marshal_records(proc.stdout)
        except ValueError:
            records = []
        for record in records:
            if record.get(b"code") == b"error":
                message = self._clean(record.get(b"data", b""))
                raise P4Error("p4 %s: %s" % (args[0], message), unreachable=bool(_P4_UNREACHABLE.search(message)))
        if proc.returncode != 0:
            message = self._clean(proc.stderr) or "exit status %d" % proc.returncode
            raise P4Error("p4 %s: %s" % (args[0], message), unreachable=True)
        return records

    def _check_executable(self) -> None:
        """P4 runs as the trigger's account: refuse a program another account could replace, as
        the config that names it is refused. (A bare name is found on PATH by the OS.)"""
        if not os.path.isabs(self.executable):
            return
        try:
            info = os.stat(self.executable)  # /usr/local/bin/p4 is often a link to the real one
        except OSError:
            return  # running it reports what is wrong
        problem = unsafe_reason(info, directory=False, one_link=False)
        if problem:
            raise P4Error("p4 program %s %s: another account could change what the trigger runs" % (
                printable(self.executable, 120), problem), unreachable=True)

    def _clean(self, data: bytes) -> str:
        text = data.decode("utf-8", "replace")
        if self.ticket:
            text = text.replace(self.ticket, "***")
        return printable(" ".join(text.split()), 300)

    # -- keys: atomic server-side counters and marks --
    def key_get(self, name: str) -> str:
        records = self.run(["key", name])
        return (records[0].get(b"value", b"0") if records else b"0").decode("utf-8", "replace")

    def key_set(self, name: str, value: str) -> None:
        self.run(["key", name, value])

    def key_increment(self, name: str) -> int:
        records = self.run(["key", "-i", name])
        value = records[0].get(b"value", b"") if records else b""
        if not (value.isdigit() and len(value) <= 10):  # no version is above 2^31-1
            raise P4Error("p4 key -i %s answered no number" % name)
        return int(value)

    def key_delete(self, name: str) -> None:
        self.run(["key", "-d", name])

    def key_compare_and_set(self, name: str, old: str, new: str) -> bool:
        try:
            self.run(["key", "--from=" + old, "--to=" + new, name])
            return True
        except P4Error as exc:
            if exc.unreachable:
                raise
            return False

    def describe(self, change: int, shelved: bool = False) -> dict:
        records = self.run(["describe", "-s"] + (["-S"] if shelved else []) + [str(change)])
        return records[0] if records else {}

    def submitted_changes(self, since: int, paths: list, limit: int) -> list:
        """The `limit` oldest submitted changes >= since under paths: [(change, time)], the time
        as p4 gave it (text) when it is not a number. Not `-m`: p4 lists the newest first, and
        `-m` would keep the newest, skipping the oldest. A record without a valid change number
        is not a change: left out."""
        records = self.run(["changes", "-s", "submitted", "-e", str(since)] + list(paths))
        found = {}
        for record in records:
            number = parse_change(record.get(b"change", b"").decode("ascii", "replace"))
            if number is not None and number >= since:
                stamp = record.get(b"time", b"")
                readable = isinstance(stamp, bytes) and stamp.isdigit() and len(stamp) <= 12
                found[number] = int(stamp) if readable else (
                    stamp.decode("utf-8", "replace") if isinstance(stamp, bytes) else repr(stamp))
        return sorted(found.items())[:limit]

    def change_counter(self) -> int:
        """The server's change counter (`p4 counter change`): the highest change number it has
        given out, so no real change is above it."""
        records = self.run(["counter", "change"])
        value = records[0].get(b"value", b"") if records else b""
        if not (isinstance(value, bytes) and value.isdigit() and len(value) <= 10):
            raise P4Error("p4 counter change answered no number")
        return int(value)

    def latest_submitted(self, paths: list) -> int:
        records = self.run(["changes", "-s", "submitted", "-m", "1"] + list(paths))
        numbers = [parse_change(r.get(b"change", b"").decode("ascii", "replace")) for r in records]
        return max([n for n in numbers if n] or [0])


def _marshal_records(data: bytes) -> list:
    stream, records = io.BytesIO(data), []
    while stream.tell() < len(data):
        try:
            record = marshal.load(stream)
        except (EOFError, ValueError, TypeError):
            raise ValueError("unparseable p4 -G output")
        if not isinstance(record, dict):
            raise ValueError("unexpected p4 -G record")
        records.append(_byte_fields(record))
    return records


def _byte_fields(record: dict) -> dict:
    """A record as p4 -G writes one: bytes names and bytes values. A number is kept as its digits;
    any other type (a broken or hostile server's) is left out, so every reader may .decode() and
    .isdigit() what it gets."""
    fields = {}
    for name, value in record.items():
        if type(value) is int:
            value = str(value).encode("ascii")
        if isinstance(name, bytes) and isinstance(value, bytes):
            fields[name] = value
    return fields


# --- what a spooled event may hold -----------------------------------------------------------------
def _is_number(value: object, low: int = 1, high: int = MAX_CHANGE) -> bool:
    return type(value) is int and low <= value <= high  # not bool, not float


def _is_text(limit: int):
    return lambda value: type(value) is str and len(value) <= limit


# Every field an event file may hold, with its check. The trigger writes format, trigger, change,
# old_change, received_at and host; the sender adds request, attempts, last_error and
# last_attempt_at; a file moved back from rejected/ carries its outcome (and, from catch-up, its
# source). Anything else is not an event this trigger wrote.
_EVENT_FIELDS = {
    "format": lambda value: type(value) is int and value == 1,
    "trigger": lambda value: type(value) is str and value in TRIGGER_TYPES,
    "change": _is_number,
    "old_change": lambda value: value is None or _is_number(value),
    "received_at": _is_text(64),
    "host": _is_text(255),
    "request": lambda value: isinstance(value, dict),
    "attempts": lambda value: _is_number(value, 0, 10 ** 9),
    "last_error": _is_text(2000),
    "last_attempt_at": _is_text(64),
    "outcome": lambda value: isinstance(value, dict),
    "source": lambda value: value == "catch-up",
}
_REQUEST_FIELDS = ("changelist_id", "review_version", "kind", "rerun", "idempotency_key")


def event_problem(event: dict) -> str | None:
    """Why a spooled event is not one this trigger wrote (wrong field, type or range), or None."""
    for name in ("format", "trigger", "change"):
        if name not in event:
            return "no %s field" % name
    for name, value in event.items():
        check = _EVENT_FIELDS.get(name)
        if check is None:
            return "unknown field %s" % printable(name, 40)
        if not check(value):
            return "bad %s: %s" % (name, printable(json.dumps(value)[:80], 80))
    return _request_problem(event["request"], event) if "request" in event else None


def _request_problem(request: dict, event: dict) -> str | None:
    """The request an earlier run resolved must be exactly one this trigger builds for this event
    (what Perforce says about it is checked before sending: Sender._verify)."""
    kind = {"change-commit": SUBMITTED, "shelve-commit": SHELVED}.get(event["trigger"])
    if kind is None:
        return "a %s event carries no request" % event["trigger"]
    unknown = set(request) - set(_REQUEST_FIELDS) - {"follows_shelf"}
    if unknown:
        return "unknown request field %s" % printable(sorted(unknown)[0], 40)
    missing = [name for name in _REQUEST_FIELDS if name not in request]
    if missing:
        return "no request %s" % missing[0]
    version = request["review_version"]
    if not _is_number(version):
        return "bad request review_version: %s" % printable(json.dumps(version)[:80], 80)
    expected = {"changelist_id": event["change"], "review_version": version, "kind": kind, "rerun": version > 1,
                "idempotency_key": idempotency_key(kind, event["change"], version)}
    for name, value in expected.items():
        if type(request[name]) is not type(value) or request[name] != value:
            return "bad request %s: %s" % (name, printable(json.dumps(request[name])[:80], 80))
    if "follows_shelf" in request:
        follows = request["follows_shelf"]
        well_formed = isinstance(follows, dict) and set(follows) == {"changelist_id", "review_version"} and \
            _is_number(follows["changelist_id"]) and _is_number(follows["review_version"], 1, version - 1)
        if kind != SUBMITTED or not well_formed:
            return "bad request follows_shelf: %s" % printable(json.dumps(follows)[:80], 80)
    return None


# --- resolving an event into a review request ---------------------------------------------------
class Keys:
    """Names of the p4 keys the trigger keeps. The version counter is per change as first
    numbered (a submit renumbered from a shelved change keeps counting the shelf's versions)."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def version(self, change: int) -> str:
        return "%s-version-%d" % (self.prefix, change)

    def shelf(self, change: int, version: int) -> str:
        """The digest of one shelf version. One key per version: versions are unique (p4 key -i),
        so two hosts never write the same one, and there is no create-or-compare race."""
        return "%s-shelf-%d-v%d" % (self.prefix, change, version)

    def submit(self, change: int) -> str:
        return "%s-submit-%d" % (self.prefix, change)

    @property
    def catch_up_mark(self) -> str:
        return self.prefix + "-catchup-mark"

    @property
    def ping(self) -> str:
        return self.prefix + "-ping"


def idempotency_key(kind: str, change: int, version: int) -> str:
    """The same as the service's `p4review submit` default: p4-<kind>-<change>-v<version>."""
    return "p4-%s-%d-v%d" % (kind, change, version)


def shelf_fingerprint(record: dict) -> str:
    """Digest of a shelf's file list, actions, types and content digests (`describe -S -s`)."""
    lines, index = [], 0
    while b"depotFile%d" % index in record:
        lines.append(b"\x00".join(record.get(b"%s%d" % (field, index), b"") for field in
                                  (b"depotFile", b"action", b"type", b"digest")))
        index += 1
    return hashlib.sha256(b"\n".join(sorted(lines))).hexdigest()[:32]


def resolve_submit(p4: P4, keys: Keys, change: int, old_change: int | None) -> dict:
    """The review request for a submitted change. Version 1 unless the change was shelved (and
    reviewed) under its number or its pre-renumbering number: then the next version of that
    counter, as a rerun that follows the latest shelf version. Recorded in a key, so a re-fired
    trigger or --catch-up gets the same version (and so the same idempotency key)."""
    recorded = recorded_submit(p4, keys, change)
    if recorded:
        return recorded
    if old_change is None:
        old_change = parse_change(p4.describe(change).get(b"oldChange", b"").decode("ascii", "replace"))
    origin = old_change or change
    if _number(p4.key_get(keys.version(origin))) == 0:
        return _submit_request(change, 1, origin, 0)  # never shelved for review
    version = p4.key_increment(keys.version(origin))
    followed = version - 1  # the counter's value before the submit: the latest shelf version
    p4.key_set(keys.submit(change), "%d:%d:%d" % (version, origin, followed))
    return _submit_request(change, version, origin, followed)


def recorded_submit(p4: P4, keys: Keys, change: int) -> dict | None:
    """The request of a submit that followed shelves, as its submit key records it
    ("<version>:<origin>:<followed>"), or None (such a submit is version 1)."""
    parts = p4.key_get(keys.submit(change)).split(":")
    if len(parts) == 3 and all(0 < len(part) <= 10 and part.isascii() and part.isdigit() for part in parts) and \
            int(parts[0]) > 1:
        version, origin, followed = (int(part) for part in parts)
        return _submit_request(change, version, origin, followed)
    return None


def _number(text: str) -> int:
    """A p4 key's number, 0 when it holds none. More than 10 digits is above every change and
    version number: MAX_CHANGE + 1 (and int() of thousands of digits raises on Python 3.11+)."""
    if not (text.isascii() and text.isdigit()):
        return 0
    return int(text) if len(text) <= 10 else MAX_CHANGE + 1


def _submit_request(change: int, version: int, origin: int, followed: int) -> dict:
    request = {"changelist_id": change, "review_version": version, "kind": SUBMITTED,
               "rerun": version > 1, "idempotency_key": idempotency_key(SUBMITTED, change, version)}
    if version > 1 and 0 < followed < version:
        request["follows_shelf"] = {"changelist_id": origin, "review_version": followed}
    return request


def resolve_shelve(p4: P4, keys: Keys, change: int) -> dict:
    """The review request for a shelve, or {"skip": reason} when there is nothing new to review:
    a re-shelve whose files, types and digests equal the latest version's creates no version."""
    record = p4.describe(change, shelved=True)
    if b"depotFile0" not in record:
        return {"skip": "no shelved files (deleted or submitted since)"}
    fingerprint = shelf_fingerprint(record)
    latest = _number(p4.key_get(keys.version(change)))
    if latest and p4.key_get(keys.shelf(change, latest)) == fingerprint:
        return {"skip": "identical to shelf version %d" % latest}
    version = p4.key_increment(keys.version(change))  # atomic: concurrent re-shelves differ
    return {"changelist_id": change, "review_version": version, "kind": SHELVED, "rerun": version > 1,
            "idempotency_key": idempotency_key(SHELVED, change, version), "fingerprint": fingerprint}


def record_shelf(p4: P4, keys: Keys, change: int, version: int, fingerprint: str) -> None:
    """Keep this version's digest (for the next re-shelve to compare with) and drop the previous
    version's, so a change keeps one such key."""
    p4.key_set(keys.shelf(change, version), fingerprint)
    if version > 1:
        _delete_key(p4, keys.shelf(change, version - 1))


def forget_shelf(p4: P4, keys: Keys, change: int) -> None:
    """After shelve-delete the next shelve is new, even with the same files: forget the latest
    digest, keep the version counter (versions only ever grow)."""
    latest = _number(p4.key_get(keys.version(change)))
    if latest:
        _delete_key(p4, keys.shelf(change, latest))


def _delete_key(p4: P4, name: str) -> None:
    try:
        p4.key_delete(name)
    except P4Error as exc:
        if exc.unreachable:
            raise  # otherwise it was not there: nothing to forget


def request_disagrees_with_perforce(p4: P4, keys: Keys, request: dict) -> str | None:
    """Why a recorded request (already well-formed: event_problem) is not what Perforce records,
    or None. Only p4 keys and describe decide: a shelf version must not be above the change's
    version key (versions only come from `p4 key -i` on it); a submit must be submitted, and its
    version, rerun and followed shelf exactly what its submit key records (version 1 when none)."""
    change, version = request["changelist_id"], request["review_version"]
    if request["kind"] == SHELVED:
        latest = _number(p4.key_get(keys.version(change)))
        if version > latest:
            return "review_version %d is above the change's version in Perforce (%d)" % (version, latest)
        return None
    status = p4.describe(change).get(b"status", b"")
    if status != b"submitted":
        return "change %d is not submitted in Perforce (%s)" % (change, printable(status.decode("utf-8", "replace")))
    recorded = recorded_submit(p4, keys, change) or _submit_request(change, 1, change, 0)
    if request != recorded:
        return "review_version %d is not what Perforce records for this submit (version %d)" % (
            version, recorded["review_version"])
    return None


# --- the API -------------------------------------------------------------------------------------
class Unreachable(TriggerError):
    """No HTTP answer: DNS, connection, TLS or timeout."""


class Answer:
    def __init__(self, status: int, headers: dict, body: object, raw: bytes):
        self.status = status
        self.headers = headers
        self.body = body
        self.raw = raw

    @property
    def error(self) -> dict:
        """The body's p4review error object ({"error": {"code", "message", "details"}}), or {}."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error if isinstance(error, dict) else {}

    @property
    def error_code(self) -> str | None:
        code = self.error.get("code")
        return code if isinstance(code, str) else None

    def server_time(self) -> int | None:
        """The API's clock, from a ping or from a 401 about the timestamp."""
        for source in (self.body if isinstance(self.body, dict) else {}, self.error.get("details")):
            value = source.get("server_time") if isinstance(source, dict) else None
            if isinstance(value, int):
                return value
        return None

    def summary(self) -> dict:
        summary = {"status": self.status, "code": self.error_code}
        if isinstance(self.body, dict):
            summary["message"] = printable(self.error.get("message", ""), 300) or None
            summary["details"] = self.error.get("details")
            summary["job_id"] = self.body.get("job_id")
        else:
            summary["body"] = printable(self.raw.decode("utf-8", "replace"), 300)
        replay = self.headers.get("x-p4review-replay")
        if replay:
            summary["replay"] = replay
        return {key: value for key, value in summary.items() if value is not None}


def sign(secret: str, timestamp: str, method: str, route: str, body: bytes) -> str:
    """HMAC-SHA256 over "<timestamp>\\n<METHOD>\\n<route>\\n<body>", as the API verifies it."""
    canonical = ("%s\n%s\n%s\n" % (timestamp, method.upper(), route)).encode("utf-8") + body
    return "v1=" + hmac.new(secret.encode("utf-8"), canonical, hashlib.sha256).hexdigest()


class ApiClient:
    def __init__(self, config: Config, secret: str, clock=time.time):
        self.base = config["API_URL"].rstrip("/")
        if not self.base:
            raise ConfigError("API_URL is not configured")
        self.secret = secret
        self.timeout = config.number("SEND_TIMEOUT")
        self.ca_file = config["CA_FILE"] or None
        self.clock = clock

    def call(self, method: str, route: str, body: bytes = b"") -> Answer:
        import urllib.error
        import urllib.request

        timestamp = str(int(self.clock()))
        headers = {"Content-Type": "application/json", "User-Agent": "%s/%s" % (PROGRAM, VERSION),
                   TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(self.secret, timestamp, method, route, body)}
        request = urllib.request.Request(self.base + route, data=body if method != "GET" else None,
                                         method=method, headers=headers)
        opener = _opener(self.ca_file if self.base.startswith("https:") else None, self.base.startswith("https:"))
        try:
            with opener.open(request, timeout=self.timeout) as response:
                return _answer(response.status, response.headers, response.read(65536))
        except urllib.error.HTTPError as error:
            try:
                raw = error.read(65536)
            except OSError:
                raw = b""
            return _answer(error.code, error.headers, raw)
        except urllib.error.URLError as error:
            raise Unreachable(_network_reason(error.reason))
        except (OSError, ValueError) as error:  # socket.timeout, ConnectionResetError, http.client errors
            raise Unreachable(_network_reason(error))

    def post_review(self, request: dict) -> Answer:
        body = {key: request[key] for key in ("idempotency_key", "changelist_id", "review_version", "kind")}
        if request.get("rerun"):
            body["rerun"] = True
        if request.get("follows_shelf"):
            body["follows_shelf"] = request["follows_shelf"]
        return self.call("POST", REVIEWS_ROUTE, json.dumps(body, sort_keys=True).encode("utf-8"))


def _opener(ca_file: str | None, https: bool):
    """urllib without redirects (a redirect means API_URL is wrong: report it, never follow it),
    verifying TLS against CA_FILE or the system's CAs. Imported here: only senders need urllib."""
    import ssl
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    handlers = [NoRedirect()]
    if https:
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_file)))
    return urllib.request.build_opener(*handlers)


def _answer(status: int, headers, raw: bytes) -> Answer:
    try:
        body = json.loads(raw.decode("utf-8")) if raw else None
    except (ValueError, RecursionError):  # not the API's JSON: only the status and raw text count
        body = None
    lowered = {key.lower(): value for key, value in (headers.items() if headers else [])}
    return Answer(status, lowered, body, raw)


def _network_reason(reason: object) -> str:
    if isinstance(reason, socket.timeout) or "timed out" in str(reason):
        return "timed out"
    if isinstance(reason, socket.gaierror):
        return "cannot resolve the API host (%s)" % printable(reason, 100)
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    name = type(reason).__name__
    if "SSL" in name or "Certificate" in name:
        return "TLS failed: %s" % printable(reason, 150)
    return printable(reason, 150) or name


def classify(answer: Answer) -> str:
    """'accepted' (done), 'reject' (the API will never accept this request: rejected/) or 'retry'.

    Only a p4review error answer can reject: a 403 or 404 from a proxy or a mistyped API_URL
    says nothing about the event, so the event waits for the configuration to be fixed."""
    if 200 <= answer.status < 300:
        return "accepted"
    if 400 <= answer.status < 500 and answer.status not in RETRY_LATER_STATUSES:
        code = answer.error_code
        if code and code != "route_not_found":
            return "reject"
    return "retry"


def retry_after_seconds(answer: Answer | None) -> float:
    value = (answer.headers.get("retry-after", "") if answer else "").strip()
    # ASCII digits only: "²" is a digit to str.isdigit() but not to int().
    return float(min(int(value), 3600)) if re.fullmatch(r"[0-9]{1,10}", value) else 0.0


# --- sending: one event ----------------------------------------------------------------------------
class Stop(TriggerError):
    """Stop this drain run: the API, p4 or the configuration needs time or a fix."""

    def __init__(self, message: str, answer: Answer | None = None):
        super().__init__(message)
        self.answer = answer


class Sender:
    """Resolves and sends spooled events. Callers hold the spool lock."""

    def __init__(self, config: Config, log: Log, clock=time.time, p4: P4 | None = None,
                 api: ApiClient | None = None):
        self.config = config
        self.log = log
        self.clock = clock
        self.spool = Spool(config.spool_dir, clock)
        self.keys = Keys(config["KEY_PREFIX"])
        self._p4 = p4
        self._api = api

    @property
    def p4(self) -> P4:
        if self._p4 is None:
            self._p4 = P4(self.config)
        return self._p4

    @property
    def api(self) -> ApiClient:
        if self._api is None:
            self._api = ApiClient(self.config, read_private_file(self.config["SECRET_FILE"], "SECRET_FILE"),
                                  self.clock)
        return self._api

    def process(self, path: str) -> str:
        """Handle one pending event: 'done', 'rejected', 'corrupt' or 'gone'; raises Stop."""
        try:
            event = self.spool.read_event(path)
        except FileNotFoundError:
            return "gone"  # another drain finished it
        except (OSError, ValueError, UnsafeSpool) as exc:
            return self._quarantine(path, printable(exc))
        problem = event_problem(event)
        if problem:
            return self._quarantine(path, problem)
        if event["trigger"] == "shelve-delete":
            return self._record_shelve_delete(path, event)
        if "request" not in event:
            outcome = self._resolve(path, event)
            if outcome:
                return outcome
        else:
            outcome = self._verify(path, event)
            if outcome:
                return outcome
        return self._send(path, event)

    def _quarantine(self, path: str, reason: str) -> str:
        """Move a spool file that is not an event this trigger wrote to corrupt/; the drain goes on."""
        try:
            self.spool.move(path, CORRUPT)
        except FileNotFoundError:
            return "gone"
        self.log.error("spool_file_corrupt", file=os.path.basename(path), reason=reason, action="moved to corrupt/")
        return "corrupt"

    def _verify(self, path: str, event: dict) -> str | None:
        """A request read back from the spool is signed only if Perforce agrees with it: a file is
        only as trustworthy as its folder, and a planted version above the real one would make the
        API refuse the change's genuine next version for ever. None when it holds."""
        try:
            problem = request_disagrees_with_perforce(self.p4, self.keys, event["request"])
        except P4Error as exc:
            return self._p4_failed(path, event, exc)
        return self._quarantine(path, problem) if problem else None

    def _p4_failed(self, path: str, event: dict, exc: P4Error) -> str:
        if not _P4_CHANGE_UNKNOWN.search(str(exc)):
            # The server, our login or our access (keys need 'review'): wait for a fix.
            raise Stop(str(exc))
        event["outcome"] = {"at": utc_iso(self.clock()), "p4_error": str(exc)}
        self.spool.move(path, REJECTED, event)
        self.log.error("event_rejected", change=event["change"], trigger=event["trigger"], reason=str(exc),
                       action="moved to rejected/")
        return "rejected"

    def _resolve(self, path: str, event: dict) -> str | None:
        change = event["change"]
        try:
            if event["trigger"] == "change-commit":
                request = resolve_submit(self.p4, self.keys, change, event.get("old_change"))
            else:
                request = resolve_shelve(self.p4, self.keys, change)
        except P4Error as exc:
            return self._p4_failed(path, event, exc)
        if "skip" in request:
            event["outcome"] = {"at": utc_iso(self.clock()), "skipped": request["skip"]}
            self.spool.move(path, DONE, event)
            self.log.info("no_review_needed", change=change, trigger=event["trigger"], reason=request["skip"])
            return "done"
        fingerprint = request.pop("fingerprint", None)
        event["request"] = request
        # Durable before anything else: a re-send must reuse this version, never take another.
        self.spool.rewrite(path, event)
        self.log.info("version_assigned", change=change, kind=request["kind"], version=request["review_version"],
                      follows_shelf=_follows(request))
        if fingerprint:
            # After the rewrite: dying between the two costs at most one extra version for a later
            # identical re-shelve, never a version that is not sent.
            try:
                record_shelf(self.p4, self.keys, change, request["review_version"], fingerprint)
            except P4Error as exc:
                self.log.warning("shelf_digest_not_recorded", change=change, reason=str(exc))
        return None

    def _send(self, path: str, event: dict) -> str:
        request = event["request"]
        change, version = request["changelist_id"], request["review_version"]
        try:
            api = self.api
        except ConfigError as exc:
            raise Stop(str(exc))
        event["attempts"] = int(event.get("attempts", 0)) + 1
        try:
            answer = api.post_review(request)
        except Unreachable as exc:
            self._note_attempt(path, event, "unreachable: %s" % exc)
            raise Stop("API unreachable: %s" % exc)
        verdict = classify(answer)
        summary = answer.summary()
        if verdict == "retry":
            self._note_attempt(path, event, "HTTP %d %s" % (answer.status, summary.get("code", "")))
            raise Stop(_explain_retry(answer, self.clock()), answer)
        event["outcome"] = dict(summary, at=utc_iso(self.clock()))
        if verdict == "accepted":
            self.spool.move(path, DONE, event)
            self.log.info("review_requested", change=change, version=version, kind=request["kind"],
                          status=answer.status, job_id=summary.get("job_id"), replay=summary.get("replay"),
                          attempts=event["attempts"])
            return "done"
        self.spool.move(path, REJECTED, event)
        # Nothing to fix for these two: the version was dealt with before (see docs/trigger.md).
        note = {"stale_review_version": "a newer version of this change was accepted first",
                "review_records_expired": "this version was reviewed long ago; its records passed the retention period"
                }.get(summary.get("code"))
        (self.log.warning if note else self.log.error)(
            "event_rejected", change=change, version=version, kind=request["kind"], status=answer.status,
            code=summary.get("code"), reason=summary.get("message"), action="moved to rejected/", note=note)
        return "rejected"

    def _note_attempt(self, path: str, event: dict, error: str) -> None:
        event["last_error"] = error[:1000]
        event["last_attempt_at"] = utc_iso(self.clock())
        try:
            self.spool.rewrite(path, event)
        except OSError:
            pass  # the count is informational; the event itself is intact

    def _record_shelve_delete(self, path: str, event: dict) -> str:
        change = event["change"]
        try:
            forget_shelf(self.p4, self.keys, change)
        except P4Error as exc:
            if exc.unreachable:
                raise Stop(str(exc))
        event["outcome"] = {"at": utc_iso(self.clock()), "recorded": "shelf deleted; no review"}
        self.spool.move(path, DONE, event)
        self.log.info("shelf_deleted", change=change, action="recorded, no review")
        return "done"


def _follows(request: dict) -> str | None:
    follows = request.get("follows_shelf")
    return "%d@v%d" % (follows["changelist_id"], follows["review_version"]) if follows else None


def _explain_retry(answer: Answer, now: float) -> str:
    code = answer.error_code
    if answer.status == 401:
        server_time = answer.server_time()
        if server_time is not None:  # only a timestamp problem carries the server's clock
            return ("the API refused the signature's timestamp: this host's clock is %+d s off (check NTP)"
                    % (int(now) - server_time))
        return ("the API refused the signature (%s): SECRET_FILE does not hold the current signing secret "
                "(events wait; rotation in progress?)" % (code or "401"))
    if answer.status in (408, 429) or answer.status >= 500:
        return "the API answered %d (%s): will retry" % (answer.status, code or "no code")
    if 300 <= answer.status < 400:
        return "the API redirected (%d): API_URL is wrong (https? stage?)" % answer.status
    return "HTTP %d from something that is not the p4review API (%s): check API_URL" % (
        answer.status, printable(answer.raw.decode("utf-8", "replace"), 120))


# --- drain ---------------------------------------------------------------------------------------
def backoff_delay(failures: int, base: float, cap: float, rng=None) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2^(failures-1))]."""
    return (rng or random.random)() * min(cap, base * (2 ** max(0, failures - 1)))


def drain(config: Config, log: Log, *, clock=time.time, rng=None, force: bool = False,
          scheduled: bool = True, sender: Sender | None = None, lock_wait: float = 0.0) -> dict:
    """Send what is pending, oldest first. One run at a time per spool (a lock); a scheduled run
    (--drain) waits out the backoff of earlier failed scheduled runs unless forced, while a run
    started by a trigger (scheduled=False) always makes one attempt and sets no backoff.

    Returns counts: {"done", "rejected", "corrupt", "left", "stopped": reason or None, "skipped": reason or None}."""
    spool = Spool(config.spool_dir, clock)
    spool.ensure()
    result = {"done": 0, "rejected": 0, "corrupt": 0, "left": 0, "stopped": None, "skipped": None}
    deadline = clock() + config.number("DRAIN_MAX_SECONDS")
    sender = sender or Sender(config, log, clock)
    while True:
        lock = _acquire(spool, lock_wait)
        if lock is None:
            result["skipped"] = "another drain is running"
            break
        try:
            state = spool.load_state()
            if scheduled and not force and state.get("next_attempt_at", 0) > clock():
                result["skipped"] = "backing off until %s after %d failed runs (--force to try now)" % (
                    utc_iso(state["next_attempt_at"]), state.get("failures", 0))
                break
            spool.recover_orphans(log)
            if scheduled:
                spool.prune_done(config.number("DONE_RETENTION_DAYS"))
            try:
                _drain_pending(spool, sender, result, deadline, clock)
            except Stop as stop:
                result["stopped"] = str(stop)
                log.warning("drain_stopped", reason=str(stop), pending=len(spool.pending()),
                            action="events stay spooled")
                if scheduled:
                    failures = int(state.get("failures", 0)) + 1
                    delay = max(backoff_delay(failures, config.number("DRAIN_BACKOFF_BASE"),
                                              config.number("DRAIN_BACKOFF_MAX"), rng),
                                retry_after_seconds(stop.answer))
                    spool.save_state({"failures": failures, "next_attempt_at": clock() + delay,
                                      "last_error": str(stop), "last_failure_at": utc_iso(clock())})
                break
            if state.get("failures"):
                spool.save_state({})
        finally:
            _release(lock)
        # An event spooled while we held the lock was spooled before its sender found the lock
        # taken, so it is in pending/ now: look once more after releasing.
        if not spool.pending() or clock() >= deadline:
            break
    result["left"] = len(spool.pending())
    return result


def _drain_pending(spool: Spool, sender: Sender, result: dict, deadline: float, clock) -> None:
    while clock() < deadline:
        batch = spool.pending()
        if not batch:
            return
        for path in batch:
            if clock() >= deadline:
                return
            outcome = sender.process(path)
            if outcome in result:
                result[outcome] += 1


def _acquire(spool: Spool, wait: float):
    """The spool lock, waiting up to `wait` seconds (real time: a test's fixed clock must not hang it)."""
    lock = spool.try_lock()
    give_up = time.monotonic() + wait
    while lock is None and time.monotonic() < give_up:
        time.sleep(0.1)
        lock = spool.try_lock()
    return lock


def _release(lock) -> None:
    try:
        if IS_WINDOWS:
            import msvcrt
            lock.seek(0)
            msvcrt.locking(lock.fileno(), msvcrt.LK_UNLCK, 1)
    except OSError:
        pass
    lock.close()


# --- catch-up -------------------------------------------------------------------------------------
def catch_up(config: Config, log: Log, *, clock=time.time, since: int | None = None,
             sender: Sender | None = None) -> dict:
    """Post submitted changes under PATHS after the mark that the API never acknowledged. The
    mark (a p4 key) only moves past a change once the API answered it (or will never accept
    it), and only forward (compare-and-set). A first run with no mark sets it and posts nothing."""
    spool = Spool(config.spool_dir, clock)
    spool.ensure()
    sender = sender or Sender(config, log, clock)
    p4, keys = sender.p4, sender.keys
    result = {"posted": 0, "already_there": 0, "rejected": 0, "mark": None, "stopped": None, "skipped": None}
    lock = _acquire(spool, 0.0)
    if lock is None:
        result["skipped"] = "another drain is running"
        return result
    try:
        stored = p4.key_get(keys.catch_up_mark)
        mark = _number(stored)
        # No change is above the server's change counter: a record that says otherwise (a broken
        # or hostile server) must never move the mark there, or later submits are never caught up.
        counter = p4.change_counter()
        if mark > counter and since is not None:
            # A mark no real change can reach (set from a bogus answer): --since sets it back.
            stored, mark = str(min(since - 1, counter)), min(since - 1, counter)
            p4.key_set(keys.catch_up_mark, stored)
            log.warning("catch_up_mark_reset", mark=mark,
                        reason="it was beyond the server's change counter (%d)" % counter)
        if since is not None:
            start = since
        elif mark == 0:
            latest = min(p4.latest_submitted(PathScope(config.paths).included), counter)
            p4.key_set(keys.catch_up_mark, str(latest))
            log.info("catch_up_started", mark=latest, note="earlier changes are not posted; --since N to backfill")
            result["mark"] = latest
            return result
        elif mark > counter:
            result["mark"] = mark
            raise P4Error("the catch-up mark %d is beyond the server's change counter (%d): set it with "
                          "--catch-up --since CHANGE (the first change not yet reviewed)" % (mark, counter))
        else:
            start = mark + 1
        waiting = {_event_change(path) for path in spool.pending()}
        scope = PathScope(config.paths)
        acknowledged = start - 1
        try:
            for change, submitted_at in p4.submitted_changes(start, scope.included, config.number("CATCHUP_MAX")):
                if change > counter:
                    log.warning("catch_up_record_ignored", change=change,
                                reason="above the server's change counter (%d)" % counter)
                    continue
                if not isinstance(submitted_at, int):
                    acknowledged = change  # nothing tells whether its trigger may still be running
                    log.warning("catch_up_record_ignored", change=change, time=submitted_at,
                                reason="p4 changes gave no readable time",
                                action="not posted; --catch-up --since %d posts it" % change)
                    continue
                if change in waiting:
                    result["stopped"] = "change %d is still spooled" % change
                    break
                if clock() - submitted_at < config.number("CATCHUP_GRACE"):
                    break  # its trigger may still be running
                if scope.excluded and not scope.covers_any(_files_of(p4.describe(change))):
                    acknowledged = change  # only excluded paths: the trigger would not have fired
                    continue
                _catch_up_one(sender, change, result)
                acknowledged = change
        except (P4Error, Stop, ConfigError) as exc:
            result["stopped"] = str(exc)
        result["mark"] = max(mark, acknowledged)
        if acknowledged > mark:
            _advance_mark(p4, keys.catch_up_mark, stored, acknowledged)
    except (P4Error, ConfigError) as exc:
        result["stopped"] = str(exc)
    finally:
        _release(lock)
    if result["stopped"]:
        log.warning("catch_up_stopped", reason=result["stopped"], mark=result["mark"])
    return result


class PathScope:
    """PATHS as the trigger table reads them: depot patterns (`...` any characters, `*` any but
    `/`), a leading `-` excludes. `p4 changes` takes only the included ones (a `-//...` argument
    would read as an option), so a change that touches only excluded files is skipped here."""

    def __init__(self, patterns: list):
        self.included = [pattern for pattern in patterns if not pattern.startswith("-")]
        self.excluded = [pattern[1:] for pattern in patterns if pattern.startswith("-")]
        self._included = [_pattern_regex(pattern) for pattern in self.included]
        self._excluded = [_pattern_regex(pattern) for pattern in self.excluded]

    def covers_any(self, files: list) -> bool:
        return any(any(rx.match(path) for rx in self._included) and not any(rx.match(path) for rx in self._excluded)
                   for path in files)


def _pattern_regex(pattern: str):
    parts = re.split(r"(\.\.\.|\*)", pattern)
    return re.compile("^%s$" % "".join(".*" if part == "..." else "[^/]*" if part == "*" else re.escape(part)
                                       for part in parts))


def _files_of(record: dict) -> list:
    files, index = [], 0
    while b"depotFile%d" % index in record:
        files.append(record[b"depotFile%d" % index].decode("utf-8", "replace"))
        index += 1
    return files


def _advance_mark(p4: P4, name: str, stored: str, acknowledged: int) -> None:
    """Forward only: compare-and-set from what this run read; if another run moved it, keep the larger."""
    if stored not in ("", "0") and p4.key_compare_and_set(name, stored, str(acknowledged)):
        return
    latest = p4.key_get(name)
    if _number(latest) < acknowledged:
        p4.key_set(name, str(acknowledged))


def _catch_up_one(sender: Sender, change: int, result: dict) -> None:
    """Post one submitted change; raises Stop unless the API answered it for good."""
    request = resolve_submit(sender.p4, sender.keys, change, None)
    try:
        answer = sender.api.post_review(request)
    except Unreachable as exc:
        raise Stop("API unreachable: %s" % exc)
    verdict = classify(answer)
    if verdict == "retry":
        raise Stop(_explain_retry(answer, sender.clock()), answer)
    if verdict == "reject":
        event = {"format": 1, "trigger": "change-commit", "change": change, "source": "catch-up", "request": request,
                 "outcome": dict(answer.summary(), at=utc_iso(sender.clock()))}
        sender.spool.put(REJECTED, "catchup-%d-v%d.json" % (change, request["review_version"]), event)
        sender.log.error("event_rejected", change=change, source="catch-up", status=answer.status,
                         code=answer.error_code, action="written to rejected/")
        result["rejected"] += 1
        return
    if answer.status == 201:
        result["posted"] += 1
        sender.log.warning("caught_up", change=change, version=request["review_version"],
                           job_id=answer.summary().get("job_id"), note="this submit never reached the spool")
    else:
        result["already_there"] += 1


def _event_change(path: str) -> int | None:
    match = re.search(r"-change-commit-([0-9]+)\.json$", path)
    return int(match.group(1)) if match else None


# --- trigger mode ---------------------------------------------------------------------------------
def spool_event(config: Config, log: Log, trigger: str, change_text: str, old_text: str | None,
                clock=time.time) -> str | None:
    """Validate, spool durably and log. Returns the spooled file or None (logged)."""
    change = parse_change(change_text)
    if trigger not in TRIGGER_TYPES or change is None:
        log.error("trigger_arguments_invalid", trigger=trigger, change=change_text,
                  action="nothing spooled; check the trigger table line (-o prints it)")
        return None
    old_change = parse_change(old_text) if old_text else None
    if old_text and old_change is None and old_text != "%oldchangelist%":
        log.warning("old_change_ignored", change=change, old_change=old_text)
    event = {"format": 1, "trigger": trigger, "change": change, "old_change": old_change,
             "received_at": utc_iso(clock()), "host": _host_name()}
    spool = Spool(config.spool_dir, clock)
    lost = ("--catch-up will find this submit" if trigger == "change-commit" else
            "this shelve is not reviewed until it is shelved again")
    try:
        spool.ensure()
        path = spool.write_new(event)
    except UnsafeSpool as exc:
        log.error("spool_refused", trigger=trigger, change=change, reason=str(exc), note=lost)
        return None
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC))
        log.error("spool_write_failed", trigger=trigger, change=change, reason=exc.strerror or str(exc),
                  spool=config.spool_dir, note=("the spool disk is full; " if full else "") + lost)
        return None
    log.info("event_spooled", trigger=trigger, change=change, old_change=old_change,
             file=os.path.basename(path))
    return path


def _host_name() -> str:
    return os.environ.get("COMPUTERNAME", "") if IS_WINDOWS else os.uname().nodename


def start_sender(config: Config, log: Log) -> None:
    """A detached `--send`: new session, stdio closed, so the trigger exits now and p4d does not
    wait for it. On failure the event waits in the spool for the timer's --drain."""
    argv = [sys.executable, os.path.abspath(__file__), "-c", config.source, "--send"]
    try:
        pid = os.fork()  # plain fork/exec: importing subprocess would cost the trigger ~10 ms
    except OSError as exc:
        log.error("sender_not_started", reason=exc.strerror or str(exc), action="the timer's --drain sends it")
        return
    if pid:
        return
    try:  # the child: detach from p4d's session and pipes, then become the sender
        os.setsid()
        os.nice(10)  # background work: p4d and the next user's trigger come first
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 65536)
        os.chdir(os.path.dirname(argv[1]))
        os.execv(argv[0], argv)
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the trigger
        try:
            log.error("sender_not_started", reason=printable(exc), action="the timer's --drain sends it")
        finally:
            os._exit(127)


def parse_trigger_args(argv: list) -> dict:
    """-c FILE -t TYPE -v CHANGE [-w OLD], spaced or joined (-tTYPE). No argparse: it costs the
    trigger ~10 ms. Anything else is reported, not fatal."""
    options, index, unknown = {}, 0, []
    while index < len(argv):
        arg = argv[index]
        flag = arg[:2]
        if flag in ("-c", "-t", "-v", "-w") and not arg.startswith("--"):
            if len(arg) > 2:
                options[flag] = arg[2:]
            elif index + 1 < len(argv):
                index += 1
                options[flag] = argv[index]
            else:
                options[flag] = ""
        else:
            unknown.append(arg)
        index += 1
    return {"config": options.get("-c"), "type": options.get("-t", ""), "value": options.get("-v", ""),
            "old": options.get("-w"), "unknown": unknown}


def run_trigger(argv: list, clock=time.time) -> int:
    """Trigger mode: always 0, nothing on the user's terminal. Nothing here may slow or fail the
    user's command."""
    args = parse_trigger_args(argv)
    log = Log(None, clock=clock)
    try:
        config = load_config(args["config"], validate=False)
        log = Log(config.log_file, clock=clock)
        if args["unknown"]:
            log.warning("trigger_arguments_ignored", arguments=" ".join(args["unknown"]))
        if spool_event(config, log, args["type"], args["value"], args["old"], clock) and \
                config.send_mode == "background":
            start_sender(config, log)
    except ConfigError as exc:
        log.error("config_error", trigger=args["type"], change=args["value"], reason=str(exc),
                  action="nothing spooled; run --ping")
    except Exception as exc:  # noqa: BLE001 - the user's command must not fail because of us
        log.error("trigger_failed", trigger=args["type"], change=args["value"], error=type(exc).__name__,
                  reason=printable(exc))
    return 0


# --- admin commands --------------------------------------------------------------------------------
def trigger_table(config_path: str | None, paths: list, script: str | None = None,
                  python: str | None = None) -> str:
    """The lines to paste into `p4 triggers` (the secret never appears in them)."""
    script = script or os.path.abspath(__file__)
    command = "%%quote%%%s%%quote%% %%quote%%%s%%quote%%" % (python or sys.executable, script)
    if config_path:
        command += " -c %%quote%%%s%%quote%%" % config_path
    lines = []
    for name, kind, arguments in (
        ("p4review.commit", "change-commit", "-t change-commit -v %change% -w %oldchangelist%"),
        ("p4review.shelve", "shelve-commit", "-t shelve-commit -v %change%"),
        ("p4review.shelvedel", "shelve-delete", "-t shelve-delete -v %change%"),
    ):
        for path in paths:
            quoted = '"%s"' % path if " " in path else path
            lines.append('\t%s %s %s "%s %s"' % (name, kind, quoted, command, arguments))
    return "\n".join(lines) + "\n"


def run_print_table(args) -> int:
    config_path, paths = None, None
    try:
        config = load_config(args.config)
        config_path, paths = config.source, config.paths
    except ConfigError as exc:
        print("# note: %s; printing lines without -c" % exc, file=sys.stderr)
    paths = args.paths or paths or ["//..."]
    for path in paths:
        if not _DEPOT_PATTERN.match(path):
            print("%s: %s is not a depot path such as //depot/..." % (PROGRAM, printable(path, 80)), file=sys.stderr)
            return 2
    sys.stdout.write(trigger_table(config_path, paths))
    return 0


class Checks:
    def __init__(self):
        self.failed = 0

    def report(self, status: str, check: str, detail: str) -> None:
        if status == "FAIL":
            self.failed += 1
        print("%-4s  %-10s %s" % (status, check, printable(detail, 1000)), flush=True)


def run_ping(args, clock=time.time) -> int:
    """Check the configuration, the secret, the spool, p4 and a signed round trip to the API,
    and say what is wrong. Exit 1 if anything failed."""
    checks = Checks()
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        checks.report("FAIL", "config", str(exc))
        return 1
    checks.report("ok", "config", config.source)
    log = Log(config.log_file, clock=clock)
    secret = None
    try:
        secret = read_private_file(config["SECRET_FILE"], "SECRET_FILE")
        checks.report("ok", "secret", "%s (owner-only, %d characters)" % (config["SECRET_FILE"], len(secret)))
    except ConfigError as exc:
        checks.report("FAIL", "secret", str(exc))
    _ping_spool(config, checks, clock)
    _ping_p4(config, checks)
    if secret is not None and config["API_URL"]:
        _ping_api(config, secret, checks, clock)
    elif not config["API_URL"]:
        checks.report("FAIL", "api", "API_URL is not configured")
    if config.send_mode == "spool-only":
        checks.report("note", "send", "SEND_MODE is spool-only: events are sent by the timer's --drain only")
    log.info("ping", failed=checks.failed)
    return 1 if checks.failed else 0


def _ping_spool(config: Config, checks: Checks, clock) -> None:
    spool = Spool(config.spool_dir, clock)
    try:
        spool.ensure()
        probe = spool.path(TMP, "ping-%d.probe" % os.getpid())
        _write_durably(probe, b"ping\n")
        os.unlink(probe)
        checks.report("ok", "spool", "%s writable; %d pending, %d rejected" % (
            config.spool_dir, spool.count(PENDING), spool.count(REJECTED)))
    except UnsafeSpool as exc:
        checks.report("FAIL", "spool", "%s (the trigger spools nothing there)" % exc)
    except OSError as exc:
        checks.report("FAIL", "spool", "%s: %s" % (config.spool_dir, exc.strerror or exc))
    try:
        os.close(Log(config.log_file).open())
        checks.report("ok", "log", config.log_file)
    except UnsafeSpool as exc:
        checks.report("FAIL", "log", "%s (lines go to syslog)" % exc)
    except OSError as exc:
        checks.report("FAIL", "log", "%s: %s (lines would go to syslog)" % (config.log_file, exc.strerror or exc))


def _ping_p4(config: Config, checks: Checks) -> None:
    p4, keys = P4(config), Keys(config["KEY_PREFIX"])
    try:
        records = p4.run(["login", "-s"])
        user = records[0].get(b"user", b"?") if records else b"?"
        user = printable(user.decode("utf-8", "replace") if isinstance(user, bytes) else user, 100)
        checks.report("ok", "p4", "logged in as %s on %s" % (user, config["P4PORT"] or "(p4's default port)"))
    except (P4Error, ConfigError) as exc:
        checks.report("FAIL", "p4", "%s (the trigger cannot number versions or list changes)" % exc)
        return
    try:
        p4.key_set(keys.ping, str(int(time.time())))
        mark = p4.key_get(keys.catch_up_mark)
        checks.report("ok", "p4 keys", "can set keys (%s*); catch-up mark %s" % (
            config["KEY_PREFIX"] + "-", mark if mark not in ("", "0") else "not set yet"))
    except P4Error as exc:
        checks.report("FAIL", "p4 keys", "%s (P4USER needs 'review' access to set keys)" % exc)


def _ping_api(config: Config, secret: str, checks: Checks, clock) -> None:
    client = ApiClient(config, secret, clock)
    try:
        answer = client.call("GET", PING_ROUTE)
    except Unreachable as exc:
        checks.report("FAIL", "api", "%s unreachable: %s" % (config["API_URL"], exc))
        return
    server_time = answer.server_time()
    skew = int(clock()) - server_time if server_time is not None else None
    if answer.status == 200 and isinstance(answer.body, dict) and answer.body.get("service") == "p4review":
        checks.report("ok", "api", "%s answered a signed ping" % config["API_URL"])
        if answer.body.get("signed_with") == "previous":
            checks.report("warn", "secret", "signed with the PREVIOUS secret: put the current one in SECRET_FILE "
                                            "before the next rotation")
        limit = answer.body.get("max_signature_age_seconds", 300)
        if skew is not None:
            checks.report("warn" if abs(skew) > min(60, limit // 2) else "ok", "clock",
                          "%+d s against the API (requests are refused beyond %d s)" % (skew, limit))
        return
    if answer.status == 401:
        if skew is not None:
            checks.report("FAIL", "clock", "the API refused the timestamp: this host's clock is %+d s off (fix NTP)"
                          % skew)
        else:
            checks.report("FAIL", "secret", "the API refused the signature (%s): SECRET_FILE does not hold the "
                                            "signing secret of this environment" % (answer.error_code or "401"))
        return
    checks.report("FAIL", "api", _explain_retry(answer, clock()) if answer.status != 200 else
                  "%s answered but is not the p4review API: check API_URL" % config["API_URL"])


def run_status(args, clock=time.time) -> int:
    """The spool's counts, backoff and pending events; exit 1 when another account could change the
    spool or the log. Everything read from the spool is shown escaped (printable)."""
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print("%s: %s" % (PROGRAM, printable(exc, 1000)), file=sys.stderr)
        return 2
    spool = Spool(config.spool_dir, clock)
    problems = spool.problems()
    try:
        os.close(Log(config.log_file).open(create=False))
    except UnsafeSpool as exc:
        problems.append(str(exc))
    except OSError:
        pass  # no log yet, or not writable: --ping says which
    state = spool.load_state()
    print("spool      %s" % printable(config.spool_dir, 1000))
    for problem in problems:
        print("unsafe     %s" % printable(problem, 1000))
    for folder in (PENDING, REJECTED, CORRUPT, DONE):
        print("%-10s %d" % (folder, spool.count(folder)))
    if state.get("failures"):
        print("backoff    %d failed runs; next attempt %s; last error: %s" % (
            state["failures"], utc_iso(state.get("next_attempt_at", 0)), printable(state.get("last_error"), 300)))
    for path in spool.pending()[:20]:
        name = printable(os.path.basename(path), 120)
        try:
            event = spool.read_event(path)
        except (OSError, ValueError, UnsafeSpool) as exc:
            print("pending    %s (unreadable: %s)" % (name, printable(exc, 200)))
            continue
        print("pending    %s change %s %s%s" % (
            name, printable(event.get("change"), 20), printable(event.get("trigger"), 20),
            " (last error: %s)" % printable(event["last_error"], 300) if event.get("last_error") else ""))
    return 1 if problems else 0


def run_drain(args, clock=time.time) -> int:
    """--send (started by the trigger) and --drain (the timer), then --catch-up if asked."""
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        Log(None).error("config_error", mode="drain", reason=str(exc))
        if not args.send:
            print("%s: %s" % (PROGRAM, exc), file=sys.stderr)
        return 0 if args.send else 2
    log = Log(config.log_file, echo=not args.send, clock=clock)
    status = 0
    try:
        result = drain(config, log, clock=clock, force=args.force, scheduled=not args.send,
                       lock_wait=0.0 if args.send else 5.0)
        if not args.send:
            log.info("drain_finished", **{key: value for key, value in result.items() if value})
        if result["stopped"]:
            status = 1
        if args.catch_up:
            outcome = catch_up(config, log, clock=clock, since=args.since)
            log.info("catch_up_finished", **{key: value for key, value in outcome.items() if value is not None})
            if outcome["stopped"]:
                status = 1
    except UnsafeSpool as exc:
        log.error("spool_refused", reason=str(exc), action="nothing sent; fix the spool (see --ping)")
        status = 1
    except Exception as exc:  # noqa: BLE001 - one clear line; the events stay spooled
        log.error("drain_failed", error=type(exc).__name__, reason=printable(exc, 200))
        status = 1
    return 0 if args.send else status


def build_parser():
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            raise TriggerError(message)

    parser = Parser(prog="p4review-trigger.py", description="The Perforce side of p4review: spool, send, catch up.")
    parser.add_argument("-c", dest="config", metavar="FILE", help="config file (default: the search path)")
    parser.add_argument("-o", dest="print_table", action="store_true", help="print the p4 triggers lines")
    parser.add_argument("paths", nargs="*", metavar="DEPOT_PATH", help="with -o: depot path patterns")
    parser.add_argument("--ping", action="store_true", help="check the configuration, p4 and the API")
    parser.add_argument("--drain", action="store_true", help="send spooled events (from a timer)")
    parser.add_argument("--force", action="store_true", help="with --drain: ignore the backoff")
    parser.add_argument("--catch-up", action="store_true", help="post submitted changes that never arrived")
    parser.add_argument("--since", type=int, metavar="CHANGE", help="with --catch-up: start at this change")
    parser.add_argument("--status", action="store_true", help="show the spool")
    parser.add_argument("--send", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version="%s %s" % (PROGRAM, VERSION))
    parser.epilog = ("as a trigger: -c FILE -t {%s} -v %%change%% [-w %%oldchangelist%%] (-o prints the lines)"
                     % ",".join(TRIGGER_TYPES))
    return parser


def is_trigger_invocation(argv: list) -> bool:
    return any(arg == "-t" or (arg.startswith("-t") and not arg.startswith("--")) for arg in argv)


def another_sender_is_running(argv: list) -> bool:
    """A trigger's sender that finds the spool locked has nothing to do (the holder sends what it
    finds, and looks again after releasing): it exits before loading anything."""
    try:
        config = load_config(parse_trigger_args(argv)["config"], validate=False)
        lock = Spool(config.spool_dir).try_lock()
    except (OSError, TriggerError):
        return False  # the full path reports it
    if lock is None:
        return True
    _release(lock)
    return False


def main(argv: list | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if is_trigger_invocation(argv):
        return run_trigger(argv)
    if "--send" in argv and another_sender_is_running(argv):
        return 0
    load_sender_modules()
    try:
        args = build_parser().parse_args(argv)
    except TriggerError as exc:
        print("%s: %s (see --help)" % (PROGRAM, exc), file=sys.stderr)
        return 2
    if args.print_table:
        return run_print_table(args)
    if args.ping:
        return run_ping(args)
    if args.status:
        return run_status(args)
    if args.drain or args.send or args.catch_up:
        if args.catch_up and not args.drain and not args.send:
            args.drain = True  # catch-up runs after a drain, in the same run, under the same lock
        return run_drain(args)
    build_parser().print_usage(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
else:
    load_sender_modules()  # imported as a library (tests, tools): everything is available
