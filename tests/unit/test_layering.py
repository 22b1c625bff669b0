"""Layer rules import-linter cannot see (its contracts are in pyproject.toml, run by `make lint`):
the Lambda handlers are files, not a package; and its list of DAL implementations must not go
stale when a module is added."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What a handler may import: the stage or API it serves, the stage runtime, observability,
# configuration and the DAL factory (never a DAL implementation, an adapter or logic directly).
HANDLER_MAY_IMPORT = (
    "p4review.stages.",
    "p4review.runtime.",
    "p4review.api.",
    "p4review.observability",
    "p4review.config",
    "p4review.dal.factory",
)


def _p4review_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [name for name in names if name.split(".")[0] == "p4review"]


def test_handlers_import_only_stages_runtime_observability_config_and_the_dal_factory():
    handlers = sorted((ROOT / "functions").glob("*/handler.py"))
    assert len(handlers) == 7
    for handler in handlers:
        for module in _p4review_imports(handler):
            assert module.startswith(HANDLER_MAY_IMPORT), f"{handler.relative_to(ROOT)} imports {module}"


def test_the_logic_contract_lists_every_dal_implementation():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]
    forbidden = next(contract for contract in contracts if contract["source_modules"] == ["p4review.logic"])
    implementations = {
        f"p4review.dal.{path.stem}"
        for path in (ROOT / "layers/p4review/dal").glob("*.py")
        if path.stem not in ("__init__", "ports")
    }
    assert implementations <= set(forbidden["forbidden_modules"])
