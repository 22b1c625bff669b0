"""What the model is shown around each hunk: the enclosing function or type from the file's
new-side content (`widening`), and the signatures of functions the changed lines call that are
defined in other files of the change (`callee_signatures`), parsed with tree-sitter (`grammars`,
`definitions`).

Everything here reads the ReviewInput only: the redacted new-side content of the files fetch kept
(allow-listed, fetched, kept for the analyzers), never the depot. A file without content (the
analyzers are off, the file is binary, deleted or too large) is sent as its diff alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from p4review.change.unified_diff import iter_added_lines
from p4review.review.context.definitions import ParsedFile, parse_file
from p4review.review.context.widening import WidenedSection, widen

MAX_CALLEES_PER_FILE = 8


@dataclass(frozen=True)
class Callee:
    depot_path: str
    line: int
    signature: str


@lru_cache(maxsize=32)
def parsed(depot_path: str, content: str, added: frozenset[int]) -> ParsedFile:
    """One parse a file a review: the stage renders every file, then each chunk's callees."""
    return parse_file(depot_path, content, want_calls=added)


@dataclass(frozen=True)
class FileSource:
    depot_path: str
    diff: str  # the redacted unified diff
    content: str | None  # the redacted new-side content, when fetch kept it


def _parse(source: FileSource) -> ParsedFile | None:
    if source.content is None:
        return None
    added = frozenset(line.line for line in iter_added_lines(source.diff))
    return parsed(source.depot_path, source.content, added)


def widened_section(source: FileSource, budget_chars: int) -> WidenedSection | None:
    parsed_file = _parse(source)
    if parsed_file is None or source.content is None:
        return None
    return widen(source.diff, parsed_file, source.content, budget_chars)


def callee_signatures(source: FileSource, change: Sequence[FileSource]) -> list[Callee]:
    """Functions the file's added lines call that are defined in another file of the change."""
    parsed_file = _parse(source)
    if parsed_file is None or not parsed_file.calls_by_line:
        return []
    called = {name for names in parsed_file.calls_by_line.values() for name in names}
    local = {d.name for d in parsed_file.definitions}
    found: list[Callee] = []
    for other in change:
        if other.depot_path == source.depot_path:
            continue
        other_parsed = _parse(other)
        if other_parsed is None:
            continue
        for definition in other_parsed.definitions:
            if definition.kind == "function" and definition.name in called and definition.name not in local:
                found.append(Callee(other.depot_path, definition.start_line, definition.signature))
                if len(found) == MAX_CALLEES_PER_FILE:
                    return found
    return found
