"""A file's diff section widened to the code around each hunk, within a budget.

For each hunk the candidates are, largest first: the outermost function that encloses its changed
lines (for a change inside a nested function or a callback, the function around it), the
innermost one, the hunk with SURROUNDING_LINES either side, and the hunk alone. A hunk in no
function but in a class or type gets that type, then the surrounding lines. All hunks start at
their largest candidate; while the lines added beyond the diff hold more characters than the
budget (the caller converts its tokens), the hunk whose widening costs most drops to its next
candidate. A hunk spanning two functions gets both, and the lines between them.

The section (`_render`) numbers what a finding may cite: added lines (`12 +added`) and unchanged
lines next to a removal (`13  context`); removed lines show as `-removed`, and every other
unchanged line, the diff's own or the widening's, as a unified-diff context line without a number
(` text`): code to read. Neighbouring hunks whose widened ranges meet become one block.

The new-side content is used only when it agrees with every new-side line the diff shows (the
same redacted text at the same number); otherwise the section is the diff alone."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from p4review.change.unified_diff import Hunk, HunkLine, iter_hunks, split_diff_lines
from p4review.review.context.definitions import Definition, ParsedFile, enclosing

SURROUNDING_LINES = 10
LEVEL_OUTER = "outer_function"
LEVEL_FUNCTION = "function"
LEVEL_TYPE = "type"
LEVEL_LINES = "surrounding_lines"
LEVEL_HUNK = "hunk"


@dataclass
class WidenedSection:
    body: str  # the numbered, widened diff (no file header)
    shown: frozenset[int]  # every new-side line the section shows, numbered or not
    levels: Counter[str] = field(default_factory=Counter)  # hunks per chosen candidate
    added_chars: int = 0  # what the widening adds beyond the diff's own lines


@dataclass
class _Candidate:
    level: str
    lines: range  # new-side lines shown for the hunk


def _line_chars(text: str) -> int:
    return len(text) + 2  # the line, its marker and its newline


def _changed_positions(hunk: Hunk) -> list[int]:
    """New-side lines a hunk changes: its added lines, and where each removed run was."""
    positions: list[int] = []
    next_new = hunk.header.new_start
    for line in hunk.lines:
        if line.new_line is not None:
            next_new = line.new_line + 1
            if line.marker == "+":
                positions.append(line.new_line)
        else:
            positions.append(next_new)
    return positions


def _candidates(hunk: Hunk, definitions: list[Definition], total_lines: int) -> list[_Candidate]:
    """The hunk's candidate ranges, each smaller than the one before; the last shows the hunk."""
    new_lines = [line.new_line for line in hunk.lines if line.new_line is not None]
    if not new_lines:
        return []
    low, high = min(new_lines), max(new_lines)
    chains = [enclosing(definitions, min(max(p, 1), total_lines)) for p in _changed_positions(hunk) or [low]]
    functions = [[d for d in chain if d.kind == "function"] for chain in chains]
    found: list[_Candidate] = []

    def offer(level: str, start: int, end: int) -> None:
        lines = range(min(start, low), max(end, high) + 1)
        if not found or len(lines) < len(found[-1].lines):
            found.append(_Candidate(level, lines))

    def around(chosen: list[Definition]) -> tuple[int, int]:
        return min(d.start_line for d in chosen), max(d.end_line for d in chosen)

    if any(functions):
        offer(LEVEL_OUTER, *around([chain[0] for chain in functions if chain]))
        offer(LEVEL_FUNCTION, *around([chain[-1] for chain in functions if chain]))
    elif any(chains):
        offer(LEVEL_TYPE, *around([chain[-1] for chain in chains if chain]))
    if found:
        smallest = found[-1].lines
        offer(
            LEVEL_LINES, max(smallest.start, low - SURROUNDING_LINES), min(smallest.stop - 1, high + SURROUNDING_LINES)
        )
    offer(LEVEL_HUNK, low, high)
    return found


def _agrees(hunks: list[Hunk], content_lines: list[str]) -> bool:
    for hunk in hunks:
        for line in hunk.lines:
            if line.new_line is not None and (
                line.new_line > len(content_lines) or content_lines[line.new_line - 1] != line.text
            ):
                return False
    return True


