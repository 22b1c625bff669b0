"""Swarm comments (pure): markers, anchors, tasks, rendering and the per-version plan."""

from __future__ import annotations

import re

import pytest

from p4review.change.fingerprints import finding_fingerprint
from p4review.models.review_result import (
    Coverage,
    Finding,
    ResolvedFinding,
    ReviewResult,
    SkippedFile,
    StoredReview,
    VersionHistory,
)
from p4review.notify.swarm.comments import (
    MAX_BODY_CHARS,
    SUMMARY_KEY,
    anchor_context,
    comment_keys,
    comment_marker,
    find_marker,
    opens_task,
    plan_comments,
    render_finding_comment,
    render_summary_comment,
)

MARKER = re.compile(r"^p4review:[0-9a-f]{24}$")
DIFF = (
    "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,6 @@\n"
    " import os\n"
    "+import subprocess\n"
    "+\n"
    " def run(cmd):\n"
    "+    subprocess.run(cmd, shell=True)\n"
    " return\n"
)


def _finding(**overrides: object) -> Finding:
    values: dict[str, object] = {
        "id": "F1",
        "severity": "high",
        "category": "security",
        "title": "Shell injection",
        "file": "//depot/main/x.py",
        "line": 5,
        "message": "The command runs through a shell.",
        "suggestion": "Pass a list and drop shell=True.",
        "rule_id": "ruff/S602",
        "confidence": "high",
    }
    values.update(overrides)
    return Finding.model_validate(values)


def _stored(findings: list[Finding], **overrides: object) -> StoredReview:
    values: dict[str, object] = {
        "result": ReviewResult(schema_version="1.0", prompt_version="1.0", findings=findings, summary="Two problems."),
        "coverage": Coverage(
            files_reviewed=["//depot/main/x.py"],
            files_skipped=[SkippedFile(file="//depot/main/big.bin", reason="binary")],
        ),
        "fingerprints": {f.id: f"fp-{f.id}" for f in findings},
    }
    values.update(overrides)
    return StoredReview.model_validate(values)


# --- markers -----------------------------------------------------------------------------------------
def test_marker_is_deterministic_short_and_keyed_by_every_part():
    marker = comment_marker(48213, 2, "abc")
    assert MARKER.match(marker)
    assert marker == comment_marker(48213, 2, "abc")
    others = {comment_marker(48214, 2, "abc"), comment_marker(48213, 3, "abc"), comment_marker(48213, 2, "abd")}
    assert marker not in others and len(others) == 3
    # No ambiguity from joining: (1, 23) and (12, 3) differ.
    assert comment_marker(1, 23, "x") != comment_marker(12, 3, "x")


@pytest.mark.parametrize(
    "body",
    [
        "text\n\n{m}",
        "text\n\n{m}\n",
        "text\r\n\r\n{m}\r\n\r\n",
        "{m}",
        "  {m}  ",
    ],
)
def test_find_marker_reads_the_last_line(body):
    marker = comment_marker(1, 1, "k")
    assert find_marker(body.format(m=marker)) == marker


@pytest.mark.parametrize(
    "body",
    [
        "",
        "no marker here",
        "{m}\nmore text after it",
        "text\np4review:abc",
        "text\np4review:" + "g" * 24,
        "text\np4review:" + "a" * 25,
        "text\nP4REVIEW:" + "a" * 24,
        "text\nsee p4review:" + "a" * 24,
    ],
)
def test_find_marker_refuses_anything_else(body):
    assert find_marker(body.format(m=comment_marker(1, 1, "k"))) is None


def test_a_marker_planted_in_the_message_is_not_the_comments_marker():
    planted = comment_marker(1, 1, "someone-elses")
    marker = comment_marker(1, 1, "mine")
    body = render_finding_comment(_finding(message=f"look:\n{planted}"), marker)
    assert find_marker(body) == marker


def test_keys_are_fingerprints_with_repeats_numbered_and_a_fallback():
    a, b, c, d = (_finding(id=i) for i in ("A", "B", "C", "D"))
    keyed = comment_keys([a, b, c, d], {"A": "fp1", "B": "fp2", "C": "fp1"})
    assert [key for _, key in keyed] == ["fp1", "fp2", "fp1#2", finding_fingerprint(d, None)]
    assert [finding.id for finding, _ in keyed] == ["A", "B", "C", "D"]


# --- tasks and anchors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("severity", "threshold", "expected"),
    [
        ("critical", "high", True),
        ("high", "high", True),
        ("medium", "high", False),
        ("info", "info", True),
        ("critical", None, False),
        ("low", "critical", False),
    ],
)
def test_a_task_opens_at_or_above_the_threshold(severity, threshold, expected):
    assert opens_task(severity, threshold) is expected


