"""SEC-17: no credential in the repository. Every tracked file goes through the pipeline's own
detector (tools/secret_scan.py); each line it would redact must be a listed fake
(tests/secret-scan-allowlist.txt, one fingerprint per line, so a new secret in an allowed test
file still fails)."""

from __future__ import annotations

import subprocess

import pytest

from p4review_dev.support.tools import ROOT, load_tool


def _scanner():
    return load_tool("secret_scan")


@pytest.mark.spec("SEC-17")
def test_every_secret_shaped_line_in_the_repository_is_a_listed_fake():
    found = _scanner().unexpected(ROOT)
    assert not found, (
        "lines the redactor would change that are not on tests/secret-scan-allowlist.txt "
        "(a real secret must be removed; a new fake is added with "
        "`python tools/secret_scan.py --update`):\n"
        + "\n".join(f"{path}\t{mark}\t{classes}" for path, mark, classes in found)
    )


@pytest.mark.spec("SEC-17")
def test_the_scan_catches_a_new_secret_in_an_allowed_file(tmp_path):
    scanner = _scanner()
    planted = "+github = 'ghp_" + "Zq8Lw2Xv9Rt4Yp1Ks7Dm3Nf6Hb0Jc5Ga2Ve'\n"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "secret-scan-allowlist.txt").write_text("# empty\n")
    (tmp_path / "tests" / "fixture.py").write_text("x = 1\n" + planted)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "tests"], check=True)
    found = scanner.unexpected(tmp_path)
    assert [(path, classes) for path, _, classes in found] == [("tests/fixture.py", "github_token")]
