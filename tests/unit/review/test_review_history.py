"""Versioned reruns: finding fingerprints, new / still open / resolved, reusable file answers."""

from __future__ import annotations

from typing import Any

import pytest

from p4review.change.fingerprints import finding_fingerprint, fingerprints_for, normalized_title
from p4review.models.review_result import Finding
from p4review.review.history import compare_versions, file_answers_for, reusable_answers

PATH = "//depot/tools/loader.py"


def finding(**overrides: Any) -> Finding:
    values: dict[str, Any] = {
        "id": "F1",
        "severity": "high",
        "category": "correctness",
        "title": "Bare except hides errors",
        "file": PATH,
        "line": 3,
        "message": "m",
    }
    values.update(overrides)
    return Finding(**values)


def diff(*lines: str, start: int = 1) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"--- a\n+++ b\n@@ -0,0 +{start},{len(lines)} @@\n{body}"


@pytest.mark.spec("RV-11")
def test_a_line_shift_keeps_the_fingerprint_and_a_content_change_does_not() -> None:
    v1 = diff("import os", "try:", "    except:", "x")
    v2 = diff("import os", "import sys", "try:", "    except:", "x")  # one line added above
    first = fingerprints_for([finding(line=3)], {PATH: v1})["F1"]
    assert fingerprints_for([finding(line=4)], {PATH: v2})["F1"] == first
    v3 = diff("import os", "try:", "    except ValueError:", "x")
    assert fingerprints_for([finding(line=3)], {PATH: v3})["F1"] != first


def test_indentation_and_title_wording_of_numbers_and_case_do_not_matter() -> None:
    assert finding_fingerprint(finding(), "    except:") == finding_fingerprint(finding(), "\texcept:  ")
    assert normalized_title("Line 42: Unused `x`") == normalized_title("line 7 unused x")
    renamed = finding(title="BARE except hides errors!")
    assert finding_fingerprint(renamed, "except:") == finding_fingerprint(finding(), "except:")


def test_the_rule_id_identifies_an_analyzer_finding_whatever_its_title() -> None:
    a = finding(rule_id="bandit/B602", title="subprocess call with shell=True")
    b = finding(rule_id="bandit/B602", title="different words")
    assert finding_fingerprint(a, "call(cmd, shell=True)") == finding_fingerprint(b, "call(cmd, shell=True)")
    assert finding_fingerprint(a, "x") != finding_fingerprint(finding(rule_id="bandit/B603"), "x")


def test_the_file_is_part_of_the_fingerprint() -> None:
    assert finding_fingerprint(finding(), "x") != finding_fingerprint(finding(file="//depot/other.py"), "x")


def compare(previous: list[Finding], current: list[Finding], **kwargs: Any):
    prints = {f.id: f"fp-{f.title}" for f in previous}
    current_prints = {f.id: f"fp-{f.title}" for f in current}
    values: dict[str, Any] = {
        "previous_version": 1,
        "previous_job_id": "job-1",
        "previous_findings": previous,
        "previous_fingerprints": prints,
        "current_findings": current,
        "current_fingerprints": current_prints,
        "reviewed_now": [PATH],
        "skipped_now": [],
    }
    values.update(kwargs)
    return compare_versions(**values)


@pytest.mark.spec("RV-11")
def test_new_still_open_and_resolved() -> None:
    previous = [finding(id="A", title="one"), finding(id="B", title="two", line=9)]
    current = [finding(id="X", title="one", line=5), finding(id="Y", title="three")]
    history = compare(previous, current)
    assert history.new == ["Y"] and history.still_open == ["X"]
    assert [(r.title, r.line) for r in history.resolved] == [("two", 9)]
    assert history.previous_version == 1 and history.previous_job_id == "job-1"


@pytest.mark.spec("RV-11")
def test_equal_fingerprints_match_one_to_one() -> None:
    """Two identical problems then, one now: one still open, one resolved."""
    previous = [finding(id="A", title="same"), finding(id="B", title="same", line=8)]
    history = compare(previous, [finding(id="X", title="same")])
    assert history.still_open == ["X"] and len(history.resolved) == 1
    history = compare([finding(id="A", title="same")], [finding(id="X", title="same"), finding(id="Y", title="same")])
    assert history.still_open == ["X"] and history.new == ["Y"] and history.resolved == []


@pytest.mark.spec("RV-11")
def test_a_finding_on_a_file_skipped_this_time_is_not_called_resolved() -> None:
    other = "//depot/tools/huge.py"
    previous = [finding(id="A", title="one", file=other)]
    history = compare(previous, [], reviewed_now=[PATH], skipped_now=[other])
    assert history.resolved == [] and history.not_rechecked == 1
    # The file left the change: nothing there any more, so resolved.
    history = compare(previous, [], reviewed_now=[PATH], skipped_now=[])
    assert len(history.resolved) == 1 and history.not_rechecked == 0


@pytest.mark.spec("RV-12")
def test_an_answer_is_reused_only_for_the_same_section_and_the_same_reviewer() -> None:
    sections = {PATH: "section v1", "//depot/b.py": "section b"}
    answers = file_answers_for(
        [PATH, "//depot/b.py"], sections, [finding(), finding(id="F2", file="//depot/b.py")], "r1"
    )
    assert [a.findings[0].id for a in answers] == ["F1", "F2"]
    assert set(reusable_answers(sections, answers, "r1")) == {PATH, "//depot/b.py"}
    changed = {PATH: "section v2", "//depot/b.py": "section b"}
    assert set(reusable_answers(changed, answers, "r1")) == {"//depot/b.py"}
    assert reusable_answers(sections, answers, "another prompt or model") == {}
