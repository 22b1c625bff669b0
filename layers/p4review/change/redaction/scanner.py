"""The line-oriented engine: the prefilter flags lines, rules run only on flagged lines (and
only the rules whose needles were found there), PEM blocks are followed across lines.

Lines are split on "\\n" only (a "\\r" before it stays with its line): `str.splitlines` would
also split on \\x0b, \\x1c, \\u2028... and shift every line number. A line's diff marker (`+`,
`-`, ` `, `\\`, or a whole `@@ ... @@` hunk range) is set aside before any rule runs, so no
rule can change it, and no rule sees or produces a line break: the output has exactly the
input's lines, in order, each with its original marker and line ending.

Encodings (normalized.py): a line holding a non-ASCII character or an escape is also read
through its normalized view, and what the rules find there is masked on the original."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice

from p4review.change.redaction import named_values, normalized, pem
from p4review.change.redaction.assignments import block_line_below, dangling_yaml_key, value_below
from p4review.change.redaction.copies import MaskedValues
from p4review.change.redaction.filekind import FileKind, FileKinds
from p4review.change.redaction.needles import Prefilter
from p4review.change.redaction.rules import Rule

_HUNK_RANGE = re.compile(r"@@[^@]*@@")
_DIFF_MARKERS = frozenset("+- \\")
# Lines that end a hunk: a PEM block never continues across them.
_STRUCTURE = ("@@", "+++ ", "--- ", "==== ", "diff --git ", "Index: ")
_PEM_BIT = 1
_ONE_FINDER_VALUES = 32  # up to this many masked values, one finder over the whole text
_NO_MARKERS = pem.Markers("")
Changed = list[tuple[int, int, str]]  # (line start, line end, new line)


def split_line(line: str) -> tuple[str, str, str]:
    """`line` -> (marker, body, ending): marker is kept verbatim, body is what rules see."""
    ending = "\r" if line.endswith("\r") else ""
    if ending:
        line = line[:-1]
    first = line[:1]
    if first == "@" and line.startswith("@@"):
        hunk = _HUNK_RANGE.match(line)
        if hunk is not None:
            return line[: hunk.end()], line[hunk.end() :], ending
    if first and first in _DIFF_MARKERS and (first != "\\" or line[1:2] == " "):
        # `\ No newline at end of file` is a marker; `\u0070assword = ...` (text, not a diff) is not
        return first, line[1:], ending
    return "", line, ending


def _lines_after(text: str, end: int) -> Iterator[tuple[int, int, str, str, str]]:
    """The lines after the one ending at `end`, as (start, end, marker, body, ending), up to the
    first that ends a hunk (a header): what the walks below a line read, one line at a time."""
    length = len(text)
    while end < length:
        start = end + 1
        end = text.find("\n", start)
        end = length if end < 0 else end
        line = text[start:end]
        if line.startswith(_STRUCTURE):
            return
        yield (start, end, *split_line(line))


class _LazyKinds:
    """File kinds cost a pass over the text; most texts never need one. `consulted` tells
    whether the current line's result depended on its file's kind."""

    def __init__(self, text: str):
        self._text = text
        self._kinds: FileKinds | None = None
        self.consulted = False

    def at(self, position: int) -> FileKind:
        self.consulted = True
        if self._kinds is None:
            self._kinds = FileKinds(self._text)
        return self._kinds.kind_at(position)


@dataclass
class ScanRecord:
    """What a scan learnt, so that a re-scan of its output (the guard) need not recompute it:
    the scanned `source`, its prefilter result, the lines it replaced (`changes`: source start,
    source end, output start, output end), and `clean`: the flagged lines (content, dispatch
    bits) the rules passed unchanged, with no count, no PEM marker and no file-kind question,
    so that their result is a function of their content and bits alone."""

    source: str = ""
    flagged: dict[int, int] = field(default_factory=dict)
    changes: list[tuple[int, int, int, int]] = field(default_factory=list)
    clean: set[tuple[str, int]] = field(default_factory=set)


class _Tally(Counter[str]):
    """A Counter that keeps its total (rules only ever add), so that "did this line count
    anything" costs nothing."""

    running = 0

    def __setitem__(self, key: str, value: int) -> None:
        self.running += value - self.get(key, 0)
        super().__setitem__(key, value)


