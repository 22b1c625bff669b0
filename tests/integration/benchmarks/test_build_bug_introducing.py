"""tools/build_bug_introducing.py finds, by SZZ, the commit that wrote the lines a fix changed."""

from __future__ import annotations

import subprocess

from p4review_dev.support.tools import load_tool


def _repository(tmp_path) -> dict[str, str]:
    """Four commits: a file, a helper, the bug (an unchecked call among other lines), its fix."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.test")
    git("config", "user.name", "t")
    commits = {}
    for subject, text in [
        ("Initial", "int a;\n"),
        ("Add helper", "int a;\nint helper(void) { return 1; }\n"),
        (
            "Add run",
            "int a;\nint helper(void) { return 1; }\nvoid run(void) {\n  char *p = malloc(8);\n  p[0] = 1;\n}\n",
        ),
        (
            "Fix crash",
            "int a;\nint helper(void) { return 1; }\nvoid run(void) {\n  char *p = malloc(8);\n  if (p) p[0] = 1;\n}\n",
        ),
    ]:
        (tmp_path / "src.c").write_text(text)
        git("add", "src.c")
        git("commit", "-q", "-m", subject)
        commits[subject] = git("rev-parse", "HEAD").strip()
    return commits


def test_the_commit_that_wrote_the_fixed_line_is_the_case_and_the_line_its_defect(tmp_path):
    tool = load_tool("build_bug_introducing")
    commits = _repository(tmp_path)
    fix = commits["Fix crash"]
    assert tool.removed_lines(tmp_path, fix, "src.c") == [5]
    blamed = tool.blame(tmp_path, fix, "src.c", [5])
    assert blamed == {commits["Add run"]: {("src.c", 5)}}
    case = tool.case_for(tmp_path, "t/t", commits["Add run"], blamed[commits["Add run"]])
    assert case is not None
    assert case["defects"] == [{"file": "src.c", "lines": [5]}]
    assert case["files"] == {"src.c": (tmp_path / "src.c").read_text().replace("if (p) ", "")}
    assert case["fix_subject"] == "Add run" and case["diff"].startswith("diff --git a/src.c b/src.c")


def test_the_first_commit_is_not_a_case(tmp_path):
    tool = load_tool("build_bug_introducing")
    commits = _repository(tmp_path)
    assert tool.case_for(tmp_path, "t/t", commits["Initial"], {("src.c", 1)}) is None
