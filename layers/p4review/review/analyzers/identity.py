"""What an analyzer's answer depends on besides the file: the tool's version, the options it is
run with, the Python that runs it, and our adapter (the source of the modules that build its
command, rewrite the copy it reads and read its report). Part of each answer's key
(`answers.py`); None when any of it cannot be read, and the analyzer then always runs.

Hashing our adapter's source, rather than a version number someone must remember to bump, makes
every change to a rule set, a severity mapping or a reader a miss on its own."""

from __future__ import annotations

import functools
import json
import os
import subprocess  # nosec B404 - a fixed argument list, no shell: `<tool> --version`
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from p4review.change import analyzer_files
from p4review.change.fingerprints import sha256_text

_HERE = Path(__file__).resolve().parent
# The modules every analyzer's answer goes through, and those of the in-process `iac` checks.
_ADAPTER_FILES = (
    _HERE / "analysis.py",
    _HERE / "answers.py",
    _HERE / "directives.py",
    _HERE / "identity.py",
    _HERE / "runner.py",
    _HERE / "sarif.py",
    Path(analyzer_files.__file__),
)
_IAC_FILES = (_HERE / "iac_checks.py", _HERE / "iac_hcl.py", _HERE / "iac_rules.py")
_IAC_PACKAGES = ("PyYAML", "python-hcl2", "lark")
_VERSION_TIMEOUT_SECONDS = 10.0


def _files_digest(files: Sequence[Path]) -> str | None:
    try:
        return sha256_text(json.dumps([[file.name, sha256_text(file.read_text(encoding="utf-8"))] for file in files]))
    except (OSError, UnicodeDecodeError):
        return None


@functools.cache
def _adapter_digest() -> str | None:
    return _files_digest(_ADAPTER_FILES)


def _package_version(name: str) -> str | None:
    import importlib.metadata  # here: only a review with analyzers pays for it at cold start

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _tool_version(executable: str, module: str | None) -> str | None:
    """`python -m MODULE`: its installed distribution's version (starting an interpreter to ask
    costs a second). A binary: what `BINARY --version` prints."""
    if module is not None:
        return _package_version(module)
    try:
        completed = subprocess.run(  # nosec B603 - a fixed argument list, no shell
            [executable, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_VERSION_TIMEOUT_SECONDS,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir()},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    version = completed.stdout.decode("utf-8", "replace").strip()
    return version if completed.returncode == 0 and version else None


def _options(command: Sequence[str]) -> list[str]:
    """The command's options, without the paths of this machine (the interpreter, a binary, a
    config file: their content is in the version or the files hashed)."""
    return [arg for arg in command[1:] if not os.path.isabs(arg)]


def process_identity(analyzer: str, command: Sequence[str], files: Sequence[Path] = ()) -> str | None:
    """An analyzer run as a process: `command` is its argument list without the files; `files`
    are read too (the JavaScript analyzers' lock file and configuration)."""
    module = command[2] if len(command) > 2 and command[1] == "-m" else None
    version = _tool_version(command[0], module)
    adapter = _adapter_digest()
    extra = _files_digest(files) if files else ""
    if version is None or adapter is None or extra is None:
        return None
    python = ".".join(map(str, sys.version_info[:3]))
    return sha256_text(json.dumps([analyzer, version, _options(command), python, adapter, extra]))


@functools.cache
def in_process_identity(analyzer: str) -> str | None:
    """`iac`: our checks, and the parsers they read files with."""
    versions = [_package_version(name) for name in _IAC_PACKAGES]
    adapter, checks = _adapter_digest(), _files_digest(_IAC_FILES)
    if adapter is None or checks is None:
        return None
    return sha256_text(json.dumps([analyzer, versions, adapter, checks]))
