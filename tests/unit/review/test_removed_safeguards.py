"""Safeguards a change removes: reported at the removal point, once per hunk and kind, not when
the change puts the same kind back or only moves the line, and accepted by the parser."""

from __future__ import annotations

import json

import pytest

from p4review.change.snapshot_redaction import prepare_review_input, redact_change
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff
from p4review.review.offline import OFFLINE_PROMPT_VERSION
from p4review.review.offline.removed_safeguards import removed_safeguards
from p4review.review.offline.reviewer import RULE_IDS, review_change
from p4review.review.result_parser import parse_review_result

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


@pytest.mark.spec("RV-7")
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
        ("//d/a.py", "    name = secure_filename(name)", "    name = name", "escaping"),
        ("//d/a.js", "  stream.destroy();", "  stream = null;", "release"),
        ("//d/x.sh", '  cd "$dir" || exit 1', '  cd "$dir"', "error-check"),
        ("//d/docker/Dockerfile", "USER app", "RUN true", "docker-hardening"),
    ],
)
def test_each_kind_of_safeguard_in_its_language(path, removed, added, kind):
    diff = f"@@ -1,3 +1,3 @@\n ctx\n-{removed}\n+{added}\n ctx\n"
    assert kinds(path, diff) == [(2, kind)]


@pytest.mark.spec("RV-7")
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


@pytest.mark.spec("RV-7")
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


@pytest.mark.parametrize(
    ("path", "removed", "added", "kind"),
    [
        ("//d/x.sh", "  curl -fsSL https://e.x/k | sh", "  curl https://e.x/k | sh", "curl-fail"),
        ("//d/a.c", "    s->data[len] = 0;", "    s->length = len;", "termination"),
        ("//d/a.c", "    onig_set_parse_depth_limit(1024);", "    onig_init();", "limit"),
        ("//d/Dockerfile", "    'protobuf>=5.28,<6' \\", "    'numpy' \\", "version-pin"),
        ("//d/a.c", "    hooks->deallocate(buffer);", "    return true;", "release"),
        ("//d/a.py", "    _try_close(out)", "    return result", "release"),
        ("//d/x.sh", "      _retval=1", '      _err "failed"', "error-check"),
    ],
)
def test_more_kinds_of_safeguard(path, removed, added, kind):
    diff = f"@@ -1,3 +1,3 @@\n ctx\n-{removed}\n+{added}\n ctx\n"
    assert kind in {k for _, k in kinds(path, diff)}


def test_a_safeguard_on_a_condition_continued_over_lines_is_found():
    diff = (
        "@@ -1,6 +1,2 @@\n ctx\n-  if (kind == STRING &&\n-      (size_t)length(x) > bufsize) {\n"
        "-    x = slice(x, bufsize);\n-  }\n ctx\n"
    )
    assert "bounds-check" in {k for _, k in kinds("//d/a.c", diff)}


def test_several_removals_of_a_kind_in_a_hunk_span_them():
    diff = "@@ -1,6 +1,4 @@\n ctx\n-  a_free(p);\n ctx\n ctx\n-  b_free(q);\n ctx\n"
    [found] = removed_safeguards("//d/a.c", diff)
    assert (found.safeguard.kind, found.line, found.end_line) == ("release", 2, 4)


@pytest.mark.parametrize(
    ("path", "diff"),
    [
        ("//d/a.c", "@@ -1,4 +1,2 @@\n   a = append(a, x);\n-  if (!is_valid(a)) break;\n   p++;\n"),
        ("//d/a.c", "@@ -1,6 +1,3 @@\n ctx\n-  if (cannot_access(buf, 1))\n-  {\n-    goto fail;\n-  }\n ctx\n"),
        ("//d/a.py", "@@ -1,4 +1,2 @@\n ctx\n-    if user.banned:\n-        return None\n ctx\n"),
        ("//d/x.sh", '@@ -1,5 +1,2 @@\n ctx\n-  if [ ! -r "$f" ]; then\n-    return 0\n-  fi\n ctx\n'),
    ],
)
def test_a_removed_guard_clause_is_reported(path, diff):
    assert "guard-clause" in {k for _, k in kinds(path, diff)}


def test_a_guard_clause_rewritten_in_the_hunk_is_not_reported():
    diff = "@@ -1,3 +1,3 @@\n ctx\n-  if (!ok(a)) break;\n+  if (!valid(a)) break;\n ctx\n"
    assert kinds("//d/a.c", diff) == []


def test_a_block_that_loses_its_condition_is_reported_and_a_rewritten_condition_is_not():
    unwrapped = (
        "@@ -1,5 +1,3 @@\n ctx\n-  if (nerrors == 0) {\n-    register_lib(x);\n-  }\n+  register_lib(x);\n ctx\n"
    )
    assert kinds("//d/a.c", unwrapped) == [(2, "unconditional-block")]
    rewritten = "@@ -1,5 +1,5 @@\n ctx\n-  if (a == 0) {\n-    run(x);\n+  if (b == 0) {\n+    run(x);\n   }\n"
    assert "unconditional-block" not in {k for _, k in kinds("//d/a.c", rewritten)}


