"""`p4review check-result`: a model answer on stdin, the parser's outcome as JSON on stdout."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from p4review.cli import check_result
from p4review.cli import main as cli_main
from p4review.models.review_result import REVIEW_RESULT_SCHEMA
from p4review.review.prompts import load_registry

BUFFER = "//depot/main/src/net/buffer.c"
STRINGS = "//depot/main/src/util/strings.c"
DIFF = f"""Change 48234 by alice@ws on 2024/05/01 10:00:00

\tFix overflow

Affected files ...

... {BUFFER}#4 edit
... {STRINGS}#2 edit

Differences ...

==== {BUFFER}#4 (text) ====

@@ -10,3 +10,4 @@
 a
+strcpy(buf, src);
 b
 c

==== {STRINGS}#2 (text) ====

@@ -1 +1 @@
-x
+y
"""


def finding(id: str = "F1", file: str = BUFFER, line: Any = 11) -> dict[str, Any]:
    return {
        "id": id,
        "severity": "high",
        "category": "security",
        "title": "Unbounded copy",
        "file": file,
        "line": line,
        "message": "strcpy can overflow.",
    }


REGISTRY = load_registry()


def answer(findings: list[Any], prompt_version: str = REGISTRY.stable) -> bytes:
    return json.dumps({"schema_version": "1.0", "prompt_version": prompt_version, "findings": findings}).encode()


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "files.txt").write_text(f"# the change's files\n{BUFFER}\n\n  {STRINGS}  \n")
    (tmp_path / "files.json").write_text(json.dumps([BUFFER, STRINGS]))
    (tmp_path / "change.diff").write_text(DIFF)
    return {name: str(tmp_path / name) for name in ("files.txt", "files.json", "change.diff")}


def run(argv: list[str], stdin: bytes) -> tuple[int, dict[str, Any]]:
    stdout = io.StringIO()
    status = check_result.main(argv, stdin=io.BytesIO(stdin), stdout=stdout)
    return status, json.loads(stdout.getvalue())


def test_accepted_answer(files):
    status, out = run(["--changed-files", files["files.txt"]], answer([finding(), finding("F2", file="strings.c")]))
    assert status == 0
    assert out["rejected"] is False
    jsonschema.validate(out["result"], REVIEW_RESULT_SCHEMA)
    assert [(f["id"], f["file"]) for f in out["result"]["findings"]] == [("F1", BUFFER), ("F2", STRINGS)]
    assert out["diagnostics"] == [
        {
            "field": "file",
            "finding_id": "F2",
            "kind": "coercion_applied",
            "new_value": STRINGS,
            "old_value": "strings.c",
        }
    ]


def test_output_is_sorted_and_indented(files):
    stdout = io.StringIO()
    check_result.main(["--changed-files", files["files.json"]], stdin=io.BytesIO(answer([])), stdout=stdout)
    text = stdout.getvalue()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_rejected_invalid_json(files):
    status, out = run(["--changed-files", files["files.json"]], b"Here is my review: {}")
    assert status == 1
    assert out["rejected"] is True and out["result"] is None
    assert [(d["kind"], d["reason"]) for d in out["diagnostics"]] == [("response_rejected", "invalid_json")]
    status, out = run(["--changed-files", files["files.json"]], b"\xff\xfe{}")  # not UTF-8
    assert (status, out["diagnostics"][0]["reason"]) == (1, "invalid_json")


@pytest.mark.spec("RV-6")
def test_prompt_version_defaults_to_the_registrys_as_at_run_time(files):
    """Without --prompt-version the registry's stable version (or its canary, when the answer
    names it) is expected exactly, as the review stage does; the report says what was expected."""
    base = ["--changed-files", files["files.json"]]
    status, out = run(base, answer([]))
    assert status == 0
    assert out["accepted"] == {
        "schema_version": "1.0",
        "prompt_version": REGISTRY.stable,
        "prompt_version_from": "prompt registry (stable)",
        "prompt_patch_drift": False,
    }
    assert REGISTRY.canary and REGISTRY.canary != REGISTRY.stable
    status, out = run(base, answer([], prompt_version=REGISTRY.canary))
    assert (status, out["accepted"]["prompt_version_from"]) == (0, "prompt registry (canary)")
    # Any other version is refused: before, the answer's own version was taken on trust.
    status, out = run(base, answer([], prompt_version="7.3.1"))
    assert (status, out["diagnostics"][0]["reason"]) == (1, "incompatible_version")
    assert out["accepted"]["prompt_version"] == REGISTRY.stable


@pytest.mark.spec("RV-6")
def test_prompt_version_and_patch_drift_given(files):
    base = ["--changed-files", files["files.json"]]
    status, out = run([*base, "--prompt-version", "2.1.0"], answer([], prompt_version="2.1.4"))
    assert (status, out["diagnostics"][0]["reason"]) == (1, "incompatible_version")
    assert out["accepted"]["prompt_version_from"] == "--prompt-version"
    assert run([*base, "--prompt-version", "2.1.0", "--allow-patch-drift"], answer([], prompt_version="2.1.4"))[0] == 0
    status, out = run([*base, "--schema-version", "1.1"], answer([]))
    assert (status, out["diagnostics"][0]["reason"]) == (1, "incompatible_version")


def test_line_outside_diff_with_diff(files):
    base = ["--changed-files", files["files.txt"], "--diff", files["change.diff"]]
    findings = [finding("near", line=13), finding("far", line=40), finding("other", file=STRINGS, line=2)]
    status, out = run(base, answer(findings))
    assert status == 0
    assert [f["id"] for f in out["result"]["findings"]] == ["near", "other"]
    assert [(d["kind"], d["reason"], d["finding_id"], d["line"]) for d in out["diagnostics"]] == [
        ("finding_dropped", "line_outside_diff", "far", 40)
    ]

    status, out = run([*base, "--line-policy", "flag"], answer(findings))
    assert status == 0
    assert [f["id"] for f in out["result"]["findings"]] == ["near", "far", "other"]
    assert out["result"]["meta"] == {"flagged": {"line_outside_diff": ["far"]}}
    assert [(d["kind"], d["reason"]) for d in out["diagnostics"]] == [("warning", "line_outside_diff")]


def test_diff_sections_reconcile_to_changed_files(files, tmp_path, capsys):
    # A `---`/`+++` diff with git-style relative names still applies to the depot paths.
    diff = tmp_path / "git.diff"
    diff.write_text(
        "--- a/main/src/net/buffer.c\n+++ b/main/src/net/buffer.c\n@@ -1 +1 @@\n-a\n+b\n"
        "--- a/other.c\n+++ b/other.c\n@@ -1 +1 @@\n-a\n+b\n"
    )
    status, out = run(
        ["--changed-files", files["files.txt"], "--diff", str(diff)], answer([finding(line=30), finding("F2", line=2)])
    )
    assert status == 0
    assert [f["id"] for f in out["result"]["findings"]] == ["F2"]
    assert capsys.readouterr().err == "note: --diff section other.c matches no single changed file\n"


@pytest.mark.parametrize("which", ["--changed-files", "--diff"])
def test_unreadable_file_is_a_usage_error(files, tmp_path, capsys, which):
    argv = {"--changed-files": files["files.txt"], "--diff": files["change.diff"]}
    argv[which] = str(tmp_path / "missing.txt")
    stdout = io.StringIO()
    status = check_result.main(
        [arg for pair in argv.items() for arg in pair], stdin=io.BytesIO(answer([])), stdout=stdout
    )
    assert status == 2 and stdout.getvalue() == ""
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot read {which}") and "missing.txt" in err and err.count("\n") == 1


def test_bad_changed_files_json_and_bad_options_are_usage_errors(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    for content in ("[1, 2]", "[not json"):
        bad.write_text(content)
        assert check_result.main(["--changed-files", str(bad)], stdin=io.BytesIO(b"{}"), stdout=io.StringIO()) == 2
    base = ["--changed-files", str(bad)]
    for argv in ([*base, "--prompt-version", "v2"], [*base, "--line-policy", "ignore"], []):
        with pytest.raises(SystemExit) as exit_info:  # argparse: usage on stderr, status 2
            check_result.main(argv, stdin=io.BytesIO(b""))
        assert exit_info.value.code == 2
    capsys.readouterr()


def test_registered_in_the_p4review_cli(files, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(answer([finding()]))))
    assert cli_main.main(["check-result", "--changed-files", files["files.json"]]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["findings"][0]["id"] == "F1"
