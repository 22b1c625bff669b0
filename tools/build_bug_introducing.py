"""Build a set of bug-introducing changes from the reversed-fix cases, by SZZ (Sliwerski,
Zimmermann and Zeller, "When do changes induce fixes?", MSR 2005).

A reversed fix (tools/build_reversed_fixes.py) shows a defect as the fix undone: every hunk is a
defect, so precision means nothing there, and a defect written inside new code looks like a
removed check. A change that introduced a defect is what a reviewer really meets. For each fix
commit of benchmarks/data/reversed_fixes.json.xz, the lines the fix removed or changed are
blamed (`git blame -w`) on the fix's parent; the commit that last wrote a line introduced it. A
commit becomes a case when it is a review-sized change (MAX_FILES files, MAX_CHANGED_LINES
changed lines, not a merge or the repository's first commit); its defects are the blamed lines,
grouped by its hunks. A fix that only added lines (a missing check) blames nothing and gives no
case. SZZ is known to blame some refactors and moves: the set's defects are approximate, its
non-defect hunks are real code that shipped. A case's `fix_subject` (the key the benchmark reads
as the change's description) is the commit's own subject; `fixed_by` lists the fixes that blamed it.

    python tools/build_bug_introducing.py MIRRORS | xz -9 > benchmarks/data/bug_introducing.json.xz

MIRRORS holds bare clones laid out as tools/build_reversed_fixes.py reads them. Scored with
`python -m benchmarks.review_quality --data benchmarks/data/bug_introducing.json.xz` (docs/review.md)."""

from __future__ import annotations

import argparse
import json
import lzma
import re
import subprocess  # nosec B404 - git with fixed arguments
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_reversed_fixes import MAX_FILE_BYTES, SPLITS, git, hunks

CASES = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "reversed_fixes.json.xz"
MAX_FILES = 5
MAX_CHANGED_LINES = 300
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.M)
_BLAME_ENTRY = re.compile(r"^([0-9a-f]{40}) (\d+) (\d+)")


def removed_lines(mirror: Path, fix: str, path: str) -> list[int]:
    """The old-side lines the fix removed or changed in `path`."""
    diff = git(mirror, "diff", "-U0", "--no-color", "--no-renames", f"{fix}^", fix, "--", path)
    lines: list[int] = []
    for match in _HUNK.finditer(diff):
        start, count = int(match[1]), int(match[2] if match[2] is not None else 1)
        lines.extend(range(start, start + count))
    return lines


def blame(mirror: Path, fix: str, path: str, lines: list[int]) -> dict[str, set[tuple[str, int]]]:
    """introducing commit -> {(its path, its line)} for `lines` of `path` in the fix's parent."""
    ranges = [arg for line in lines for arg in ("-L", f"{line},{line}")]
    out = git(mirror, "blame", "--porcelain", "-w", *ranges, f"{fix}^", "--", path)
    found: dict[str, set[tuple[str, int]]] = defaultdict(set)
    commit, original = "", 0
    for row in out.splitlines():
        entry = _BLAME_ENTRY.match(row)
        if entry:
            commit, original = entry[1], int(entry[2])
        elif row.startswith("filename ") and commit:
            found[commit].add((row.removeprefix("filename "), original))
    return found


def case_for(mirror: Path, repo: str, commit: str, blamed: set[tuple[str, int]]) -> dict[str, object] | None:
    """The introducing commit as a case, or None when it is not a review-sized change."""
    parents = git(mirror, "rev-list", "--parents", "-n", "1", commit).split()
    if len(parents) != 2:  # the first commit, or a merge
        return None
    files = git(mirror, "diff-tree", "--no-commit-id", "--name-only", "--no-renames", "-r", commit).split()
    if not 1 <= len(files) <= MAX_FILES:
        return None
    diff = git(mirror, "diff", "-U3", "--no-color", "--no-renames", f"{commit}^", commit, "--", *files)
    changed = sum(1 for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))
    if not diff or changed > MAX_CHANGED_LINES or "\nBinary files " in diff:
        return None
    contents = {}
    for name in files:
        try:
            text = git(mirror, "show", f"{commit}:{name}")
        except subprocess.CalledProcessError:
            continue  # deleted by the commit
        if len(text.encode()) > MAX_FILE_BYTES:
            return None
        contents[name] = text
    per_file = {}
    for section in re.split(r"(?m)^(?=diff --git )", diff):
        match = re.match(r"diff --git a/(\S+) b/", section)
        if match:
            per_file[match[1]] = section
    defects = []
    for name, section in per_file.items():
        mine = {line for path, line in blamed if path == name}
        for hunk in hunks(section):
            lines = sorted(mine & set(hunk["lines"]))  # type: ignore[call-overload]
            if lines:
                defects.append({"file": name, "lines": lines})
    if not defects:
        return None
    subject = git(mirror, "log", "-1", "--format=%s", commit).strip()
    return {
        "id": f"{repo}@{commit[:10]}",
        "source": f"https://github.com/{repo}/commit/{commit}",
        "fix_subject": subject,
        "diff": diff,
        "files": contents,
        "defects": defects,
    }


def build(mirrors: Path) -> list[dict[str, object]]:
    folders = {repo: folder for sources in SPLITS.values() for repo, folder, *_ in sources}
    fixes = json.loads(lzma.decompress(CASES.read_bytes()))["cases"]
    blamed: dict[tuple[str, str], set[tuple[str, int]]] = defaultdict(set)
    split_of: dict[tuple[str, str], str] = {}
    fixed_by: dict[tuple[str, str], list[str]] = defaultdict(list)
    for fix in fixes:
        repo, sha = fix["id"].split("@")[0], fix["source"].rsplit("/", 1)[1]
        mirror = mirrors / folders[repo] / "repo"
        for path in {defect["file"] for defect in fix["defects"]}:
            lines = removed_lines(mirror, sha, path)
            if not lines:
                continue
            for commit, where in blame(mirror, sha, path, lines).items():
                blamed[(repo, commit)] |= where
                split_of[(repo, commit)] = fix.get("split", "dev")
                fixed_by[(repo, commit)].append(fix["source"])
    cases = []
    for (repo, commit), where in sorted(blamed.items()):
        case = case_for(mirrors / folders[repo] / "repo", repo, commit, where)
        if case:
            language = next(f["language"] for f in fixes if f["id"].startswith(f"{repo}@"))
            cases.append(
                {**case, "language": language, "split": split_of[(repo, commit)], "fixed_by": fixed_by[(repo, commit)]}
            )
    return cases


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mirrors", type=Path)
    args = parser.parse_args(argv)
    cases = build(args.mirrors)
    json.dump({"version": 1, "cases": cases}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
