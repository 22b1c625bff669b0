"""`p4review review-diff`: a diff reviewed without a depot, through the service's own redaction
and review stage; the review alone on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4review.cli.main import main
from p4review.cli.review_diff import MemoryArtifacts, review_diff

DIFF = """diff --git a/app/db.py b/app/db.py
--- a/app/db.py
+++ b/app/db.py
@@ -1,2 +1,4 @@
 import os
+password = "hunter2-prod-Secret9"
+print(input())
 x = 1
--- a/tools/run.sh
+++ b/tools/run.sh
@@ -1 +1,2 @@
 #!/bin/sh
+echo done
"""


@pytest.mark.spec("RV-5")
def test_a_diff_is_reviewed_and_the_review_alone_is_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    diff = tmp_path / "change.diff"
    diff.write_text(DIFF)
    assert main(["review-diff", "--diff", str(diff)]) == 0
    out, err = capsys.readouterr()
    review = json.loads(out)  # nothing but the review: the stage's logs and metrics went to stderr
    assert review["coverage"]["files_reviewed"] == ["app/db.py", "tools/run.sh"]
    assert {(f["file"], f["line"], f["rule_id"]) for f in review["result"]["findings"]} == {
        ("app/db.py", 2, "hardcoded-password"),
        ("app/db.py", 3, "debug-output"),
    }
    assert "hunter2-prod-Secret9" not in out + err
    assert "review stored" in err


@pytest.mark.spec("RV-5")
def test_the_reviewer_sees_the_redacted_change():
    artifacts = MemoryArtifacts()
    review_diff(DIFF, "Quick fix", "offline", artifacts)
    seen = json.dumps(artifacts.documents["change"])
    assert "hunter2-prod-Secret9" not in seen and "[REDACTED:password]" in seen


@pytest.mark.spec("RV-5")
def test_input_that_is_not_a_diff_is_refused_with_a_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    assert main(["review-diff", "--diff", str(text)]) == 2
    assert "no file diff found" in capsys.readouterr().err
    assert main(["review-diff", "--diff", str(tmp_path / "missing.diff")]) == 2
    assert "cannot read input" in capsys.readouterr().err
