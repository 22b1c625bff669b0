"""The prefilter's needle searches in one pass: Hyperscan (the Vectorscan fork, through the
`hyperscan` package) lists where a needle may start, and the prefilter's own `re` patterns
confirm each candidate, so what is flagged is exactly what `re` alone would flag.

Why: `re` needs one pass over the text per group of needles (45 passes, half of redaction's
time on a large diff). Hyperscan runs every needle in one pass, in C, at several hundred MB/s.
It has no lookarounds, so each needle becomes `behind`, its literal, then the characters its
lookahead must begin with (`_[a-z0-9]{16}` for `_(?=[a-z0-9]{20})`): fixed width, so where the
literal starts is known from where the match ends. That is a superset of the needle, and `re`
decides at each candidate (`Pattern.match` at that offset sees the text before it, so
lookbehinds hold). Where the package is missing (no wheel for the platform) the prefilter keeps
its `re` passes, which remain the reference the tests compare this with."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Sequence
from re import _constants as sre  # the parser's opcodes: `re` loads them already
from re import _parser
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4review.change.redaction.needles import Needle

_hyperscan: Any = None  # the module, imported on first use (not at the handlers' import)

# How many of a lookahead's leading characters go into the Hyperscan expression: enough to make
# a common literal rare (`_` then 16 token characters), few enough to keep the database small.
_MAX_AHEAD_CHARACTERS = 16
_ALL_BYTES = frozenset(range(256))


@functools.cache
def available() -> bool:
    """Whether the `hyperscan` package imports here. An optional accelerator: the deps layer
    ships it for Lambda's x86_64; it has no wheel for Linux aarch64."""
    global _hyperscan
    try:
        import hyperscan
    except ImportError:
        return False
    _hyperscan = hyperscan
    return True


def _class_bytes(items: Sequence[tuple[Any, Any]]) -> frozenset[int] | None:
    """The bytes a parsed character class (`IN`) matches, or None for what it cannot say."""
    matched: set[int] = set()
    negate = False
    for op, argument in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            matched.add(argument)
        elif op is sre.RANGE:
            matched.update(range(argument[0], min(argument[1], 255) + 1))
        elif op is sre.CATEGORY:
            category = _CATEGORIES.get(argument)
            if category is None:
                return None
            matched.update(category)
        else:
            return None
    return _ALL_BYTES - matched if negate else frozenset(matched)


def _category_bytes(pattern: bytes) -> frozenset[int]:
    return frozenset(byte for byte in range(256) if re.match(pattern, bytes([byte])))


_CATEGORIES: dict[Any, frozenset[int]] = {}


def _load_categories() -> None:
    if not _CATEGORIES:
        for category, pattern in (
            (sre.CATEGORY_DIGIT, rb"\d"),
            (sre.CATEGORY_NOT_DIGIT, rb"\D"),
            (sre.CATEGORY_SPACE, rb"\s"),
            (sre.CATEGORY_NOT_SPACE, rb"\S"),
            (sre.CATEGORY_WORD, rb"\w"),
            (sre.CATEGORY_NOT_WORD, rb"\W"),
        ):
            _CATEGORIES[category] = _category_bytes(pattern)


def _one_character(op: Any, argument: Any) -> frozenset[int] | None:
    """The bytes one single-character item matches (None when the item is not one character)."""
    if op is sre.LITERAL:
        return frozenset((argument,))
    if op is sre.NOT_LITERAL:
        return _ALL_BYTES - {argument}
    if op is sre.ANY:
        return _ALL_BYTES - {ord("\n")}
    if op is sre.IN:
        return _class_bytes(argument)
    return None


def _first_bytes(items: Sequence[tuple[Any, Any]]) -> frozenset[int] | None:
    """The bytes every match of the parsed sequence `items` starts with (None: cannot say)."""
    for op, argument in items:
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            continue  # zero width: the next item still starts the match
        single = _one_character(op, argument)
        if single is not None:
            return single
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            return _first_bytes(argument[2]) if argument[0] >= 1 else None
        if op is sre.SUBPATTERN:
            # `(?i:...)` would match other bytes than the ones it spells: say nothing.
            return None if argument[1] else _first_bytes(argument[-1])
        if op is sre.ATOMIC_GROUP:
            return _first_bytes(argument)
        if op is sre.BRANCH:
            union: set[int] = set()
            for branch in argument[1]:
                first = _first_bytes(branch)
                if first is None:
                    return None
                union |= first
            return frozenset(union)
        return None
    return None


