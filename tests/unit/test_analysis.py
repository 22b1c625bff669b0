"""Analyzers beside the model, the pure part: routing, each analyzer's report read into one
shape, reviewdog's added-lines filter, findings that name their analyzer, and the merge."""

from __future__ import annotations

import json

import pytest

from p4review.logic import analysis
from p4review.logic.change_redaction import ChangeRedactor, prepare_review_input, redact_change
from p4review.logic.diff_lines import changed_lines_from_diff
from p4review.logic.findings_merge import merge_analyzer_findings
from p4review.logic.redaction import RedactionError
from p4review.models.change import ChangeDescription, ChangeSnapshot, DiffStatus, FileDiff
from p4review.models.job import ChangeKind
from p4review.models.review_result import Category, Finding, Severity

PY = "//depot/tools/deploy.py"
DIFF = """--- a/tools/deploy.py
+++ b/tools/deploy.py
@@ -1,4 +1,5 @@
 import subprocess
 
 def run(cmd):
-    return subprocess.call(cmd)
+    print(cmd)
+    return subprocess.call(cmd, shell=True)
"""


@pytest.mark.parametrize(
    ("path", "first_line", "expected"),
    [
        ("//d/a.py", "", ("ruff", "bandit")),
        ("//d/run.sh", "", ("shellcheck",)),
        ("//d/x.BASH", "", ("shellcheck",)),
        ("//d/buf.c", "", ("flawfinder",)),
        ("//d/buf.hpp", "", ("flawfinder",)),
        ("//d/deploy", "#!/bin/bash", ("shellcheck",)),
        ("//d/tool", "#!/usr/bin/env python3", ("ruff", "bandit")),
        ("//d/README", "hello", ()),
        ("//d/app.js", "", ()),
    ],
)
def test_each_file_goes_to_the_analyzers_for_its_language(path, first_line, expected):
    assert analysis.analyzers_for(path, first_line) == expected


def test_fetch_keeps_content_only_for_what_an_enabled_analyzer_reads():
    assert analysis.reads_content("//d/a.py", ["bandit"])
    assert not analysis.reads_content("//d/a.py", ["shellcheck"])
    assert analysis.reads_content("//d/deploy", ["shellcheck"])  # a shebang can only be seen in the content
    assert not analysis.reads_content("//d/notes.txt", analysis.ALL_ANALYZERS)
    assert not analysis.reads_content("//d/a.py", [])


PATHS = {"f0000/deploy.py": PY, "f0001/run.sh": "//depot/run.sh", "f0002/buf.c": "//depot/buf.c"}


def test_each_analyzers_report_is_read_and_what_we_did_not_give_it_is_ignored():
    ruff = json.dumps(
        [
            {"code": "F821", "filename": "f0000/deploy.py", "location": {"row": 7}, "end_location": {"row": 7},
             "message": "Undefined name `x`"},
            {"code": "B006", "filename": "/elsewhere/x.py", "location": {"row": 1}, "message": "m"},
        ]
    )  # fmt: skip
    [r] = analysis.read_ruff(ruff, PATHS)
    assert (r.rule_id, r.file, r.line, r.end_line, r.severity) == ("ruff/F821", PY, 7, None, Severity.HIGH)
    bandit = json.dumps(
        {
            "results": [
                {"filename": "f0000/deploy.py", "line_number": 5, "line_range": [5, 6], "test_id": "B602",
                 "test_name": "subprocess_popen_with_shell_equals_true", "issue_severity": "HIGH",
                 "issue_confidence": "HIGH", "issue_text": "shell=True", "issue_cwe": {"id": 78}},
                {"filename": "f0000/deploy.py", "line_number": 2, "test_id": "B101", "issue_severity": "MEDIUM"},
                {"filename": "f0000/deploy.py", "line_number": 3, "test_id": "B404", "issue_severity": "LOW"},
            ]
        }
    )  # fmt: skip
    [b] = analysis.read_bandit(bandit, PATHS)
    assert (b.rule_id, b.line, b.end_line, b.category, b.message) == (
        "bandit/B602:subprocess_popen_with_shell_equals_true",
        5,
        6,
        Category.SECURITY,
        "shell=True (CWE-78)",
    )
    shellcheck = json.dumps(
        {"comments": [
            {"file": "f0001/run.sh", "line": 3, "endLine": 3, "level": "warning", "code": 2086, "message": "Quote it"},
            {"file": "f0001/run.sh", "line": 4, "level": "style", "code": 2001, "message": "style"},
        ]}
    )  # fmt: skip
    [s] = analysis.read_shellcheck(shellcheck, PATHS)
    assert (s.rule_id, s.file, s.severity) == ("shellcheck/SC2086", "//depot/run.sh", Severity.MEDIUM)
    flawfinder = (
        "File,Line,Column,DefaultLevel,Level,Category,Name,Warning,Suggestion,Note,CWEs,Context,Fingerprint\n"
        "f0002/buf.c,2,3,5,5,buffer,gets,Does not check for buffer overflows,fgets,,CWE-120,gets(b);,ab\n"
        "f0002/buf.c,3,3,1,1,buffer,strlen,Does not handle strings that are not terminated,,,CWE-126,x,cd\n"
    )
    [f] = analysis.read_flawfinder(flawfinder, PATHS)
    assert (f.rule_id, f.line, f.severity) == ("flawfinder/gets", 2, Severity.HIGH)
    for reader in analysis.READERS.values():  # garbage in: nothing out, no exception
        assert reader("not json, not csv \x00", PATHS) == []