class Scanner:
    """Runs `rules` (in order) over every flagged line; returns (text, counts per class)."""

    def __init__(self, rules: Sequence[Rule]):
        self.rules = tuple(rules)
        # Bit 0 is PEM; rule i has bit i + 1; the last bit asks for the normalized view.
        self._view_bit = 1 << (len(self.rules) + 1)
        self._prefilter = Prefilter(
            [(0, pem.NEEDLES)]
            + [(index + 1, rule.needles) for index, rule in enumerate(self.rules)]
            + [(len(self.rules) + 1, normalized.NEEDLES)],
            non_ascii_bits=self._view_bit,
        )
        self._all = self._view_bit - 1
        self._view_rules = sum(
            1 << (index + 1)
            for index, rule in enumerate(self.rules)
            if rule.name not in normalized.WRITTEN_ONLY_CLASSES
        )
        # The lines that may start a value written below its name are flagged by the needles
        # of the rules that judge such values (named_values.py); no other line need be asked.
        self._split_bits = sum(
            1 << (index + 1) for index, rule in enumerate(self.rules) if isinstance(rule, named_values.NamedValueFamily)
        )
        # Rules that can say what the lines below their line hold (Rule.below).
        self._below_bits = sum(
            1 << (index + 1) for index, rule in enumerate(self.rules) if type(rule).below is not Rule.below
        )
        self._rules_by_bits: dict[int, tuple[Rule, ...]] = {}

    def scan(
        self,
        text: str,
        *,
        record: ScanRecord | None = None,
        previous: ScanRecord | None = None,
        values: MaskedValues | None = None,
    ) -> tuple[str, Counter[str]]:
        """`record`: filled with what this scan learnt (see ScanRecord). `previous`: the record
        of the scan that produced `text`, by these same rules. Both are pure functions of a
        line's bytes (the prefilter) or of its content and bits (the rules), so a line that is
        byte-identical to a line `previous` saw needs neither recomputed; every other line is.
        `values`: the values masked so far (copies.py); those the rules mask here are added, and
        every other occurrence of any of them in `text` is masked too."""
        counts = _Tally()
        flagged = self._flags(text, previous)
        if record is not None:
            record.source, record.flagged = text, flagged
        if not flagged and not values:
            return text, Counter()
        known_clean = previous.clean if previous is not None else None
        kinds = _LazyKinds(text)
        replaced: Changed = []  # the lines replaced, in order
        copied = 0  # lines before this offset are settled
        done = -1  # lines starting at or before this offset were handled by a PEM walk
        length = len(text)
        for start in sorted(flagged):
            if start <= done:
                continue
            end = text.find("\n", start)
            end = length if end < 0 else end
            marker, body, ending = split_line(text[start:end])
            bits = flagged[start]
            if known_clean is not None and (body, bits) in known_clean:
                continue
            found = counts.running
            kinds.consulted = False
            new_body, markers = self._body(body, bits, lambda: kinds.at(start), counts)  # noqa: B023 - called within this iteration
            if (
                record is not None
                and new_body == body
                and not bits & _PEM_BIT
                and not kinds.consulted
                and counts.running == found
            ):
                record.clean.add((body, bits))
            body = new_body
            changed: Changed = [(start, end, marker + body + ending)]
            if ":" in body:
                below = self._yaml_value_below(text, end, body, lambda: kinds.at(start), counts)  # noqa: B023 - called within this iteration
                if below:
                    changed += below
                    end = done = below[-1][1]
            if bits & self._split_bits and end == changed[0][1]:
                below = self._split_value_below(text, end, body, lambda: kinds.at(start), counts)  # noqa: B023 - called within this iteration
                if below:
                    changed += below
                    end = done = below[-1][1]
            if bits & self._below_bits:
                below = self._lines_below(text, end, body, bits, counts)
                if below:
                    changed += below
                    end = done = below[-1][1]
            if markers.orphan:
                changed[:0] = self._payload_above(text, copied, start, markers.orphan)
            if markers.open:
                below, end = self._payload_below(text, end, lambda: kinds.at(start), markers.open, counts)  # noqa: B023 - called within this iteration
                changed += below
                done = end
            for line_start, line_end, new in changed:
                if new != text[line_start:line_end]:
                    replaced.append((line_start, line_end, new))
                    copied = line_end
                    if values is not None:
                        values.collect(text[line_start:line_end], new)
        output = None  # the text with `replaced` applied, when already joined
        if values:
            replaced, output = _mask_copies(text, replaced, values, counts)
        if not replaced:
            return text, +counts  # `+`: only classes counted at least once (a rule may add 0)
        pieces: list[str] = []
        copied = shift = 0  # shift: output offset minus source offset, after the lines replaced so far
        for line_start, line_end, new in replaced:
            if output is None:
                pieces += [text[copied:line_start], new]
            copied = line_end
            if record is not None:
                record.changes.append((line_start, line_end, line_start + shift, line_start + shift + len(new)))
            shift += len(new) - (line_end - line_start)
        if output is None:
            pieces.append(text[copied:])
            output = "".join(pieces)
        return output, +counts

    def _flags(self, text: str, previous: ScanRecord | None) -> dict[int, int]:
        """The prefilter's result for `text`: computed, or, for the lines that are byte-identical
        to lines of `previous.source` (checked here, region by region), taken from it."""
        if previous is None:
            return self._prefilter.flag(text)
        source = previous.source
        starts = sorted(previous.flagged)
        flagged: dict[int, int] = {}
        replaced: list[tuple[int, str]] = []  # (output start, new line) of each replaced line
        source_at = output_at = 0
        for source_start, source_end, output_start, output_end in [
            *previous.changes,
            (len(source), len(source), len(text), len(text)),
        ]:
            # Between two replaced lines the output must be the source, shifted.
            if (
                source_start - source_at != output_start - output_at
                or text[output_at:output_start] != source[source_at:source_start]
            ):
                return self._prefilter.flag(text)  # not the output of that scan: compute everything
            offset = output_at - source_at
            for index in range(bisect.bisect_left(starts, source_at), bisect.bisect_left(starts, source_start)):
                flagged[starts[index] + offset] = previous.flagged[starts[index]]
            if output_end > output_start or source_end > source_start:
                replaced.append((output_start, text[output_start:output_end]))
            source_at, output_at = source_end, output_end
        if replaced:
            # Replaced lines go through the prefilter again, all in one text.
            joined = "\n".join(line for _, line in replaced)
            joined_starts = []
            position = 0
            for _, line in replaced:
                joined_starts.append(position)
                position += len(line) + 1
            for joined_start, bits in self._prefilter.flag(joined).items():
                index = bisect.bisect_right(joined_starts, joined_start) - 1
                flagged[replaced[index][0] + joined_start - joined_starts[index]] = bits
        return flagged

    def _body(
        self, body: str, bits: int, kind: Callable[[], FileKind], counts: Counter[str]
    ) -> tuple[str, pem.Markers]:
        markers = _NO_MARKERS
        if bits & _PEM_BIT:
            markers = pem.redact_markers(body, counts)
            body = markers.body
        redacted = body
        for rule in self._rules_for(bits):
            redacted = rule.apply(redacted, kind, counts)
        if bits & self._view_bit:
            redacted, revealed = normalized.redact_through_view(
                body, redacted, lambda view: self._redact_view(view, kind)
            )
            if revealed:
                counts.update(revealed)
        return redacted, markers

    def _redact_view(self, view: str, kind: Callable[[], FileKind]) -> str | None:
        """The rules that the view's own needles call for, on the view (None when there are
        none): PEM blocks aside (their markers are ASCII words), and the policy's
        de-identification rules aside (normalized.WRITTEN_ONLY_CLASSES). Their counts are not
        kept: the caller counts what is new."""
        bits = self._prefilter.flag_line(view) & self._view_rules
        if not bits and "@" not in view:
            return None
        for rule in (*self._rules_for(bits), normalized.QUERY_USERINFO_RULE):
            view = rule.apply(view, kind, Counter())
        return view

    def _rules_for(self, bits: int) -> tuple[Rule, ...]:
        rules = self._rules_by_bits.get(bits)
        if rules is None:
            rules = self._rules_by_bits[bits] = tuple(
                rule for index, rule in enumerate(self.rules) if bits >> (index + 1) & 1
            )
        return rules

    def _payload_below(
        self, text: str, end: int, kind: Callable[[], FileKind], name: str, counts: Counter[str]
    ) -> tuple[Changed, int]:
        """The lines after an open BEGIN, up to END or the first line that is not payload.
        Returns the changed lines and the end offset of the last line taken."""
        changed: Changed = []
        for start, line_end, marker, body, ending in _lines_after(text, end):
            body, verdict = pem.continue_block(body, name)
            if verdict is pem.LineVerdict.OUTSIDE:
                break  # a truncated block: this line is ordinary text, the main loop takes it
            end = line_end
            if verdict is pem.LineVerdict.CLOSED:
                # The rest of the END line gets every rule, and may open another block.
                body, markers = self._body(body, self._all, kind, counts)
                changed.append((start, line_end, marker + body + ending))
                if markers.open is None:
                    break
                name = markers.open
                continue
            changed.append((start, line_end, marker + body + ending))
        return changed, end

    @staticmethod
    def _yaml_value_below(
        text: str, end: int, body: str, kind: Callable[[], FileKind], counts: Counter[str]
    ) -> Changed:
        """The lines after `body`, redacted, when `body` is a secret-ish YAML key whose value is
        there: the next line (a plain or quoted scalar), or every more-indented line (a block
        scalar, `password: |`). Counted once."""
        dangling = dangling_yaml_key(body)
        if dangling is None or end >= len(text) or kind() is not FileKind.CONFIG:
            return []
        key_indent, name, block = dangling
        changed: Changed = []
        while end < len(text) and (block or not changed):
            start = end + 1
            line_end = text.find("\n", start)
            line_end = len(text) if line_end < 0 else line_end
            marker, below, ending = split_line(text[start:line_end])
            if not changed and "BEGIN" in below and below.lstrip(" \t\"'").startswith(("-----BEGIN", "---- BEGIN")):
                break  # a PEM block in a block scalar: the PEM walk redacts it, one placeholder a line
            redacted = block_line_below(below, key_indent, name) if block else value_below(below, key_indent, name)
            if redacted is None:
                break
            changed.append((start, line_end, marker + redacted + ending))
            end = line_end
        if changed:
            counts[name] += 1
        return changed

    def _split_value_below(
        self, text: str, end: int, body: str, kind: Callable[[], FileKind], counts: Counter[str]
    ) -> Changed:
        """The lines after `body` when it starts a value written below its name (named_values.py:
        `- name: DB_PASSWORD` then `value: ...`, a list under a password key, a Terraform
        variable block). Lines passed over on the way get every rule, as they are not visited
        again. Counted once."""
        follow = named_values.key_above(body, kind)
        if follow is None:
            return []
        changed: Changed = []
        found: str | None = None
        passed: Counter[str] = Counter()  # what the rules found on the lines passed over
        for start, line_end, marker, below, ending in islice(_lines_after(text, end), follow.reach):
            step = named_values.line_below(follow, below)
            if step is None:
                break
            new, name, more = step
            if name is None:
                # Only the rules its needles call for (every rule, on each line of every walk, took seconds).
                bits = self._prefilter.flag_line(below) | _PEM_BIT
                new, markers = self._body(below, bits, kind, passed)
                if markers.open or markers.orphan:
                    break  # a PEM block: the main loop follows it
            found = found or name
            changed.append((start, line_end, marker + new + ending))
            if not more:
                break
        if found is None:
            return []  # nothing of the form's: the main loop visits these lines as usual
        counts[found] += 1
        counts.update(passed)
        return changed

    def _lines_below(self, text: str, end: int, body: str, bits: int, counts: Counter[str]) -> Changed:
        """The lines after `body` that one of its rules says are secrets (Rule.below), redacted."""
        for rule in self._rules_for(bits & self._below_bits):
            spec = rule.below(body)
            if spec is None:
                continue
            changed: Changed = []
            secret = False
            for start, line_end, marker, below, ending in _lines_after(text, end):
                if len(changed) >= spec.lines:
                    break
                redacted = spec.redact(below)
                if redacted is None:
                    break
                changed.append((start, line_end, marker + redacted + ending))
                if redacted != below:
                    secret = True
                    if not spec.every:
                        break
            if secret:
                counts[spec.name] += 1
                return changed
        return []

    @staticmethod
    def _payload_above(text: str, copied: int, start: int, name: str) -> Changed:
        """The payload lines above an END that had no BEGIN (a hunk that starts inside a key),
        up to the first line that is not payload. Lines already emitted are never revisited."""
        changed: Changed = []
        line_end = start - 1
        while line_end >= 0:
            line_start = text.rfind("\n", 0, line_end) + 1
            if copied and line_start <= copied:
                break
            line = text[line_start:line_end]
            if line.startswith(_STRUCTURE):
                break
            marker, body, ending = split_line(line)
            if not body.strip():
                break
            body, verdict = pem.continue_block(body, name)
            if verdict is not pem.LineVerdict.PAYLOAD:
                break
            changed.append((line_start, line_end, marker + body + ending))
            line_end = line_start - 1
        changed.reverse()
        return changed


