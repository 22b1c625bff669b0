"""Which tree-sitter grammar parses a file, and which of its nodes are definitions and calls.

The grammars are the tree-sitter project's own per-language packages (`tree-sitter-python`,
`-c`, `-cpp`, `-javascript`, `-typescript`, `-go`, `-java`, `-c-sharp`, `-bash`; MIT), each a
small abi3 wheel: 18 MB in the deps layer with the `tree-sitter` binding, where
`tree-sitter-language-pack` (every grammar, 192 MB unzipped) would not fit beside the analyzers. Each is
imported the first time a file of its language is parsed, so a review of Python files loads one
grammar and a review with no model loads none.

Node type names are the grammars' own (`src/node-types.json` of each grammar's repository)."""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any

from p4review.change.code_languages import code_language


@dataclass(frozen=True)
class Grammar:
    name: str
    module: str  # the grammar package's Python module
    entry: str  # its function that returns the language pointer
    functions: frozenset[str]  # node types that are a function, method or closure
    types: frozenset[str]  # node types that are a class, struct, interface or namespace-like type
    calls: frozenset[str]  # node types that are a call


_C_CALLS = frozenset({"call_expression"})
_JS_FUNCTIONS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "function",
        "arrow_function",
        "method_definition",
    }
)
_JS_TYPES = frozenset({"class_declaration", "class"})
_TS_TYPES = _JS_TYPES | {"interface_declaration", "abstract_class_declaration", "enum_declaration", "module"}

PYTHON = Grammar(
    "python",
    "tree_sitter_python",
    "language",
    frozenset({"function_definition", "lambda"}),
    frozenset({"class_definition"}),
    frozenset({"call"}),
)
C = Grammar(
    "c", "tree_sitter_c", "language", frozenset({"function_definition"}), frozenset({"struct_specifier"}), _C_CALLS
)
CPP = Grammar(
    "cpp",
    "tree_sitter_cpp",
    "language",
    frozenset({"function_definition", "lambda_expression"}),
    frozenset({"class_specifier", "struct_specifier"}),
    _C_CALLS,
)
JAVASCRIPT = Grammar("javascript", "tree_sitter_javascript", "language", _JS_FUNCTIONS, _JS_TYPES, _C_CALLS)
TYPESCRIPT = Grammar("typescript", "tree_sitter_typescript", "language_typescript", _JS_FUNCTIONS, _TS_TYPES, _C_CALLS)
TSX = Grammar("tsx", "tree_sitter_typescript", "language_tsx", _JS_FUNCTIONS, _TS_TYPES, _C_CALLS)
GO = Grammar(
    "go",
    "tree_sitter_go",
    "language",
    frozenset({"function_declaration", "method_declaration", "func_literal"}),
    frozenset({"type_declaration"}),
    _C_CALLS,
)
JAVA = Grammar(
    "java",
    "tree_sitter_java",
    "language",
    frozenset({"method_declaration", "constructor_declaration", "lambda_expression"}),
    frozenset(
        {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"},
    ),
    frozenset({"method_invocation", "object_creation_expression"}),
)
CSHARP = Grammar(
    "c_sharp",
    "tree_sitter_c_sharp",
    "language",
    frozenset({"method_declaration", "constructor_declaration", "local_function_statement", "lambda_expression"}),
    frozenset(
        {"class_declaration", "struct_declaration", "interface_declaration", "record_declaration", "enum_declaration"}
    ),
    frozenset({"invocation_expression", "object_creation_expression"}),
)
BASH = Grammar("bash", "tree_sitter_bash", "language", frozenset({"function_definition"}), frozenset(), frozenset())

_BY_NAME = {grammar.name: grammar for grammar in (PYTHON, C, CPP, JAVASCRIPT, TYPESCRIPT, TSX, GO, JAVA, CSHARP, BASH)}


def grammar_for(depot_path: str, first_line: str = "") -> Grammar | None:
    """The grammar for a file (change/code_languages.py: by extension, else a shell's `#!`)."""
    language = code_language(depot_path, first_line)
    return _BY_NAME[language] if language is not None else None


_parsers: dict[str, Any] = {}
_lock = threading.Lock()


def parser_for(grammar: Grammar) -> Any:
    """A tree-sitter Parser for the grammar (one a process, made on first use)."""
    with _lock:
        parser = _parsers.get(grammar.name)
        if parser is None:
            import tree_sitter

            language = tree_sitter.Language(getattr(importlib.import_module(grammar.module), grammar.entry)())
            parser = _parsers[grammar.name] = tree_sitter.Parser(language)
        return parser
