"""Generated-looking parts of file paths (issue 28 item 7): a token used as a file or directory
name (`deploy/keys/xoxb2f8KQ1.../config.yml`) has no keyword beside it, so the rules that need
one never see it. In a diff's file headers (`+++ b/...`, `diff --git`, p4's
`==== //depot/...#3 ====`, `Index:`), a path part that looks generated is masked, and only it:
the directories around it and the file's extension stay, so the path is still reviewable.
Digests, UUIDs and names made of words are left alone (`objects/3f/9a...`, `v2_final_draft`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from p4review.change.redaction.base import Rule, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import needles
from p4review.change.redaction.values import shannon_entropy

NAME = "path_token"

# Bodies of header lines (the scanner has set a `+`/`-` diff marker aside).
_HEADER_STARTS = ("++ ", "-- ", "diff --git ", "==== ", "Index: ")
# A path part: what lies between `/`, `.`, blanks and `#` (the revision of a depot path).
_PART = re.compile(r"[A-Za-z0-9_+=-]{20,}")
_PIECE = re.compile(r"[^_-]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F_-]+")
_CAMEL_WORD = re.compile(r"[A-Z][a-z]{2,}")
_WORDISH = re.compile(r"[A-Za-z]+[0-9]{0,3}|[0-9]{1,8}")  # `utf8`, `v2`, `20240131`


def _class_changes(piece: str) -> float:
    """The share of neighbouring characters of different kinds (lower, upper, digit): about
    0.6 in random base62 or base36 text, under 0.2 in names (`SecurityGroup3389`, `x86_64`)."""
    kinds = [0 if ch.islower() else 1 if ch.isupper() else 2 for ch in piece]
    return sum(left != right for left, right in zip(kinds, kinds[1:], strict=False)) / max(1, len(piece) - 1)


def _generated_piece(piece: str) -> bool:
    if len(piece) < 16 or _HEX.fullmatch(piece) or _WORDISH.fullmatch(piece):
        return False
    if not any(ch.isdigit() for ch in piece) or not any(ch.isalpha() for ch in piece):
        return False
    if sum(len(word) for word in _CAMEL_WORD.findall(piece)) * 2 >= len(piece):
        return False  # `S3RestrictPublicBuckets`, `K8sNodePoolAutoRepair`: words in CamelCase
    return _class_changes(piece) >= 0.3 and shannon_entropy(piece) >= 3.5


def _generated(part: str) -> bool:
    """Looks like a generated secret rather than a name, a version, a digest or an id: one of
    its pieces (between `-` and `_`) is long, mixes letters and digits, and changes between
    them (or case) as random text does."""
    if _HEX.fullmatch(part) or _UUID.search(part):
        return False
    return any(_generated_piece(piece) for piece in _PIECE.findall(part))


class PathPartRule(Rule):
    # No `--- ` needle: it would send every SQL comment and YAML document start here, and a
    # `--- a/<path>` line is reached through the copy of the value its `+++`/`diff --git` line
    # gave (copies.py); the change's depot paths are read as `+++ ` lines.
    def __init__(self) -> None:
        super().__init__(
            NAME,
            needles("+++ ", "==== ") + needles("diff --git ", "index: ", folded=True),
        )

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        if not body.startswith(_HEADER_STARTS):
            return body
        spans = []
        for match in _PART.finditer(body):
            if _generated(match.group()):
                spans.append((match.start(), match.end(), NAME))
        if not spans:
            return body
        counts[NAME] += len(spans)
        return splice(body, spans)


PATH_PART_RULE = PathPartRule()
