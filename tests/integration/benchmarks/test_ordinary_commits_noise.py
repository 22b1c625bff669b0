"""tools/ordinary_commits_noise.py reads a mirror's ordinary commits with git."""

from __future__ import annotations

import subprocess

from p4review_dev.support.tools import load_tool


def _tool():
    return load_tool("ordinary_commits_noise")


def test_ordinary_commits_are_read_from_a_mirror(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.test")
    git("config", "user.name", "t")
    source = tmp_path / "src.c"
    for subject, text in [
        ("Initial", "int a;\n"),
        ("Add b", "int a;\nint b;\n"),
        ("Fix b", "int a;\nlong b;\n"),
        ("Add c", "int a;\nlong b;\nint c;\n"),
    ]:
        source.write_text(text)
        git("add", "src.c")
        git("commit", "-q", "-m", subject)
    commits = _tool().ordinary_commits("t/t", tmp_path, ["*.c"], 5)
    # Newest first; the fix is left out, and so is the root commit (no parent to diff against).
    assert [c.subject for c in commits] == ["Add c", "Add b"]
    assert commits[0].files == {"src.c": "int a;\nlong b;\nint c;\n"}
    assert commits[0].hunks == [("src.c", 1, 3)]
