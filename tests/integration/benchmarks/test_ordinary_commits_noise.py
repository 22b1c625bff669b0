"""tools/ordinary_commits_noise.py reads a mirror's ordinary commits with git."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[3] / "tools"


def _tool():
    spec = importlib.util.spec_from_file_location("ordinary_commits_noise", TOOLS / "ordinary_commits_noise.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ordinary_commits_noise", module)
    spec.loader.exec_module(module)
    return module


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
