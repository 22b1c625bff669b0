"""Fetch's in-process diff of an edited file's two sides (p4review.perforce.diff_text.edit_diff):
every diff is true (applied to the old side it gives the new one), hunks read as `diff -u` writes
them, and no input makes one file's diff cost more than its bound."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import p4review.perforce.diff_text as diff_text
from p4review.perforce.diff_text import edit_diff

HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n")


def apply(old: str, diff: str | None) -> str:
    """A unified diff applied to `old`, checking each context and removed line against it."""
    if diff is None:
        return old
    lines = old.split("\n")
    old_lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    body = diff.split("\n")[2:]
    out: list[str] = []
    position = 0
    index = 0
    while index < len(body) and body[index]:
        match = HUNK.match(body[index] + "\n")
        assert match, body[index]
        start, count = int(match[1]), int(match[2] or 1)
        first = start - 1 if count else start
        out += old_lines[position:first]
        position = first
        index += 1
        while index < len(body) and body[index] and not body[index].startswith("@@"):
            mark, text = body[index][0], body[index][1:] + "\n"
            if index + 1 < len(body) and body[index + 1] == "\\ No newline at end of file":
                text = text[:-1]
                index += 1
            if mark in " -":
                assert old_lines[position] == text, (old_lines[position], text)
                position += 1
            if mark in " +":
                out.append(text)
            index += 1
    return "".join(out + old_lines[position:])


texts = st.lists(st.sampled_from(["a", "b", "c", "", "}", "x y"]), max_size=12).map("\n".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, texts, st.booleans(), st.booleans())
def test_every_diff_applied_to_the_old_side_gives_the_new_one(old, new, old_newline, new_newline):
    old += "\n" if old_newline and old else ""
    new += "\n" if new_newline and new else ""
    diff = edit_diff("//depot/x.c", old.encode(), new.encode())
    assert (diff is None) == (old == new)
    assert apply(old, diff) == new


def test_hunks_read_as_diff_u_writes_them():
    old = "".join(f"line {n}\n" for n in range(1, 21))
    new = old.replace("line 3\n", "line three\n").replace("line 17\n", "").replace("line 20\n", "line 20")
    assert edit_diff("//depot/a/x.c", old.encode(), new.encode()) == (
        "--- a/depot/a/x.c\n+++ b/depot/a/x.c\n"
        "@@ -1,6 +1,6 @@\n line 1\n line 2\n-line 3\n+line three\n line 4\n line 5\n line 6\n"
        "@@ -14,7 +14,6 @@\n line 14\n line 15\n line 16\n-line 17\n line 18\n line 19\n-line 20\n+line 20\n"
        "\\ No newline at end of file\n"
    )


def test_a_byte_order_mark_and_a_form_feed_are_not_line_breaks():
    assert edit_diff("//depot/x", "\ufeffa\x0cb\n".encode(), b"a\x0cc\n") == (
        "--- a/depot/x\n+++ b/depot/x\n@@ -1 +1 @@\n-a\x0cb\n+a\x0cc\n"
    )


@pytest.mark.parametrize("limit", ["MAX_INDEL_LINE_PAIRS", "MAX_DIFF_LINE_PAIRS"])
def test_past_each_bound_the_diff_stays_true(monkeypatch, limit):
    """Past the exact diff's memory bound, the linear-memory search; past the cost bound, the
    differing middle as removed and added. Both still true diffs."""
    monkeypatch.setattr(diff_text, limit, 4)
    old = "head\n" + "".join(f"{n}\n" for n in range(10)) + "tail\n"
    new = "head\n" + "".join(f"{n}\n" for n in range(0, 10, 2)) + "new\ntail\n"
    diff = edit_diff("//depot/x", old.encode(), new.encode())
    assert diff is not None and apply(old, diff) == new
    body = diff.split("\n")[2:]
    removed, added = sum(line[:1] == "-" for line in body), sum(line[:1] == "+" for line in body)
    if limit == "MAX_DIFF_LINE_PAIRS":  # the middle after "head", "0" and before "tail", replaced
        assert (removed, added) == (9, 5)
    else:  # still minimal here: the odd numbers removed, "new" added
        assert (removed, added) == (5, 1)
