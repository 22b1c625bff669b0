"""Build the reversed-fix evaluation set for the offline reviewer (benchmarks/review_quality.py).

Each case is a real public fix commit played backwards: the "change" turns the fixed code back
into the buggy code, so the lines it adds are the defect the fix removed. Commits are chosen by
a rule written here before any analyzer was run on them (subject keywords, size, language), the
newest first, and none is left out for what a reviewer finds on it.

    python tools/build_reversed_fixes.py /work/.mirror > benchmarks/data/reversed_fixes.json
    (every split; the mirrors: `fetch github:<repository>` for each repository in SPLITS)

One split alone, merged into the existing data file (its other splits' cases and `version` kept
as they are, so their mirrors are not needed; the file is rewritten as xz when it ends in .xz):

    python tools/build_reversed_fixes.py /work/.mirror --splits fresh \
        --merge benchmarks/data/reversed_fixes.json.xz

A defect is one hunk of the reversed diff: its added lines, or, for a hunk that only removes
lines (the fix had added a check), the point of the removal. Findings count as hits within
MATCH_LINES lines of a defect (benchmarks/review_quality.py)."""

from __future__ import annotations

import argparse
import fnmatch
import json
import lzma
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
# The fresh split: chosen on 2026-11-25, after the dev split's rules (and the heuristics written
# on it) were written and before any reviewer ran on these repositories; by the same kind of
# rule (two mature, well-known repositories a language, fix commits touching few files). Nobody
# tunes rules on it: it is measured, not read. (docker-library/postgres was the first pick for
# Dockerfiles, but its fixes touch every generated Dockerfile, over MAX_FILES: it gave no case.)
_C_FIX = r"\bfix|overflow|leak|null|crash|out.of.bounds|uninitiali"
FRESH_SOURCES = [
    (
        "redis/hiredis",
        "redis+hiredis",
        _C_FIX,
        ["alloc.c", "async.c", "dict.c", "hiredis.c", "net.c", "read.c", "sds.c", "sockcompat.c", "ssl.c"],
        5,
        "C",
    ),
    (
        "json-c/json-c",
        "json-c+json-c",
        _C_FIX,
        ["arraylist.c", "debug.c", "json_*.c", "linkhash.c", "printbuf.c", "random_seed.c", "strerror_override.c"],
        5,
        "C",
    ),
    ("pallets/click", "pallets+click", _FIX, ["src/click/*.py", "click/*.py"], 5, "Python"),
    ("encode/httpx", "encode+httpx", _FIX, ["httpx/*.py", "httpx/*/*.py"], 5, "Python"),
    ("rbenv/rbenv", "rbenv+rbenv", r"\bfix", ["libexec/rbenv*"], 5, "shell"),
    ("tj/n", "tj+n", r"\bfix", ["bin/n"], 5, "shell"),
    ("koajs/koa", "koajs+koa", _FIX, ["lib/*.js"], 5, "JavaScript"),
    ("expressjs/body-parser", "expressjs+body-parser", _FIX, ["index.js", "lib/*.js", "lib/*/*.js"], 5, "JavaScript"),
    (
        "terraform-aws-modules/terraform-aws-vpc",
        "terraform-aws-modules+terraform-aws-vpc",
        _FIX,
        ["main.tf", "variables.tf", "outputs.tf", "vpc-flow-logs.tf", "modules/*/*.tf"],
        5,
        "config",
    ),
    (
        "docker-mailserver/docker-mailserver",
        "docker-mailserver+docker-mailserver",
        r"\bfix",
        ["*Dockerfile"],
        5,
        "config",
    ),
]
SPLITS = {"dev": SOURCES, "test": TEST_SOURCES, "fresh": FRESH_SOURCES}
SKIP_SUBJECT = re.compile(r"typo|docs?\b|documentation|\bCI\b|changelog|readme|lint|whitespace|test", re.I)
MAX_CHANGED_LINES = 80
MAX_FILE_BYTES = 200_000
MAX_FILES = 3


def git(repo: Path, *args: str) -> str:
    return subprocess.run(  # nosec B603 B607 - git, fixed arguments
        ["git", "-C", str(repo), *args], capture_output=True, check=True
    ).stdout.decode("utf-8", "replace")


def matching_files(repo: Path, commit: str, globs: list[str]) -> list[str]:
    """The files a commit touches that one of `globs` names."""
    names = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()
    return [n for n in names if any(fnmatch.fnmatch(n, g) for g in globs)]


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
        files = matching_files(mirror, commit, globs)
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


def build(mirrors: Path, splits: list[str]) -> list[dict[str, object]]:
    cases: list[dict[str, object]] = []
    for split in splits:
        for repo_name, folder, subject, globs, wanted, language in SPLITS[split]:
            found = cases_from(repo_name, mirrors / folder / "repo", subject, globs, wanted, language)
            cases.extend({**case, "split": split} for case in found)
    return cases


def merged(existing: dict[str, object], built: list[dict[str, object]], splits: list[str]) -> dict[str, object]:
    """The existing data with the built splits' cases replaced (appended when new); the other
    splits' cases, their order and `version` stay as they were."""
    kept = [c for c in existing["cases"] if c.get("split", "dev") not in splits]  # type: ignore[attr-defined]
    return {**existing, "cases": [*kept, *built]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirrors", nargs="?", default="/work/.mirror", type=Path)
    parser.add_argument("--splits", default=",".join(SPLITS), help="comma-separated, of: " + ", ".join(SPLITS))
    parser.add_argument("--merge", type=Path, help="data file (.json or .json.xz) to merge the built splits into")
    args = parser.parse_args(argv[1:])
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    if unknown := [s for s in splits if s not in SPLITS]:
        parser.error(f"unknown split(s): {', '.join(unknown)}")
    built = build(args.mirrors, splits)
    if args.merge is None:
        json.dump({"version": 1, "cases": built}, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    xz = args.merge.suffix == ".xz"
    raw = args.merge.read_bytes()
    data = merged(json.loads(lzma.decompress(raw) if xz else raw), built, splits)
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    args.merge.write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME) if xz else text.encode())
    total = len(data["cases"])  # type: ignore[arg-type]
    print(f"{args.merge}: {len(built)} case(s) of {', '.join(splits)} merged, {total} in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
