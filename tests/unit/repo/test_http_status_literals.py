"""HTTP statuses are named, never raw ints, outside the one place that maps the API's outcomes to
HTTP (ingest/http_answers.py): `HTTPStatus.TOO_MANY_REQUESTS`, `ApiStatus.NOT_FOUND`, not `429`, `404`.

An AST scan of the product package and the dev stack (devstack/p4review_dev) for an int literal 100-599
where it can only be an HTTP status: compared with, assigned to, passed as, defaulted for or keyed
as something named *status* (`status`, `status_code`, `statusCode`, `HTTPStatusCode`,
`_RETRYABLE_STATUSES`...), including a status parameter passed by position to a function or class
of the package. SMTP reply codes (`code`), ports, sizes and counts are not named so and not flagged.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "layers" / "p4review"
DEV_STACK = ROOT / "devstack" / "p4review_dev"
MAPPING_MODULE = PACKAGE / "ingest" / "http_answers.py"
_STATUSISH = re.compile(r"status", re.IGNORECASE)
# http.server's senders take the status first, as `code`.
_STDLIB_STATUS_POSITIONS = {"send_response": {0}, "send_response_only": {0}, "send_error": {0}}


def _name(node: ast.AST) -> str | None:
    """The name an expression goes by: `status`, `resp.status`, `meta["HTTPStatusCode"]`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _statusish(node: ast.AST | None) -> bool:
    name = _name(node) if node is not None else None
    return name is not None and bool(_STATUSISH.search(name))


def _status_literals(node: ast.AST) -> Iterator[ast.Constant]:
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and type(child.value) is int and 100 <= child.value <= 599:
            yield child


def _callee(node: ast.Call) -> str | None:
    return node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)


def _status_positions(trees: list[ast.Module]) -> dict[str, set[int]]:
    """Callable name -> positions of its status parameters, over the package's own definitions."""
    positions: dict[str, set[int]] = {name: set(found) for name, found in _STDLIB_STATUS_POSITIONS.items()}

    def add(name: str, params: list[str]) -> None:
        found = {index for index, param in enumerate(params) if _STATUSISH.search(param)}
        if found:
            positions.setdefault(name, set()).update(found)

    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = [arg.arg for arg in (*node.args.posonlyargs, *node.args.args)]
                add(node.name, [p for p in params if p not in ("self", "cls")])
            elif isinstance(node, ast.ClassDef):
                init = next(
                    (item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None
                )
                if init is not None:
                    add(node.name, [arg.arg for arg in init.args.args[1:]])
                else:  # a dataclass or NamedTuple: its fields in order
                    add(
                        node.name,
                        [
                            item.target.id
                            for item in node.body
                            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                        ],
                    )
    return positions


def raw_statuses(tree: ast.Module, positions: dict[str, set[int]]) -> list[ast.Constant]:
    """The raw HTTP status literals of one module, in source order."""
    flagged: dict[int, ast.Constant] = {}  # id(literal) -> literal

    def flag(node: ast.AST) -> None:
        for literal in _status_literals(node):
            flagged[id(literal)] = literal

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_statusish(operand) for operand in operands):
                for operand in operands:
                    flag(operand)
        elif isinstance(node, ast.Assign):
            if any(
                _statusish(target) or isinstance(target, ast.Tuple) and any(map(_statusish, target.elts))
                for target in node.targets
            ):
                flag(node.value)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            if _statusish(node.target) and node.value is not None:
                flag(node.value)
        elif isinstance(node, ast.keyword):
            if node.arg is not None and _STATUSISH.search(node.arg):
                flag(node.value)
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            for arg, default in zip(positional[len(positional) - len(node.defaults) :], node.defaults, strict=True):
                if _STATUSISH.search(arg.arg):
                    flag(default)
            for arg, kw_default in zip(node.kwonlyargs, node.kw_defaults, strict=True):
                if kw_default is not None and _STATUSISH.search(arg.arg):
                    flag(kw_default)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if _statusish(key):
                    flag(value)
        elif isinstance(node, ast.Call):
            for index in positions.get(_callee(node) or "", ()):
                if index < len(node.args) and not isinstance(node.args[index], ast.Starred):
                    flag(node.args[index])
    return sorted(flagged.values(), key=lambda literal: (literal.lineno, literal.col_offset))


def _scan(sources: dict[str, str]) -> dict[str, list[int]]:
    trees = {name: ast.parse(source) for name, source in sources.items()}
    positions = _status_positions(list(trees.values()))
    found = {name: [literal.lineno for literal in raw_statuses(tree, positions)] for name, tree in trees.items()}
    return {name: lines for name, lines in found.items() if lines}


def test_no_raw_http_status_outside_the_api_mapping() -> None:
    files = sorted(path for root in (PACKAGE, DEV_STACK) for path in root.rglob("*.py") if path != MAPPING_MODULE)
    assert len(files) > 50
    sources = {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in files}
    # The mapping module's definitions (ApiError's status parameter) count for the positions.
    sources[str(MAPPING_MODULE.relative_to(ROOT))] = MAPPING_MODULE.read_text(encoding="utf-8")
    found = _scan(sources)
    found.pop(str(MAPPING_MODULE.relative_to(ROOT)), None)
    assert found == {}, f"raw HTTP statuses (file: lines); name them with HTTPStatus or ingest/http_answers.py: {found}"


def test_the_scan_flags_status_literals_and_nothing_else() -> None:
    flagged = """
def answer(status_code, body): ...
class Refusal:
    def __init__(self, status, text): ...
def classify(resp, meta, code):
    if resp.status == 429: ...
    if 200 <= resp.status_code < 300: ...
    if meta["HTTPStatusCode"] >= 500: ...
    status = 503 if resp.retryable else 500
    answer(404, "no")
    Refusal(400, "bad")
    handler.send_response(413)
    return {"statusCode": 502, "body": ""}, Response(status_code=201)
RETRYABLE_STATUSES = frozenset({408, 425})
def fault(*, status: int = 500): ...
"""
    clean = """
from http import HTTPStatus
def classify(resp, code, port=443, timeout=300, size=256):
    if resp.status == HTTPStatus.TOO_MANY_REQUESTS: ...
    if code == 250 or code in (451, 550): ...
    limit = 100
    return {"count": 200, "code": 530}, resp.status_code >= HTTPStatus.INTERNAL_SERVER_ERROR, [1000, 99]
"""
    found = _scan({"flagged": flagged, "clean": clean})
    assert found == {"flagged": [6, 7, 7, 8, 9, 9, 10, 11, 12, 13, 13, 14, 14, 15]}
