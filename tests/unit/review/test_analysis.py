"""Analyzers beside the model, the pure part: routing, each analyzer's report read into one
shape, reviewdog's added-lines filter, findings that name their analyzer, and the merge."""

from __future__ import annotations

import json

import pytest

from p4review.change import analyzer_files
from p4review.change.diff_lines import changed_lines_from_diff
from p4review.change.redaction import RedactionError
from p4review.change.snapshot_redaction import ChangeRedactor, prepare_review_input, redact_change
from p4review.models.change import ChangeDescription, ChangeSnapshot, DiffStatus, FileDiff
from p4review.models.finding_labels import Category, Severity
from p4review.models.job import ChangeKind
from p4review.models.review_result import Finding
from p4review.review.analyzers import analysis
from p4review.review.findings_merge import merge_analyzer_findings

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
        ("//d/tests/test_a.py", "", ("ruff", "bandit")),  # a name the author chooses hides nothing
        ("//d/tests/run_all", "#!/usr/bin/env python3", ("ruff", "bandit")),
        ("//d/run.sh", "", ("shellcheck",)),
        ("//d/x.BASH", "", ("shellcheck",)),
        ("//d/buf.c", "", ("flawfinder", "cppcheck")),
        ("//d/buf.hpp", "", ("flawfinder", "cppcheck")),
        ("//d/deploy", "#!/bin/bash", ("shellcheck",)),
        ("//d/tool", "#!/usr/bin/env python3", ("ruff", "bandit")),
        ("//d/README", "hello", ()),
        ("//d/app.js", "", ("eslint",)),
        ("//d/lib/index.MJS", "", ("eslint",)),
        ("//d/docker/Dockerfile", "FROM x", ("hadolint",)),
        ("//d/docker/Dockerfile.prod", "", ("hadolint",)),
        ("//d/docker/api.dockerfile", "", ("hadolint",)),
        ("//d/Containerfile", "", ("hadolint",)),
        ("//d/proj/.github/workflows/ci.yml", "", ("actionlint",)),
        ("//d/proj/.github/workflows/sub/ci.yml", "", ()),
        ("//d/proj/config/ci.yml", "", ()),
        ("//d/infra/main.tf", "", ("iac",)),
        ("//d/infra/main.tf.json", "", ()),
        ("//d/app/docker-compose.yml", "", ("iac",)),
        ("//d/app/docker-compose.prod.yaml", "", ("iac",)),
        ("//d/app/compose.yaml", "", ("iac",)),
        ("//d/app/compose.override.yml", "", ("iac",)),
        ("//d/app/api.compose.yml", "", ("iac",)),
        ("//d/app/composer.yml", "", ()),
        ("//d/proj/.github/workflows/compose.yml", "", ("actionlint",)),
    ],
)
def test_each_file_goes_to_the_analyzers_for_its_language(path, first_line, expected):
    assert analyzer_files.analyzers_for(path, first_line) == expected


@pytest.mark.parametrize(
    "path, is_test",
    [
        ("//depot/app/tests/test_io.py", True),
        ("//depot/app/io_test.py", True),
        ("//depot/app/conftest.py", True),
        ("//depot/web/test/req.query.js", True),  # mocha's folder
        ("//depot/web/src/__tests__/app.js", True),  # jest's
        ("//depot/web/src/app.spec.ts", True),
        ("//depot/web/src/app.test.js", True),
        ("//depot/web/src/contest.js", False),
        ("//depot/web/src/latest/app.js", False),
        ("//depot/app/testing_tools.py", False),
    ],
)
def test_test_files_are_known_by_the_usual_conventions(path, is_test):
    assert analyzer_files.is_test_path(path) is is_test


@pytest.mark.parametrize(
    ("path", "first_line", "expected"),
    [
        ("//d/bin/n", "#!/usr/bin/env bash", "//d/bin/n.sh"),
        ("//d/libexec/pyenv", "#!/bin/sh", "//d/libexec/pyenv.sh"),
        ("//d/scripts/run", "#!/usr/bin/env python3", "//d/scripts/run.py"),
        ("//d/scripts/run", "", "//d/scripts/run"),
        ("//d/Dockerfile", "FROM alpine", "//d/Dockerfile"),
        ("//d/tool.rb", "#!/bin/sh", "//d/tool.rb"),  # its own extension wins
    ],
)
def test_a_script_without_an_extension_takes_its_shebangs_language(path, first_line, expected):
    assert analyzer_files.language_path(path, first_line) == expected


