"""Write docs/spec-conformance.md from its hand-kept rows (docs/conformance/rows.toml, with the
prose in docs/conformance/preamble.md) and the tests that prove each row: every test carrying
`@pytest.mark.spec("ID", ...)`.

    python tools/conformance.py           # rewrite docs/spec-conformance.md (`make conformance`)
    python tools/conformance.py --check   # exit 1 if the committed file is not what this writes

The markers are found by reading the test files' syntax trees, not by pytest's collection: it takes
well under a second, imports no test module (no fixtures, no CDK, no optional dependency), and so
runs inside the unit suite, which refuses subprocesses.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "docs" / "conformance" / "rows.toml"
PREAMBLE = ROOT / "docs" / "conformance" / "preamble.md"
OUTPUT = ROOT / "docs" / "spec-conformance.md"
TESTS = ROOT / "tests"
STATUSES = ("done", "partial", "not yet")
BEYOND = "Beyond the spec"
WRAP = 200  # test names per line, in characters, before the list item continues on the next line


@dataclass(frozen=True)
class Marker:
    """One `pytest.mark.spec(...)` in a test file."""

    path: str  # relative to tests/, e.g. unit/kernel/test_clock.py
    test: str  # the function, `Class::function` for a method; "" when not on a test function
    line: int
    ids: tuple[str, ...]


@dataclass
class Row:
    id: str
    section: str
    requirement: str
    status: str
    code: list[str]
    reason: str = ""
    files: list[str] = field(default_factory=list)
    untested: str = ""
    same_as: str = ""


def _is_spec(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "spec"
        and ast.unparse(node.func.value) == "pytest.mark"
    )


def _ids(call: ast.Call) -> tuple[str, ...]:
    return tuple(
        arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else "?" for arg in call.args
    )


def markers_in(path: Path) -> list[Marker]:
    """Every spec marker in one test file; one that is not a test's decorator has test ""."""
    name = path.relative_to(TESTS).as_posix()
    tree = ast.parse(path.read_text("utf-8"), str(path))
    found: list[Marker] = []
    placed: set[int] = set()

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}::")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for decorator in node.decorator_list:
                    if _is_spec(decorator):
                        assert isinstance(decorator, ast.Call)
                        placed.add(id(decorator))
                        found.append(Marker(name, prefix + node.name, decorator.lineno, _ids(decorator)))

    visit(tree.body, "")
    for node in ast.walk(tree):
        if _is_spec(node) and id(node) not in placed:
            assert isinstance(node, ast.Call)
            found.append(Marker(name, "", node.lineno, _ids(node)))
    return found


def markers() -> list[Marker]:
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if "spec" in path.read_text("utf-8"):
            found += markers_in(path)
    return found


def rows() -> tuple[list[dict[str, str | int]], list[Row]]:
    data = tomllib.loads(ROWS.read_text("utf-8"))
    return data["section"], [Row(**row) for row in data["row"]]


def _code(text: str) -> str:
    """A code pointer in backticks; prose (e.g. "as WQ-15", "S3 lifecycle expiry") as it is."""
    bare = text
    for separator in (": ", ", ", " / ", " → "):
        bare = bare.replace(separator, "")
    return text if " " in bare else f"`{text}`"


def _wrapped(head: str, names: list[str]) -> list[str]:
    lines, current = [], head
    for i, name in enumerate(names):
        item = f"`{name}`" + ("," if i < len(names) - 1 else "")
        if len(current) + len(item) > WRAP and current.strip() != head.strip():
            lines.append(current.rstrip())
            current = "    "
        current += item + " "
    lines.append(current.rstrip())
    return lines


def _summary(all_rows: list[Row], beyond: bool) -> str:
    chosen = [r for r in all_rows if r.section.startswith(BEYOND) == beyond]
    counts = ", ".join(f"{sum(r.status == s for r in chosen)} {s}" for s in STATUSES)
    return f"{len(chosen)} rows: {counts}"


def render(sections: list[dict[str, str | int]], all_rows: list[Row], found: list[Marker]) -> str:
    proofs: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for marker in found:
        for row_id in marker.ids:
            if marker.test:
                proofs[row_id][marker.path].append(marker.test)
    out = [
        "<!-- Generated by tools/conformance.py (`make conformance`) from docs/conformance/rows.toml,",
        "     docs/conformance/preamble.md and the @pytest.mark.spec markers on the tests. Do not edit. -->",
        "",
        PREAMBLE.read_text("utf-8").strip(),
        "",
        f"**Summary.** The spec: {_summary(all_rows, False)}. Beyond the spec: {_summary(all_rows, True)}.",
    ]
    by_section: dict[str, list[Row]] = defaultdict(list)
    for row in all_rows:
        by_section[row.section].append(row)
    for section in sections:
        title = str(section["title"])
        out += ["", "#" * int(section.get("level", 2)) + " " + title]
        if section.get("intro"):
            out += ["", str(section["intro"])]
        chosen = by_section.get(title, [])
        if not chosen:
            continue
        out += ["", "| ID | Requirement | Status |", "|---|---|---|"]
        out += [f"| {r.id} | {r.requirement} | {r.status} |" for r in chosen]
        out.append("")
        for r in chosen:
            out.append(f"- **{r.id}**" + (f": {r.reason}" if r.reason else ""))
            if r.code:
                out.append("  - Code: " + "; ".join(_code(c) for c in r.code))
            for path, tests in sorted(proofs[r.id].items()):
                out += _wrapped(f"  - `{path}`: ", tests)
            out += [f"  - `{path.removeprefix('tests/')}` (the whole file)" for path in r.files]
            if r.same_as:
                out.append(f"  - Proven as {r.same_as}.")
            if r.untested:
                out.append(f"  - No marked test: {r.untested}")
    return "\n".join(out) + "\n"


def generate() -> str:
    sections, all_rows = rows()
    return render(sections, all_rows, markers())


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        if OUTPUT.read_text("utf-8") != text:
            print(f"{OUTPUT.name} is stale: run `make conformance`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
