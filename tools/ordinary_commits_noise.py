"""The offline reviewer's noise on ordinary commits: how often its rules fire on code hunks of
commits that fix nothing (docs/review.md, "Precision is 1.00 everywhere and means little here").

The reversed-fix cases (benchmarks/review_quality.py) make every hunk a defect, so a finding on
them is almost always "right". Ordinary commits are the other side: features, refactors and
clean-ups of the same repositories, where a finding is most likely noise. For each repository of
the reversed-fix splits (tools/build_reversed_fixes.py, the same path globs), the newest
non-merge commits whose subject has no fix-like word, touching 1 to MAX_FILES of those files and
at most MAX_CHANGED_LINES changed lines; each commit's diff (parent to commit) is reviewed by the
offline reviewer (`p4review review-diff`, the review stage itself, with the files' new content
for the analyzers), like benchmarks/review_quality.review_with_service does for the cases.

A code hunk is a hunk of such a file that adds at least one line; it "fires" when a finding lies
in its new-side range. Reported: commits, code hunks, hunks fired on (in all and per rule).

    python tools/ordinary_commits_noise.py /work/.mirror --per-repo 40 [--workers 2] [--json out.json]

The mirrors: `fetch github:<repository>` for each repository; a missing one is skipped."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess  # nosec B404 - git with fixed arguments
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_reversed_fixes import MAX_FILE_BYTES, SPLITS, matching_files

# Subjects that say a defect is mended (or put back): those commits are not "ordinary".
FIX_LIKE = re.compile(
    r"fix|bug|crash|leak|overflow|underflow|cve|secur|vulnerab|revert|regress|broke|error|issue|wrong|incorrect"
    r"|patch|problem|fault|segv|null|uninit|race|deadlock|invalid|prevent|avoid|handle|correct|fail|hang|check",
    re.IGNORECASE,
)
MAX_FILES = 3
MAX_CHANGED_LINES = 200
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Commit:
    repo: str
    commit: str
    subject: str
    diff: str
    files: dict[str, str]
    # (file, first new-side line, last new-side line) of each hunk that adds a line
    hunks: list[tuple[str, int, int]] = field(default_factory=list)


def _git(mirror: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(mirror), *args], capture_output=True, text=True, check=True)  # nosec B603 B607
    return done.stdout


def code_hunks(diff: str) -> list[tuple[str, int, int]]:
    """(file, first, last) new-side line range of each hunk that adds at least one line."""
    found: list[tuple[str, int, int]] = []
    path, first, last, adds = "", 0, -1, False
    for raw in [*diff.splitlines(), "@@ end"]:
        if raw.startswith(("@@", "diff --git")):
            if adds:
                found.append((path, first, last))
            adds = False
            if match := _HUNK.match(raw):
                first = last = int(match[1])
                last -= 1
        elif raw.startswith("+++ "):
            path = raw[4:].removeprefix("b/")
        elif raw.startswith("--- "):
            continue
        elif raw.startswith("+"):
            last, adds = last + 1, True
        elif raw.startswith(" "):
            last += 1
    return found


def ordinary_commits(repo: str, mirror: Path, globs: list[str], wanted: int) -> list[Commit]:
    log = _git(mirror, "log", "--no-merges", "--format=%H%x09%s", "--", *globs)
    commits: list[Commit] = []
    for entry in log.splitlines():
        commit, _, subject = entry.partition("\t")
        if FIX_LIKE.search(subject):
            continue
        files = matching_files(mirror, commit, globs)
        if not 1 <= len(files) <= MAX_FILES:
            continue
        try:
            diff = _git(mirror, "diff", "-U3", "--no-color", "--no-renames", f"{commit}^", commit, "--", *files)
        except subprocess.CalledProcessError:
            continue  # a root commit
        changed = sum(1 for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))
        if not diff or changed > MAX_CHANGED_LINES:
            continue
        contents: dict[str, str] = {}
        try:
            for name in files:
                text = _git(mirror, "show", f"{commit}:{name}")
                if len(text.encode()) > MAX_FILE_BYTES:
                    raise ValueError(name)
                contents[name] = text
        except (subprocess.CalledProcessError, ValueError):
            continue  # deleted or too large
        hunks = code_hunks(diff)
        if not hunks:
            continue
        commits.append(Commit(repo, commit, subject, diff, contents, hunks))
        if len(commits) == wanted:
            break
    return commits


def repositories() -> list[tuple[str, str, list[str]]]:
    """(repository, mirror folder, path globs) of every split's repository, once each."""
    seen: dict[str, tuple[str, str, list[str]]] = {}
    for sources in SPLITS.values():
        for repo, folder, _subject, globs, _wanted, _language in sources:
            seen.setdefault(repo, (repo, folder, list(globs)))
    return list(seen.values())


def review(commit: Commit, analyzers: str | None = None) -> list[tuple[str, int, int, str]]:
    """The offline reviewer's findings on the commit: (file, line, end line, rule id)."""
    from p4review.cli.review_diff import review_diff

    with contextlib.redirect_stdout(io.StringIO()):  # the stage logs JSON to stdout
        stored = review_diff(commit.diff, commit.subject, "offline", files=commit.files, analyzers=analyzers)
    return [(f.file, f.line, f.end_line or f.line, f.rule_id or "") for f in stored.result.findings]


def fired(hunks: Iterable[tuple[str, int, int]], findings: Iterable[tuple[str, int, int, str]]) -> dict[int, set[str]]:
    """Hunk index -> the rules with a finding in its new-side range."""
    found: dict[int, set[str]] = {}
    findings = list(findings)
    for index, (path, first, last) in enumerate(hunks):
        for file, line, end, rule in findings:
            if file == path and line <= last and end >= first:
                found.setdefault(index, set()).add(rule)
    return found


def _review_one(commit: Commit) -> tuple[int, dict[int, set[str]]]:
    return len(commit.hunks), fired(commit.hunks, review(commit))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirrors", nargs="?", default="/work/.mirror", type=Path)
    parser.add_argument("--per-repo", type=int, default=40, help="ordinary commits per repository, newest first")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the per-commit results here")
    args = parser.parse_args(argv[1:])
    commits: list[Commit] = []
    for repo, folder, globs in repositories():
        mirror = args.mirrors / folder / "repo"
        if not mirror.is_dir():
            print(f"skipped {repo}: no mirror at {mirror}", file=sys.stderr)
            continue
        commits.extend(ordinary_commits(repo, mirror, globs, args.per_repo))
    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            results = list(pool.map(_review_one, commits))
    else:
        results = [_review_one(commit) for commit in commits]
    hunks = sum(count for count, _ in results)
    any_rule = sum(len(found) for _, found in results)
    per_rule: Counter[str] = Counter()
    for _, found in results:
        for rules in found.values():
            per_rule.update(rules)
    repos = sorted({c.repo for c in commits})
    print(f"{len(commits)} ordinary commits of {len(repos)} repositories ({', '.join(repos)}), {hunks} code hunks")
    print(f"hunks with a finding: {any_rule} ({100 * any_rule / max(hunks, 1):.2f}%)")
    for rule, count in per_rule.most_common():
        print(f"  {rule}: {count} ({100 * count / max(hunks, 1):.2f}%)")
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {"repo": c.repo, "commit": c.commit, "hunks": n, "fired": {str(k): sorted(v) for k, v in f.items()}}
                    for c, (n, f) in zip(commits, results, strict=True)
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