def widen(diff: str, parsed: ParsedFile, content: str, budget_chars: int) -> WidenedSection | None:
    """The widened section, or None when there is nothing to widen (no grammar, no content that
    agrees with the diff, no hunk inside a definition)."""
    hunks = [hunk for hunk in iter_hunks(diff) if hunk.lines]
    if parsed.grammar is None or not hunks or not parsed.definitions:
        return None
    if any(all(line.new_line is None for line in hunk.lines) for hunk in hunks):
        return None  # a removal without context (diff -U0) has no line to stand beside
    content_lines = split_diff_lines(content)
    if not _agrees(hunks, content_lines):
        return None
    diff_lines = {line.new_line for hunk in hunks for line in hunk.lines if line.new_line is not None}
    per_hunk = [_candidates(hunk, parsed.definitions, len(content_lines)) for hunk in hunks]
    chosen = [0] * len(hunks)

    def extra(index: int) -> int:
        candidates = per_hunk[index]
        if not candidates:
            return 0
        lines = candidates[chosen[index]].lines
        return sum(_line_chars(content_lines[n - 1]) for n in lines if n not in diff_lines)

    costs = [extra(i) for i in range(len(hunks))]
    while sum(costs) > budget_chars:
        shrinkable = [i for i in range(len(hunks)) if per_hunk[i] and chosen[i] < len(per_hunk[i]) - 1]
        if not shrinkable:
            break
        largest = max(shrinkable, key=lambda i: costs[i])
        chosen[largest] += 1
        costs[largest] = extra(largest)

    shown = set(diff_lines)
    levels: Counter[str] = Counter()
    for index, candidates in enumerate(per_hunk):
        if candidates:
            shown.update(candidates[chosen[index]].lines)
            levels[candidates[chosen[index]].level] += 1
        else:
            levels[LEVEL_HUNK] += 1
    body = _render(hunks, content_lines, shown)
    return WidenedSection(
        body=body,
        shown=frozenset(shown),
        levels=levels,
        added_chars=sum(_line_chars(content_lines[n - 1]) for n in shown if n not in diff_lines),
    )


def compact_diff(diff: str) -> str:
    """The diff alone in the widened sections' format (for a file nothing widens)."""
    hunks = [hunk for hunk in iter_hunks(diff) if hunk.lines]
    return _render(hunks, [], {line.new_line for hunk in hunks for line in hunk.lines if line.new_line is not None})


def _render(hunks: list[Hunk], content_lines: list[str], shown: set[int]) -> str:
    """Blocks of consecutive shown lines, each under an `@@` line (with the tail of the header of
    the hunk it starts with: git's enclosing-function hint), the diff's removed lines where they
    were. Numbered: added lines, and the unchanged line that stands where lines were removed.
    Other unchanged lines carry no number, and the headers no old-side numbers or counts: the
    model cites new-side numbers only."""
    in_diff: dict[int, HunkLine] = {}
    removed_before: dict[int, list[HunkLine]] = {}  # new-side line -> the removed lines just above it
    header_tail: dict[int, str] = {}
    for hunk in hunks:
        pending: list[HunkLine] = []
        next_new = hunk.header.new_start
        for line in hunk.lines:
            if line.new_line is None:
                pending.append(line)
                continue
            if next_new == hunk.header.new_start and line.new_line not in header_tail:
                header_tail[line.new_line] = hunk.header_text.split("@@", 2)[-1].rstrip()
            if pending:
                removed_before.setdefault(line.new_line, []).extend(pending)
                pending = []
            in_diff[line.new_line] = line
            next_new = line.new_line + 1
        if pending:  # removed at the hunk's end: above the line after it
            removed_before.setdefault(next_new, []).extend(pending)
    # Where a finding about a pure removal is cited: the unchanged line after it (before it, at a
    # hunk's end). A removal that an added line replaces has that line.
    beside_removal = {n for n in removed_before if n in in_diff and in_diff[n].marker == " "}
    beside_removal |= {n - 1 for n in removed_before if n not in in_diff and n - 1 in in_diff}
    beside_removal = {n for n in beside_removal if in_diff[n].marker == " "}
    out: list[str] = []
    for block in _runs(sorted(shown)):
        out.append("@@" + (header_tail.get(block[0], "") if block[0] in in_diff else ""))
        for number in block:
            out.extend(f"-{removed.text}" for removed in removed_before.get(number, []))
            shown_line = in_diff.get(number)
            if shown_line is None:
                out.append(f" {content_lines[number - 1]}")
            elif shown_line.marker == "+":
                out.append(f"{number} +{shown_line.text}")
            elif number in beside_removal:
                out.append(f"{number}  {shown_line.text}")
            else:
                out.append(f" {shown_line.text}")
        out.extend(f"-{removed.text}" for removed in removed_before.get(block[-1] + 1, []))
    return "\n".join(out)


def _runs(numbers: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for number in numbers:
        if runs and runs[-1][-1] == number - 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return runs