def test_a_pointer_no_longer_reset_after_free_is_reported_only_after_its_free():
    after_free = "@@ -1,4 +1,3 @@\n   if (p != NULL) {\n     hooks.deallocate(p->buf);\n-    p->buf = NULL;\n   }\n"
    assert kinds("//d/a.c", after_free) == [(3, "null-after-free")]
    elsewhere = "@@ -1,4 +1,3 @@\n   int n = 0;\n   count(n);\n-  p->buf = NULL;\n   }\n"
    assert kinds("//d/a.c", elsewhere) == []


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        ("//d/a.c", "      TRY(tokenadd(p, ch));", "      tokenadd(p, ch);"),
        ("//d/a.c", "  for (i = 0; i < n && valid(t); i++) {", "  for (i = 0; i < n; i++) {"),
        ("//d/a.c", '  fmt("%.*s", len, s);', '  fmt("%s", len, s);'),
        ("//d/a.c", "  buf = malloc(len + 1);", "  buf = malloc(len);"),
        ("//d/x.sh", '  if [ "$n" -gt "$max" ]; then', "  if [ $n -gt $max ]; then"),
        ("//d/x.sh", 'SRC="${_:-}"', 'SRC="$_"'),
        ("//d/x.sh", '  command curl -q "$@"', '  curl -q "$@"'),
        ("//d/x.sh", '  n=$(grep -c "^${d}$" list)', '  n=$(grep -c "${d}" list)'),
        ("//d/a.py", "    path = getattr(m, '__file__', '') or ''", "    path = getattr(m, '__file__') or ''"),
        ("//d/a.py", "    name = getattr(cb, '__name__', '?')", "    name = cb.__name__"),
        ("//d/a.py", '    ok = re.compile(r"^\\S+\\Z")', '    ok = re.compile(r"^\\S+$")'),
        ("//d/a.py", '    url = f"https://{host}"', '    url = f"http://{host}"'),
    ],
)
def test_a_line_edited_only_by_deleting_a_protective_part_is_reported(path, before, after):
    diff = f"@@ -1,3 +1,3 @@\n ctx\n-{before}\n+{after}\n ctx\n"
    found = {k for _, k in kinds(path, diff)}
    assert found & {"weakened-line", "condition-clause"}, found
    reverse = f"@@ -1,3 +1,3 @@\n ctx\n-{after}\n+{before}\n ctx\n"  # the fix direction
    assert not {k for _, k in kinds(path, reverse)} & {"weakened-line", "condition-clause"}


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        ("//d/x.sh", '  [ -z "$A" ] && \\', '  [ -z "$A" ] &&'),  # a line continuation dropped (reformat)
        ("//d/a.c", "  static int parse(int depth) {", "  int parse(int depth) {"),
        ("//d/a.py", "    total = compute(a, b)  # sum", "    total = compute(a, b)"),
        ("//d/x.sh", '  file=$(prepare "$A") || return 1', "    return 1"),  # mostly rewritten
    ],
)
def test_ordinary_deletions_are_not_weakenings(path, before, after):
    diff = f"@@ -1,3 +1,3 @@\n ctx\n-{before}\n+{after}\n ctx\n"
    assert "weakened-line" not in {k for _, k in kinds(path, diff)}


@pytest.mark.parametrize(
    ("path", "removed", "added"),
    [
        ("//d/a.py", "    if user is None:", "    log(user)"),
        ("//d/a.py", "    if not name:", "    name = name.strip()"),
        ("//d/a.js", "  if (value === undefined) value = {};", "  use(value);"),
        ("//d/x.sh", '  if [ -z "${PATTERN}" ]; then', '  case "${PATTERN}" in'),
        ("//d/a.js", "  if (err) return cb(err);", "  cb(null, data);"),
        ("//d/a.js", "  if (e) return next(err);", "  next();"),
    ],
)
def test_the_kinds_measured_as_noise_in_a_language_are_not_reported_there(path, removed, added):
    # tools/ordinary_commits_noise.py: NULL/None checks outside C, JavaScript's error checks and
    # guard clauses fired on ordinary commits at least half as often as they hit a dev defect.
    diff = f"@@ -1,3 +1,3 @@\n ctx\n-{removed}\n+{added}\n ctx\n"
    assert kinds(path, diff) == []


def test_weakened_lines_are_not_reported_in_javascript_or_dockerfiles():
    js = "@@ -1,3 +1,3 @@\n ctx\n-  if (a && b) run();\n+  if (a) run();\n ctx\n"
    assert "weakened-line" not in {k for _, k in kinds("//d/a.js", js)}
    docker = "@@ -1,3 +1,3 @@\n ctx\n-RUN make && make check\n+RUN make\n ctx\n"
    assert kinds("//d/Dockerfile", docker) == []
    assert kinds("//d/a.c", js.replace("run();", "run();")) != []  # the same edit in C is
