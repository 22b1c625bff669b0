"""Secrets written in an encoding the rules do not read: detect them on a normalized view of
the line, then mask the original text.

A secret can reach the model in a form no rule matches although a reader (or a JSON parser, a
URL decoder, a terminal) sees it plainly: `"\\u0070assword": "..."`, `pass<U+200B>word = ...`,
`ＡＫＩＡ...`, `pаssword` with a Cyrillic `а`, `postgres%3A%2F%2Fuser%3Apw%40host`, a token
with a `\\r` inside. The view undoes those encodings, one *unit* of the line at a time:

- a JSON escape `\\uXXXX` (a surrogate pair too) becomes its character, `\\/` becomes `/`
  (escapes of control characters stay as they are: no rule sees a line break);
- a percent escape `%XX` of a printable ASCII character becomes that character;
- a `\\r` inside the line (the line's own ending is not part of what rules see) is dropped;
- any other non-ASCII character goes through NFKC (full-width and mathematical letters,
  ligatures), then loses invisible formatting characters (Unicode category Cf: zero-width
  space and joiners, word joiner, BOM, soft hyphen, bidirectional controls);
- in a word that also has Latin letters or digits, the Cyrillic and Greek letters that look
  like Latin ones become those (a small table: the look-alikes of the letters secrets' names
  and prefixes are made of); a word wholly in Cyrillic or Greek is prose and stays.

Every character of the view remembers the unit of the original it came from, so a span of the
view maps back to whole original characters (a unit can give several characters, `ﬁ` -> `fi`,
or none). The rules run unchanged on the view; which spans they replaced is read back from
their output (the text between `[REDACTED:...]` placeholders is the view's own text), mapped
onto the original, and joined with what the same rules replaced on the original itself. The
output keeps the original's characters everywhere else.

Cost: only lines the prefilter flags for it (`NEEDLES`, and any line with a non-ASCII
character) are read this way; without escapes that is one `str.translate` and one regex pass,
both in C. The rules run on the view only when it differs from the line and the prefilter finds
their needles in it, and the offsets are computed only when a rule replaced something there: an
ASCII line without escapes costs nothing, a line of CJK text or emoji almost nothing.

Out of reach, by design: a secret split across lines or across strings, base64 (or hex) of
arbitrary text, rot13 and other ciphers, HTML entities, escapes nested twice (`%253A`), and
look-alikes outside the table or a word (a name written wholly in Cyrillic look-alikes,
Armenian, Cherokee...)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from p4review.change.redaction.base import PatternRule, not_template, splice
from p4review.change.redaction.needles import needles
from p4review.change.redaction.policy_rules import POLICY_CLASSES

# What the prefilter looks for, besides non-ASCII characters (Prefilter's `non_ascii_bit`).
# Percent escapes: only those of `:`, `/` and `@`, what a URI's credentials need; `%3d` would
# flag every printf format with a width.
NEEDLES = (
    needles("\\u", ahead="[0-9A-Fa-f]{4}")
    + needles("\\/")
    + needles("%3A", "%3a", "%2F", "%2f", "%40")
    + needles("\r", ahead="[^\n]")
)

_UNIT = re.compile(
    r"\\u(?P<high>[dD][89abAB][0-9a-fA-F]{2})\\u(?P<low>[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|\\u(?P<code>[0-9a-fA-F]{4})"
    r"|\\/"
    r"|%(?P<byte>[0-9a-fA-F]{2})"
    r"|\r"
    r"|[^\x00-\x7f]"
)
_PLACEHOLDER = re.compile(r"\[REDACTED:([^\]\s]+)\]")

# `?proxy=user%3Apw%40host`: once decoded, a query parameter holding `user:password@host`, the
# userinfo of a URI with no scheme of its own (the connection URI rule needs `://`). Only under
# a parameter named for a connection (`q=from%3Aann%40example.com` is a search), and run on
# views only: unencoded, the same text is an ordinary connection-string question.
QUERY_USERINFO_RULE = PatternRule(
    "connection_uri",
    r"(?<=[?&;])(?i:[\w.-]*(?:dsn|url|uri|proxy|conn|database|db|broker|server|remote|auth|cred|login|host|"
    r"endpoint|upstream|backend|target|source|dest)[\w.-]*)="
    r"[^\s:@/?&=#\"'<>]+:(?P<password>[^\s@/?&=#\"'<>]+)@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*",
    needles("@"),
    groups=("password",),
    validate=not_template,
)


# The policy's de-identification classes read the line as written only: decoding changes the
# context they judge by (`https://user:he%2F%2Fo@host` would read as an address `o@host`), and
# they are about people and places, not the secrets an encoding hides.
WRITTEN_ONLY_CLASSES = POLICY_CLASSES

# Cyrillic and Greek letters that render like a Latin one (from Unicode's confusables.txt, the
# letters of ASCII words and token prefixes only). NFKC runs first, so compatibility forms
# (full-width, mathematical) are already plain letters here.
_LOOKALIKE_LETTERS = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s",
    "і": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    "Һ": "H", "Ԁ": "D", "Ү": "Y", "ү": "y",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "υ": "u", "κ": "k", "ι": "i", "ϲ": "c", "ϳ": "j",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
    # Latin letters of the phonetic alphabet
    "ɡ": "g", "ɑ": "a", "ı": "i",
}  # fmt: skip
_LOOKALIKES = str.maketrans(_LOOKALIKE_LETTERS)
# Look-alikes are mapped only where they touch a Latin letter, digit or `_` (`pаssword`,
# `раѕѕword`, `DB_РАЅЅWORD`): a word wholly in Cyrillic or Greek is prose, left as it is.
_LOOKALIKE_CLASS = "[" + "".join(_LOOKALIKE_LETTERS) + "]+"
_MIXED_RUN = re.compile(f"(?<=[A-Za-z0-9_]){_LOOKALIKE_CLASS}|{_LOOKALIKE_CLASS}(?=[A-Za-z0-9_])")


def _latin_lookalikes(text: str) -> str:
    """`text` with the look-alikes inside Latin words mapped: one character for one."""
    return _MIXED_RUN.sub(lambda run: run.group().translate(_LOOKALIKES), text)


class _ReadAs(dict[int, str]):
    """A `str.translate` table, filled on first use: a character -> its NFKC form without
    invisible formatting characters (category Cf). `translate` then runs at C speed."""

    def __missing__(self, code: int) -> str:
        if len(self) > 65_536:
            self.clear()  # bounded: an input cannot make it hold every code point
        char = chr(code)
        text = "" if unicodedata.category(char) == "Cf" else unicodedata.normalize("NFKC", char)
        text = "".join(piece for piece in text if unicodedata.category(piece) != "Cf")
        self[code] = text
        return text


_READ_AS = _ReadAs()


def read_as(line: str) -> str | None:
    """The text of `line`'s view (see View), or None when it reads as itself. Cheap: without
    escapes, one `translate` and one regex pass, both in C."""
    if "\\" in line or "%" in line or "\r" in line:
        view = View.of(line)
        return None if view is None else view.text
    text = _latin_lookalikes(line.translate(_READ_AS))
    return None if text == line else text


def _decoded(unit: re.Match[str]) -> str | None:
    """The text `unit` reads as (look-alikes aside), or None when it reads as itself."""
    matched = unit.group()
    if matched == "\r":
        return ""
    if matched == "\\/":
        return "/"
    if unit.group("high") is not None:
        high, low = int(unit.group("high"), 16), int(unit.group("low"), 16)
        return _READ_AS[0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)]
    code = unit.group("code")
    if code is not None:
        value = int(code, 16)
        if value < 0x20 or value == 0x7F or 0xD800 <= value <= 0xDFFF:
            return None  # a line break, a control, a lone surrogate: left escaped
        return chr(value) if value < 0x80 else _READ_AS[value]
    byte = unit.group("byte")
    if byte is not None:
        value = int(byte, 16)
        return chr(value) if 0x20 <= value < 0x7F else None
    decoded = _READ_AS[ord(matched)]
    return None if decoded == matched else decoded


class View:
    """The normalized reading of one line and, for each of its characters, the original unit
    (`starts[i]`, `ends[i]`) it came from."""

    def __init__(self, text: str, starts: list[int], ends: list[int], original_length: int):
        self.text = text
        self.starts = starts
        self.ends = ends
        self.original_length = original_length

    @classmethod
    def of(cls, line: str) -> View | None:
        """The view of `line`, or None when it reads as itself."""
        pieces: list[tuple[int, int, str | None]] = []  # (start, end, decoded or None for "as is")
        copied = 0
        for unit in _UNIT.finditer(line):
            decoded = _decoded(unit)
            if decoded is None:
                continue
            start, end = unit.span()
            if start > copied:
                pieces.append((copied, start, None))
            pieces.append((start, end, decoded))
            copied = end
        if copied < len(line):
            pieces.append((copied, len(line), None))
        parts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        for start, end, decoded in pieces:
            if decoded is None:
                parts.append(line[start:end])
                starts += range(start, end)
                ends += range(start + 1, end + 1)
            else:
                parts.append(decoded)
                starts += [start] * len(decoded)
                ends += [end] * len(decoded)
        text = _latin_lookalikes("".join(parts))  # one for one: the offsets hold
        return None if text == line else cls(text, starts, ends, len(line))

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original characters that view[start:end] came from: whole units."""
        if start < end:
            return self.starts[start], self.ends[end - 1]
        at = self.starts[start] if start < len(self.starts) else self.original_length
        return at, at


