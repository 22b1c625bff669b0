"""Layer rules import-linter cannot see (its contracts are in pyproject.toml, run by `make lint`):
the Lambda handlers are files, not a package; and the layers contract must name every package and
module of the product, so a new one cannot sit outside the order unnoticed."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ROOT / "layers" / "p4review"
# The stage package each function serves (a handler imports that package, never another stage's).
STAGE_OF_FUNCTION = {
    "ingest": "ingest",
    "fetch": "fetch",
    "review": "review",
    "notify": "notify",
    "sweeper": "ops",
    "credential-age": "ops",
    "rotate-signing": "ops",
}
# Beside its stage: the stage machinery, observability, its settings and the shared stores' factory.
SHARED_FOR_HANDLERS = ("p4review.pipeline.", "p4review.observability", "p4review.settings.", "p4review.stores.factory")


def _p4review_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [name for name in names if name.split(".")[0] == "p4review"]


def test_each_handler_imports_its_stage_the_machinery_observability_settings_and_the_factory():
    handlers = sorted((ROOT / "functions").glob("*/handler.py"))
    assert {handler.parent.name for handler in handlers} == set(STAGE_OF_FUNCTION)
    for handler in handlers:
        allowed = (f"p4review.{STAGE_OF_FUNCTION[handler.parent.name]}.", *SHARED_FOR_HANDLERS)
        for module in _p4review_imports(handler):
            assert module.startswith(allowed), f"{handler.relative_to(ROOT)} imports {module}"


def test_the_layers_contract_names_every_top_level_package_and_module():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]
    layers = next(contract for contract in contracts if contract["type"] == "layers")
    named = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    present = {path.stem for path in PRODUCT.glob("*.py") if path.stem != "__init__"}
    present |= {path.parent.name for path in PRODUCT.glob("*/__init__.py")}
    assert present - {"prompt_templates"} <= named, f"outside the layers contract: {sorted(present - named)}"


def test_the_stage_packages_are_declared_independent():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]
    independence = next(contract for contract in contracts if contract["type"] == "independence")
    assert set(independence["modules"]) == {f"p4review.{stage}" for stage in set(STAGE_OF_FUNCTION.values())}


def test_a_module_above_500_lines_says_why_in_its_docstring():
    long_modules = []
    for root in (PRODUCT, ROOT / "devstack" / "p4review_dev"):
        for path in root.rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if text.count("\n") > 500 and "Above 500 lines on purpose" not in (
                ast.get_docstring(ast.parse(text)) or ""
            ):
                long_modules.append(str(path.relative_to(ROOT)))
    assert long_modules == []
