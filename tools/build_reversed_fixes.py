"""Build the reversed-fix evaluation set for the offline reviewer (benchmarks/review_quality.py).

Each case is a real public fix commit played backwards: the "change" turns the fixed code back
into the buggy code, so the lines it adds are the defect the fix removed. Commits are chosen by
a rule written here before any analyzer was run on them (subject keywords, size, language), the
newest first, and none is left out for what a reviewer finds on it.

    python tools/build_reversed_fixes.py /work/.mirror > benchmarks/data/reversed_fixes.json
    (the mirrors: `fetch github:<repository>` for each repository in SOURCES)

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

# (repository, mirror folder, subject regex, path globs, cases wanted, language). The first three
# were chosen on 2026-11-25 (mature, linted code); the next five were added the same day to
# cover JavaScript and Dockerfiles and code that no linter gates, with the same kind of rule.
_FIX = r"^(fix|fixes|fixed|bugfix)\b|\bfix(es|ed)? (bug|crash|leak|issue|error|injection|xss)|security|vulnerab"
SOURCES = [
    (
        "jqlang/jq",
        "jqlang+jq",
        r"(overflow|leak|use.after.free|null pointer|crash|uninitiali|out.of.bounds|double free|segfault)",
        ["src/*.c"],
        12,
        "C",
    ),
    (
        "psf/requests",
        "psf+requests",
        r"^(fix|fixes|fixed|bugfix)\b|\bfix(es|ed)? (bug|crash|leak|issue)",
        ["requests/*.py", "src/requests/*.py"],
        12,
        "Python",
    ),
    ("nvm-sh/nvm", "nvm-sh+nvm", r"^\[(Fix|Robustness|Security)\]", ["install.sh", "nvm.sh"], 12, "shell"),
    (
        "DaveGamble/cJSON",
        "DaveGamble+cJSON",
        r"\bfix|overflow|leak|null|crash|out.of.bounds|double free|use.after.free|uninitiali",
        ["cJSON.c", "cJSON_Utils.c"],
        10,
        "C",
    ),
    ("bottlepy/bottle", "bottlepy+bottle", _FIX, ["bottle.py"], 10, "Python"),
    ("acmesh-official/acme.sh", "acmesh-official+acme.sh", r"\bfix", ["dnsapi/*.sh", "deploy/*.sh"], 10, "shell"),
    ("expressjs/express", "expressjs+express", _FIX, ["lib/*.js", "lib/*/*.js"], 10, "JavaScript"),
    ("jupyter/docker-stacks", "jupyter+docker-stacks", r"\bfix", ["*Dockerfile", "*.dockerfile"], 8, "config"),
]
# The test split: chosen, built and measured once, after the rules were written, by the same
# kind of rule; its cases were not read while writing the reviewer (only its totals were).
TEST_SOURCES = [
    ("madler/zlib", "madler+zlib", r"\bfix|overflow|leak|null|crash|out.of.bounds|uninitiali", ["*.c"], 8, "C"),
    ("pallets/werkzeug", "pallets+werkzeug", _FIX, ["src/werkzeug/*.py", "src/werkzeug/*/*.py"], 8, "Python"),
    ("pyenv/pyenv", "pyenv+pyenv", r"\bfix", ["libexec/pyenv*", "plugins/python-build/bin/*"], 8, "shell"),
    ("axios/axios", "axios+axios", _FIX, ["lib/*.js", "lib/*/*.js"], 8, "JavaScript"),
    ("nginxinc/docker-nginx", "nginxinc+docker-nginx", r"\bfix", ["*Dockerfile"], 8, "config"),
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


def cases_from(
    repo_name: str, mirror: Path, subject: str, globs: list[str], wanted: int, language: str
) -> list[dict[str, object]]:
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
                "language": language,
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
    for split, sources in (("dev", SOURCES), ("test", TEST_SOURCES)):
        for repo_name, folder, subject, globs, wanted, language in sources:
            found = cases_from(repo_name, mirrors / folder / "repo", subject, globs, wanted, language)
            cases.extend({**case, "split": split} for case in found)
    json.dump({"version": 1, "cases": cases}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
