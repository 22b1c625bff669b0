"""tools/ordinary_commits_noise.py: which commits count as ordinary, what a code hunk is, and when
a finding fires on one (reading commits from a mirror: tests/integration/benchmarks)."""

from __future__ import annotations

from p4review_dev.support.tools import load_tool


def _tool():
    return load_tool("ordinary_commits_noise")


DIFF = """\
diff --git a/x.c b/x.c
--- a/x.c
+++ b/x.c
@@ -1,3 +1,4 @@
 a
+b
 c
 d
@@ -10,3 +11,2 @@
 a
-b
 c
diff --git a/y.c b/y.c
--- a/y.c
+++ b/y.c
@@ -5,2 +5,3 @@
 a
+b
 c
"""


def test_a_code_hunk_adds_a_line_and_spans_its_new_side_lines():
    # The second hunk of x.c only removes: nothing there for a rule on added lines to fire on.
    assert _tool().code_hunks(DIFF) == [("x.c", 1, 4), ("y.c", 5, 7)]


def test_a_finding_fires_on_the_hunks_its_range_touches():
    hunks = [("x.c", 1, 4), ("y.c", 5, 7)]
    findings = [("x.c", 4, 6, "r1"), ("x.c", 8, 8, "r2"), ("y.c", 3, 5, "r3"), ("x.c", 2, 2, "r3")]
    assert _tool().fired(hunks, findings) == {0: {"r1", "r3"}, 1: {"r3"}}


def test_fix_like_subjects_are_not_ordinary():
    tool = _tool()
    for subject in ("Fix crash on empty input", "Revert 'x'", "avoid a NULL dereference", "CVE-2024-1"):
        assert tool.FIX_LIKE.search(subject), subject
    for subject in ("Add --library-path option", "Refactor the parser into modules", "Update docs"):
        assert not tool.FIX_LIKE.search(subject), subject
