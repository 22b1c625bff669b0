"""The offline reviewer: rules on added lines only, correct new-side line numbers, no secret
ever in its output, deterministic, and its answer passes the parser untouched. What an analyzer
reports on the same files is left to it (integration/review/test_analyzers.py shows the analyzer's
finding for each rule dropped)."""

from __future__ import annotations

import json

from p4review.change.analyzer_files import ESLINT, analyzers_for
from p4review.change.snapshot_redaction import prepare_review_input, redact_change
from p4review.change.unified_diff import iter_added_lines
from p4review.models.change import ChangeDescription, ChangedFile, ChangeSnapshot, DiffStatus, FileDiff
from p4review.models.review_result import REVIEW_RESULT_SCHEMA, SCHEMA_VERSION
from p4review.review.offline import OFFLINE_PROMPT_VERSION
from p4review.review.offline.reviewer import MAX_FINDINGS, RULE_IDS
from p4review.review.offline.reviewer import review_change as review_input_change
from p4review.review.result_parser import parse_review_result

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PASSWORD_VALUE = "s3cr3t-Hunter2!"
API_KEY_VALUE = "ak_live_9f8e7d6c5b4a"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"

C_DIFF = """\
==== //depot/main/src/net/buffer.c#4 (text) ====
--- //depot/main/src/net/buffer.c#3
+++ //depot/main/src/net/buffer.c#4
@@ -10,6 +10,7 @@ static void copy_name(char *dst, const char *src)
 {
     char tmp[64];
-    strcpy(tmp, src);
+    strcpy(tmp, src); /* TODO bound this */
+    snprintf(dst, 64, "%s", tmp);
     return;
 }
 
@@ -40,4 +41,6 @@ int main(void)
     int n = 0;
-    gets(line);
+    printf("debug %d\\n", n);
+    // printf("%d", n);  commented-out code is not flagged
+    fgets(line, sizeof line, stdin);
     return n;
"""

PY_DIFF = """\
--- //depot/main/tools/deploy.py#7
+++ //depot/main/tools/deploy.py#8
@@ -1,5 +1,6 @@
 import os
-DB_PASSWORD = os.environ["DB_PASSWORD"]
+DB_PASSWORD = "%(password)s"
+AWS_ACCESS_KEY_ID = "%(aws)s"
 
 def run(expr):
-    return eval(expr)
+    return eval(expr)
@@ -20,3 +21,8 @@ def main():
     try:
         run("1")
+    except:
+        pass
+    print("deployed")
+    config = {"api_key": "%(api)s"}
+    # print(open(path).read()) is only a comment
+    report.print()
""" % {"password": PASSWORD_VALUE, "aws": AWS_KEY, "api": API_KEY_VALUE}

PEM_DIFF = (
    """\
@@ -0,0 +1,4 @@
+-----BEGIN RSA PRIVATE KEY-----
+%s
+Zm9vYmFyYmF6cXV4
+-----END RSA PRIVATE KEY-----
"""
    % PEM_BODY
)

TEST_DIFF = """\
@@ -1,2 +1,3 @@
 def test_it():
+    print("diagnostic output is fine in tests")
     assert True
"""

JS_DIFF = """\
@@ -3,2 +3,3 @@ export function f() {
   const x = 1;
+  console.log(x);
 }
"""

C_PATH = "//depot/main/src/net/buffer.c"
PY_PATH = "//depot/main/tools/deploy.py"
PEM_PATH = "//depot/main/certs/server.key"
TEST_PATH = "//depot/main/tests/test_deploy.py"
JS_PATH = "//depot/main/web/app.js"
DELETED_PATH = "//depot/main/old/legacy.c"


def snapshot(diffs: list[FileDiff] | None = None) -> ChangeSnapshot:
    if diffs is None:
        diffs = [
            FileDiff(depot_path=C_PATH, action="edit", status=DiffStatus.FETCHED, unified_diff=C_DIFF),
            FileDiff(depot_path=PY_PATH, action="edit", status=DiffStatus.FETCHED, unified_diff=PY_DIFF),
            FileDiff(depot_path=PEM_PATH, action="add", status=DiffStatus.FETCHED, unified_diff=PEM_DIFF),
            FileDiff(depot_path=TEST_PATH, action="edit", status=DiffStatus.FETCHED, unified_diff=TEST_DIFF),
            FileDiff(depot_path=JS_PATH, action="edit", status=DiffStatus.FETCHED, unified_diff=JS_DIFF),
            FileDiff(depot_path=DELETED_PATH, action="delete", status=DiffStatus.SKIPPED, skip_reason="deleted"),
        ]
    files = [ChangedFile(depot_path=d.depot_path, action=d.action, file_type="text", revision=2) for d in diffs]
    description = ChangeDescription(
        changelist_id=12345,
        kind="submitted",
        owner="alice",
        client="alice-ws",
        status="submitted",
        description="Deploy tooling",
        files=files,
    )
    return ChangeSnapshot(description=description, diffs=diffs)


