"""`line_outside_diff`: findings on lines the change did not touch are dropped or flagged."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from p4review.change.diff_lines import changed_lines_from_diff
from p4review.models.review_result import REVIEW_RESULT_SCHEMA, ParseOutcome
from p4review.review.result_parser import LINE_OUTSIDE_DIFF, parse_review_result

PROMPT = "2.1.0"
BUFFER = "//depot/main/src/net/buffer.c"
STRINGS = "//depot/main/src/util/strings.c"
GONE = "//depot/main/src/old.c"
CHANGED = [BUFFER, STRINGS, GONE]
LINES = {
    BUFFER: changed_lines_from_diff("@@ -10,3 +10,4 @@\n a\n+b\n c\n d\n@@ -50 +51,2 @@\n x\n+y\n"),  # adds 11, 52
    GONE: changed_lines_from_diff("@@ -20,3 +19,0 @@\n-p\n-q\n-r\n"),  # pure deletion after line 19
}


def finding(id: str = "F1", file: str = BUFFER, line: Any = 11, **extra: Any) -> dict[str, Any]:
    return {
        "id": id,
        "severity": "high",
        "category": "correctness",
        "title": "T",
        "file": file,
        "line": line,
        "message": "M",
        **extra,
    }


def parse(findings: list[Any], meta: Any = None, **kwargs: Any) -> ParseOutcome:
    document = {"schema_version": "1.0", "prompt_version": PROMPT, "findings": findings}
    if meta is not None:
        document["meta"] = meta
    kwargs.setdefault("changed_lines", LINES)
    return parse_review_result(json.dumps(document), CHANGED, expected_prompt_version=PROMPT, **kwargs)


def kept(outcome: ParseOutcome) -> list[str]:
    assert outcome.result is not None
    return [f.id for f in outcome.result.findings]


def test_drop_policy_drops_findings_away_from_the_change():
    outcome = parse(
        [
            finding("near", line=14),
            finding("far", line=30),
            finding("span", line=30, end_line=49),
            finding("plus", line=56),
        ]
    )
    assert kept(outcome) == ["near", "span"]
    dropped = [d for d in outcome.diagnostics if d.kind == "finding_dropped"]
    assert [(d.reason, d.finding_id, d.file, d.line) for d in dropped] == [
        (LINE_OUTSIDE_DIFF, "far", BUFFER, 30),
        (LINE_OUTSIDE_DIFF, "plus", BUFFER, 56),
    ]
    assert dropped[0].detail == "line 30: not within 3 line(s) of a change"


def test_location_is_the_reconciled_file_and_coerced_line():
    outcome = parse([finding(file="src\\net\\buffer.c", line=" 30 ")])
    [dropped] = [d for d in outcome.diagnostics if d.kind == "finding_dropped"]
    assert (dropped.file, dropped.line) == (BUFFER, 30)
    assert [d.reason for d in outcome.diagnostics if d.kind == "warning"] == ["all_findings_dropped"]


def test_tolerance_is_configurable():
    assert kept(parse([finding(line=17)])) == []
    assert kept(parse([finding(line=17)], line_tolerance=6)) == ["F1"]
    assert kept(parse([finding(line=12)], line_tolerance=0)) == []


def test_pure_deletion_file_is_near_the_deletion_point():
    outcome = parse(
        [finding("a", file=GONE, line=20), finding("b", file=GONE, line=16), finding("c", file=GONE, line=40)]
    )
    assert kept(outcome) == ["a", "b"]


def test_files_without_an_entry_or_without_hunks_are_not_line_checked():
    assert kept(parse([finding(file=STRINGS, line=900)])) == ["F1"]
    no_hunks = {**LINES, STRINGS: changed_lines_from_diff("==== //depot/main/src/util/strings.c#2 (binary) ====\n")}
    assert kept(parse([finding(file=STRINGS, line=900)], changed_lines=no_hunks)) == ["F1"]
    assert kept(parse([finding(line=900)], changed_lines=None)) == ["F1"]
    assert kept(parse([finding(line=900)], changed_lines={})) == ["F1"]


def test_flag_policy_keeps_warns_and_records_in_meta():
    outcome = parse(
        [finding("z-far", line=90), finding("near", line=11), finding("a-far", line=30, end_line=31)],
        meta={"model": "m"},
        line_policy="flag",
    )
    assert kept(outcome) == ["z-far", "near", "a-far"]
    warnings = [d for d in outcome.diagnostics if d.kind == "warning"]
    assert [(w.reason, w.finding_id, w.file, w.line) for w in warnings] == [
        (LINE_OUTSIDE_DIFF, "z-far", BUFFER, 90),
        (LINE_OUTSIDE_DIFF, "a-far", BUFFER, 30),
    ]
    assert warnings[1].detail == "lines 30-31: not within 3 line(s) of a change"
    assert outcome.result is not None
    assert outcome.result.meta == {"model": "m", "flagged": {"line_outside_diff": ["a-far", "z-far"]}}
    jsonschema.validate(outcome.result.model_dump(mode="json", exclude_none=True), REVIEW_RESULT_SCHEMA)


def test_flag_policy_creates_meta_and_owns_the_flag_key():
    outcome = parse([finding(line=90)], line_policy="flag")
    assert outcome.result is not None and outcome.result.meta == {"flagged": {"line_outside_diff": ["F1"]}}
    forged = {"flagged": {"line_outside_diff": ["X"], "other": 1}}
    outcome = parse([finding(line=90)], meta=forged, line_policy="flag")
    assert outcome.result is not None
    assert outcome.result.meta == {"flagged": {"line_outside_diff": ["F1"], "other": 1}}
    assert forged == {"flagged": {"line_outside_diff": ["X"], "other": 1}}  # the input is not mutated
    outcome = parse([finding(line=90)], meta={"flagged": "nonsense"}, line_policy="flag")
    assert outcome.result is not None and outcome.result.meta == {"flagged": {"line_outside_diff": ["F1"]}}


def test_flag_policy_without_flags_leaves_meta_alone():
    outcome = parse([finding(line=11)], meta={"model": "m"}, line_policy="flag")
    assert outcome.result is not None and outcome.result.meta == {"model": "m"}
    assert outcome.diagnostics == []


def test_order_earlier_checks_win_and_flagged_duplicates_are_not_flagged():
    # An unknown file or a bad line is reported as such, never as line_outside_diff.
    outcome = parse([finding(file="//depot/other.c", line=900), finding("F2", line=0)])
    assert [d.reason for d in outcome.diagnostics if d.kind == "finding_dropped"] == [
        "file_not_in_changed_files",
        "invalid_line_range",
    ]
    # A duplicate id is dropped as a duplicate, and is neither warned about nor recorded.
    outcome = parse([finding("X", line=11), finding("X", line=90)], line_policy="flag")
    assert kept(outcome) == ["X"]
    assert [(d.kind, d.reason) for d in outcome.diagnostics] == [("finding_dropped", "duplicate_finding_id")]
    assert outcome.result is not None and outcome.result.meta is None
    # A line-dropped finding does not reserve its id.
    outcome = parse([finding("X", line=90), finding("X", line=11)])
    assert [(f.id, f.line) for f in outcome.result.findings] == [("X", 11)]


def test_rejection_is_unchanged_by_line_checks():
    outcome = parse_review_result(
        "nope", CHANGED, expected_prompt_version=PROMPT, changed_lines=LINES, line_policy="flag"
    )
    assert outcome.rejected and [d.reason for d in outcome.diagnostics] == ["invalid_json"]


def test_unknown_policy_is_a_caller_error():
    with pytest.raises(ValueError, match="line_policy"):
        parse([finding()], line_policy="ignore")


def test_changed_lines_entries_are_keyed_by_the_canonical_path():
    # "buffer.c" reconciles to BUFFER, whose entry is then used; an entry under another key is not.
    far_away = changed_lines_from_diff("@@ -1 +1 @@\n-a\n+b\n")
    assert kept(parse([finding(file="buffer.c", line=90)])) == []
    assert kept(parse([finding(file="buffer.c", line=90)], changed_lines={"buffer.c": far_away})) == ["F1"]
