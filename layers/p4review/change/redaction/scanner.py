"""The line-oriented engine: the prefilter flags lines, rules run only on flagged lines (and
only the rules whose needles were found there), PEM blocks are followed across lines.

Lines are split on "\\n" only (a "\\r" before it stays with its line): `str.splitlines` would
also split on \\x0b, \\x1c, \\u2028... and shift every line number. A line's diff marker (`+`,
`-`, ` `, `\\`, or a whole `@@ ... @@` hunk range) is set aside before any rule runs, so no
rule can change it, and no rule sees or produces a line break: the output has exactly the
input's lines, in order, each with its original marker and line ending."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from p4review.change.redaction import pem
from p4review.change.redaction.assignments import block_line_below, dangling_yaml_key, value_below
from p4review.change.redaction.filekind import FileKind, FileKinds
from p4review.change.redaction.needles import Prefilter
from p4review.change.redaction.rules import Rule

_HUNK_RANGE = re.compile(r"@@[^@]*@@")
_DIFF_MARKERS = frozenset("+- \\")
# Lines that end a hunk: a PEM block never continues across them.
_STRUCTURE = ("@@", "+++ ", "--- ", "==== ", "diff --git ", "Index: ")
_PEM_BIT = 1
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
    if first and first in _DIFF_MARKERS:
        return first, line[1:], ending
    return "", line, ending


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
        # Bit 0 is PEM; rule i has bit i + 1.
        self._prefilter = Prefilter(
            [(0, pem.NEEDLES)] + [(index + 1, rule.needles) for index, rule in enumerate(self.rules)]
        )
        self._all = (1 << (len(self.rules) + 1)) - 1
        # Rules that can say what the lines below their line hold (Rule.below).
        self._below_bits = sum(
            1 << (index + 1) for index, rule in enumerate(self.rules) if type(rule).below is not Rule.below
        )
        self._rules_by_bits: dict[int, tuple[Rule, ...]] = {}

    def scan(
        self, text: str, *, record: ScanRecord | None = None, previous: ScanRecord | None = None
    ) -> tuple[str, Counter[str]]:
        """`record`: filled with what this scan learnt (see ScanRecord). `previous`: the record
        of the scan that produced `text`, by these same rules. Both are pure functions of a
        line's bytes (the prefilter) or of its content and bits (the rules), so a line that is
        byte-identical to a line `previous` saw needs neither recomputed; every other line is."""
        counts = _Tally()
        flagged = self._flags(text, previous)
        if record is not None:
            record.source, record.flagged = text, flagged
        if not flagged:
            return text, Counter()
        known_clean = previous.clean if previous is not None else None
        kinds = _LazyKinds(text)
        pieces: list[str] = []
        copied = 0  # text[:copied] is already in `pieces`
        shift = 0  # output offset minus source offset, after the lines replaced so far
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
                    pieces += [text[copied:line_start], new]
                    copied = line_end
                    if record is not None:
                        record.changes.append((line_start, line_end, line_start + shift, line_start + shift + len(new)))
                    shift += len(new) - (line_end - line_start)
        if not pieces:
            return text, Counter(counts)
        pieces.append(text[copied:])
        return "".join(pieces), Counter(counts)

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
        for rule in self._rules_for(bits):
            body = rule.apply(body, kind, counts)
        return body, markers

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
        length = len(text)
        while end < length:
            start = end + 1
            line_end = text.find("\n", start)
            line_end = length if line_end < 0 else line_end
            line = text[start:line_end]
            if line.startswith(_STRUCTURE):
                break
            marker, body, ending = split_line(line)
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

    def _lines_below(self, text: str, end: int, body: str, bits: int, counts: Counter[str]) -> Changed:
        """The lines after `body` that one of its rules says are secrets (Rule.below), redacted."""
        for rule in self._rules_for(bits & self._below_bits):
            spec = rule.below(body)
            if spec is None:
                continue
            changed: Changed = []
            secret = False
            while end < len(text) and len(changed) < spec.lines:
                start = end + 1
                line_end = text.find("\n", start)
                line_end = len(text) if line_end < 0 else line_end
                line = text[start:line_end]
                if line.startswith(_STRUCTURE):
                    break
                marker, below, ending = split_line(line)
                redacted = spec.redact(below)
                if redacted is None:
                    break
                changed.append((start, line_end, marker + redacted + ending))
                end = line_end
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
