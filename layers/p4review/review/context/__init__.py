"""What the model is shown around each hunk: the enclosing function or type from the file's
new-side content (`widening`), and the signatures of functions the changed lines call that are
defined in other files of the change (`ChangeContext.callees`), parsed with tree-sitter
(`grammars`, `definitions`).

Everything here reads the ReviewInput only: the redacted new-side content of the files fetch kept
(allow-listed, fetched, in a language parsed here or read by an analyzer), never the depot. A file
without content (binary, deleted, too large) is sent as its diff alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from p4review.change.snapshot_redaction import ReviewFile
from p4review.change.unified_diff import iter_added_lines
from p4review.review.context.definitions import ParsedFile, parse_file
from p4review.review.context.widening import WidenedSection, widen

MAX_CALLEES_PER_FILE = 8


@dataclass(frozen=True)
class Callee:
    depot_path: str
    line: int
    signature: str


@dataclass(frozen=True)
class FileSource:
    depot_path: str
    diff: str  # the redacted unified diff
    content: str | None  # the redacted new-side content, when fetch kept it

    @classmethod
    def of(cls, review_file: ReviewFile) -> FileSource:
        content = review_file.content.text if review_file.content is not None else None
        return cls(review_file.diff.depot_path, review_file.document.text, content)


class ChangeContext:
    """Every file of a change parsed once (the names its added lines call, its definitions), and
    an index of the functions each defines, so each file's callees are a lookup."""

    def __init__(self, sources: Sequence[FileSource]) -> None:
        self._parsed: dict[str, ParsedFile] = {}
        self._functions: dict[str, list[Callee]] = {}
        for source in sources:
            if source.content is None:
                continue
            added = {line.line for line in iter_added_lines(source.diff)}
            parsed = self._parsed[source.depot_path] = parse_file(source.depot_path, source.content, want_calls=added)
            for definition in parsed.definitions:
                if definition.kind == "function" and definition.name:
                    callee = Callee(source.depot_path, definition.start_line, definition.signature)
                    self._functions.setdefault(definition.name, []).append(callee)

    def widened(self, source: FileSource, budget_chars: int) -> WidenedSection | None:
        parsed = self._parsed.get(source.depot_path)
        if parsed is None or source.content is None:
            return None
        return widen(source.diff, parsed, source.content, budget_chars)

    def callees(self, source: FileSource) -> list[Callee]:
        """Functions the file's added lines call that another file of the change defines (and the
        file itself does not), in the order they are first called."""
        parsed = self._parsed.get(source.depot_path)
        if parsed is None:
            return []
        local = {d.name for d in parsed.definitions}
        found: list[Callee] = []
        for line in sorted(parsed.calls_by_line):
            for name in sorted(parsed.calls_by_line[line] - local):
                for callee in self._functions.get(name, []):
                    if callee.depot_path != source.depot_path and callee not in found:
                        found.append(callee)
        return found[:MAX_CALLEES_PER_FILE]