def review_change(snap: ChangeSnapshot) -> str:
    """As the review stage does: redact (fetch), re-check (the guard), then review."""
    return review_input_change(prepare_review_input(redact_change(snap).artifact()))


def findings_of(text: str) -> set[tuple[str, int, str]]:
    return {(f["file"], f["line"], f["rule_id"]) for f in json.loads(text)["findings"]}


def test_iter_added_lines_counts_new_side_lines_across_hunks() -> None:
    added = [(a.line, a.text) for a in iter_added_lines(C_DIFF)]
    assert added == [
        (12, "    strcpy(tmp, src); /* TODO bound this */"),
        (13, '    snprintf(dst, 64, "%s", tmp);'),
        (42, '    printf("debug %d\\n", n);'),
        (43, '    // printf("%d", n);  commented-out code is not flagged'),
        (44, "    fgets(line, sizeof line, stdin);"),
    ]


def test_header_lookalike_inside_hunk_is_an_added_line() -> None:
    diff = "--- a\n+++ b\n@@ -1,1 +1,2 @@\n x\n+++counter;\n"
    assert [(a.line, a.text) for a in iter_added_lines(diff)] == [(2, "++counter;")]


def test_every_rule_fires_at_the_right_new_side_line() -> None:
    found = findings_of(review_change(snapshot()))
    # eval (6) and the bare except (23) are bandit's and ruff's.
    assert found == {
        (C_PATH, 12, "c-unsafe-string-function"),
        (PY_PATH, 2, "hardcoded-password"),
        (PY_PATH, 3, "redacted-secret"),
        (PY_PATH, 25, "debug-output"),
        (PY_PATH, 26, "hardcoded-api-key"),
        (PEM_PATH, 1, "redacted-secret"),
        (JS_PATH, 4, "debug-output"),
    }


def test_removed_and_context_lines_are_ignored() -> None:
    found = findings_of(review_change(snapshot()))
    # The removed password line never counts, nor does the unchanged context `run("1")`.
    assert not any(path == PY_PATH and rule == "hardcoded-password" and line != 2 for path, line, rule in found)
    only_removed = '@@ -1,3 +1,1 @@\n-printf("x");\n-/* TODO */\n keep();\n'
    quiet = snapshot([FileDiff(depot_path=C_PATH, action="edit", status=DiffStatus.FETCHED, unified_diff=only_removed)])
    assert json.loads(review_change(quiet))["findings"] == []


def test_print_in_test_files_and_comments_are_not_flagged() -> None:
    found = findings_of(review_change(snapshot()))
    assert not any(path == TEST_PATH for path, _, _ in found)
    assert (PY_PATH, 27, "debug-output") not in found  # comment
    assert (PY_PATH, 28, "debug-output") not in found  # report.print() is a method
    assert (C_PATH, 43, "debug-output") not in found  # commented out
    # C programs print on purpose (tools/ordinary_commits_noise.py: 1% of ordinary C hunks, no defect).
    assert (C_PATH, 42, "debug-output") not in found


def test_a_todo_marker_is_not_a_finding() -> None:
    # Measured on ordinary commits (tools/ordinary_commits_noise.py): markers fired on ordinary
    # hunks and hit no dev reversed-fix defect; the rule was dropped.
    assert not added("//depot/main/app/job.py", "    x = 1  # TODO bound this")


def test_no_secret_or_source_line_reaches_the_output() -> None:
    text = review_change(snapshot())
    for secret in (AWS_KEY, PASSWORD_VALUE, API_KEY_VALUE, PEM_BODY, "Zm9vYmFyYmF6cXV4", "hunter2"):
        assert secret not in text
    # Non-credential rules describe the problem instead of quoting the code.
    assert "strcpy(tmp" not in text
    assert 'print("deployed")' not in text
    assert "console.log(x)" not in text