def _mask_copies(
    text: str, replaced: Changed, values: MaskedValues, counts: Counter[str]
) -> tuple[Changed, str | None]:
    """`replaced` (the lines the rules replaced, in order) with every other occurrence of the
    masked values masked too, and the text they give when that is already joined (None when
    the copies changed it). Looked for in the output, where the occurrences the rules masked
    are gone; each line holding one is masked as the rules left it. Rules never join text
    across a placeholder, so a value in the output was in the source."""
    pieces: list[str] = []
    output_starts: list[int] = []  # output start of each replaced line
    shifts: list[int] = []  # output offset minus source offset after each replaced line
    copied = shift = 0
    for start, end, new in replaced:
        pieces += [text[copied:start], new]
        copied = end
        output_starts.append(start + shift)
        shift += len(new) - (end - start)
        shifts.append(shift)
    output = "".join(pieces) + text[copied:] if replaced else text
    # Few values: one finder for every line; many: one per line (thousands in one was quadratic).
    finder = values.finder(output) if len(values) <= _ONE_FINDER_VALUES else None
    holding: dict[int, int] = {}  # source line start -> end, of the lines that may hold a value
    for line in values.lines_holding(output):
        index = bisect.bisect_right(output_starts, line) - 1
        if index >= 0 and output_starts[index] == line:
            start = replaced[index][0]
        else:
            start = line - (shifts[index] if index >= 0 else 0)
        if start not in holding:
            end = text.find("\n", start)
            holding[start] = len(text) if end < 0 else end
    lines = {start: (end, new) for start, end, new in replaced}
    changed = False
    for start, end in holding.items():
        current = lines[start][1] if start in lines else text[start:end]
        marker, body, ending = split_line(current)  # a diff marker is never masked
        line_finder = finder or values.finder(body)  # this line's values only
        if line_finder is None:
            continue
        masked = marker + values.mask(body, line_finder, counts) + ending
        if masked != current:
            lines[start] = (end, masked)
            changed = True
    if not changed:
        return replaced, output
    return [(start, end, new) for start, (end, new) in sorted(lines.items())], None
