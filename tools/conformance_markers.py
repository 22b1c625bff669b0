"""One-off migration (issue 26 part 6a): read the hand-kept tables of the old
docs/spec-conformance.md and put a `@pytest.mark.spec("ID", ...)` marker on every test a row cited in
its "Proven by" column. Kept for the record; after it ran, the markers are the source of truth and
tools/conformance.py generates the document from them.

    python tools/conformance_markers.py OLD_TABLE.md   # e.g. `git show a2b9d14:docs/spec-conformance.md`
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| ([A-Z]+-\d+) \|")
# `unit/test_x.py::test_name` or `::test_name` (the file named before it in the same cell).
CITATION = re.compile(r"`(?:((?:tests/)?(?:unit|integration|e2e|infra)/(?:\w+/)*test_\w+\.py))?(?:::(\w+))?")


def split_row(line: str) -> list[str]:
    """The cells of a table row; a `|` inside backticks is not a separator."""
    cells, current, in_code = [], [], False
    for char in line.strip()[1:-1]:
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    cells.append("".join(current).strip())
    return cells


def citations(cell: str) -> list[tuple[str, str | None]]:
    """(tests/ path, test name or None for the whole file) for each test a cell cites."""
    found: list[tuple[str, str | None]] = []
    current = None
    for match in CITATION.finditer(cell):
        path, name = match.groups()
        if path:
            current = path if path.startswith("tests/") else f"tests/{path}"
            found.append((current, name))
        elif name and current:
            found.append((current, name))
    return found


def cited(table: str) -> dict[tuple[str, str], list[str]]:
    """(file, test) -> the row IDs whose Proven-by cell cites it, in table order."""
    rows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for line in table.splitlines():
        match = ROW.match(line)
        if not match:
            continue
        cells = split_row(line)
        for path, name in citations(cells[4]):
            if name is not None and match.group(1) not in rows[(path, name)]:
                rows[(path, name)].append(match.group(1))
    return rows


def _existing(decorator: ast.expr) -> list[str] | None:
    """The IDs of an existing `pytest.mark.spec(...)` decorator, or None."""
    if (
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Attribute)
        and decorator.func.attr == "spec"
        and ast.unparse(decorator.func.value) == "pytest.mark"
    ):
        return [arg.value for arg in decorator.args if isinstance(arg, ast.Constant)]
    return None


def mark_file(path: Path, wanted: dict[str, list[str]]) -> list[str]:
    """Insert or merge markers in one file; returns the names not found."""
    source = path.read_text("utf-8")
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    edits: list[tuple[int, int, str]] = []  # (first line index, lines replaced, new line)
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name not in wanted:
            continue
        found.add(node.name)
        ids = list(wanted[node.name])
        replace = 0
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        for decorator in node.decorator_list:
            old = _existing(decorator)
            if old is not None:
                ids = old + [i for i in ids if i not in old]
                first, replace = decorator.lineno, decorator.end_lineno - decorator.lineno + 1
                break
        indent = " " * node.col_offset
        args = ", ".join(f'"{i}"' for i in ids)
        edits.append((first - 1, replace, f"{indent}@pytest.mark.spec({args})\n"))
    for start, replace, text in sorted(edits, reverse=True):
        lines[start : start + replace] = [text]
    if edits:
        path.write_text("".join(lines), "utf-8")
    return sorted(set(wanted) - found)


def main(old_table: str) -> int:
    per_file: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for (path, name), ids in cited(Path(old_table).read_text("utf-8")).items():
        per_file[path][name] = ids
    missing = []
    for path, wanted in sorted(per_file.items()):
        file = ROOT / path
        if not file.is_file():
            missing.append(path)
            continue
        missing += [f"{path}::{name}" for name in mark_file(file, wanted)]
        if "import pytest\n" not in file.read_text("utf-8"):
            missing.append(f"{path}: no `import pytest`")
    print("\n".join(missing) or "every cited test marked")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