@pytest.mark.spec("RV-8")
def test_fetch_keeps_content_only_for_what_an_enabled_analyzer_or_the_model_context_reads():
    assert analyzer_files.reads_content("//d/Dockerfile", ["hadolint"])
    assert not analyzer_files.reads_content("//d/main.tf", ["shellcheck"])
    assert analyzer_files.reads_content("//d/deploy", ["shellcheck"])  # a shebang can only be seen in the content
    assert not analyzer_files.reads_content("//d/deploy", [])
    assert not analyzer_files.reads_content("//d/notes.txt", analyzer_files.ALL_ANALYZERS)
    # source the model's context parses (review/context/) is kept with no analyzer at all
    assert analyzer_files.reads_content("//d/a.py", [])
    assert analyzer_files.reads_content("//d/Main.java", [])


PATHS = {
    "f0000/deploy.py": PY,
    "f0001/run.sh": "//depot/run.sh",
    "f0002/buf.c": "//depot/buf.c",
    "f0003/Dockerfile": "//depot/Dockerfile",
    "f0004/app.js": "//depot/app.js",
    "f0005/ci.yml": "//depot/.github/workflows/ci.yml",
}


def _result(rule: str, uri: str, line: int, text: str, end_line: int | None = None, rank: float | None = None):
    region = {"startLine": line} | ({"endLine": end_line} if end_line else {})
    location = {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}
    result = {"ruleId": rule, "level": "error", "message": {"text": text}, "locations": [location]}
    return result | ({"rank": rank} if rank is not None else {})


def _sarif(tool: str, *results: dict) -> str:
    return json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": tool}}, "results": list(results)}]})