@pytest.mark.spec("SW-1")
def test_anchor_holds_the_flagged_line_and_up_to_four_above_it():
    context = anchor_context(_finding(line=5), DIFF, swarm_version=3)
    assert context.file == "//depot/main/x.py"
    assert context.right_line == 5
    assert context.left_line is None  # an added line has no left side
    assert context.version == 3
    # As Swarm stores a diff's lines: with their "+", "-" or space prefix (CommentsController::fetchDiffSnippet).
    assert context.content == (
        " import os",
        "+import subprocess",
        "+",
        " def run(cmd):",
        "+    subprocess.run(cmd, shell=True)",
    )
    assert len(anchor_context(_finding(line=6), DIFF).content) == 5


@pytest.mark.spec("SW-1")
def test_an_unchanged_line_carries_its_left_line_and_deleted_lines_count_in_the_window():
    diff = "--- a\n+++ b\n@@ -10,4 +10,3 @@\n keep\n-gone\n-also gone\n+new\n same\n"
    context = anchor_context(_finding(line=12), diff)
    assert context.left_line == 13 and context.right_line == 12
    assert context.content == (" keep", "-gone", "-also gone", "+new", " same")
    added = anchor_context(_finding(line=11), diff)
    assert added.left_line is None and added.content == (" keep", "-gone", "-also gone", "+new")


def test_anchor_content_stops_at_a_gap_and_is_empty_without_the_line():
    gapped = "--- a\n+++ b\n@@ -1,1 +1,2 @@\n a\n+b\n@@ -9,1 +10,2 @@\n c\n+d\n"
    assert anchor_context(_finding(line=11), gapped).content == (" c", "+d")
    assert anchor_context(_finding(line=10), gapped).left_line == 9
    assert anchor_context(_finding(line=40), DIFF).content == ()
    assert anchor_context(_finding(line=5), None).content == ()
    assert anchor_context(_finding(line=5), None).version is None


@pytest.mark.spec("SW-1")
def test_context_lines_are_cut_where_swarm_cuts_them():
    diff = "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+" + "y" * 400 + "\n"
    (line,) = anchor_context(_finding(line=1), diff).content
    assert line == "+" + "y" * 255


# --- rendering -----------------------------------------------------------------------------------------
def test_a_finding_comment_shows_what_the_email_shows():
    marker = comment_marker(1, 1, "k")
    body = render_finding_comment(_finding(end_line=7, suggested_code="subprocess.run(['ls'])"), marker)
    assert body.startswith("**[HIGH] Shell injection** (security)")
    assert "//depot/main/x.py:5-7" in body
    assert "The command runs through a shell." in body
    assert "Suggestion: Pass a list and drop shell=True." in body
    assert "```\nsubprocess.run(['ls'])\n```" in body
    assert "rule ruff/S602 · confidence high" in body
    assert body.endswith("\n\n" + marker)


@pytest.mark.spec("SW-1")
def test_model_text_cannot_make_links_images_html_or_close_the_code_block():
    hostile = _finding(
        title="See [here](https://evil.test) <img src=x>",
        message="![beacon](https://evil.test/pixel.png)\n<script>alert(1)</script>",
        suggested_code="x = 1\n```\n[link](https://evil.test)",
    )
    body = render_finding_comment(hostile, comment_marker(1, 1, "k"))
    fences = re.findall(r"^(`{3,})$", body, flags=re.M)
    assert fences and fences[0] == fences[-1] and len(fences[0]) > 3  # longer than the code's own fence
    outside_code = re.sub(rf"^{fences[0]}$.*?^{fences[0]}$", "", body, flags=re.M | re.S)
    assert "```" not in outside_code  # the code's own fence stayed inside the block
    assert "](https://evil.test" not in outside_code.replace("\\](", "")
    assert not re.search(r"(?<!\\)<", outside_code)  # every < is escaped: no HTML
    assert "\\!\\[beacon\\]" in outside_code


def test_control_and_bidi_characters_do_not_reach_the_body():
    body = render_finding_comment(
        _finding(title="admin\u202e\u2066 check", message="a\x1b[31mred\x00", file="//depot/x\u202e.py"),
        comment_marker(1, 1, "k"),
    )
    assert not re.search(r"[\x00-\x08\x0b-\x1f\u202a-\u202e\u2066-\u2069]", body)
    assert "\\u202e" in body  # the path shows the character escaped, as the email does


def test_a_huge_finding_is_cut_but_keeps_its_marker():
    marker = comment_marker(1, 1, "k")
    body = render_finding_comment(_finding(message="word " * 5000, suggested_code="x\n" * 1500), marker)
    assert len(body) <= MAX_BODY_CHARS
    assert find_marker(body) == marker
    assert "(truncated" in body
    assert "Suggestion:" in body  # only the message and the code give way