def test_finding_shape_severity_and_ids() -> None:
    document = json.loads(review_change(snapshot()))
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["prompt_version"] == OFFLINE_PROMPT_VERSION
    assert document["meta"] == {
        "reviewer": "offline",
        "files_reviewed": 5,
        "rules": list(RULE_IDS),
        "findings_total": 7,
        "findings_reported": 7,
        "max_findings": MAX_FINDINGS,
    }
    assert document["summary"] == "Offline heuristic review of 5 files found 7 findings."
    by_rule = {f["rule_id"]: f for f in document["findings"]}
    assert by_rule["redacted-secret"]["severity"] == "critical"
    assert by_rule["hardcoded-password"]["severity"] == "high"
    assert by_rule["hardcoded-api-key"]["category"] == "security"
    assert by_rule["debug-output"]["severity"] == "info"
    assert by_rule["c-unsafe-string-function"]["category"] == "security"
    ids = [f["id"] for f in document["findings"]]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("OFF-") for i in ids)
    order = [(f["file"], f["line"], f["rule_id"]) for f in document["findings"]]
    assert order == sorted(order)
    allowed = set(REVIEW_RESULT_SCHEMA["properties"]["findings"]["items"]["properties"])
    assert all(set(f) <= allowed for f in document["findings"])


def test_output_is_deterministic_and_independent_of_diff_order() -> None:
    first = review_change(snapshot())
    again = review_change(snapshot())
    reordered = review_change(snapshot(list(reversed(snapshot().diffs))))
    assert first == again == reordered


def test_ids_are_stable_for_the_same_file_and_line() -> None:
    one = json.loads(review_change(snapshot()))["findings"]
    two = json.loads(review_change(snapshot()))["findings"]
    assert [f["id"] for f in one] == [f["id"] for f in two]


def test_output_passes_the_parser_with_no_drops() -> None:
    snap = snapshot()
    outcome = parse_review_result(
        review_change(snap), snap.changed_files, expected_prompt_version=OFFLINE_PROMPT_VERSION
    )
    assert not outcome.rejected
    assert outcome.diagnostics == []
    assert outcome.result is not None
    assert len(outcome.result.findings) == 7


def test_findings_are_capped_keeping_the_most_severe() -> None:
    lines = "".join(f"+    print(item_{i})\n" for i in range(80))
    diff = f"@@ -0,0 +1,81 @@\n{lines}+AWS = '{AWS_KEY}'\n"
    path = "//depot/main/big.py"
    snap = snapshot([FileDiff(depot_path=path, action="add", status=DiffStatus.FETCHED, unified_diff=diff)])
    document = json.loads(review_change(snap))
    assert len(document["findings"]) == MAX_FINDINGS
    assert document["meta"]["findings_total"] == 81
    assert "only the 50 most severe are reported" in document["summary"]
    assert any(f["rule_id"] == "redacted-secret" and f["line"] == 81 for f in document["findings"])
    outcome = parse_review_result(
        review_change(snap), snap.changed_files, expected_prompt_version=OFFLINE_PROMPT_VERSION
    )
    assert outcome.result is not None and len(outcome.result.findings) == MAX_FINDINGS


def test_no_fetched_diffs_gives_an_honest_empty_answer() -> None:
    snap = snapshot(
        [FileDiff(depot_path=DELETED_PATH, action="delete", status=DiffStatus.SKIPPED, skip_reason="deleted")]
    )
    document = json.loads(review_change(snap))
    assert document["findings"] == []
    assert document["meta"]["files_reviewed"] == 0
    assert document["summary"] == "Offline heuristic review of 0 files found no issues."


def rules_on(path: str, diff: str) -> set[tuple[int, str]]:
    """(line, rule_id) of the offline reviewer's findings on one file's diff."""
    one = FileDiff(depot_path=path, action="edit", status=DiffStatus.FETCHED, unified_diff=diff)
    return {(line, rule) for _, line, rule in findings_of(review_change(snapshot([one])))}


def added(path: str, line: str) -> set[str]:
    return {rule for _, rule in rules_on(path, f"@@ -1,2 +1,3 @@\n ctx\n+{line}\n ctx\n")}


