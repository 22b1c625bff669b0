"""Analyzers beside the model (pure): which analyzer reads which file, each analyzer's report
read into one shape, the report kept to the lines the change added, and turned into findings.

The filter is reviewdog's `added` mode: a report is kept when its line range touches a line the
change added. An analyzer sees the whole new file (it needs the context to be right), but the
change's author is told only about what the change wrote; a problem in untouched code is not
theirs and is the noise people complain about most.

What runs the analyzers (processes, temp files) is `p4review.adapters.analyzers`."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from p4review.logic.diff_lines import ChangedLines
from p4review.logic.offline_reviewer import C_EXTENSIONS, PY_EXTENSIONS
from p4review.models.review_result import Category, Confidence, Finding, Severity

RUFF = "ruff"
BANDIT = "bandit"
SHELLCHECK = "shellcheck"
FLAWFINDER = "flawfinder"
ALL_ANALYZERS = (RUFF, BANDIT, SHELLCHECK, FLAWFINDER)

_PYTHON = PY_EXTENSIONS
_SHELL = frozenset({".sh", ".bash", ".ksh", ".bats"})
_C = C_EXTENSIONS
_SHELL_SHEBANG = re.compile(r"#!\s*(?:/usr)?/bin/(?:env\s+)?(?:ba|k|da)?sh\b")
_PYTHON_SHEBANG = re.compile(r"#!\s*(?:/usr)?(?:/local)?/bin/(?:env\s+)?python[0-9.]*\b")

# ruff's rules that report defects rather than style: syntax errors, undefined names, invalid
# comparisons and statements (flake8's fail-fast set E9,F63,F7,F82), redefinitions and repeated
# dict keys, flake8-bugbear, pylint's errors. Security is bandit's job (ruff's S rules copy it).
RUFF_RULES = ("E9", "F63", "F7", "F82", "F811", "F601", "F602", "B", "PLE")
# bandit reports at medium severity and above; B101 (assert used) is a style choice in tests.
BANDIT_SKIPPED = frozenset({"B101"})
# flawfinder's risk levels 4 and 5 (e.g. strcpy/sprintf into fixed buffers, gets, system):
# the lower levels flag every use of a function, whatever its arguments.
FLAWFINDER_MIN_LEVEL = 4


def analyzers_for(depot_path: str, first_line: str = "") -> tuple[str, ...]:
    """The analyzers that read this file: by extension, else by a script's shebang."""
    extension = posixpath.splitext(depot_path)[1].lower()
    if extension in _PYTHON:
        return (RUFF, BANDIT)
    if extension in _SHELL:
        return (SHELLCHECK,)
    if extension in _C:
        return (FLAWFINDER,)
    if not extension and _SHELL_SHEBANG.match(first_line):
        return (SHELLCHECK,)
    if not extension and _PYTHON_SHEBANG.match(first_line):
        return (RUFF, BANDIT)
    return ()


def reads_content(depot_path: str, enabled: Iterable[str]) -> bool:
    """Whether fetch should keep this file's new content: an enabled analyzer may read it.
    Extension-less scripts are recognized by their shebang, which only the content shows, so
    a file without an extension is kept whenever a script analyzer is enabled."""
    wanted = set(enabled)
    if set(analyzers_for(depot_path)) & wanted:
        return True
    return not posixpath.splitext(depot_path)[1] and bool(wanted & {SHELLCHECK, RUFF, BANDIT})


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


def _ruff_severity(code: str) -> Severity:
    return Severity.HIGH if code.startswith(("E9", "F82", "F63", "F7", "PLE")) else Severity.MEDIUM


def read_ruff(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`ruff check --output-format json`."""
    reports = []
    for item in _json_list(output):
        path = paths.get(str(item.get("filename", "")))
        location = item.get("location") or {}
        line = _line(location.get("row"))
        code = str(item.get("code") or "syntax-error")
        if path is None or line is None:
            continue
        message = str(item.get("message") or code)
        reports.append(
            AnalyzerReport(
                analyzer=RUFF,
                rule=code,
                file=path,
                line=line,
                end_line=_end(line, (item.get("end_location") or {}).get("row")),
                severity=_ruff_severity(code),
                category=Category.CORRECTNESS,
                confidence=Confidence.HIGH,
                title=_clip(message, 100),
                message=_clip(message, 600),
            )
        )
    return reports


_BANDIT_SEVERITY = {"HIGH": Severity.HIGH, "MEDIUM": Severity.MEDIUM}
_CONFIDENCE = {"HIGH": Confidence.HIGH, "MEDIUM": Confidence.MEDIUM, "LOW": Confidence.LOW}


def read_bandit(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`bandit -f json`: medium and high severity, B101 left out."""
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


_SHELLCHECK_SEVERITY = {"error": Severity.HIGH, "warning": Severity.MEDIUM}


def read_shellcheck(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`shellcheck -f json1`: errors and warnings (info and style left out)."""
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
        if path is None or line is None or severity is None:
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


def read_flawfinder(output: str, paths: Mapping[str, str]) -> list[AnalyzerReport]:
    """`flawfinder --csv`: risk level FLAWFINDER_MIN_LEVEL and above."""
    reports = []
    for row in csv.DictReader(io.StringIO(output or "")):
        path = paths.get(str(row.get("File", "")))
        try:
            line, level = int(row.get("Line") or 0), int(row.get("Level") or 0)
        except ValueError:
            continue
        if path is None or line < 1 or level < FLAWFINDER_MIN_LEVEL:
            continue
        name = row.get("Name") or "risky call"
        warning = row.get("Warning") or f"{name} is risky"
        cwes = row.get("CWEs") or ""
        reports.append(
            AnalyzerReport(
                analyzer=FLAWFINDER,
                rule=name,
                file=path,
                line=line,
                severity=Severity.HIGH if level >= 5 else Severity.MEDIUM,
                category=Category.SECURITY,
                confidence=Confidence.MEDIUM,
                title=_clip(f"{name}: {warning.split('. ')[0]}", 100),
                message=_clip(f"{warning} ({cwes})" if cwes else warning, 600),
            )
        )
    return reports


READERS = {RUFF: read_ruff, BANDIT: read_bandit, SHELLCHECK: read_shellcheck, FLAWFINDER: read_flawfinder}


def _json_list(output: str) -> list[dict[str, Any]]:
    try:
        value = json.loads(output or "[]")
    except ValueError:
        return []
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------
# The filter and the findings


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
