"""The one hunk walker (change/unified_diff.py) that excerpts, changed lines and Swarm's comment
context all read: both sides' line numbers, removed lines, and where each hunk starts."""

from p4review.change.unified_diff import iter_hunk_lines, iter_new_side_lines

DIFF = (
    "--- a/f.c\n+++ b/f.c\n"
    "@@ -10,3 +10,3 @@\n ctx\n-old\n+new\n\\ No newline at end of file\n"
    "==== //depot/f.c#2 ====\n"
    "@@ -20 +20,2 @@\n kept\n+added\n"
)


def test_each_hunk_line_carries_its_number_on_the_sides_it_belongs_to():
    assert [(h.hunk, h.marker, h.old_line, h.new_line, h.text) for h in iter_hunk_lines(DIFF)] == [
        (0, " ", 10, 10, "ctx"),
        (0, "-", 11, None, "old"),
        (0, "+", None, 11, "new"),
        (1, " ", 20, 20, "kept"),
        (1, "+", None, 21, "added"),
    ]


def test_the_new_side_is_the_walk_without_removed_lines():
    assert [(n.line, n.text, n.added) for n in iter_new_side_lines(DIFF)] == [
        (10, "ctx", False),
        (11, "new", True),
        (20, "kept", False),
        (21, "added", True),
    ]
