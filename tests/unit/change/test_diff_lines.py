"""ChangedLines from a unified diff, `near`, and splitting a whole change's diff per file."""

from __future__ import annotations

from p4review.change.diff_lines import ChangedLines, changed_lines_from_diff, split_describe_diff

EDIT = """--- a/depot/main/a.c
+++ b/depot/main/a.c
@@ -10,6 +10,7 @@ int main(void)
 ctx10
 ctx11
 ctx12
+added13
 ctx14
 ctx15
 ctx16
@@ -40,3 +41,4 @@
 ctx41
-old
+new42
+new43
 ctx44
"""


def test_added_lines_are_new_side_numbers():
    lines = changed_lines_from_diff(EDIT)
    assert lines.added == frozenset({13, 42, 43})
    assert lines.deletions == ()
    assert lines.has_hunks


def test_near_with_tolerance_and_ranges():
    lines = changed_lines_from_diff(EDIT)
    assert lines.near(13) and lines.near(10) and lines.near(16)
    assert not lines.near(9) and not lines.near(17)
    assert lines.near(17, tolerance=4) and not lines.near(10, tolerance=0)
    assert lines.near(1, 12)  # the range reaches within 3 of line 13
    assert not lines.near(20, 38)
    assert lines.near(20, 39)
    assert lines.near(1, 10**9)  # huge ranges are cheap (bisect)
    assert lines.near(46) and not lines.near(47)


def test_hunk_body_lines_that_look_like_headers_are_content():
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n--- gone\n+++ added\n++ also\n ctx\n"
    assert changed_lines_from_diff(diff).added == frozenset({1, 2})


def test_pure_deletion_is_near_where_the_lines_were_removed():
    # -U0: "+9,0" means the removed lines sat after new line 9.
    lines = changed_lines_from_diff("--- a/x\n+++ b/x\n@@ -10,3 +9,0 @@\n-a\n-b\n-c\n")
    assert lines.added == frozenset() and lines.deletions == ((9, 9),)
    assert lines.near(10) and lines.near(6) and lines.near(12)
    assert not lines.near(13) and not lines.near(5)
    # With context: the hunk's new-side span (10..16) is where the removal happened.
    ctx = "@@ -10,7 +10,6 @@\n a\n b\n c\n-gone\n d\n e\n f\n"
    lines = changed_lines_from_diff(ctx)
    assert lines.deletions == ((10, 16),)
    assert lines.near(13) and lines.near(19) and not lines.near(20)


def test_deletion_only_hunks_count_in_files_that_also_add():
    diff = "@@ -1,1 +1,2 @@\n a\n+b\n@@ -50,2 +51,1 @@\n x\n-y\n"
    lines = changed_lines_from_diff(diff)
    assert lines.added == frozenset({2}) and lines.deletions == ((51, 52),)
    assert lines.near(52) and not lines.near(30)


def test_no_hunks_means_no_line_information():
    for diff in ("", "==== //depot/a.bin#2 (binary) ====\n", "--- a/x\n+++ b/x\n"):
        lines = changed_lines_from_diff(diff)
        assert not lines.has_hunks and not lines.near(1)
    assert ChangedLines() == changed_lines_from_diff("")


DESCRIBE = """Change 48234 by alice@ws on 2024/05/01 10:00:00

\tFix overflow
\t==== not a header: descriptions are tab-indented

Affected files ...

... //depot/main/src/net/buffer.c#4 edit
... //depot/main/src/util/strings.c#2 edit
... //depot/main/img/logo.png#3 edit

Differences ...

==== //depot/main/src/net/buffer.c#4 (text) ====

@@ -10,3 +10,4 @@
 a
+-- looks like a header but is added
--- removed line, not a header
+++ added line, not a header
 b
@@ -30,2 +31,1 @@
 c
-d

==== //depot/main/src/util/strings.c#2 (text) ====

@@ -1 +1 @@
-x
+y

==== //depot/main/img/logo.png#3 (binary+F) ====

"""


