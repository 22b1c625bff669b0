"""The prefilter: find, in one sweep per needle group, the lines that may hold a secret and
which rules may apply to each.

Why this shape: Python's `re` searches fast only for a pattern that starts with a literal (it
skips to candidate positions in C); an alternation of different first characters, a
character class, a named group or IGNORECASE sends it through every position, ~10x slower.
So needles are grouped by first character (and by case folding), and each group becomes one
pattern: the group's common literal prefix, then a trie of the rest (`k(?:e(?:n(?<=token)|y
(?:(?<=apikey)|...))|_(?:live_|test_))`), so at each candidate position the engine follows one
path instead of trying every needle. One search per group; the matched literal says which
rules to run on that line.

The searches run on the text's UTF-8 bytes: for ASCII text that is a copy with the same
offsets, `bytes.lower()` folds ASCII only and keeps every offset, whereas `str.lower()` on
text with one non-ASCII character is ~8x slower and can change the length (U+0130)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from p4review.change.redaction import needle_scan

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_NON_ASCII = re.compile(rb"[\x80-\xff]")
# The longest run a needle's lookahead follows (see Needle.lookaround): far longer than a key name.
MAX_AHEAD_RUN = 128
MAX_AHEAD_REACH = 1024
# From this size on, a text's needles are searched in one pass (needle_scan.py). Below it, the `re`
# passes cost less than the scan's first use, which compiles it (~0.1 s, once per process): 45
# passes over 256 KB take ~11 ms; one pass over 10 MB takes ~0.1 s against ~0.4 s.
ONE_PASS_MIN_BYTES = 256 * 1024
_NOT_BUILT = object()


def _utf8(text: str) -> bytes:
    """What the searches run on (p4's surrogate escapes kept as they are)."""
    return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Needle:
    """`literal` found in the text (in the lowercased text when `folded`), counted only when
    the fixed-width regex `behind` matches right before it and `ahead` right after it. A rare
    first character keeps the search fast: `J` behind `ey` costs less than `eyJ`, because `e`
    is everywhere."""

    literal: str
    behind: str = ""
    ahead: str = ""
    folded: bool = False

    def __post_init__(self) -> None:
        if not self.literal:
            raise ValueError("a needle needs a literal")
        if self.folded and self.literal != self.literal.lower():
            raise ValueError(f"folded needle {self.literal!r} must be lowercase")

    @property
    def lookaround(self) -> str:
        """The conditions checked once the literal has matched ("" when there are none). A
        possessive run in `ahead` (the rest of a key name, `[\\w.-]*+`) is bounded to
        `MAX_AHEAD_RUN` characters, the rest of a line (`[^\\n]*`) to `MAX_AHEAD_REACH`:
        checked at every occurrence of the literal, an unbounded run makes a long line of
        repeated literals (`passwordpassword...`, `login login ...`) quadratic."""
        behind = f"(?<={self.behind}{re.escape(self.literal)})" if self.behind else ""
        ahead = self.ahead.replace("*+", f"{{0,{MAX_AHEAD_RUN}}}+").replace("[^\\n]*", f"[^\\n]{{0,{MAX_AHEAD_REACH}}}")
        return behind + (f"(?={ahead})" if ahead else "")


def needles(*literals: str, behind: str = "", ahead: str = "", folded: bool = False) -> tuple[Needle, ...]:
    """Needles for `literals`; `behind` is a literal (escaped here), `ahead` a regex."""
    return tuple(Needle(literal, re.escape(behind), ahead, folded) for literal in literals)


def _trie(endings: dict[str, set[str]]) -> str:
    """A regex matching each key of `endings` (a literal) followed by any of its lookarounds,
    longer literals first (so a literal never hides a longer one that starts with it)."""
    root: dict[str, Any] = {}  # char -> child node; "" -> the lookarounds ending there
    for literal, lookarounds in endings.items():
        node = root
        for char in literal:
            node = node.setdefault(char, {})
        node.setdefault("", set()).update(lookarounds)

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + emit(node[char]) for char in sorted(key for key in node if key)]
        if "" in node:
            conditions = sorted(node[""])
            if "" in conditions:
                branches.append("")  # unconditional: last, so longer literals are tried first
            else:
                branches.append(conditions[0] if len(conditions) == 1 else "(?:" + "|".join(conditions) + ")")
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return emit(root)


