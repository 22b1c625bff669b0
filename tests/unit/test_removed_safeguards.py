"""Safeguards a change removes: reported at the removal point, once per hunk and kind, not when
the change puts the same kind back or only moves the line, and accepted by the parser."""

from __future__ import annotations

import json

import pytest

from p4review.logic.change_redaction import prepare_review_input, redact_change
from p4review.logic.offline_reviewer import OFFLINE_PROMPT_VERSION, RULE_IDS, review_change
from p4review.logic.removed_safeguards import removed_safeguards
from p4review.logic.result_parser import parse_review_result
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff

NULL_CHECK_REMOVED = """\
@@ -10,8 +10,5 @@ int parse(item *p)
     char *copy = strdup(p->name);
-    if (copy == NULL) {
-        return -1;
-    }
     copy[0] = 'x';
     return 0;
"""


def kinds(path: str, diff: str) -> list[tuple[int, str]]:
    return [(r.line, r.safeguard.kind) for r in removed_safeguards(path, diff)]


def test_a_removed_null_check_is_reported_where_it_was():
    # Pure removal: the point is the new-side line that now follows (11), inside the hunk's span.
    assert kinds("//d/src/parse.c", NULL_CHECK_REMOVED) == [(11, "null-check")]


@pytest.mark.parametrize(
    ("path", "removed", "added", "kind"),
    [
        ("//d/a.c", "    if (n >= buf_size) return -1;", "    n++;", "bounds-check"),
        ("//d/a.c", "    fclose(fp);", "    fp = NULL;", "release"),
        ("//d/a.c", "    if (ret < 0) goto fail;", "    ret = 0;", "error-check"),
        ("//d/a.c", "    pthread_mutex_lock(&m);", "    count++;", "lock"),
        ("//d/a.py", "    except ValueError:", "    pass", "error-check"),
        ("//d/a.py", "    if user is None:", "    log(user)", "null-check"),
        ("//d/a.py", "    name = secure_filename(name)", "    name = name", "escaping"),
        ("//d/a.js", "  if (err) return cb(err);", "  cb(null, data);", "error-check"),
        ("//d/a.js", "  stream.destroy();", "  stream = null;", "release"),
        ("//d/x.sh", '  cd "$dir" || exit 1', '  cd "$dir"', "error-check"),
        ("//d/docker/Dockerfile", "USER app", "RUN true", "docker-hardening"),
    ],
)
def test_each_kind_of_safeguard_in_its_language(path, removed, added, kind):
    diff = f"@@ -1,3 +1,3 @@\n ctx\n-{removed}\n+{added}\n ctx\n"
    assert kinds(path, diff) == [(2, kind)]


def test_the_same_kind_put_back_in_the_hunk_or_the_line_moved_elsewhere_is_not_reported():
    rewritten = "@@ -1,3 +1,3 @@\n ctx\n-    if (p == NULL) return;\n+    if (!p) return;\n ctx\n"
    assert kinds("//d/a.c", rewritten) == []
    moved = (
        "@@ -1,3 +1,2 @@\n ctx\n-    if (p == NULL) return;\n ctx\n"
        "@@ -20,2 +19,3 @@\n ctx\n+    if (p == NULL) return;\n ctx\n"
    )
    assert kinds("//d/a.c", moved) == []


def test_comments_other_languages_and_added_lines_are_not_reported():
    assert kinds("//d/a.c", "@@ -1,2 +1,1 @@\n-    /* if (p == NULL) return; */\n ctx\n") == []
    assert kinds("//d/notes.txt", "@@ -1,2 +1,1 @@\n-if (p == NULL) return;\n ctx\n") == []
    assert kinds("//d/a.c", "@@ -1,1 +1,2 @@\n+    if (p == NULL) return;\n ctx\n") == []


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        ("//d/a.py", "    if token and any(token):", "    if token:"),
        ("//d/a.js", "  if (chunk !== undefined && !this.get('Transfer-Encoding')) {", "  if (chunk !== undefined) {"),
        ("//d/a.c", "    while (p && *p) {", "    while (*p) {"),
        ("//d/x.sh", 'if [ -n "$a" ] && [ -f "$a" ]; then', 'if [ -f "$a" ]; then'),
    ],
)
def test_a_condition_that_loses_a_clause_is_reported(path, before, after):
    diff = f"@@ -1,3 +1,3 @@\n ctx\n-{before}\n+{after}\n ctx\n"
    assert ("condition-clause" in {kind for _, kind in kinds(path, diff)}) is True
    widened = f"@@ -1,3 +1,3 @@\n ctx\n-{after}\n+{before}\n ctx\n"  # a clause added: the fix direction
    assert "condition-clause" not in {kind for _, kind in kinds(path, widened)}


def test_the_offline_reviewer_reports_them_and_the_parser_keeps_them():
    path = "//depot/main/src/parse.c"
    diff = FileDiff(depot_path=path, action="edit", status=DiffStatus.FETCHED, unified_diff=NULL_CHECK_REMOVED)
    description = ChangeDescription(
        changelist_id=7,
        kind="submitted",
        owner="alice",
        client="ws",
        status="submitted",
        description="tidy",
        files=[ChangedFile(depot_path=path, action="edit", file_type="text", revision=2)],
    )
    snapshot = ChangeSnapshot(description=description, diffs=[diff])
    text = review_change(prepare_review_input(redact_change(snapshot).artifact()))
    [finding] = json.loads(text)["findings"]
    assert (finding["rule_id"], finding["line"], finding["confidence"]) == ("removed-null-check", 11, "low")
    assert "strdup" not in finding["message"] and "copy" not in finding["message"]  # quotes nothing
    assert "removed-null-check" in RULE_IDS
    outcome = parse_review_result(text, [path], expected_prompt_version=OFFLINE_PROMPT_VERSION)
    assert [f.line for f in outcome.result.findings] == [11]
