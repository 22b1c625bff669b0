"""The depot allow-list: validating its entries and deciding whether a depot path is inside it.

Pure (no I/O). `ChangeFetcher` is the only caller that acts on a decision; it never passes a
normalized path to p4, only the server's own spelling of a path this module allowed.

A path is allowed only when every way of reading it lands under an allowed prefix: its
normalized form (NFC, escapes decoded, `.`/`..` resolved, doubled slashes collapsed) and the
literal form p4 itself uses (only p4's four escapes decoded). A path whose structure
normalization had to change is refused outright: p4 would not read it the way we compared it.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from p4review.errors import ConfigError

SETTING = "P4REVIEW_DEPOT_ALLOW_LIST"
# Unset allow-list: this default, only where P4REVIEW_ENV is explicitly one of these (the fixture depot).
DEFAULT_ALLOW_LIST = ("//depot/...",)
DEFAULT_ENVIRONMENTS = frozenset({"local", "test"})

# p4 escapes exactly these in file names (`%40` is a literal @); any other %XX is literal text to p4.
_P4_ESCAPES = {"40": "@", "23": "#", "25": "%", "2A": "*"}
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_STRUCTURAL = frozenset("/\\.%@#*")
# Look-alikes of structural characters that NFKC does not map to them (NFKC catches the
# fullwidth and small forms, one/two dot leaders and the ellipsis).
_LOOKALIKES = frozenset("\u2215\u2044\u29f8\u29f9\u2571\u2572\u27cb\u27cd\u2216\u1735\u0337\u0338")
# Invisible but not category Cf: Hangul fillers, combining grapheme joiner, variation selectors.
_INVISIBLES = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u3164\uffa0" + "".join(chr(c) for c in range(0xFE00, 0xFE10))
)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class DenialReason(StrEnum):
    """Why a path was refused: the reason code of the security event."""

    OUTSIDE_ALLOW_LIST = "outside_allow_list"
    NOT_DEPOT_SYNTAX = "not_depot_syntax"  # empty, relative, option-like (`-p ...`), no file name
    CONTROL_CHARACTER = "control_character"
    INVISIBLE_CHARACTER = "invisible_character"  # zero-width, bidi controls, fillers
    LOOKALIKE_CHARACTER = "lookalike_character"  # e.g. U+2215 DIVISION SLASH for "/"
    REVISION_SPECIFIER = "revision_specifier"  # a raw @ or #
    WILDCARD = "wildcard"  # *, ..., %%n
    BAD_ESCAPE = "bad_escape"  # a % not followed by two hex digits
    CLIMBS_ABOVE_ROOT = "climbs_above_root"  # `..` past the depot name
    NON_CANONICAL = "non_canonical"  # normalization changed what p4 would read


class PathRejected(ValueError):
    def __init__(self, reason: DenialReason):
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True)
class PathDecision:
    path: str  # as given (untrusted: sanitize before showing it)
    allowed: bool
    reason: DenialReason | None = None
    normalized: str | None = None  # None when the path could not be normalized at all


# --- characters ---------------------------------------------------------------------------------
def _character_problem(char: str) -> DenialReason | None:
    category = unicodedata.category(char)
    if category == "Cc" or category in ("Zl", "Zp"):
        return DenialReason.CONTROL_CHARACTER
    if category in ("Cf", "Cs", "Co", "Cn") or char in _INVISIBLES:
        return DenialReason.INVISIBLE_CHARACTER
    if not char.isascii() and (char in _LOOKALIKES or _STRUCTURAL & set(unicodedata.normalize("NFKC", char))):
        return DenialReason.LOOKALIKE_CHARACTER
    return None


def _first_character_problem(text: str) -> DenialReason | None:
    # ASCII printable text (nearly every real path) needs no per-character lookup.
    if text.isascii() and text.isprintable():
        return None
    for char in text:
        problem = _character_problem(char)
        if problem is not None:
            return problem
    return None


def escaped_character(char: str) -> str:
    """`char` as a visible escape: `\\x1b`, `\\u202e`, `\\U0001f600`."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def sanitize_for_log(text: str, *, limit: int = 512) -> str:
    """`text` safe for a log line or an error message: control, invisible and look-alike
    characters (and the backslash) escaped, so a log viewer shows exactly what arrived."""
    shown = []
    for char in text[:limit]:
        if char == "\\":
            shown.append("\\\\")
        elif _character_problem(char) is not None:
            shown.append(escaped_character(char))
        else:
            shown.append(char)
    return "".join(shown) + ("..." if len(text) > limit else "")