def test_line_rules_for_security_settings_injection_and_unsafe_calls() -> None:
    fires = [
        ("//depot/main/lib/utils.js", "  return qs.parse(str, { allowPrototypes: true });", "insecure-setting"),
        ("//depot/main/app/fetch.py", "    r = requests.get(url, verify=False)", "insecure-setting"),
        ("//depot/main/Dockerfile", "RUN curl https://k.example/key | apt-key add -", "insecure-setting"),
        ("//depot/main/app/db.py", '    cur.execute(f"SELECT * FROM t WHERE id = {uid}")', "injection-built-string"),
        ("//depot/main/lib/run.js", "  exec(`git log ${branch}`, done);", "injection-built-string"),
        ("//depot/main/lib/view.ts", "  el.innerHTML = message;", "html-injection-sink"),  # eslint reads no .ts
        ("//depot/main/lib/view.jsx", "  <div dangerouslySetInnerHTML={{ __html: m }} />", "html-injection-sink"),
        ("//depot/main/app/load.py", "    data = yaml.unsafe_load(stream)", "py-unsafe-deserialization"),
        ("//depot/main/app/db.py", '    conn.executescript(f"DROP TABLE {name}")', "injection-built-string"),
        ("//depot/main/lib/run.js", '  execSync("git log " + branch);', "injection-built-string"),
        ("//depot/main/tools/clean.sh", "rm -rf $BUILD_DIR/", "shell-rm-variable-path"),
    ]
    for path, line, rule in fires:
        assert rule in added(path, line), (path, line)
    quiet = [
        ("//depot/main/lib/utils.js", "  return qs.parse(str, { allowPrototypes: false });"),
        ("//depot/main/lib/tls.js", "  const agent = new Agent({ rejectUnauthorized: true });"),
        ("//depot/main/app/fetch.py", "    r = requests.get(url, verify=True)"),
        ("//depot/main/app/db.py", '    cur.execute("SELECT * FROM t WHERE id = %s", (uid,))'),
        ("//depot/main/lib/view.js", "  el.textContent = message;"),
        ("//depot/main/app/load.py", "    data = yaml.safe_load(stream)"),
        ("//depot/main/tools/clean.sh", 'rm -rf -- "${BUILD_DIR:?}"'),
        ("//depot/main/tools/clean.sh", "# curl -k https://example.test"),
    ]
    for path, line in quiet:
        assert not added(path, line) - {"todo-marker", "debug-output"}, (path, line)
    # Left to the analyzers, which report them on the same files (integration/review/test_analyzers.py).
    theirs = [
        ("//depot/main/app/run.py", "    return eval(expr)"),  # bandit B307
        ("//depot/main/app/run.py", "    exec(code)"),  # bandit B102
        ("//depot/main/app/run.py", "    except:"),  # ruff E722
        ("//depot/main/app/run.py", '    os.system("ls " + path)'),  # bandit B605
        ("//depot/main/app/load.py", "    data = yaml.load(stream)"),  # bandit B506
        ("//depot/main/app/load.py", "    obj = pickle.loads(blob)"),  # bandit B301
        ("//depot/main/src/in.c", '    scanf("%s", name);'),  # flawfinder scanf, cppcheck invalidscanf
        ("//depot/main/lib/view.js", "  el.innerHTML = message;"),  # eslint no-unsanitized/property
        ("//depot/main/lib/view.js", "  document.write(message);"),  # eslint no-unsanitized/method
    ]
    for path, line in theirs:
        assert not added(path, line), (path, line)
    # Kept beside flawfinder, which rates a copy of a literal below the level the review keeps.
    assert "c-unsafe-string-function" in added("//depot/main/src/in.c", '    strcpy(tmp, "literal");')


def test_the_javascript_rules_eslint_carries_still_run_where_eslint_does_not_read() -> None:
    from p4review.review.offline.reviewer import _ESLINT_EXTENSIONS, _JS_EXTENSIONS

    for extension in _JS_EXTENSIONS:
        assert (ESLINT in analyzers_for(f"//depot/a/x{extension}")) == (extension in _ESLINT_EXTENSIONS), extension


def test_an_unchecked_allocation_is_flagged_and_a_checked_one_is_not() -> None:
    path = "//depot/main/src/buf.c"
    unchecked = "@@ -1,3 +1,4 @@\n ctx\n+    char *s = malloc(n + 1);\n     memcpy(s, src, n);\n     s[n] = 0;\n"
    assert (2, "c-unchecked-allocation") in rules_on(path, unchecked)
    checked = "@@ -1,3 +1,5 @@\n ctx\n+    char *s = malloc(n + 1);\n+    if (s == NULL) return -1;\n     memcpy(s, src, n);\n"
    assert not any(rule == "c-unchecked-allocation" for _, rule in rules_on(path, checked))
    unseen = "@@ -1,1 +1,2 @@\n ctx\n+    char *s = malloc(n + 1);\n"  # nothing shown after it: no guess
    assert not any(rule == "c-unchecked-allocation" for _, rule in rules_on(path, unseen))


