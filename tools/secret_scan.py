"""Secret scan of the repository (SEC-17), with the same detector the pipeline redacts with.

Every file git tracks goes through `Redactor` (secrets only: the adopted Betterleaks ruleset and
p4review's own rules); each line it would change is a finding. A finding passes only when it
is on the allow-list `tests/secret-scan-allowlist.txt`:

    <path>\t<sha256 of the line, 16 hex>\t<classes>     a dummy value in a test fixture
    <path>\t*\t<reason>                                  a file that exists to hold fake secrets

A line-level fingerprint, not a path glob: a new secret in an allowed test file still fails.

    python tools/secret_scan.py            # list findings not on the allow-list (exit 1 if any)
    python tools/secret_scan.py --update   # rewrite the per-line entries from today's findings
                                           # (review the diff: every new entry must be a fake)
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWLIST = ROOT / "tests" / "secret-scan-allowlist.txt"
_BINARY_SUFFIXES = (".png", ".jpg", ".gif", ".ico", ".pdf", ".zip", ".gz")


def tracked_files(root: Path = ROOT) -> list[str]:
    listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True).stdout
    return sorted(path for path in listing.decode().split("\0") if path and not path.endswith(_BINARY_SUFFIXES))


def fingerprint(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def findings(paths: list[str], root: Path = ROOT) -> Iterator[tuple[str, str, str]]:
    """(path, line fingerprint, classes) for every line the redactor would change."""
    sys.path.insert(0, str(root / "layers"))
    from p4review.change.redaction import Redactor
    from p4review.change.redaction.document import RedactionError

    redactor = Redactor()
    for path in paths:
        try:
            text = (root / path).read_text("utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        # A diff header tells the rules the file's kind (code, config, prose), as in a review.
        header = f"+++ b/{path}\n"
        try:
            redacted = redactor.redact(header + text).text[len(header) :]
        except RedactionError as exc:  # never converged: report the file as a whole
            yield path, "*", str(exc)
            continue
        if redacted == text:
            continue
        for before, after in zip(text.split("\n"), redacted.split("\n"), strict=False):
            if before != after:
                classes = sorted({part.split("]", 1)[0] for part in after.split("[REDACTED:")[1:]})
                yield path, fingerprint(before), ",".join(classes)


def read_allowlist(path: Path = ALLOWLIST) -> tuple[set[tuple[str, str]], dict[str, str]]:
    lines, files = set(), {}
    for raw in path.read_text("utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        file, mark, note = (raw.split("\t") + ["", ""])[:3]
        if mark == "*":
            files[file] = note
        else:
            lines.add((file, mark))
    return lines, files


def unexpected(root: Path = ROOT) -> list[tuple[str, str, str]]:
    allowed_lines, allowed_files = read_allowlist(root / "tests" / "secret-scan-allowlist.txt")
    return [
        finding
        for finding in findings(tracked_files(root), root)
        if finding[0] not in allowed_files and finding[:2] not in allowed_lines
    ]


def update(root: Path = ROOT) -> int:
    path = root / "tests" / "secret-scan-allowlist.txt"
    _, allowed_files = read_allowlist(path)
    header = [line for line in path.read_text("utf-8").splitlines() if line.startswith("#")]
    whole = [f"{file}\t*\t{note}" for file, note in sorted(allowed_files.items())]
    entries = sorted(
        {
            f"{file}\t{mark}\t{classes}"
            for file, mark, classes in findings(tracked_files(root), root)
            if file not in allowed_files
        }
    )
    path.write_text("\n".join(header + whole + entries) + "\n", encoding="utf-8")
    print(f"{path}: {len(whole)} whole files, {len(entries)} lines")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true")
    args = parser.parse_args()
    if args.update:
        return update()
    found = unexpected()
    for path, mark, classes in found:
        print(f"{path}\t{mark}\t{classes}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
