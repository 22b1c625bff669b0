"""The lines a finding points at, taken from the file's unified diff."""

from __future__ import annotations

import pytest

from p4review.change.excerpts import code_excerpt
from p4review.change.unified_diff import iter_added_lines, iter_new_side_lines

DIFF = """--- a/depot/src/net/packet.cpp
+++ b/depot/src/net/packet.cpp
@@ -10,6 +10,8 @@ int f() {
 ten
 eleven
-old twelve
+new twelve
+new thirteen
 fourteen
 fifteen
\\ No newline at end of file
@@ -40,3 +42,4 @@
 forty-two
+forty-three
 forty-four
 forty-five
"""


def numbered(excerpt) -> list[tuple[int, str, bool, bool]]:
    return [(line.line, line.text, line.added, line.flagged) for line in excerpt]


@pytest.mark.spec("RV-1")
def test_the_flagged_line_comes_with_two_lines_of_context_and_the_added_lines_marked():
    assert numbered(code_excerpt(DIFF, 12)) == [
        (10, "ten", False, False),
        (11, "eleven", False, False),
        (12, "new twelve", True, True),
        (13, "new thirteen", True, False),
        (14, "fourteen", False, False),
    ]


def test_a_range_is_flagged_whole_and_context_is_cut_at_the_hunk():
    assert numbered(code_excerpt(DIFF, 43, 44)) == [
        (42, "forty-two", False, False),
        (43, "forty-three", True, True),
        (44, "forty-four", False, True),
        (45, "forty-five", False, False),
    ]


@pytest.mark.spec("RV-1")
def test_a_line_the_diff_does_not_show_has_no_excerpt():
    assert code_excerpt(DIFF, 30) == ()
    assert code_excerpt(DIFF, 9) == ()  # the context before it is shown, the line itself is not
    assert code_excerpt("", 1) == () and code_excerpt("Binary files differ\n", 1) == ()


def test_a_long_range_shows_its_start():
    lines = "".join(f"+line {n}\n" for n in range(1, 101))
    excerpt = code_excerpt(f"@@ -0,0 +1,100 @@\n{lines}", 5, 90)
    assert len(excerpt) == 12 and excerpt[0].line == 3 and all(line.added for line in excerpt)


def test_the_new_side_walk_agrees_with_the_added_lines():
    assert [(a.line, a.text) for a in iter_added_lines(DIFF)] == [
        (new.line, new.text) for new in iter_new_side_lines(DIFF) if new.added
    ]
    assert [new.line for new in iter_new_side_lines(DIFF)] == [10, 11, 12, 13, 14, 15, 42, 43, 44, 45]