def required_prefix(ahead: str) -> list[frozenset[int]]:
    """The byte classes that every match of the regex `ahead` begins with, one per character
    (empty when nothing can be said): `[ \\t]+\\S` -> [{space, tab}], `[a-z0-9]{20}` -> 16 x
    [a-z0-9] (capped). A prefix of a necessary condition, so a superset of the matches."""
    _load_categories()
    try:  # parsed as the prefilter compiles it: bytes, so `\w` and `\x80-\xff` mean bytes
        parsed = _parser.parse(ahead.encode("utf-8"))
    except re.error:  # pragma: no cover - needles are compiled by `re` first
        return []
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
        return []  # a global flag changes what the characters mean
    items = list(parsed)
    prefix: list[frozenset[int]] = []
    for op, argument in items:
        if len(prefix) >= _MAX_AHEAD_CHARACTERS:
            break
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            continue
        single = _one_character(op, argument)
        if single is not None:
            prefix.append(single)
            continue
        if op in (sre.MAX_REPEAT, sre.POSSESSIVE_REPEAT, sre.MIN_REPEAT):
            low, high, body = argument
            inner = list(body)
            repeated = _one_character(*inner[0]) if len(inner) == 1 else None
            if repeated is not None:
                prefix.extend([repeated] * min(low, _MAX_AHEAD_CHARACTERS - len(prefix)))
                if high == low:
                    continue
            elif low >= 1:
                first = _first_bytes(inner)
                if first is not None:
                    prefix.append(first)
            break
        first = _first_bytes([(op, argument)])
        if first is not None:
            prefix.append(first)
        break
    # A class no byte matches means the needle never matches; stop before it (still a superset).
    usable = prefix[:_MAX_AHEAD_CHARACTERS]
    return usable[: usable.index(frozenset())] if frozenset() in usable else usable


def _escaped(data: bytes) -> bytes:
    return b"".join(b"\\x%02x" % byte for byte in data)


def _class(members: frozenset[int]) -> bytes:
    return b"[" + b"".join(b"\\x%02x" % byte for byte in sorted(members)) + b"]"


# A regex that is a plain literal: escaped punctuation and characters that are not operators.
_LITERAL_REGEX = re.compile(r"(?:\\[^A-Za-z0-9]|[^\\\[\](){}.*+?^$|])*")


def _behind_literal(behind: str) -> str | None:
    """`behind` as plain text when it is an escaped literal (what `needles()` makes), else None."""
    return re.sub(r"\\(.)", r"\1", behind) if _LITERAL_REGEX.fullmatch(behind) else None


def expression(needle: Needle) -> tuple[bytes, int]:
    """The Hyperscan expression for `needle` and how far back from a match's end its literal
    starts. A `behind` that is not a plain literal is left out (a superset)."""
    behind = (_behind_literal(needle.behind) or "") if needle.behind else ""
    ahead = required_prefix(needle.ahead) if needle.ahead else []
    literal = needle.literal.encode("utf-8")
    pattern = _escaped(behind.encode("utf-8")) + _escaped(literal) + b"".join(map(_class, ahead))
    return pattern, len(literal) + len(ahead)


class CandidateScan:
    """One Hyperscan database over every group's needles. `starts(data)` -> per group, the
    offsets in `data` where one of the group's needles may start (unsorted, maybe repeated)."""

    def __init__(self, groups: Iterable[Iterable[Needle]]):
        if not available():
            raise RuntimeError("the hyperscan package is not installed")
        hyperscan = _hyperscan
        # expression id -> the (group, distance back to the literal's start) it stands for: one
        # expression can serve needles of two groups (`k` + `ey` in group `e`, `key` in group `k`).
        self._targets: list[list[tuple[int, int]]] = []
        ids: dict[tuple[bytes, bool], int] = {}
        expressions: list[bytes] = []
        flags: list[int] = []
        group_count = 0
        for group, needles in enumerate(groups):
            group_count = group + 1
            for needle in needles:
                pattern, back = expression(needle)
                key = (pattern, needle.folded)
                if key not in ids:
                    ids[key] = len(expressions)
                    expressions.append(pattern)
                    flags.append(hyperscan.HS_FLAG_CASELESS if needle.folded else 0)
                    self._targets.append([])
                if (group, back) not in self._targets[ids[key]]:
                    self._targets[ids[key]].append((group, back))
        self.group_count = group_count
        self._database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
        self._scratch = threading.local()  # a scan needs scratch space of its own per thread

    def starts(self, data: bytes) -> list[list[int]] | None:
        """None when Hyperscan fails on this text (the prefilter's `re` passes then stand in)."""
        scratch = getattr(self._scratch, "space", None)
        if scratch is None:
            scratch = self._scratch.space = _hyperscan.Scratch(self._database)
        found: list[list[int]] = [[] for _ in range(self.group_count)]
        targets = self._targets

        def on_match(identifier: int, _start: int, end: int, _flags: int, _context: object) -> None:
            for group, back in targets[identifier]:
                found[group].append(end - back)

        try:
            self._database.scan(data, match_event_handler=on_match, scratch=scratch)
        except _hyperscan.HyperscanError:
            return None
        return found


def confirmed(pattern: re.Pattern[bytes], searched: bytes, candidates: list[int]) -> Iterable[re.Match[bytes]]:
    """`pattern.finditer(searched)`, trying only the candidate offsets: a match can start only
    where one of its needles' literals does, and matches do not overlap, as with finditer."""
    resume = 0
    match = pattern.match
    for offset in sorted(set(candidates)):
        if offset < resume:
            continue
        found = match(searched, offset)
        if found is not None:
            resume = found.end()
            yield found