@pytest.mark.spec("SW-1")
def test_the_summary_counts_compares_and_covers():
    findings = [_finding(id="A"), _finding(id="B", severity="low"), _finding(id="C")]
    history = VersionHistory(
        previous_version=1,
        previous_job_id="job-1",
        new=["A"],
        still_open=["B", "C"],
        resolved=[
            ResolvedFinding(severity="medium", category="style", title="Unused import", file="//depot/a.py", line=3)
        ],
        not_rechecked=2,
    )
    body = render_summary_comment(changelist_id=48284, review_version=2, stored=_stored(findings, history=history))
    assert body.startswith("**p4review** - changelist 48284, review v2: 3 findings (2 high, 1 low).")
    assert "Since v1: 1 new, 2 still open, 1 resolved." in body
    assert "- [MEDIUM] //depot/a.py:3: Unused import" in body
    assert "2 findings of v1 on files not reviewed this time." in body
    assert "Files reviewed: 1; skipped: 1." in body and "skipped //depot/main/big.bin (binary)" in body
    assert "Two problems." in body
    assert find_marker(body) == comment_marker(48284, 2, SUMMARY_KEY)


def test_the_summary_of_a_clean_first_version_and_of_a_long_history():
    body = render_summary_comment(changelist_id=7, review_version=1, stored=_stored([], coverage=None))
    assert "review v1: no findings." in body and "Since" not in body and "Files reviewed" not in body
    resolved = [
        ResolvedFinding(severity="low", category="style", title=f"t{i}", file="//d/f", line=i + 1) for i in range(60)
    ]
    history = VersionHistory(previous_version=1, previous_job_id="j", resolved=resolved)
    body = render_summary_comment(changelist_id=7, review_version=2, stored=_stored([], history=history))
    assert "... and 40 more" in body and len(body) <= MAX_BODY_CHARS


# --- the plan --------------------------------------------------------------------------------------------
@pytest.mark.spec("SW-1")
def test_the_plan_posts_each_finding_then_the_summary_deterministically():
    findings = [_finding(id="A"), _finding(id="B", severity="low", line=2), _finding(id="C", file="//depot/other.py")]
    stored = _stored(findings, fingerprints={"A": "fp-a", "B": "fp-b", "C": "fp-a"})
    plan = plan_comments(
        changelist_id=48213,
        review_version=1,
        stored=stored,
        diffs={"//depot/main/x.py": DIFF},
        task_threshold="high",
        swarm_version=1,
    )
    assert [p.key for p in plan] == ["fp-a", "fp-b", "fp-a#2", SUMMARY_KEY]
    assert [p.finding_id for p in plan] == ["A", "B", "C", None]
    assert [p.task_open for p in plan] == [True, False, True, False]
    assert len({p.marker for p in plan}) == 4
    assert all(find_marker(p.body) == p.marker for p in plan)
    assert all(p.marker == comment_marker(48213, 1, p.key) for p in plan)
    assert plan[0].context is not None and plan[0].context.content[-1] == "+    subprocess.run(cmd, shell=True)"
    assert plan[2].context is not None and plan[2].context.content == ()
    assert plan[3].context is None
    again = plan_comments(
        changelist_id=48213,
        review_version=1,
        stored=stored,
        diffs={"//depot/main/x.py": DIFF},
        task_threshold="high",
        swarm_version=1,
    )
    assert again == plan


def test_another_version_gets_other_markers_for_the_same_findings():
    stored = _stored([_finding(id="A")])
    v1 = plan_comments(changelist_id=5, review_version=1, stored=stored)
    v2 = plan_comments(changelist_id=5, review_version=2, stored=stored)
    assert [p.key for p in v1] == [p.key for p in v2]
    assert not {p.marker for p in v1} & {p.marker for p in v2}


@pytest.mark.spec("SW-1")
def test_a_finding_on_a_redacted_path_is_a_comment_on_the_review_naming_that_path():
    """Swarm anchors by the real depot path, which nothing after fetch knows when the path held a
    secret (issue 28 item 7): the comment goes on the review, not on a file, and says why."""
    redacted = "//depot/keys/[REDACTED:github_token]/loader.py"
    stored = StoredReview(
        result=ReviewResult(
            schema_version="1.0",
            prompt_version="1.2.0",
            findings=[_finding(file=redacted), _finding(id="F2", line=6)],
        )
    )
    first, second, _summary = plan_comments(
        changelist_id=9, review_version=1, stored=stored, diffs={redacted: DIFF, "//depot/main/x.py": DIFF}
    )
    assert first.context is None
    assert "REDACTED:github\\_token" in first.body and "path held a secret" in first.body
    assert second.context is not None and second.context.file == "//depot/main/x.py"
    assert "path held a secret" not in second.body
