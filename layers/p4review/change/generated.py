"""Files that say they are generated (pure): a code generator's header in the first lines.

A generated file is not reviewed: its author is a program, the fix belongs in the generator or
its input, and it is what makes large changes expensive (the fixture's 300 regenerated protocol
headers are 77% of its prompt tokens). Only the file's own declaration counts, in the conventions
generators use and GitHub's linguist and Phabricator read: `@generated`, Go's `Code generated
... DO NOT EDIT.`, or a line saying the file is generated and must not be edited. A comment that
merely mentions code generation does not make a file generated, nor does its path."""

from __future__ import annotations

import re

from p4review.change.unified_diff import iter_new_side_lines

# A generator's header sits at the top, under a shebang, a licence line or an include guard.
HEADER_LINES = 5
_DECLARATION = re.compile(
    r"@generated\b"
    r"|\bcode generated\b.*\bdo not edit\b"
    r"|\b(?:auto-?)?generated\b.*\bdo not (?:edit|modify)\b"
    r"|\bdo not (?:edit|modify)\b.*\b(?:auto-?)?generated\b",
    re.IGNORECASE,
)


def declares_generated(text: str) -> bool:
    """Whether the first HEADER_LINES lines of a file's content declare it generated."""
    return any(_DECLARATION.search(line) for line in text.split("\n", HEADER_LINES)[:HEADER_LINES])


def diff_declares_generated(diff: str) -> bool:
    """Whether the new side of a file's diff shows a generated header (only when a hunk reaches
    the top of the file; an edit further down does not show the header, and is reviewed)."""
    return any(shown.line <= HEADER_LINES and _DECLARATION.search(shown.text) for shown in iter_new_side_lines(diff))
