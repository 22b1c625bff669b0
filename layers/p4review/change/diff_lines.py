"""Which new-side lines a change touched, so a finding placed on a line the change did not
touch (the commonest complaint about review bots) can be dropped or flagged.

Pure text processing, no I/O:

- `changed_lines_from_diff(diff)`: one file's unified diff -> `ChangedLines`;
- `split_describe_diff(text)`: a whole change's diff (`p4 describe -du`, `p4 diff2 -du`, or
  `---`/`+++` headed sections) -> {depot path: that file's diff text}."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from p4review.change.unified_diff import iter_added_lines, parse_hunk_header, split_diff_lines


@dataclass(frozen=True)
class ChangedLines:
    """`added`: new-side numbers of the added lines. `deletions`: for each hunk that adds
    nothing (it only removes lines), its new-side span (new_start .. new_start + new_count),
    i.e. where the removal happened -- a finding about removed code belongs there."""

    added: frozenset[int] = frozenset()
    deletions: tuple[tuple[int, int], ...] = ()
    _sorted: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Sorted copy for bisect: a finding's range may be huge (end_line = 10**9).
        object.__setattr__(self, "_sorted", tuple(sorted(self.added)))

    @property
    def has_hunks(self) -> bool:
        """False for a diff without hunks (binary, type-only change, no diff fetched): it says
        nothing about lines, so the parser does not line-check such a file."""
        return bool(self.added or self.deletions)

    def near(self, line: int, end_line: int | None = None, tolerance: int = 3) -> bool:
        """True when some line of [line, end_line or line] is within `tolerance` of an added
        line or of a deletion point."""
        low, high = sorted((line, line if end_line is None else end_line))
        tolerance = max(tolerance, 0)
        low, high = low - tolerance, high + tolerance
        i = bisect.bisect_left(self._sorted, low)
        if i < len(self._sorted) and self._sorted[i] <= high:
            return True
        return any(start <= high and end >= low for start, end in self.deletions)

    def touches_added(self, line: int, end_line: int | None = None) -> bool:
        """True when some line of [line, end_line or line] is itself an added line."""
        low, high = sorted((line, line if end_line is None else end_line))
        i = bisect.bisect_left(self._sorted, low)
        return i < len(self._sorted) and self._sorted[i] <= high


def changed_lines_from_diff(diff_text: str) -> ChangedLines:
    """One file's unified diff -> ChangedLines (headers and noise outside hunks are ignored)."""
    added = sorted({a.line for a in iter_added_lines(diff_text)})
    deletions = []
    for raw in split_diff_lines(diff_text):
        # Hunk bodies start with ' ', '+', '-' or '\\', so a line matching `@@ -` is a header.
        header = parse_hunk_header(raw)
        if header is None:
            continue
        start, end = header.new_start, header.new_start + header.new_count
        i = bisect.bisect_left(added, start)
        if not (i < len(added) and added[i] < end):  # the hunk adds nothing
            deletions.append((start, end))
    return ChangedLines(added=frozenset(added), deletions=tuple(deletions))


# `==== //depot/a.c#3 (text) ====` (describe), `==== //depot/a.c#2 (text) - //depot/a.c#3 (text)
# ==== content` (diff2), `==== <none> - //depot/new.c#1 ====`: the last depot spec is the new side.
_P4_HEADER = re.compile(r"^==== .*====")
_DEPOT_SPEC = re.compile(r"(//[^#\t]+?)#(?:\d+|none|head|have)\b")


def _header_path(line: str, prefix: str) -> str | None:
    """`--- //depot/a.c#3\\t2024-01-01 ...` -> `//depot/a.c` (None for /dev/null)."""
    path = line[len(prefix) :].split("\t", 1)[0].strip()
    path = re.sub(r"#(?:\d+|none|head|have)$", "", path)
    return None if path in ("", "/dev/null") else path


def split_describe_diff(text: str) -> dict[str, str]:
    """Split a change's diff into {path: that file's diff}. A section starts at a
    `==== ... ====` header or at a `--- x` + `+++ y` header pair outside a hunk (inside one,
    `--- x` is a removed line: hunk line counts are tracked). Text before the first section
    (change description, affected files) is ignored. A path seen twice gets both sections."""
    lines = split_diff_lines(text)
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    p4_header_only = False  # current section began with `====` and has no hunk yet
    git_header = False  # a `diff --git a/x b/x` line came since the last section began
    old_left = new_left = 0
    for i, raw in enumerate(lines):
        if old_left > 0 or new_left > 0:
            marker = raw[:1]
            if marker in ("+", "-", " ", "") or raw.startswith("\\"):
                if marker in ("-", " ", ""):
                    old_left -= 1
                if marker in ("+", " ", ""):
                    new_left -= 1
                if current is not None:
                    current.append(raw)
                continue
            old_left = new_left = 0  # malformed hunk: fall through to header handling
        starts, path = False, None
        if raw.startswith("diff --git "):
            git_header = True
        if _P4_HEADER.match(raw):
            specs = _DEPOT_SPEC.findall(raw)
            starts, path = True, specs[-1] if specs else None
            p4_header_only = path is not None
        elif raw.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            # After a `====` header, p4 may print its own ---/+++ pair: same section.
            if not (p4_header_only and current is not None):
                old, new = _header_path(raw, "--- "), _header_path(lines[i + 1], "+++ ")
                # git-style `a/`, `b/` prefixes: on both sides, or on the one side a `diff --git`
                # section has when the file is added or deleted (the other is /dev/null).
                if (git_header or (old and new)) and (old or "a/").startswith("a/") and (new or "b/").startswith("b/"):
                    old, new = old and old[2:], new and new[2:]
                starts, path = True, new or old
        if starts:  # a header naming no depot file ends the previous section all the same
            current = None if path is None else sections.setdefault(path, [])
            git_header = False
        if current is None:
            continue
        current.append(raw)
        header = parse_hunk_header(raw)
        if header is not None:
            old_left, new_left = header.old_count, header.new_count
            p4_header_only = False
    return {path: "".join(f"{line}\n" for line in body) for path, body in sections.items()}