Span = tuple[int, int, str]  # (start, end, class)


def replaced_spans(before: str, after: str) -> list[Span]:
    """The spans of `before` that rules replaced by the placeholders of `after`, given that rules
    only ever replace spans by placeholders: the text between two placeholders of `after` is
    `before`'s own. A placeholder `before` already had maps onto itself and is left out. Where
    the text between placeholders occurs more than once, every placement is possible; a span
    then reaches from the earliest to the latest placement (it covers more, never less). If
    `after` is not of that form, the span from the first difference to the last is returned."""
    if before == after:
        return []
    marks = list(_PLACEHOLDER.finditer(after))
    segments = [after[: marks[0].start()]] if marks else [after]
    segments += [after[mark.end() : following.start()] for mark, following in zip(marks, marks[1:], strict=False)]
    if marks:
        segments.append(after[marks[-1].end() :])
    earliest = _placements(before, segments)
    latest = _placements(before[::-1], [segment[::-1] for segment in reversed(segments)])
    if not marks or earliest is None or latest is None:
        return [_difference(before, after)]
    # latest, read backwards: (start, end) of each segment in the reversed text, last segment first.
    latest_starts = [len(before) - end for _, end in reversed(latest)]
    spans: list[Span] = []
    for index, mark in enumerate(marks):
        start = earliest[index][1]  # the earliest end of the segment before this placeholder
        end = latest_starts[index + 1]  # the latest start of the segment after it
        if end > start and before[start:end] != mark.group():
            spans.append((start, end, mark.group(1)))
        elif start >= end:
            spans.append((start, start, mark.group(1)))  # replaced nothing: a placeholder inserted
    return merge(spans)


