"""Build the reversed-fix evaluation set for the offline reviewer (benchmarks/review_quality.py).

Each case is a real public fix commit played backwards: the "change" turns the fixed code back
into the buggy code, so the lines it adds are the defect the fix removed. Commits are chosen by
a rule written here before any analyzer was run on them (subject keywords, size, language), the
newest first, and none is left out for what a reviewer finds on it.

    python tools/build_reversed_fixes.py /work/.mirror > benchmarks/data/reversed_fixes.json
    (the mirrors: `fetch github:jqlang/jq`, `github:psf/requests`, `github:nvm-sh/nvm`)

A defect is one hunk of the reversed diff: its added lines, or, for a hunk that only removes
lines (the fix had added a check), the point of the removal. Findings count as hits within
MATCH_LINES lines of a defect (benchmarks/review_quality.py)."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess  # nosec B404 - git with fixed arguments
import sys
from pathlib import Path

# (repository, mirror folder, subject regex, path globs, cases wanted)
SOURCES = [
    (
        "jqlang/jq",
        "jqlang+jq",
        r"(overflow|leak|use.after.free|null pointer|crash|uninitiali|out.of.bounds|double free|segfault)",
        ["src/*.c"],
        12,
    ),
    (
        "psf/requests",
        "psf+requests",
        r"^(fix|fixes|fixed|bugfix)\b|\bfix(es|ed)? (bug|crash|leak|issue)",
        ["requests/*.py", "src/requests/*.py"],
        12,
    ),
    ("nvm-sh/nvm", "nvm-sh+nvm", r"^\[(Fix|Robustness|Security)\]", ["install.sh", "nvm.sh"], 12),
]
SKIP_SUBJECT = re.compile(r"typo|docs?\b|documentation|\bCI\b|changelog|readme|lint|whitespace|test", re.I)
MAX_CHANGED_LINES = 80
MAX_FILE_BYTES = 200_000
MAX_FILES = 3


def git(repo: Path, *args: str) -> str:
    return subprocess.run(  # nosec B603 B607 - git, fixed arguments
        ["git", "-C", str(repo), *args], capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")


def hunks(diff: str) -> list[dict[str, object]]:
    """The reversed diff's defects: per hunk, its added new-side lines or its removal point."""
    defects = []
    new_line = 0
    current: dict[str, object] | None = None
    for raw in diff.splitlines():
        header = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", raw)
        if header:
            if current and (current["added"] or current["removed"]):
                defects.append(current)
            new_line = int(header[1])
            current = {"added": [], "removed": 0, "at": new_line}
            continue
        if current is None or raw.startswith(("---", "+++")):
            continue
        if raw.startswith("+"):
            current["added"].append(new_line)  # type: ignore[attr-defined]
            new_line += 1
        elif raw.startswith("-"):
            current["removed"] = int(current["removed"]) + 1  # type: ignore[call-overload]
            current["at"] = new_line
        elif raw.startswith(" "):
            new_line += 1
    if current and (current["added"] or current["removed"]):
        defects.append(current)
    return [
        {"lines": d["added"]} if d["added"] else {"lines": [], "removal_at": d["at"]}  # type: ignore[dict-item]
        for d in defects
    ]


def cases_from(repo_name: str, mirror: Path, subject: str, globs: list[str], wanted: int) -> list[dict[str, object]]:
    log = git(mirror, "log", "--no-merges", "-i", "-E", f"--grep={subject}", "--format=%H%x09%s", "--", *globs)
    cases: list[dict[str, object]] = []
    for entry in log.splitlines():
        commit, _, title = entry.partition("\t")
        if SKIP_SUBJECT.search(title):
            continue
        names = git(mirror, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()
        files = [n for n in names if any(fnmatch.fnmatch(n, g) for g in globs)]
        if not 1 <= len(files) <= MAX_FILES:
            continue
        # Reversed: from the fix (old side) back to its parent (new side, the buggy code).
        diff = git(mirror, "diff", "-U3", "--no-color", "--no-renames", commit, f"{commit}^", "--", *files)
        changed = sum(1 for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))
        if not diff or changed > MAX_CHANGED_LINES:
            continue
        contents = {}
        try:
            for name in files:
                text = git(mirror, "show", f"{commit}^:{name}")
                if len(text.encode()) > MAX_FILE_BYTES:
                    raise ValueError(name)
                contents[name] = text
        except (subprocess.CalledProcessError, ValueError):
            continue
        per_file = {}
        for section in re.split(r"(?m)^(?=diff --git )", diff):
            match = re.match(r"diff --git a/(\S+) b/", section)
            if match:
                per_file[match[1]] = section
        defects = [
            {"file": name, **defect} for name in files for defect in hunks(per_file.get(name, "")) if name in per_file
        ]
        if not defects:
            continue
        cases.append(
            {
                "id": f"{repo_name}@{commit[:10]}",
                "source": f"https://github.com/{repo_name}/commit/{commit}",
                "fix_subject": title,
                "diff": diff,
                "files": contents,
                "defects": defects,
            }
        )
        if len(cases) == wanted:
            break
    return cases


def main(argv: list[str]) -> int:
    mirrors = Path(argv[1] if len(argv) > 1 else "/work/.mirror")
    cases = []
    for repo_name, folder, subject, globs, wanted in SOURCES:
        cases.extend(cases_from(repo_name, mirrors / folder / "repo", subject, globs, wanted))
    json.dump({"version": 1, "cases": cases}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
