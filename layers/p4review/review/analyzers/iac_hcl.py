"""Terraform (HCL2) for the `iac` checks (p4review.review.analyzers.iac_checks), read with python-hcl2.

python-hcl2's parser (lark, LALR, positions kept) gives the syntax tree; this turns it into the
small tree the checks walk: `Node`s (a block, or an object value: `ingress = [{...}]`,
`jsonencode({...})`, a JSON heredoc's `{...}`) holding `Attr`s (a key, its lines, and the plain
values of its expression: strings, numbers, `true`, references, function names). An attribute's
line is its key's line; its last line is that of its last value, or of the closing brace of an
object in it (not a list's `]`), so a report spans exactly what the change wrote.

A JSON heredoc (`policy = <<EOF` then `{`/`[`: an IAM policy) is read too, with the same parser
(JSON's objects and arrays are HCL expressions), its lines counted from the heredoc's.

hcl2 (with lark, ~0.2 s to import, and the grammar to build on first use) is imported only when a
Terraform file is read, so a review without one never loads it.

Unparseable input: a file in a change may be partial or wrong, and the review must go on. When
the whole file does not parse, each top-level block (a line at column 0 that opens one) is read
on its own, cut before the line of its first syntax error if that leaves something that parses;
a block that still does not parse is skipped. So a stray `}` or an unterminated string costs the
checks of its block, not of the file. No parser error leaves this module."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lark import Lark, Token, Tree
    from typing_extensions import TypeIs


@dataclass
class Attr:
    key: str
    line: int
    end_line: int
    values: list[str] = field(default_factory=list)  # the plain values of its expression, as written

    def words(self) -> list[str]:
        return [value.strip() for value in self.values]


@dataclass
class Node:
    """A block (`resource "aws_s3_bucket" "b" {`) or an object value (`ingress = [{`,
    `jsonencode({`, a JSON heredoc's `{`); header is the block's type and labels, or the key of
    the attribute the object is the value of."""

    header: list[str]
    line: int
    end_line: int = 0
    attrs: list[Attr] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)

    def get(self, *keys: str) -> Attr | None:
        wanted = {key.lower() for key in keys}
        found = [attr for attr in self.attrs if attr.key.lower() in wanted]
        return found[-1] if found else None

    def value(self, *keys: str) -> str | None:
        attr = self.get(*keys)
        return attr.values[0].strip() if attr is not None and len(attr.values) == 1 else None


def literal(value: str | None) -> str | None:
    """A plain literal (`true`, `22`, `public-read`) lower-cased, None for a template."""
    if value is None or "${" in value or "%{" in value:
        return None
    return value.strip().lower()


def parse_hcl(text: str) -> Node:
    """Terraform as a tree of blocks and objects (the file is the root, header []). Input that
    does not parse is read block by block (see the module's docstring); nothing raises."""
    root = Node(header=[], line=1)
    tree = _syntax_tree(text)
    if tree is not None:
        _Reader(text, 0).body(tree, root)
        return root
    starts = sorted({0, len(text), *(match.start() for match in _BLOCK_START.finditer(text))})
    for start, end in zip(starts, starts[1:], strict=False):
        chunk = text[start:end]
        tree = _longest_parsed_prefix(chunk)
        if tree is not None:
            _Reader(chunk, text.count("\n", 0, start)).body(tree, root)
    return root


# A top-level block's first line: `resource "aws_s3_bucket" "b" {`, `locals {`.
_BLOCK_START = re.compile(r'^[A-Za-z_][\w-]*(?:[ \t]+(?:"[^"\n]*"|[A-Za-z_][\w-]*))*[ \t]*\{', re.MULTILINE)
_RETRIES = 3


def _syntax_tree(text: str) -> Tree[Token] | None:
    tree, _ = _parse(text)
    return tree


# python-hcl2's grammar, built into a lark parser when the deps layer is built (infra/p4review_infra/
# layer.py: save_hcl2_parser) and saved beside hcl2: lark's own cache, which python-hcl2 asks for,
# is keyed by its file's absolute path and Python's version and cannot be written under Lambda's
# read-only /opt, so without this every cold start would build the grammar again (~1.4 s).
SAVED_HCL2_PARSER = "p4review-hcl2-parser.lark"


@lru_cache(maxsize=1)
def _hcl2_parser() -> Lark:
    import hcl2.parser  # lazily: only a change with Terraform in it pays for the parser
    from hcl2.postlexer import PostLexer
    from lark import Lark

    saved = Path(hcl2.parser.__file__).with_name(SAVED_HCL2_PARSER)
    if saved.is_file():
        with saved.open("rb") as data:
            # `Lark.load` takes no options; its `_load` takes those a saved parser cannot hold (the
            # post-lexer), as lark's own cache does (lark is pinned by layers/requirements.lock,
            # and `make package` checks the saved parser against python-hcl2's).
            return Lark.__new__(Lark)._load(data, postlex=PostLexer(), propagate_positions=True)
    return hcl2.parser.parser()  # a checkout's venv: built (and cached by lark) on first use


def _parse(text: str) -> tuple[Tree[Token] | None, int]:
    """The parse tree, or None and the line of the syntax error (0 when unknown)."""
    try:
        # As hcl2.parses_to_tree does: lark has no end-of-file token, so the grammar needs a final newline.
        return _hcl2_parser().parse(text + "\n"), 0
    except Exception as exc:  # noqa: BLE001 - lark's errors and any parser bug: the file is unparseable
        line = getattr(exc, "line", 0)
        return None, line if isinstance(line, int) and line > 0 else 0


def _longest_parsed_prefix(chunk: str) -> Tree[Token] | None:
    for _ in range(_RETRIES):
        tree, error_line = _parse(chunk)
        if tree is not None or error_line <= 1:
            return tree
        cut = chunk.split("\n")[: error_line - 1]
        if len(cut) >= chunk.count("\n") + 1:
            return None
        chunk = "\n".join(cut) + "\n"
    return None


_HEREDOC_OPENING = re.compile(r"<<-?[A-Za-z][\w.-]*\r?\n")
_SKIPPED = frozenset({"new_line_or_comment", "binary_operator"})


class _Reader:
    """Turns hcl2's parse tree of `text` into Nodes and Attrs; lines are the tree's plus
    line_offset (a block read on its own, a heredoc's JSON)."""

    def __init__(self, text: str, line_offset: int) -> None:
        self.text, self.offset = text, line_offset

    def body(self, tree: Tree[Token], node: Node) -> None:
        for child in _trees(tree):
            if child.data == "body":
                self.body(child, node)
            elif child.data == "attribute":
                self.attribute(child, node)
            elif child.data == "block":
                self.block(child, node)

    def block(self, tree: Tree[Token], parent: Node) -> None:
        block = Node(header=[], line=self.line(tree))
        parent.children.append(block)
        for child in tree.children:
            if not _is_tree(child):
                if child.type == "LBRACE":
                    block.line = self.offset + (child.line or 0)
                elif child.type == "RBRACE":
                    block.end_line = self.offset + (child.line or 0)
            elif child.data == "body":
                self.body(child, block)
            elif child.data != "new_line_or_comment":
                block.header.append(self.key(child))

    def attribute(self, tree: Tree[Token], node: Node) -> None:
        key = tree.children[0]
        line = self.line(key)
        attr = Attr(self.key(key), line, line)
        node.attrs.append(attr)
        self.value(tree.children[-1], node, attr)

    def value(self, tree: Tree[Token] | Token, node: Node, attr: Attr) -> None:
        """The plain values of an expression into attr.values; its objects into node.children."""
        if not _is_tree(tree):
            return  # punctuation: `(`, `,`, `=`
        kind = tree.data
        if kind in _SKIPPED:
            return
        if kind == "string":
            self.atom(attr, self.raw(tree)[1:-1], self.line(tree))
        elif kind in ("heredoc_template", "heredoc_template_trim"):
            self.heredoc(tree, node, attr)
        elif kind == "object":
            self.object(tree, node, attr)
        elif kind == "function_call":
            self.atom(attr, self.raw(tree.children[0]), self.line(tree))
            for child in tree.children[1:]:
                self.value(child, node, attr)
        elif kind in ("expr_term", "tuple", "arguments", "conditional", "binary_op", "binary_term"):
            for child in tree.children:
                self.value(child, node, attr)
        else:  # a number, true/false/null, a reference (`var.x`, `aws_s3_bucket.b.id`), `-x`, a for
            self.atom(attr, self.raw(tree), self.line(tree))

    def object(self, tree: Tree[Token], node: Node, attr: Attr) -> None:
        child = Node(header=[attr.key], line=self.line(tree), end_line=self.end_line(tree))
        node.children.append(child)
        for elem in _trees(tree):
            if elem.data != "object_elem":
                continue
            key = elem.children[0]
            line = self.line(key)
            elem_attr = Attr(self.key(key), line, line)
            child.attrs.append(elem_attr)
            self.value(elem.children[-1], child, elem_attr)
        attr.end_line = max(attr.end_line, child.end_line)

    def heredoc(self, tree: Tree[Token], node: Node, attr: Attr) -> None:
        raw = self.raw(tree)
        opening = _HEREDOC_OPENING.match(raw)
        start = opening.end() if opening else 0
        body = raw[start : raw.rstrip().rfind("\n") + 1]
        line = self.line(tree)
        if body.lstrip()[:1] in ("{", "["):  # JSON (a policy): read its structure
            json_text = f"x = {body}"
            parsed = _syntax_tree(json_text)
            if parsed is not None:
                reader = _Reader(json_text, line)
                for child in _trees(parsed):
                    for attribute in (a for a in _trees(child) if a.data == "attribute"):
                        reader.value(attribute.children[-1], node, attr)
                return
        self.atom(attr, body, line + 1)

    def atom(self, attr: Attr, value: str, line: int) -> None:
        attr.values.append(value)
        attr.end_line = max(attr.end_line, line)

    def key(self, tree: Tree[Token] | Token) -> str:
        """A block label, attribute or object key as a name: a string's content, else as written."""
        raw = self.raw(tree).strip()
        while _is_tree(tree) and len(tree.children) == 1:  # object_elem_key > expr_term > string
            tree = tree.children[0]
        if _is_tree(tree) and tree.data == "string":
            return raw[1:-1]
        return raw

    def raw(self, item: Tree[Token] | Token) -> str:
        if _is_tree(item):
            return self.text[item.meta.start_pos : item.meta.end_pos]
        return str(item)

    def line(self, item: Tree[Token] | Token) -> int:
        if _is_tree(item):
            return self.offset + item.meta.line
        return self.offset + (item.line or 0)

    def end_line(self, tree: Tree[Token]) -> int:
        return self.offset + tree.meta.end_line


def _is_tree(item: Tree[Token] | Token) -> TypeIs[Tree[Token]]:
    return hasattr(item, "data")


def _trees(tree: Tree[Token]) -> list[Tree[Token]]:
    return [child for child in tree.children if _is_tree(child)]