# --- candidate paths --------------------------------------------------------------------------------
def _decode_escapes(path: str) -> tuple[str, bool]:
    """Decode every %XX once; the flag says whether one was not a p4 escape (p4 reads it literally)."""
    if re.search(r"%(?![0-9A-Fa-f]{2})", path):
        raise PathRejected(DenialReason.BAD_ESCAPE)
    foreign = False

    def decode(match: re.Match[str]) -> str:
        nonlocal foreign
        foreign |= match.group(1).upper() not in _P4_ESCAPES
        return chr(int(match.group(1), 16))

    return _ESCAPE.sub(decode, path), foreign


def _normalize(path: object) -> tuple[str, bool]:
    """(normalized path, whether normalization changed its structure). Raises PathRejected."""
    if not isinstance(path, str) or not path:
        raise PathRejected(DenialReason.NOT_DEPOT_SYNTAX)
    problem = _first_character_problem(path)
    if problem is not None:
        raise PathRejected(problem)
    text = unicodedata.normalize("NFC", path)
    if not text.startswith("//"):
        raise PathRejected(DenialReason.NOT_DEPOT_SYNTAX)
    if "@" in text or "#" in text:
        raise PathRejected(DenialReason.REVISION_SPECIFIER)
    if "*" in text or "..." in text or "%%" in text:
        raise PathRejected(DenialReason.WILDCARD)
    decoded, changed = _decode_escapes(text)
    problem = _first_character_problem(decoded)  # e.g. %0A, %E2%88%95
    if problem is not None:
        raise PathRejected(problem)
    segments: list[str] = []
    for segment in decoded[2:].split("/"):
        if segment in ("", "."):
            changed = True
        elif segment == "..":
            changed = True
            if len(segments) <= 1:  # would pop the depot name itself
                raise PathRejected(DenialReason.CLIMBS_ABOVE_ROOT)
            segments.pop()
        else:
            segments.append(segment)
    if not segments:
        raise PathRejected(DenialReason.NOT_DEPOT_SYNTAX)
    return "//" + "/".join(segments), changed


def normalize_depot_path(path: str) -> str:
    """The comparison form of a depot path: NFC, every %XX decoded once, `.`/`..` resolved,
    doubled slashes collapsed. Raises PathRejected for paths that cannot be compared safely."""
    return _normalize(path)[0]


def _p4_literal(path: str) -> str:
    """The path as p4 reads it: only its own four escapes decoded, no Unicode normalization."""
    return _ESCAPE.sub(lambda m: _P4_ESCAPES.get(m.group(1).upper(), m.group(0)), path)


# --- allow-list entries -------------------------------------------------------------------------------
def _entry_problem(entry: str) -> str | None:
    problem = _first_character_problem(entry)
    if problem is not None:
        return f"contains a {problem.value.replace('_', ' ')}"
    if not entry.startswith("//") or not entry.endswith("/..."):
        return "must have the form //depot/dir/... (a depot prefix ending in /...)"
    components = entry[2:-4].split("/")
    if components == [""]:
        return "names no depot: //... would allow every depot"
    for component in components:
        if component in ("", ".", ".."):
            return "has an empty, '.' or '..' path component"
        if "..." in component or "*" in component:
            return "has a wildcard before the final /..."
        if any(char in component for char in "@#%"):
            return "has a revision specifier, escape or %%n wildcard"
    return None