@pytest.mark.spec("RV-7")
def test_each_analyzers_report_is_read_and_what_we_did_not_give_it_is_ignored():
    ruff = _sarif(
        "ruff",
        _result("F821", "file:///tmp/r/f0000/deploy.py", 7, "Undefined name `x`", end_line=7),
        _result("B006", "file:///elsewhere/x.py", 1, "m"),
        _result("F401", "file:///tmp/r/f0000/deploy.py", 1, "`os` unused"),
        _result("E722", "file:///tmp/r/f0000/deploy.py", 9, "bare except"),
    )
    r, unused, bare = analysis.read_ruff(ruff, {**PATHS, "/tmp/r/f0000/deploy.py": PY})
    assert (r.rule_id, r.file, r.line, r.end_line, r.severity) == ("ruff/F821", PY, 7, None, Severity.HIGH)
    assert (unused.severity, bare.severity, bare.category) == (Severity.LOW, Severity.MEDIUM, Category.RELIABILITY)
    bandit = json.dumps(
        {
            "results": [
                {"filename": "f0000/deploy.py", "line_number": 5, "line_range": [5, 6], "test_id": "B602",
                 "test_name": "subprocess_popen_with_shell_equals_true", "issue_severity": "HIGH",
                 "issue_confidence": "HIGH", "issue_text": "shell=True", "issue_cwe": {"id": 78}},
                {"filename": "f0000/deploy.py", "line_number": 2, "test_id": "B101", "issue_severity": "MEDIUM"},
                {"filename": "f0000/deploy.py", "line_number": 3, "test_id": "B404", "issue_severity": "LOW"},
                {"filename": "f0000/deploy.py", "line_number": 8, "test_id": "B110", "issue_severity": "LOW",
                 "test_name": "try_except_pass", "issue_text": "Try, Except, Pass detected."},
            ]
        }
    )  # fmt: skip
    b, swallowed = analysis.read_bandit(bandit, PATHS)  # low severity: only the swallowed-exception tests
    assert (swallowed.rule_id, swallowed.severity) == ("bandit/B110:try_except_pass", Severity.LOW)
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
            {"file": "f0001/run.sh", "line": 5, "level": "info", "code": 2046, "message": "Quote this"},
        ]}
    )  # fmt: skip
    s, info = analysis.read_shellcheck(shellcheck, PATHS)
    assert (s.rule_id, s.file, s.severity) == ("shellcheck/SC2086", "//depot/run.sh", Severity.MEDIUM)
    assert (info.rule_id, info.severity) == ("shellcheck/SC2046", Severity.LOW)
    flawfinder = _sarif(
        "Flawfinder",
        _result("FF1014", "f0002/buf.c", 2, "buffer/gets:Does not check for buffer overflows (CWE-120).", rank=1.0),
        _result("FF1022", "f0002/buf.c", 3, "buffer/strlen:Does not handle strings that are not terminated.", rank=0.2),
    )
    [f] = analysis.read_flawfinder(flawfinder, PATHS)
    assert (f.rule_id, f.line, f.severity) == ("flawfinder/gets", 2, Severity.HIGH)
    assert f.message == "Does not check for buffer overflows (CWE-120). (CWE-120)"
    cppcheck = "\n".join(
        [
            "f0002/buf.c\t3\terror\tmemleak\t401\tMemory leak: p",
            "f0002/buf.c\t4\twarning\tnullPointerRedundantCheck\t476\tEither the condition 'q' is redundant\tor not",
            "f0002/buf.c\t0\tinformation\tmissingIncludeSystem\t0\tInclude file not found",
            "f0002/buf.c\t5\tstyle\tvariableScope\t398\tThe scope can be reduced",
            "nofile.c\t1\terror\tnullPointer\t476\tNull pointer",
        ]
    )
    leak, null = analysis.read_cppcheck(cppcheck, PATHS)
    assert (leak.rule_id, leak.severity, leak.category, leak.message) == (
        "cppcheck/memleak", Severity.HIGH, Category.RELIABILITY, "Memory leak: p (CWE-401)"
    )  # fmt: skip
    assert (null.line, null.severity, null.title) == (
        4,
        Severity.MEDIUM,
        "Either the condition 'q' is redundant or not",
    )
    hadolint = json.dumps(
        [
            {"code": "DL3002", "file": "f0003/Dockerfile", "level": "warning", "line": 5, "message": "Last USER should not be root"},
            {"code": "DL3059", "file": "f0003/Dockerfile", "level": "style", "line": 6, "message": "Consolidate RUNs"},
        ]
    )  # fmt: skip
    [h] = analysis.read_hadolint(hadolint, PATHS)
    assert (h.rule_id, h.file, h.line, h.severity) == ("hadolint/DL3002", "//depot/Dockerfile", 5, Severity.MEDIUM)
    eslint = json.dumps(
        [{"filePath": "f0004/app.js", "messages": [
            {"ruleId": "no-unsanitized/property", "severity": 2, "line": 4, "message": "Unsafe assignment to innerHTML"},
            {"ruleId": "no-empty", "severity": 1, "line": 5, "endLine": 6, "message": "Empty block statement."},
            {"ruleId": None, "fatal": True, "severity": 2, "line": 1, "message": "Parsing error"},
        ]}]
    )  # fmt: skip
    xss, empty = analysis.read_eslint(eslint, PATHS)
    assert (xss.rule_id, xss.severity, xss.category) == (
        "eslint/no-unsanitized/property",
        Severity.HIGH,
        Category.SECURITY,
    )
    assert (empty.rule_id, empty.severity, empty.end_line) == ("eslint/no-empty", Severity.LOW, 6)
    actionlint = json.dumps(
        [{"file": "f0005/ci.yml", "line": 7, "column": 3, "kind": "expression", "message": "untrusted input. use env"}]
    )
    [a] = analysis.read_actionlint(actionlint, PATHS)
    assert (a.rule_id, a.file, a.severity, a.category) == (
        "actionlint/expression", "//depot/.github/workflows/ci.yml", Severity.HIGH, Category.SECURITY
    )  # fmt: skip
    for reader in analysis.READERS.values():  # garbage in: nothing out, no exception
        assert reader("not json, not csv \x00", PATHS) == []


def _report(line: int, end_line: int | None = None, file: str = PY) -> analysis.AnalyzerReport:
    return analysis.AnalyzerReport(
        analyzer="bandit", rule="B602:shell", file=file, line=line, end_line=end_line,
        severity=Severity.HIGH, category=Category.SECURITY, title="shell=True", message="shell=True",
    )  # fmt: skip