def lowered_ascii(text: str) -> str:
    """`text.lower()`, or ASCII-only lowercasing when that would change the length: a few
    characters lowercase to two (U+0130 -> "i̇") and offsets would drift. For short strings."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def _from_first_letter(needle: Needle) -> Needle:
    """The same needle searched from its first letter, its leading digits checked behind it
    (`0q~`..`9q~`: one group for `q~` instead of ten searches, one per digit). Each group costs
    a pass over the text, and digits start few needles."""
    literal = needle.literal
    digits = len(literal) - len(literal.lstrip("0123456789"))
    if digits == 0 or digits == len(literal):
        return needle
    return Needle(literal[digits:], needle.behind + re.escape(literal[:digits]), needle.ahead, needle.folded)


class Prefilter:
    """`owners`: (bit, needles) pairs. `flag(text)` -> {line start offset: OR of the bits of
    every owner with a needle on that line}, plus `non_ascii_bits` on every line holding a
    non-ASCII character (no cost for ASCII text)."""

    def __init__(self, owners: Iterable[tuple[int, tuple[Needle, ...]]], *, non_ascii_bits: int = 0):
        self._non_ascii_bits = non_ascii_bits
        groups: dict[tuple[bool, str], dict[Needle, int]] = {}
        for bit, owned in owners:
            for needle in map(_from_first_letter, owned):
                group = groups.setdefault((needle.folded, needle.literal[0]), {})
                group[needle] = group.get(needle, 0) | (1 << bit)
        self._searches: list[tuple[re.Pattern[bytes], dict[bytes, int], bool]] = []
        self._groups: list[tuple[Needle, ...]] = []  # each search's needles, for the one-pass scan
        self._scan: Any = _NOT_BUILT
        # The same searches for one line, by (folded, first byte): run only when that byte occurs.
        self._by_first: dict[bool, dict[int, tuple[re.Pattern[bytes], dict[bytes, int]]]] = {False: {}, True: {}}
        for (folded, _), group in sorted(groups.items()):
            # A literal's bits include those of the literals it starts with: where a longer
            # needle matched, a shorter one would have too (its lookarounds aside: superset).
            bits_by_literal: dict[str, int] = {}
            for needle, bits in group.items():
                for other, other_bits in group.items():
                    if needle.literal.startswith(other.literal):
                        bits |= other_bits
                bits_by_literal[needle.literal] = bits_by_literal.get(needle.literal, 0) | bits
            common = os.path.commonprefix(sorted(bits_by_literal))
            endings: dict[str, set[str]] = {}
            for needle in group:
                endings.setdefault(needle.literal[len(common) :], set()).add(needle.lookaround)
            pattern = re.escape(common) + _trie(endings)
            compiled = re.compile(pattern.encode())
            encoded = {literal.encode(): bits for literal, bits in bits_by_literal.items()}
            self._searches.append((compiled, encoded, folded))
            self._groups.append(tuple(sorted(group, key=repr)))
            self._by_first[folded][common.encode()[0]] = (compiled, encoded)

    def flag_line(self, line: str) -> int:
        """`flag(line).get(0, 0)` for one short line (no line break), without the set-up a
        whole text amortizes: a group whose first character is absent is not searched."""
        data = line.encode("utf-8", "surrogatepass")
        lowered = data.lower()
        bits = self._non_ascii_bits if len(data) != len(line) else 0
        for searched, by_first in ((data, self._by_first[False]), (lowered, self._by_first[True])):
            for first in by_first.keys() & set(searched):
                pattern, bits_by_literal = by_first[first]
                for match in pattern.finditer(searched):
                    bits |= bits_by_literal[match.group()]
        return bits

    def _one_pass_scan(self) -> needle_scan.CandidateScan | None:
        if self._scan is _NOT_BUILT:
            self._scan = _candidate_scan(tuple(self._groups))
        scan: needle_scan.CandidateScan | None = self._scan
        return scan

    def flag(self, text: str, *, one_pass: bool = True) -> dict[int, int]:
        """`one_pass=False` runs the reference: one `re` pass per group, no Hyperscan. A text
        shorter than `ONE_PASS_MIN_BYTES` takes the `re` passes too: they cost less there than
        compiling the one-pass scan on first use."""
        data = _utf8(text)
        scan = self._one_pass_scan() if one_pass and len(data) >= ONE_PASS_MIN_BYTES else None
        candidates = scan.starts(data) if scan is not None else None
        lowered: bytes | None = None
        flagged: dict[int, int] = {}
        rfind = data.rfind
        for index, (pattern, bits_by_literal, folded) in enumerate(self._searches):
            if candidates is not None and not candidates[index]:
                continue
            searched = data
            if folded:
                lowered = searched = data.lower() if lowered is None else lowered
            matches = (
                pattern.finditer(searched)
                if candidates is None
                else needle_scan.confirmed(pattern, searched, candidates[index])
            )
            # Matches come in order: a line's start is searched back only to the previous
            # match (`rfind` from the text's start at each of a long line's many matches is
            # quadratic).
            start = previous = 0
            for match in matches:
                at = match.start()
                start = max(start, rfind(b"\n", previous, at) + 1)
                previous = at
                flagged[start] = flagged.get(start, 0) | bits_by_literal[match.group()]
        if len(data) == len(text):
            return flagged  # ASCII: byte offsets are character offsets
        if self._non_ascii_bits:
            # One search per line that has a non-ASCII byte: it resumes at the next line.
            found = _NON_ASCII.search(data)
            while found is not None:
                start = rfind(b"\n", 0, found.start()) + 1
                flagged[start] = flagged.get(start, 0) | self._non_ascii_bits
                end = data.find(b"\n", found.end())
                found = None if end < 0 else _NON_ASCII.search(data, end)
        # Byte offsets to character offsets, decoding only the gaps between line starts.
        by_character: dict[int, int] = {}
        byte_offset = character_offset = 0
        for start in sorted(flagged):
            character_offset += len(data[byte_offset:start].decode("utf-8", "surrogatepass"))
            byte_offset = start
            by_character[character_offset] = flagged[start]
        return by_character


@functools.lru_cache(maxsize=8)
def _candidate_scan(groups: tuple[tuple[Needle, ...], ...]) -> needle_scan.CandidateScan | None:
    """The one-pass scan for these needle groups, compiled once per process on first use
    (~0.1 s, kept out of the handlers' import), or None without the `hyperscan` package."""
    return needle_scan.CandidateScan(groups) if needle_scan.available() else None
