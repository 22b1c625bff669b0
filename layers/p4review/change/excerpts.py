"""The code a finding points at, for the email: the flagged lines with two lines of context,
their new-side line numbers, and which lines the change added.

Pure text processing, no I/O. The lines come from the file's unified diff in the *redacted*
change artifact (the caller's job), so an excerpt can show nothing the reviewer could not see;
a line the diff does not show (outside every hunk) is simply absent. Text is left raw: the
renderers escape it."""

from __future__ import annotations

from dataclasses import dataclass

from p4review.change.unified_diff import iter_new_side_lines

CONTEXT_LINES = 2
# A finding may span a whole function; the email shows its start.
MAX_EXCERPT_LINES = 12


@dataclass(frozen=True)
class ExcerptLine:
    line: int
    text: str
    added: bool  # the change added this line
    flagged: bool  # inside the finding's [line, end_line]


def code_excerpt(
    diff_text: str,
    line: int,
    end_line: int | None = None,
    *,
    context: int = CONTEXT_LINES,
    max_lines: int = MAX_EXCERPT_LINES,
) -> tuple[ExcerptLine, ...]:
    """The new-side lines of `diff_text` in [line - context, end + context], at most `max_lines`
    of them; empty when the diff shows none of the flagged lines."""
    end = max(line, end_line if end_line is not None else line)
    first, last = line - context, min(end, line + max_lines - 1) + context
    shown = [
        ExcerptLine(line=new.line, text=new.text, added=new.added, flagged=line <= new.line <= end)
        for new in iter_new_side_lines(diff_text)
        if first <= new.line <= last
    ]
    if not any(entry.flagged for entry in shown):
        return ()
    return tuple(shown[:max_lines])
