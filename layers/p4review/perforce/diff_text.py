"""Unified diffs from p4's answers: both sides of an edit diffed here, a new file as one hunk."""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Literal, cast

from p4review.perforce.values import decode_text

CONTEXT_LINES = 3  # as `p4 diff2 -du` and `diff -u`
# Line pairs the edit-distance search may compare between the differing middles of a file's two
# sides (after their common first and last lines). About 2 s on one core at the limit; a larger
# middle is shown as all of it removed and all of it added: still a true diff, never a wrong one,
# and no input can make one file's diff cost more (a 1 MB file can hold 500,000 lines).
MAX_DIFF_LINE_PAIRS = 10_000_000_000
# Line pairs up to which the exact longest-common-subsequence diff is used: its bit matrix is
# then at most 50 MB (one bit a pair).
MAX_INDEL_LINE_PAIRS = 400_000_000

OpcodeTag = Literal["replace", "delete", "insert", "equal"]
Opcode = tuple[OpcodeTag, int, int, int, int]  # difflib's: (tag, i1, i2, j1, j2)


def _header_name(path: str) -> str:
    return path[2:] if path.startswith("//") else path


def added_file_diff(path: str, content: bytes) -> str:
    """Whole new file as a unified diff: `--- /dev/null`, `+++ b/...`, one `@@ -0,0 +1,N @@`."""
    text = decode_text(content, "file content").removeprefix("\ufeff")
    header = f"--- /dev/null\n+++ b/{_header_name(path)}\n"
    if not text:
        return header
    # split("\n"), not splitlines(): the latter also breaks on \x0c, \x1c, \u2028 ...
    lines = text.split("\n")
    missing_newline = lines[-1] != ""
    if not missing_newline:
        lines.pop()
    hunk = "".join(f"+{line}\n" for line in lines)
    tail = "\\ No newline at end of file\n" if missing_newline else ""
    return f"{header}@@ -0,0 +1,{len(lines)} @@\n{hunk}{tail}"


def edit_diff(path: str, old: bytes, new: bytes) -> str | None:
    """The unified diff of an edited file from both sides' content (`--- a/...`, `+++ b/...`, 3
    lines of context), None when the text is the same.

    Lines are matched by RapidFuzz's bit-parallel edit-distance opcodes over the lines (each
    distinct line one symbol), in O(N*M/64) time, where difflib's matcher takes tens of seconds
    on a file with many scattered edits. Hunks are grouped as difflib and `diff -u` group them,
    removed lines before added ones. Where several minimal diffs exist, a hunk may be placed
    differently from the server's own `diff2`; each is a true diff of the two sides."""
    old_lines = _lines(decode_text(old, "file content").removeprefix("\ufeff"))
    new_lines = _lines(decode_text(new, "file content").removeprefix("\ufeff"))
    if old_lines == new_lines:
        return None
    name = _header_name(path)
    out = [f"--- a/{name}\n", f"+++ b/{name}\n"]
    for group in _GivenOpcodes(_line_opcodes(old_lines, new_lines)).get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        removed: list[str] = []
        added: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":  # a change block ends: its removed lines, then its added ones
                out.extend(_hunk_lines("-", removed) + _hunk_lines("+", added) + _hunk_lines(" ", old_lines[i1:i2]))
                removed, added = [], []
            else:
                removed += old_lines[i1:i2]
                added += new_lines[j1:j2]
        out.extend(_hunk_lines("-", removed) + _hunk_lines("+", added))
    return "".join(out)


def _lines(text: str) -> list[str]:
    """Lines with their "\n" (split on "\n" only: splitlines also breaks on \x0c, \u2028...)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])  # the last line has no newline
    return lines


def _hunk_lines(mark: str, lines: list[str]) -> list[str]:
    return [
        f"{mark}{line}" if line.endswith("\n") else f"{mark}{line}\n\\ No newline at end of file\n" for line in lines
    ]


def _range(start: int, stop: int) -> str:
    """A hunk's range as `diff -u` writes it: "5" for one line, "4,0" for none (the line before)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _line_opcodes(old: list[str], new: list[str]) -> list[Opcode]:
    """difflib-style opcodes (tag, i1, i2, j1, j2) turning `old` into `new`."""
    from rapidfuzz.distance import Indel, Levenshtein  # the only user: fetch's edited files

    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_middle, new_middle = old[head : len(old) - tail], new[head : len(new) - tail]
    opcodes: list[Opcode] = []
    if head:
        opcodes.append(("equal", 0, head, 0, head))
    if len(old_middle) * len(new_middle) > MAX_DIFF_LINE_PAIRS:
        opcodes.append(("replace", head, head + len(old_middle), head, head + len(new_middle)))
    elif old_middle or new_middle:
        symbols: dict[str, int] = {}  # each distinct line one symbol: no hash can collide
        old_ids = [symbols.setdefault(line, len(symbols)) for line in old_middle]
        new_ids = [symbols.setdefault(line, len(symbols)) for line in new_middle]
        # Indel (insertions and deletions only: the longest common subsequence, as `diff` finds)
        # needs a bit per line pair; past MAX_INDEL_LINE_PAIRS, Levenshtein's linear-memory
        # search, which may pair a removed line with an added one where Indel keeps a match.
        metric = Indel if len(old_ids) * len(new_ids) <= MAX_INDEL_LINE_PAIRS else Levenshtein
        for op in metric.opcodes(old_ids, new_ids):
            tag = cast(OpcodeTag, op.tag)
            opcodes.append((tag, head + op.src_start, head + op.src_end, head + op.dest_start, head + op.dest_end))
    if tail:
        opcodes.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return opcodes


class _GivenOpcodes(SequenceMatcher):  # type: ignore[type-arg]
    """difflib's hunk grouping (get_grouped_opcodes) over opcodes computed elsewhere."""

    def __init__(self, opcodes: list[Opcode]):
        super().__init__(None, "", "")
        self.opcodes = opcodes

    def get_opcodes(self) -> list[Opcode]:
        return self.opcodes