def test_a_handler_that_swallows_the_error_is_flagged_and_one_that_handles_it_is_not() -> None:
    py = "//depot/main/app/job.py"
    swallowed = "@@ -1,3 +1,5 @@\n     try:\n         run()\n+    except OSError:\n+        pass\n     done()\n"
    assert (3, "swallowed-error") in rules_on(py, swallowed)
    handled = "@@ -1,3 +1,5 @@\n     try:\n         run()\n+    except OSError as e:\n+        log(e)\n     done()\n"
    assert not any(rule == "swallowed-error" for _, rule in rules_on(py, handled))
    ts = "//depot/main/lib/job.ts"
    assert (2, "swallowed-error") in rules_on(ts, "@@ -1,2 +1,3 @@\n   try { run(); }\n+  catch (e) {}\n ctx\n")
    # In the files eslint reads an empty catch block is its no-empty; a promise's empty handler is ours.
    js = "//depot/main/lib/job.js"
    assert not rules_on(js, "@@ -1,2 +1,3 @@\n   try { run(); }\n+  catch (e) {}\n ctx\n")
    assert (2, "swallowed-error") in rules_on(js, "@@ -1,2 +1,3 @@\n ctx\n+  p.catch(() => {});\n ctx\n")
    logged = "@@ -1,2 +1,4 @@\n   try { run(); }\n+  catch (e) {\n+    log(e);\n   }\n"
    assert not any(rule == "swallowed-error" for _, rule in rules_on(js, logged))


def test_a_script_without_an_extension_is_reviewed_in_its_shebangs_language() -> None:
    # `bin/n`, `libexec/pyenv-install`: the line rules and the removed safeguards read them as
    # shell, as shellcheck does (analyzer_files.analyzers_for), by the shebang the diff shows...
    shown = '@@ -1,4 +1,4 @@\n #!/usr/bin/env bash\n ctx\n-  cd "$dir" || exit 1\n+  cd "$dir"\n ctx\n'
    assert (3, "removed-error-check") in rules_on("//depot/main/libexec/tool", shown)
    assert (2, "shell-rm-variable-path") in rules_on(
        "//depot/main/bin/n", "@@ -1,2 +1,3 @@\n #!/bin/sh\n+rm -rf $PREFIX/\n ctx\n"
    )
    # ...or its new content, when fetch kept it; a file without a shebang stays unread.
    unseen = '@@ -10,3 +10,3 @@\n ctx\n-  cd "$dir" || exit 1\n+  cd "$dir"\n ctx\n'
    assert not rules_on("//depot/main/libexec/tool", unseen)
    content = FileDiff(
        depot_path="//depot/main/libexec/tool",
        action="edit",
        status=DiffStatus.FETCHED,
        unified_diff=unseen,
        new_content="#!/usr/bin/env bash\n" + "x\n" * 20,
    )
    assert (11, "removed-error-check") in {
        (line, rule) for _, line, rule in findings_of(review_change(snapshot([content])))
    }


def test_what_the_deployments_policy_redacts_is_not_called_a_committed_secret() -> None:
    # An e-mail address and an internal address are kept from the model by the service's policy,
    # but nothing about them needs rotating: "Secret in the change" is for secrets.
    from p4review.change.redaction.policy import RedactionPolicy

    policy = RedactionPolicy(deidentify_emails=True, confidential_cidrs=("10.0.0.0/8",))
    diff = (
        '@@ -1,1 +1,4 @@\n ctx\n+POSTMASTER = "postmaster@mail.example.com"\n+UPSTREAM = "10.20.30.40"\n'
        f'+DB_PASSWORD = "{PASSWORD_VALUE}"\n'
    )
    file = FileDiff(depot_path=PY_PATH, action="edit", status=DiffStatus.FETCHED, unified_diff=diff)
    redacted = redact_change(snapshot([file]), policy).artifact()
    assert "[REDACTED:email]" in json.dumps(redacted) and "[REDACTED:internal_ip]" in json.dumps(redacted)
    found = findings_of(review_input_change(prepare_review_input(redacted, policy)))
    assert {line for _, line, rule in found if rule in ("redacted-secret", "hardcoded-password")} == {4}
