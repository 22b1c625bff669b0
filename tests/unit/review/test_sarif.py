"""The one SARIF 2.1.0 reader (p4review.review.analyzers.sarif), on real output of the installed analyzers
(tests/unit/data/sarif, each file named for the tool version that wrote it), and the analyzers
read through it giving the reports their JSON and CSV gave before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4review.models.finding_labels import Category, Confidence, Severity
from p4review.review.analyzers import analysis, sarif

DATA = Path(__file__).parents[1] / "data" / "sarif"
# Where the fixtures were captured, and the files given to the tools there.
ROOT = "/tmp/p4review-analyze-fixture"
SOURCES = {
    "f0000/tool.py": "import os\nimport subprocess\n\n\ndef f(x):\n    subprocess.call(x, shell=True)\n    return y\n"
    "\n\ntry:\n    f(1)\nexcept:\n    pass\n",
    "f0001/broken.py": "def g(:\n    pass\n",
    "f0002/buf.c": "#include <stdio.h>\n#include <string.h>\nvoid f(char *s) { char b[8]; gets(b); strcpy(b, s); }\n"
    'void g(char *s) { char b[8]; sprintf(b, "%s", s); lstrcpy(b, s); }\n',
    "f0003/leak.c": "#include <stdlib.h>\nint f(int n) {\n  char *p = malloc(n);\n  if (n > 3) return 1;\n"
    "  free(p);\n  return 0;\n}\nint g(int *q) {\n  int v = *q;\n  if (q) return v;\n  return 0;\n}\n",
}
DEPOT = {
    "f0000/tool.py": "//depot/app/tool.py",
    "f0001/broken.py": "//depot/app/broken.py",
    "f0002/buf.c": "//depot/app/buf.c",
    "f0003/leak.c": "//depot/app/leak.c",
}
# As p4review.review.analyzers.runner._read lists them: relative, absolute under the run's root, ./-prefixed.
PATHS = {local: depot for local, depot in DEPOT.items()}
PATHS |= {f"{ROOT}/{local}": depot for local, depot in DEPOT.items()}
PATHS |= {f"./{local}": depot for local, depot in DEPOT.items()}


def _log(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_ruffs_log_is_read_with_file_uris_mapped_back_to_depot_paths():
    results = list(sarif.read(_log("ruff-0.17.6.sarif")))
    assert {r.tool for r in results} == {"ruff"}
    assert [(r.rule_id, r.uri.rsplit("/", 2)[-2:], r.start_line, r.start_column, r.end_line) for r in results] == [
        ("F401", ["f0000", "tool.py"], 1, 8, 1),
        ("F821", ["f0000", "tool.py"], 7, 12, 7),
        ("E722", ["f0000", "tool.py"], 12, 1, 12),
        ("S110", ["f0000", "tool.py"], 12, 1, 13),
        ("invalid-syntax", ["f0001", "broken.py"], 1, 7, 1),
        ("invalid-syntax", ["f0001", "broken.py"], 1, 8, 2),
    ]
    first = results[0]
    assert first.uri == f"file://{ROOT}/f0000/tool.py" and first.path_in(PATHS) == "//depot/app/tool.py"
    # The level comes from the result (ruff's rules carry it too, as their defaultConfiguration).
    assert (first.level, first.message, first.rule_name) == ("error", "`os` imported but unused", None)


@pytest.mark.spec("RV-7")
def test_ruff_through_sarif_gives_the_reports_its_json_gave():
    """Expected: what read_ruff made of `ruff check --output-format json` on the same files
    (ruff 0.17.6), before ruff was read through SARIF."""
    reports = analysis.read_ruff(_log("ruff-0.17.6.sarif"), PATHS)
    assert [(r.rule, r.file, r.line, r.end_line, r.severity, r.category, r.confidence, r.title) for r in reports] == [
        ("F401", "//depot/app/tool.py", 1, None, Severity.LOW, Category.CORRECTNESS, Confidence.HIGH,
         "`os` imported but unused"),
        ("F821", "//depot/app/tool.py", 7, None, Severity.HIGH, Category.CORRECTNESS, Confidence.HIGH,
         "Undefined name `y`"),
        ("E722", "//depot/app/tool.py", 12, None, Severity.MEDIUM, Category.RELIABILITY, Confidence.HIGH,
         "Do not use bare `except`"),
        ("S110", "//depot/app/tool.py", 12, 13, Severity.LOW, Category.MAINTAINABILITY, Confidence.HIGH,
         "`try`-`except`-`pass` detected, consider logging the exception"),
        ("invalid-syntax", "//depot/app/broken.py", 1, None, Severity.LOW, Category.MAINTAINABILITY,
         Confidence.HIGH, "Expected a parameter or the end of the parameter list"),
        ("invalid-syntax", "//depot/app/broken.py", 1, 2, Severity.LOW, Category.MAINTAINABILITY, Confidence.HIGH,
         "Expected `)`, found newline"),
    ]  # fmt: skip
    # A file the analyzer was not given (here: none of them) is ignored.
    assert analysis.read_ruff(_log("ruff-0.17.6.sarif"), {"f0000/tool.py": "//depot/app/tool.py"}) == []


@pytest.mark.spec("RV-7")
def test_flawfinder_through_sarif_gives_the_reports_its_csv_gave():
    """Expected: what read_flawfinder made of `flawfinder --csv --minlevel=4` on the same file
    (flawfinder 2.0.20). Its SARIF also holds the level-2 `char` hit, which is left out; the
    function comes from each message, since FF1001's rule is named for strcpy alone. strcpy and
    sprintf are high (analysis.FLAWFINDER_HIGH: the offline reviewer's severity for them)."""
    log = _log("flawfinder-2.0.20.sarif")
    assert [(r.rule_id, r.rank, r.level) for r in sarif.read(log)][:2] == [
        ("FF1013", 0.4, "note"),
        ("FF1014", 1.0, "error"),
    ]
    reports = analysis.read_flawfinder(log, PATHS)
    assert [(r.rule, r.file, r.line, r.severity, r.category, r.confidence, r.title, r.message) for r in reports] == [
        ("gets", "//depot/app/buf.c", 3, Severity.HIGH, Category.SECURITY, Confidence.MEDIUM,
         "gets: Does not check for buffer overflows (CWE-120, CWE-20).",
         "Does not check for buffer overflows (CWE-120, CWE-20). (CWE-120, CWE-20)"),
        ("strcpy", "//depot/app/buf.c", 3, Severity.HIGH, Category.SECURITY, Confidence.MEDIUM,
         "strcpy: Does not check for buffer overflows when copying to destination [MS-banned] (CWE-120).",
         "Does not check for buffer overflows when copying to destination [MS-banned] (CWE-120). (CWE-120)"),
        ("sprintf", "//depot/app/buf.c", 4, Severity.HIGH, Category.SECURITY, Confidence.MEDIUM,
         "sprintf: Does not check for buffer overflows (CWE-120).",
         "Does not check for buffer overflows (CWE-120). (CWE-120)"),
        ("lstrcpy", "//depot/app/buf.c", 4, Severity.MEDIUM, Category.SECURITY, Confidence.MEDIUM,
         "lstrcpy: Does not check for buffer overflows when copying to destination [MS-banned] (CWE-120).",
         "Does not check for buffer overflows when copying to destination [MS-banned] (CWE-120). (CWE-120)"),
    ]  # fmt: skip


def test_rules_are_found_by_index_and_their_properties_kept():
    """bandit's SARIF (not what the review runs: see p4review.review.analyzers.analysis) names each rule by
    ruleIndex, and keeps its severity and confidence in the result's properties and CWE in the rule's."""
    results = list(sarif.read(_log("bandit-1.9.4.sarif")))
    assert [(r.rule_id, r.rule_name, r.level, r.start_line, r.end_line, r.start_column) for r in results] == [
        ("B404", "blacklist", "note", 2, 2, 1),
        ("B602", "subprocess_popen_with_shell_equals_true", "error", 6, 6, 5),
        ("B110", "try_except_pass", "note", 12, 13, 1),
    ]
    shell = results[1]
    assert shell.properties == {"issue_confidence": "HIGH", "issue_severity": "HIGH"}
    assert shell.rule_properties["tags"] == ["security", "external/cwe/cwe-78"]
    assert shell.path_in(PATHS) == "//depot/app/tool.py"


def test_cppchecks_sarif_loses_the_severity_its_template_report_gives():
    """Why cppcheck is read from its --template report: its SARIF (2.22) calls the warning
    nullPointerRedundantCheck an error, and first names line 10, where the template says 9."""
    results = {r.rule_id: r for r in sarif.read(_log("cppcheck-2.22.0.sarif"))}
    redundant = results["nullPointerRedundantCheck"]
    assert (redundant.level, redundant.rule_properties["problem.severity"], redundant.start_line) == (
        "error",
        "error",
        10,
    )
    assert (results["memleak"].start_line, results["memleak"].path_in(PATHS)) == (4, "//depot/app/leak.c")


def _log_of(*results: object, rules: object = None, version: object = "2.1.0") -> str:
    driver = {"name": "t"} | ({"rules": rules} if rules is not None else {})
    return json.dumps({"version": version, "runs": [{"tool": {"driver": driver}, "results": list(results)}]})


def test_a_result_without_a_level_takes_its_rules_else_warning():
    rules = [{"id": "R1", "defaultConfiguration": {"level": "note"}}, {"id": "R2"}]
    log = _log_of({"ruleId": "R1"}, {"ruleId": "R2"}, {"ruleIndex": 0}, {"ruleId": "R9", "level": "none"}, rules=rules)
    assert [(r.rule_id, r.level) for r in sarif.read(log)] == [
        ("R1", "note"),
        ("R2", "warning"),
        ("R1", "note"),
        ("R9", "none"),
    ]


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///tmp/r/f0001/a%20b.py", "/tmp/r/f0001/a b.py"),
        ("file:///tmp/r/f0001/x.py", "/tmp/r/f0001/x.py"),
        ("f0001/x.py", "f0001/x.py"),
        ("./f0001/x.py", "./f0001/x.py"),
        ("https://example.invalid/f0001/x.py", "https://example.invalid/f0001/x.py"),
    ],
)
def test_artifact_uris_are_read_as_the_paths_the_analyzer_was_given(uri, path):
    assert sarif.artifact_path(uri) == path


def test_what_is_not_a_sarif_210_log_or_does_not_fit_gives_nothing_and_never_raises():
    good = {"ruleId": "R1", "message": {"text": "m"}, "locations": [{"physicalLocation": {"region": {"startLine": 3}}}]}
    for output in ("", "not json \x00", "[]", '{"runs": []}', _log_of(good, version="2.0.0"), '{"version": "2.1.0"}',
                   json.dumps({"version": "2.1.0", "runs": [{"results": "x"}, 3]})):  # fmt: skip
        assert list(sarif.read(output)) == []
    # One result (or rule) that does not fit is skipped alone; the rule indexes still point right.
    bad = {"ruleId": "R2", "locations": [{"physicalLocation": {"region": {"startLine": "three"}}}]}
    log = _log_of(bad, good, {"ruleIndex": 1}, "x", rules=[{"id": 5, "name": []}, {"id": "R3", "name": "three"}])
    assert [(r.rule_id, r.rule_name, r.start_line, r.uri) for r in sarif.read(log)] == [
        ("R1", None, 3, ""),
        ("R3", "three", None, ""),
    ]
    assert analysis.read_ruff(log, PATHS) == [] and analysis.read_flawfinder(log, PATHS) == []