def validate_allow_list_entry(entry: object, position: int = 1) -> str:
    """The canonical (NFC) form of one entry, or ConfigError naming it (sanitized)."""
    if not isinstance(entry, str):
        raise ConfigError(f"{SETTING} entry #{position} is not a string")
    entry = entry.strip()
    if not entry:
        raise ConfigError(f"{SETTING} entry #{position} is empty")
    problem = _entry_problem(entry)
    if problem is not None:
        raise ConfigError(f'{SETTING} entry #{position} "{sanitize_for_log(entry, limit=200)}" {problem}')
    return unicodedata.normalize("NFC", entry)


def parse_allow_list(raw: str | Iterable[str]) -> tuple[str, ...]:
    """A JSON array of strings, or entries separated by commas and/or newlines (an entry that
    contains a comma needs the JSON form). Whitespace around entries is ignored; an empty list,
    an empty entry or any invalid entry is a ConfigError. Duplicates are dropped."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                entries = json.loads(text)
            except ValueError:
                raise ConfigError(f"{SETTING} is not a valid JSON array") from None
            if not isinstance(entries, list):
                raise ConfigError(f"{SETTING} is not a valid JSON array")
        else:
            entries = re.split(r"\r?\n|,", text) if text else []
    else:
        entries = list(raw)
    if not entries:
        raise ConfigError(f"{SETTING} is empty: it must list at least one //depot/dir/... prefix")
    canonical = [validate_allow_list_entry(entry, position) for position, entry in enumerate(entries, 1)]
    return tuple(dict.fromkeys(canonical))


def resolve_allow_list(entries: tuple[str, ...] | None, environment: str | None) -> tuple[str, ...]:
    """The configured entries; unset, the fixture default in an explicit local/test environment
    and a ConfigError anywhere else: production never silently reads the whole depot."""
    if entries:
        return entries
    if environment in DEFAULT_ENVIRONMENTS:
        return DEFAULT_ALLOW_LIST
    raise ConfigError(
        f"{SETTING} is not set; it is required unless P4REVIEW_ENV is one of {', '.join(sorted(DEFAULT_ENVIRONMENTS))}"
    )


# --- matching ---------------------------------------------------------------------------------------------
class DepotAllowList:
    """Validated prefixes and the decision for a candidate path.

    `case_insensitive` mirrors the server's `p4 info` "Case Handling". It folds ASCII letters
    only: str.casefold() would also equate characters p4 keeps apart (KELVIN SIGN and "k",
    LONG S and "s"), which could widen a prefix. A server folding more than ASCII only makes
    this comparison stricter than the server's, never looser.
    """

    def __init__(self, entries: Iterable[str], *, case_insensitive: bool = False):
        self.entries = parse_allow_list(entries)
        self.case_insensitive = case_insensitive
        # "//depot/proj/..." -> "//depot/proj/": a path is inside when it continues past that.
        self._prefixes = tuple(self._fold(entry[:-3]) for entry in self.entries)

    def _fold(self, text: str) -> str:
        return text.translate(_ASCII_LOWER) if self.case_insensitive else text

    def _inside(self, path: str) -> bool:
        folded = self._fold(path)
        return any(folded.startswith(prefix) and len(folded) > len(prefix) for prefix in self._prefixes)

    def check(self, path: str) -> PathDecision:
        try:
            normalized, structure_changed = _normalize(path)
        except PathRejected as rejected:
            return PathDecision(path=path, allowed=False, reason=rejected.reason)
        if not self._inside(normalized):
            return PathDecision(path, False, DenialReason.OUTSIDE_ALLOW_LIST, normalized)
        # Inside once normalized, but p4 would read the raw spelling differently (a `..`, `//`,
        # %2E or %2F, or a non-NFC name whose literal form is outside): refuse, do not guess.
        if structure_changed or not self._inside(_p4_literal(path)):
            return PathDecision(path, False, DenialReason.NON_CANONICAL, normalized)
        return PathDecision(path, True, None, normalized)

    def allows(self, path: str) -> bool:
        return self.check(path).allowed
