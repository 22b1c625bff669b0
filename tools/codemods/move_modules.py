"""Move Python modules and rewrite every reference to them, mechanically (issue 26's renovation).

    python tools/codemods/move_modules.py tools/codemods/layout_2026_11.toml [--no-git] [--rewrite-only]

The plan file maps old paths to new ones (files or whole directories, relative to the repository
root). The tool `git mv`s each, then rewrites, in every tracked text file:
  - dotted module names (`p4review.logic.noise` -> `p4review.review.noise`), in imports, strings
    (mock targets, `python -m ...`), TOML and Markdown;
  - `from <dissolved package> import <module>, ...` statements, split per new parent package;
  - file paths (`layers/p4review/logic/noise.py`, and the package-relative `logic/noise.py`).
`--rewrite-only` re-applies the rewrite without moving (for a branch cherry-picked onto the moved
tree). Import order is left to `ruff check --fix --select I` and `ruff format`, run afterwards.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT_SUFFIXES = {".py", ".toml", ".md", ".txt", ".cfg", ".ini", ".json", ".yml", ".yaml", ".sh", ".j2", ""}
SOURCE_ROOTS = ("layers/", "devstack/", "")  # where a path's dotted module name starts


def _dotted(path: str) -> str | None:
    """`layers/p4review/logic/noise.py` -> `p4review.logic.noise`; packages drop `__init__`."""
    for prefix in ("layers/", "devstack/"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
            break
    else:
        if not path.startswith("tests/"):
            return None
    if path.endswith(".py"):
        path = path[: -len(".py")]
    parts = path.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _tracked(under: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", under], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line]


def expand(moves: dict[str, str]) -> dict[str, str]:
    """Every tracked file under a moved directory, old path -> new path."""
    files: dict[str, str] = {}
    for old, new in moves.items():
        if old.endswith("/"):
            for path in _tracked(old):
                files[path] = new + path[len(old) :]
        else:
            files[old] = new
    return files


def module_map(files: dict[str, str]) -> dict[str, str]:
    modules: dict[str, str] = {}
    for old, new in files.items():
        if not old.endswith(".py"):
            continue
        old_name, new_name = _dotted(old), _dotted(new)
        if old_name and new_name and old_name != new_name:
            modules[old_name] = new_name
    return modules


def package_map(moves: dict[str, str]) -> dict[str, str]:
    """Directories moved whole: their dotted names (data packages read with importlib.resources)."""
    packages: dict[str, str] = {}
    for old, new in moves.items():
        if old.endswith("/"):
            old_name, new_name = _dotted(old.rstrip("/") + ".py"), _dotted(new.rstrip("/") + ".py")
            if old_name and new_name:
                packages[old_name] = new_name
    return packages


_FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from (?P<package>p4review(?:\.\w+)*|tests\.support) import "
    r"(?P<names>\([^)]*\)|[^\n]*)(?P<end>\n?)",
    re.MULTILINE,
)


def _split_names(text: str) -> list[tuple[str, str | None]]:
    text = re.sub(r"#[^\n]*", "", text.strip().strip("()"))
    names = []
    for item in text.split(","):
        item = " ".join(item.split())
        if not item:
            continue
        name, _, alias = item.partition(" as ")
        names.append((name.strip(), alias.strip() or None))
    return names


def rewrite_from_imports(source: str, modules: dict[str, str]) -> str:
    """`from p4review.logic import noise, signing` -> one statement per new parent package."""

    def replace(match: re.Match[str]) -> str:
        package, indent = match["package"], match["indent"]
        names = _split_names(match["names"])
        if not any(f"{package}.{name}" in modules for name, _ in names):
            return match.group(0)
        statements: dict[str, list[str]] = {}
        for name, alias in names:
            moved = modules.get(f"{package}.{name}")
            if moved is None:
                parent, leaf = package, name
            else:
                parent, _, leaf = moved.rpartition(".")
            bound = alias or name
            statements.setdefault(parent, []).append(leaf if leaf == bound else f"{leaf} as {bound}")
        lines = [f"{indent}from {parent} import {', '.join(leaves)}" for parent, leaves in statements.items()]
        return "\n".join(lines) + match["end"]

    return _FROM_IMPORT.sub(replace, source)


def _alternation(keys: list[str]) -> str:
    return "|".join(re.escape(key) for key in sorted(keys, key=len, reverse=True))


def rewrite_text(text: str, modules: dict[str, str], paths: dict[str, str], is_python: bool) -> str:
    if is_python:
        text = rewrite_from_imports(text, modules)
    if modules:
        dotted = re.compile(rf"(?<![\w.])({_alternation(list(modules))})(?!\w)")
        text = dotted.sub(lambda m: modules[m.group(1)], text)
    if paths:  # a file's path ends at a non-word character; a directory's at its slash
        files = [key for key in paths if not key.endswith("/")]
        directories = [key for key in paths if key.endswith("/")]
        alternatives = [rf"(?:{_alternation(files)})(?![\w])"] if files else []
        alternatives += [_alternation(directories)] if directories else []
        path_pattern = re.compile(rf"(?<![\w.\-])({'|'.join(alternatives)})")
        text = path_pattern.sub(lambda m: paths[m.group(1)], text)
    return text


def path_forms(files: dict[str, str]) -> dict[str, str]:
    """Full paths and the package-relative forms the docs use (`logic/noise.py`)."""
    forms: dict[str, str] = {}
    for old, new in files.items():
        forms[old] = new
        for prefix in ("layers/p4review/", "layers/"):
            short = old[len(prefix) :]
            # A bare file name (`config.py`) is too common a word to rewrite.
            if old.startswith(prefix) and new.startswith(prefix) and "/" in short:
                forms.setdefault(short, new[len(prefix) :])
        if old.startswith("layers/p4review/") and new.startswith("devstack/"):
            forms.setdefault(old[len("layers/p4review/") :], new)
        if old.startswith("tests/") and new.startswith("tests/"):  # the docs cite `unit/test_x.py`
            forms.setdefault(old[len("tests/") :], new[len("tests/") :])
    return forms


def directory_forms(moves: dict[str, str]) -> dict[str, str]:
    forms: dict[str, str] = {}
    for old, new in moves.items():
        if old.endswith("/"):
            forms[old] = new
            if old.startswith("layers/p4review/") and new.startswith("layers/p4review/"):
                forms.setdefault(old[len("layers/p4review/") :], new[len("layers/p4review/") :])
    return forms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", type=Path)
    parser.add_argument("--rewrite-only", action="store_true", help="rewrite references, move nothing")
    args = parser.parse_args()
    plan = tomllib.loads(args.plan.read_text())
    moves: dict[str, str] = plan["moves"]
    # The file list of the move, kept (untracked) for --rewrite-only on branches made before it.
    expanded = ROOT / "build" / "codemods" / args.plan.with_suffix(".expanded.toml").name
    files = tomllib.loads(expanded.read_text())["files"] if args.rewrite_only else expand(moves)
    modules = module_map(files) | package_map(moves)
    modules |= plan.get("modules", {})
    paths = path_forms(files) | directory_forms(moves)
    for old, new in plan.get("paths", {}).items():
        paths[old] = new
    if not args.rewrite_only:
        for old, new in files.items():
            (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "mv", old, new], cwd=ROOT, check=True)
        expanded.parent.mkdir(parents=True, exist_ok=True)
        expanded.write_text("[files]\n" + "".join(f'"{old}" = "{new}"\n' for old, new in files.items()))
    changed = 0
    for path in _tracked("."):
        file = ROOT / path
        if file.suffix not in TEXT_SUFFIXES or not file.is_file() or path.startswith("tools/codemods/"):
            continue
        if file.name.endswith(".lock") or "package-lock" in file.name:
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new_text = rewrite_text(text, modules, paths, is_python=file.suffix == ".py")
        if new_text != text:
            file.write_text(new_text, encoding="utf-8")
            changed += 1
    print(f"moved {len(files)} files, rewrote {changed} files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
