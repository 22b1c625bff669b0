"""docs/spec-conformance.md cites a proving test for each row: every cited test must exist, so
a renamed or moved test cannot leave a row pointing at nothing. A name without a file path is in
the file named before it in the same cell."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TABLE = ROOT / "docs" / "spec-conformance.md"
# `unit/test_x.py::test_name` or `::test_name` (the file named before it).
CITATION = re.compile(r"`(?:((?:tests/)?(?:unit|integration|e2e|infra)/(?:\w+/)*test_\w+\.py))?(?:::(\w+))?")


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def _citations() -> list[tuple[int, str, str | None]]:
    found = []
    for number, line in enumerate(TABLE.read_text("utf-8").splitlines(), 1):
        for cell in line.split("|"):
            current = None
            for match in CITATION.finditer(cell):
                path, name = match.groups()
                if path:
                    current = path if path.startswith("tests/") else f"tests/{path}"
                    found.append((number, current, name))
                elif name and current:
                    found.append((number, current, name))
    return found


def test_the_table_cites_tests():
    assert len(_citations()) > 300


@pytest.mark.spec("CH-9")
def test_every_cited_test_file_and_test_exists():
    names: dict[str, set[str]] = {}
    missing = []
    for number, path, name in _citations():
        file = ROOT / path
        if not file.is_file():
            missing.append(f"line {number}: {path}")
            continue
        if name is not None and name not in names.setdefault(path, _test_names(file)):
            missing.append(f"line {number}: {path}::{name}")
    assert missing == []
