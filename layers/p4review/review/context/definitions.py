"""A file's definitions (functions and types, with their lines and signatures) and the names its
given lines call, from one tree-sitter parse of its new-side content.

tree-sitter recovers from syntax errors: a file that does not parse yields the definitions it
could still read (the rest is ERROR nodes), so a half-written file degrades instead of failing.
A file too large to be worth parsing, or in no supported language, yields nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from p4review.review.context.grammars import Grammar, grammar_for, parser_for

if TYPE_CHECKING:
    from tree_sitter import Node

# Larger files are left to the hunks alone: a file near this size takes about 0.4 s to parse and walk.
MAX_PARSED_BYTES = 2_000_000
MAX_SIGNATURE_CHARS = 240
_NAME_TYPES = frozenset(
    {
        "identifier",
        "field_identifier",
        "property_identifier",
        "type_identifier",
        "word",
        "destructor_name",
        "operator_name",
    }
)
_BLANKS = re.compile(r"\s+")


@dataclass(frozen=True)
class Definition:
    kind: str  # "function" or "type"
    name: str  # "" for an anonymous function (a lambda, a callback)
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str  # the text before its body, on one line
    depth: int  # how many definitions enclose it


@dataclass
class ParsedFile:
    grammar: Grammar | None
    definitions: list[Definition] = field(default_factory=list)
    calls_by_line: dict[int, set[str]] = field(default_factory=dict)  # line -> names called on it


def _name_of(node: Node | None) -> str:
    """A definition's or callee's simple name: `ns::Foo::bar` -> bar, `obj.m` -> m."""
    current = node
    for _ in range(8):
        if current is None:
            return ""
        if current.type in _NAME_TYPES:
            return (current.text or b"").decode("utf-8", "replace")
        nested = None
        for field_name in ("name", "declarator", "field", "property", "function"):
            nested = current.child_by_field_name(field_name)
            if nested is not None:
                break
        if nested is None:
            named = [c for c in current.named_children if c.type in _NAME_TYPES]
            nested = named[-1] if named else None
        current = nested
    return ""


def _definition_name(node: Node) -> str:
    for field_name in ("name", "declarator"):
        child = node.child_by_field_name(field_name)
        if child is not None:
            return _name_of(child)
    parent = node.parent
    if parent is not None and parent.type in ("variable_declarator", "assignment_expression", "pair"):
        return _name_of(parent.child_by_field_name("name") or parent.child_by_field_name("left"))
    return ""


def _signature(node: Node, source: bytes) -> str:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    text = source[node.start_byte : end].decode("utf-8", "replace")
    text = _BLANKS.sub(" ", text).strip().rstrip("{:").rstrip()
    return text[:MAX_SIGNATURE_CHARS]


def parse_file(depot_path: str, content: str, *, want_calls: Iterable[int] = ()) -> ParsedFile:
    """The definitions of `content`, and the names called on the lines `want_calls`."""
    first_line = content[:200].split("\n", 1)[0]
    grammar = grammar_for(depot_path, first_line)
    parsed = ParsedFile(grammar=grammar)
    source = content.encode("utf-8", "surrogatepass")
    if grammar is None or len(source) > MAX_PARSED_BYTES:
        parsed.grammar = None
        return parsed
    tree = parser_for(grammar).parse(source)
    wanted = set(want_calls)
    # An explicit stack, not recursion: minified or generated code nests deeper than Python's limit.
    stack: list[tuple[Node, int]] = [(tree.root_node, 0)]
    while stack:
        node, depth = stack.pop()
        kind = node.type
        child_depth = depth
        if kind in grammar.functions or kind in grammar.types:
            start, end = node.start_point.row + 1, node.end_point.row + 1
            parsed.definitions.append(
                Definition(
                    kind="function" if kind in grammar.functions else "type",
                    name=_definition_name(node),
                    start_line=start,
                    end_line=end,
                    signature=_signature(node, source),
                    depth=depth,
                )
            )
            child_depth = depth + 1
        elif kind in grammar.calls:
            line = node.start_point.row + 1
            if line in wanted:
                callee = node.child_by_field_name("function") or node.child_by_field_name("name")
                if callee is None:
                    callee = node.child_by_field_name("type")
                name = _name_of(callee)
                if name:
                    parsed.calls_by_line.setdefault(line, set()).add(name)
        elif kind == "command" and grammar.name == "bash":
            line = node.start_point.row + 1
            if line in wanted:
                name = _name_of(node.child_by_field_name("name"))
                if name:
                    parsed.calls_by_line.setdefault(line, set()).add(name)
        stack.extend((child, child_depth) for child in reversed(node.children))
    parsed.definitions.sort(key=lambda d: (d.start_line, -d.end_line))
    return parsed


def enclosing(definitions: list[Definition], line: int) -> list[Definition]:
    """The definitions that contain `line`, outermost first."""
    return sorted((d for d in definitions if d.start_line <= line <= d.end_line), key=lambda d: d.depth)