@pytest.mark.spec("RV-7")
def test_the_rules_measured_as_noise_on_ordinary_commits_are_not_reported():
    # tools/ordinary_commits_noise.py: each fired on ordinary commits' hunks at least half as often
    # as it hit a dev reversed-fix defect.
    shellcheck = json.dumps(
        {"comments": [
            {"file": "f0001/run.sh", "line": 3, "level": "info", "code": 2016, "message": "Expressions don't expand"},
            {"file": "f0001/run.sh", "line": 4, "level": "warning", "code": 3043, "message": "local is undefined"},
            {"file": "f0001/run.sh", "line": 5, "level": "info", "code": 2086, "message": "Double quote"},
        ]}
    )  # fmt: skip
    assert [r.rule_id for r in analysis.read_shellcheck(shellcheck, PATHS)] == ["shellcheck/SC2086"]
    hadolint = json.dumps(
        [
            {"code": code, "file": "f0003/Dockerfile", "level": "warning", "line": line, "message": "m"}
            for line, code in enumerate(["DL3003", "DL3006", "DL3008", "DL3018", "DL4006", "SC2086", "SC2046"], start=1)
        ]
    )
    assert [r.rule_id for r in analysis.read_hadolint(hadolint, PATHS)] == ["hadolint/SC2046"]
    assert "B028" in analysis.RUFF_IGNORED


def test_only_reports_touching_an_added_line_are_kept_as_reviewdog_does():
    changed = {PY: changed_lines_from_diff(DIFF)}  # lines 4 and 5 are added
    kept = analysis.on_added_lines(
        [_report(5), _report(1), _report(3), _report(3, 4), _report(6), _report(5, file="//depot/other.py")], changed
    )
    assert [(r.line, r.end_line) for r in kept] == [(5, None), (3, 4)]


def test_ruffs_copies_of_bandits_tests_are_left_out_only_while_bandit_runs():
    ruff_copy = _report(5).model_copy(update={"analyzer": "ruff", "rule": "S602"})
    ruff_own = _report(5).model_copy(update={"analyzer": "ruff", "rule": "BLE001"})
    reports = [_report(5), ruff_copy, ruff_own]
    assert analysis.without_copies(reports, ["ruff", "bandit"]) == [_report(5), ruff_own]
    assert analysis.without_copies([ruff_copy, ruff_own], ["ruff"]) == [ruff_copy, ruff_own]


@pytest.mark.spec("RV-7")
def test_findings_name_their_analyzer_and_rule():
    [finding] = analysis.as_findings([_report(5), _report(5)])  # one report, once
    assert finding.rule_id == "bandit/B602:shell"
    assert finding.message.endswith("[bandit B602]")
    assert finding.id.startswith("BANDIT-")


def _model_finding(line: int, category: Category = Category.SECURITY, severity: Severity = Severity.CRITICAL):
    return Finding(id=f"M{line}", severity=severity, category=category, title="t", file=PY, line=line, message="m")


@pytest.mark.spec("RV-7")
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


@pytest.mark.spec("RV-8")
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
    assert (
        ChangeRedactor().diff(FileDiff(depot_path=PY, action="edit", status=DiffStatus.FETCHED))[1].new_content is None
    )


def test_analyzers_read_placeholders_as_identifiers_and_their_reports_there_are_dropped():
    redacted = "import os\nhost = [REDACTED:internal_host]\nif not isinstance(x, [REDACTED:internal_host]):\n    pass\n"
    text, lines = analysis.analyzable(redacted)
    assert text == (
        "import os\nhost = REDACTED_internal_host\nif not isinstance(x, REDACTED_internal_host):\n    pass\n"
    )
    assert lines == {2, 3}
    compile(text, "x.py", "exec")  # the placeholder no longer makes the file a syntax error
    reports = [_report(2), _report(3, 4), _report(4), _report(1, file="//depot/other.py")]
    kept = analysis.without_placeholder_lines(reports, {PY: lines})
    assert [(r.file, r.line) for r in kept] == [(PY, 4), ("//depot/other.py", 1)]


def test_code_from_strings_and_unsafe_deserialization_stay_high():
    """bandit rates eval (B307) medium; the offline reviewer, which left it to bandit, had it high,
    and a Swarm test fails at high by default (analysis.BANDIT_HIGH)."""
    item = {
        "filename": "f0/a.py",
        "line_number": 3,
        "issue_severity": "MEDIUM",
        "issue_confidence": "HIGH",
        "test_id": "B307",
        "test_name": "blacklist",
        "issue_text": "Use of possibly insecure function - consider using safer ast.literal_eval.",
    }
    (report,) = analysis.read_bandit(json.dumps({"results": [item]}), {"f0/a.py": "//d/a.py"})
    assert report.severity is Severity.HIGH
    (other,) = analysis.read_bandit(json.dumps({"results": [{**item, "test_id": "B602"}]}), {"f0/a.py": "//d/a.py"})
    assert other.severity is Severity.MEDIUM
