"""Walk a unified diff and yield the lines its hunks show with their line numbers: every line
with both sides' numbers (`iter_hunk_lines`), or the new-side lines (added and context) alone.

Pure text processing, no I/O. The walk is driven by the hunk headers' line counts
(`@@ -a,b +c,d @@`), so a `+++ x` line inside a hunk is an added line (`++ x`) while a
`+++ x` line between hunks is a file header and is skipped. Lines that fall outside any
hunk (`====` headers from `p4 describe`/`p4 diff2`, `---`/`+++` headers, `\\ No newline
at end of file`) never count."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class HunkHeader:
    old_start: int
    old_count: int
    new_start: int
    new_count: int


@dataclass(frozen=True)
class AddedLine:
    """One added line: `line` is its 1-based number in the new revision of the file;
    `text` is the line's content without the leading `+` and without the line ending."""

    line: int
    text: str


@dataclass(frozen=True)
class NewSideLine:
    """A line of the new revision that the diff shows: added (`+`) or context (` `)."""

    line: int
    text: str
    added: bool


def parse_hunk_header(line: str) -> HunkHeader | None:
    """`@@ -a,b +c,d @@ ...` -> HunkHeader; a missing count means 1 (unified diff rules)."""
    match = _HUNK_HEADER.match(line)
    if match is None:
        return None
    old_start, old_count, new_start, new_count = match.groups()
    return HunkHeader(
        old_start=int(old_start),
        old_count=1 if old_count is None else int(old_count),
        new_start=int(new_start),
        new_count=1 if new_count is None else int(new_count),
    )


def _split_lines(text: str) -> list[str]:
    # Not str.splitlines(): that also splits on \x0b, \x0c, \x1c..\x1e, \x85, \u2028, \u2029,
    # which may legitimately occur inside a source line and would shift every line number.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def split_diff_lines(text: str) -> list[str]:
    """The diff's lines exactly as `iter_added_lines` walks them (for other walkers)."""
    return _split_lines(text)


@dataclass(frozen=True)
class HunkLine:
    """A line inside a hunk: `marker` is "+" (added), "-" (removed) or " " (context); its number
    on each side it belongs to; `hunk` counts the diff's hunks from 0 (a header starts the next)."""

    hunk: int
    marker: str
    old_line: int | None
    new_line: int | None
    text: str


@dataclass(frozen=True)
class Hunk:
    """One hunk: its header line as written (git's adds the enclosing function after the second
    `@@`), the header's numbers, and its lines."""

    header_text: str
    header: HunkHeader
    lines: tuple[HunkLine, ...]


def iter_hunk_lines(diff: str) -> Iterator[HunkLine]:
    """Yield each line the diff's hunks show, in order, with its old- and new-side numbers."""
    for item in _walk(diff):
        if isinstance(item, HunkLine):
            yield item


def iter_hunks(diff: str) -> Iterator[Hunk]:
    """Yield each hunk with its header and lines (the walk `iter_hunk_lines` makes)."""
    header_text = ""
    header: HunkHeader | None = None
    lines: list[HunkLine] = []
    for item in _walk(diff):
        if isinstance(item, HunkLine):
            lines.append(item)
            continue
        if header is not None:
            yield Hunk(header_text, header, tuple(lines))
        header_text, header = item
        lines = []
    if header is not None:
        yield Hunk(header_text, header, tuple(lines))


def _walk(diff: str) -> Iterator[HunkLine | tuple[str, HunkHeader]]:
    """Each hunk header (as (its text, its numbers)) and each line inside a hunk, in order."""
    old_left = new_left = old_line = new_line = 0
    hunk = -1
    for raw in _split_lines(diff):
        if old_left <= 0 and new_left <= 0:
            # Outside a hunk: only a hunk header matters; every other line is a header/noise.
            header = parse_hunk_header(raw)
            if header is not None:
                hunk += 1
                old_left, new_left = header.old_count, header.new_count
                old_line, new_line = header.old_start, header.new_start
                yield raw, header
            continue
        if raw.startswith("\\"):
            # "\ No newline at end of file": belongs to neither side.
            continue
        marker = raw[:1]
        if marker == "+":
            if new_left > 0:
                yield HunkLine(hunk=hunk, marker="+", old_line=None, new_line=new_line, text=raw[1:])
                new_line += 1
                new_left -= 1
            else:  # more additions than the header announced: malformed, stop this hunk
                old_left = new_left = 0
        elif marker == "-":
            yield HunkLine(hunk=hunk, marker="-", old_line=old_line, new_line=None, text=raw[1:])
            old_line += 1
            old_left -= 1
        elif marker == " " or raw == "":
            # Context line (some tools strip the lone space of an empty context line).
            yield HunkLine(hunk=hunk, marker=" ", old_line=old_line, new_line=new_line, text=raw[1:])
            old_line += 1
            new_line += 1
            old_left -= 1
            new_left -= 1
        else:
            # Anything else ends the hunk early (malformed diff); maybe it is a new header.
            old_left = new_left = 0
            header = parse_hunk_header(raw)
            if header is not None:
                hunk += 1
                old_left, new_left = header.old_count, header.new_count
                old_line, new_line = header.old_start, header.new_start
                yield raw, header


def iter_new_side_lines(diff: str) -> Iterator[NewSideLine]:
    """Yield each new-side line the diff shows (added and context lines), in order, with its
    line number in the new revision."""
    for shown in iter_hunk_lines(diff):
        if shown.new_line is not None:
            yield NewSideLine(line=shown.new_line, text=shown.text, added=shown.marker == "+")


def iter_added_lines(diff: str) -> Iterator[AddedLine]:
    """Yield each added line of `diff` in order, with its new-side line number."""
    for shown in iter_new_side_lines(diff):
        if shown.added:
            yield AddedLine(line=shown.line, text=shown.text)