def _report(line: int, end_line: int | None = None, file: str = PY) -> analysis.AnalyzerReport:
    return analysis.AnalyzerReport(
        analyzer="bandit", rule="B602:shell", file=file, line=line, end_line=end_line,
        severity=Severity.HIGH, category=Category.SECURITY, title="shell=True", message="shell=True",
    )  # fmt: skip


def test_only_reports_touching_an_added_line_are_kept_as_reviewdog_does():
    changed = {PY: changed_lines_from_diff(DIFF)}  # lines 4 and 5 are added
    kept = analysis.on_added_lines(
        [_report(5), _report(1), _report(3), _report(3, 4), _report(6), _report(5, file="//depot/other.py")], changed
    )
    assert [(r.line, r.end_line) for r in kept] == [(5, None), (3, 4)]


def test_findings_name_their_analyzer_and_rule():
    [finding] = analysis.as_findings([_report(5), _report(5)])  # one report, once
    assert finding.rule_id == "bandit/B602:shell"
    assert finding.message.endswith("[bandit B602]")
    assert finding.id.startswith("BANDIT-")


def _model_finding(line: int, category: Category = Category.SECURITY, severity: Severity = Severity.CRITICAL):
    return Finding(id=f"M{line}", severity=severity, category=category, title="t", file=PY, line=line, message="m")


def test_a_model_finding_on_the_same_problem_merges_into_the_analyzers():
    [analyzer_finding] = analysis.as_findings([_report(5)])
    kept, merged = merge_analyzer_findings(
        [_model_finding(5), _model_finding(5, Category.STYLE), _model_finding(9)], [analyzer_finding]
    )
    assert merged == 1
    assert [f.id for f in kept] == ["M5", "M9", analyzer_finding.id]
    assert kept[-1].severity == Severity.CRITICAL  # the more severe of the two


def _snapshot(content: str) -> ChangeSnapshot:
    description = ChangeDescription(
        changelist_id=1, kind=ChangeKind.SUBMITTED, owner="o", client="c", status="submitted", description=""
    )
    diff = FileDiff(depot_path=PY, action="edit", status=DiffStatus.FETCHED, unified_diff=DIFF, new_content=content)
    return ChangeSnapshot(description=description, diffs=[diff])


SECRET_LINE = 'AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n'


def test_new_content_is_redacted_like_the_diff_and_checked_again_before_review():
    redacted = redact_change(_snapshot("import os\n" + SECRET_LINE))
    content = redacted.snapshot.diffs[0].new_content or ""
    assert "wJalrXUtnFEMI" not in content and content.startswith("import os\n")
    review_input = prepare_review_input(redacted.artifact())
    assert review_input.files[0].content is not None
    # A stored artifact whose content still holds a secret never reaches a reviewer or analyzer.
    leaky = redacted.artifact()
    leaky["snapshot"]["diffs"][0]["new_content"] = SECRET_LINE
    with pytest.raises(RedactionError):
        prepare_review_input(leaky)
    assert ChangeRedactor().diff(FileDiff(depot_path=PY, action="edit", status=DiffStatus.FETCHED)).new_content is None