def test_split_p4_describe_output():
    parts = split_describe_diff(DESCRIBE)
    assert list(parts) == [
        "//depot/main/src/net/buffer.c",
        "//depot/main/src/util/strings.c",
        "//depot/main/img/logo.png",
    ]
    buffer = changed_lines_from_diff(parts["//depot/main/src/net/buffer.c"])
    assert buffer.added == frozenset({11, 12}) and buffer.deletions == ((31, 32),)
    assert changed_lines_from_diff(parts["//depot/main/src/util/strings.c"]).added == frozenset({1})
    assert not changed_lines_from_diff(parts["//depot/main/img/logo.png"]).has_hunks
    assert "Affected files" not in "".join(parts.values())


def test_split_p4_diff2_output_uses_the_new_side():
    text = (
        "==== //depot/main/a.c#2 (text) - //depot/rel/a.c#5 (text) ==== content\n"
        "--- //depot/main/a.c\t2024-05-01 10:00:00\n"
        "+++ //depot/rel/a.c\t2024-05-02 10:00:00\n"
        "@@ -1,0 +2,1 @@\n+new\n"
        "==== <none> - //depot/rel/new.c#1 ====\n"
        "@@ -0,0 +1,2 @@\n+a\n+b\n"
        "==== //depot/main/gone.c#3 - <none> ====\n"
        "==== //depot/main/d.c#3 - /home/alice/ws/d.c ====\n"  # p4 diff: depot side only
        "@@ -1 +1 @@\n-x\n+y\n"
    )
    parts = split_describe_diff(text)
    assert list(parts) == ["//depot/rel/a.c", "//depot/rel/new.c", "//depot/main/gone.c", "//depot/main/d.c"]
    assert changed_lines_from_diff(parts["//depot/rel/a.c"]).added == frozenset({2})
    assert changed_lines_from_diff(parts["//depot/rel/new.c"]).added == frozenset({1, 2})


def test_split_plus_minus_headed_sections():
    text = (
        "--- //depot/main/a.c#3\n+++ //depot/main/a.c\n@@ -1,2 +1,2 @@\n-old\n+new\n ctx\n"
        "--- a/depot/main/b.c\n+++ b/depot/main/b.c\n@@ -5 +5,2 @@\n x\n+y\n"
        "--- //depot/main/c.c\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-p\n-q\n"
    )
    parts = split_describe_diff(text)
    assert list(parts) == ["//depot/main/a.c", "depot/main/b.c", "//depot/main/c.c"]
    assert changed_lines_from_diff(parts["depot/main/b.c"]).added == frozenset({6})
    assert changed_lines_from_diff(parts["//depot/main/c.c"]).deletions == ((0, 0),)


def test_split_git_diff_strips_the_prefix_of_added_and_deleted_files():
    # `git diff` names a new file `+++ b/x` against `--- /dev/null` (and a deleted one `--- a/x`):
    # `p4review review-diff` read them as `b/x`, a path no finding could match.
    text = (
        "diff --git a/src/new.c b/src/new.c\nnew file mode 100644\nindex 0000000..0e42b11\n"
        "--- /dev/null\n+++ b/src/new.c\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        "diff --git a/src/old.c b/src/old.c\ndeleted file mode 100644\n"
        "--- a/src/old.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        "--- /dev/null\n+++ b/kept.c\n@@ -0,0 +1 @@\n+y\n"  # no `diff --git` line: the name as written
    )
    assert list(split_describe_diff(text)) == ["src/new.c", "src/old.c", "b/kept.c"]


def test_split_keeps_crlf_diffs_and_merges_repeated_files():
    text = (
        "==== //depot/a.c#1 (text) ====\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n"
        "==== //depot/a.c#1 (text) ====\n@@ -9 +9 @@\n-c\n+d\n"
    )
    parts = split_describe_diff(text)
    assert changed_lines_from_diff(parts["//depot/a.c"]).added == frozenset({1, 9})
    assert split_describe_diff("") == {} and split_describe_diff("no sections here\n") == {}