def _placements(text: str, segments: list[str]) -> list[tuple[int, int]] | None:
    """Each segment placed as early as it can be in `text`, in order, the first at the start and
    the last at the end; None when they cannot be."""
    first, last = segments[0], segments[-1]
    if not text.startswith(first):
        return None
    placed = [(0, len(first))]
    position = len(first)
    for segment in segments[1:-1]:
        found = text.find(segment, position)
        if found < 0:
            return None
        placed.append((found, found + len(segment)))
        position = found + len(segment)
    if len(segments) > 1:
        if len(text) - len(last) < position or not text.endswith(last):
            return None
        placed.append((len(text) - len(last), len(text)))
    return placed


def _difference(before: str, after: str) -> Span:
    """From the first character that differs to the last, in `before`."""
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    mark = _PLACEHOLDER.search(after)
    return prefix, len(before) - suffix, mark.group(1) if mark else "secret"


def merge(spans: list[Span]) -> list[Span]:
    """Spans sorted, overlapping ones joined (the first one's class names the join)."""
    merged: list[Span] = []
    for start, end, name in sorted(spans, key=lambda span: (span[0], span[1])):
        if merged and start < merged[-1][1]:
            previous_start, previous_end, previous_name = merged[-1]
            merged[-1] = (previous_start, max(previous_end, end), previous_name)
        else:
            merged.append((start, end, name))
    return merged


def redact_through_view(line: str, redacted: str, rules: Callable[[str], str | None]) -> tuple[str, list[str]]:
    """`redacted` (the rules' output on `line`) joined with what `rules` (the same rules, counting
    apart; None when none applies) find on `line`'s view. Returns the text and the classes of the
    spans that only the view revealed (the caller counts those)."""
    text = read_as(line)
    if text is None:
        return redacted, []
    output = rules(text)
    if output is None or output == text:
        return redacted, []
    view = View.of(line)  # the offsets, only now that they are needed
    if view is None or view.text != text:
        raise AssertionError("the view of a line must not depend on how it is computed")
    found = [(*view.original_span(start, end), name) for start, end, name in replaced_spans(view.text, output)]
    own = replaced_spans(line, redacted)
    if all(any(start <= span[0] and span[1] <= end for start, end, _ in own) for span in found):
        return redacted, []  # the original reading already covered it
    new = [name for first, last, name in found if not any(first < end and start < last for start, end, _ in own)]
    return splice(line, merge(own + found)), new
