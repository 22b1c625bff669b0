"""trigger/examples/p4review-trigger-secret-sync: a trigger host follows the signing secret's
rotation. Run against a fake `aws` executable: the file is replaced atomically with mode 600, only
when the value changed, and a failed or implausible read leaves the old file in place."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "trigger" / "examples" / "p4review-trigger-secret-sync"
SECRET_ID = "p4review/prod/trigger-signing"
KEY_A = "A" * 64
KEY_B = "b" * 63 + "9"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script")


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    """A fake `aws` on PATH that answers the value in ANSWER (or fails when it holds FAIL) and
    records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "aws"
    fake.write_text(
        "#!/bin/sh\n"
        'printf "%s\\n" "$*" >>"$FAKE_AWS_CALLS"\n'
        'answer=$(cat "$FAKE_AWS_ANSWER")\n'
        '[ "$answer" = FAIL ] && { echo "AccessDeniedException" >&2; exit 255; }\n'
        'printf "%s\\n" "$answer"\n'
    )
    fake.chmod(0o755)
    return {"bin": bin_dir, "answer": tmp_path / "answer", "calls": tmp_path / "calls", "secret": tmp_path / "secret"}


def _sync(host: dict[str, Path], answer: str) -> subprocess.CompletedProcess[str]:
    host["answer"].write_text(answer)
    env = {
        "PATH": f"{host['bin']}{os.pathsep}{os.environ['PATH']}",
        "FAKE_AWS_ANSWER": str(host["answer"]),
        "FAKE_AWS_CALLS": str(host["calls"]),
    }
    return subprocess.run(
        ["sh", str(SCRIPT), SECRET_ID, str(host["secret"])], env=env, capture_output=True, text=True, timeout=30
    )


def _leftovers(host: dict[str, Path]) -> list[str]:
    return sorted(p.name for p in host["secret"].parent.iterdir() if p.name.startswith("secret."))


def test_writes_the_current_value_owner_only_and_asks_for_awscurrent(host):
    result = _sync(host, KEY_A)
    assert result.returncode == 0, result.stderr
    assert host["secret"].read_text().strip() == KEY_A
    assert stat.S_IMODE(host["secret"].stat().st_mode) == 0o600
    assert "--version-stage AWSCURRENT" in host["calls"].read_text()
    assert KEY_A not in result.stdout + result.stderr + host["calls"].read_text()
    assert _leftovers(host) == []


@pytest.mark.spec("SEC-20")
def test_an_unchanged_value_leaves_the_file_alone_and_a_rotated_one_replaces_it(host):
    _sync(host, KEY_A)
    before = host["secret"].stat().st_ino
    unchanged = _sync(host, KEY_A)
    assert (unchanged.returncode, unchanged.stdout) == (0, "")
    assert host["secret"].stat().st_ino == before
    rotated = _sync(host, KEY_B)
    assert rotated.returncode == 0 and "updated" in rotated.stdout
    assert host["secret"].read_text().strip() == KEY_B
    assert _leftovers(host) == []


@pytest.mark.parametrize("answer", ["FAIL", "short", ""])
def test_a_failed_or_implausible_read_keeps_the_old_file(host, answer):
    _sync(host, KEY_A)
    result = _sync(host, answer)
    assert result.returncode == 1 and "unchanged" in result.stderr
    assert host["secret"].read_text().strip() == KEY_A
    assert _leftovers(host) == []
