"""Safeguards a change removes (pure): a NULL check, a bounds check, an error check, a
release of a resource, a lock, an escaping call, a Dockerfile's non-root USER.

Analyzers only see the new code, and a line that is gone cannot be flagged where it was: yet
deleting a check is how many defects are written (a fix adds the check; undoing it is the bug).
So the offline reviewer reads each hunk's removed lines too. A removed line is reported when it
matches a safeguard pattern for its file's language and the change does not put the same kind
of safeguard back in that hunk, nor the same line anywhere in the file (code that moved).

The finding sits on the removal point (the nearest added line of the hunk, else the new-side
line where the lines were removed) so the line policy keeps it, and it quotes nothing: the kind
of safeguard is named, not its text.

Above 500 lines on purpose: most of it is the safeguard patterns per language (data), kept beside
the pairing of removed and added lines that reads them."""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from p4review.change.unified_diff import parse_hunk_header, split_diff_lines

_C = frozenset({".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".inl", ".ipp"})
_PYTHON = frozenset({".py", ".pyw", ".pyi"})
_JS = frozenset({".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"})
_SHELL = frozenset({".sh", ".bash", ".ksh", ".bats"})

C, PYTHON, JS, SHELL, DOCKERFILE = "c", "python", "js", "shell", "dockerfile"


@dataclass(frozen=True)
class Safeguard:
    kind: str  # the rule id's tail: removed-<kind>
    name: str  # how the finding names it
    category: str
    patterns: dict[str, re.Pattern[str]]


# curl told to fail on an HTTP error (-f, --fail, -fsSL...): without it an error page is saved or
# piped on as if it were the download.
_CURL_FAIL = r"\bcurl\b[^|;&]*\s(?:-[a-zA-Z]*f[a-zA-Z]*|--fail(?:-with-body)?)\b"
# A failure status recorded on an error path: `ret = -1;`, `rc = -EINVAL;`, shell `_retval=1`.
_FAILURE_STATUS = r"^\s*_?(?:ret|retval|rc|err|error|status|result|exit_?code)\s*=\s*(?:-?[1-9]\d*|-E[A-Z]+)"
_SHELL_FAILURE_STATUS = _FAILURE_STATUS.replace(r"\s*=\s*", "=")
_SIZE_WORD = r"\w*(?:len|length|size|count|max|min|limit|cap|capacity|bound|end|num|total)\w*"
_COMPARE = r"(?:<=?|>=?)"

# Each (safeguard, language) pair was measured on ordinary commits (tools/ordinary_commits_noise.py):
# a pair that fired on 3 or more ordinary hunks of its language, at more than half the rate per
# hunk at which it hit the dev reversed fixes' defects of that language, was taken out as noise:
# the NULL check in Python (`if not x:`, `is None`), JavaScript and shell (`-z`/`-n` tests), and
# JavaScript's error checks, guard clauses and weakened lines, and Dockerfiles' weakened lines.
SAFEGUARDS: tuple[Safeguard, ...] = (
    Safeguard(
        "null-check",
        "a NULL check",
        "correctness",
        {
            C: re.compile(
                r"\bif\s*\(.*(?:[!=]=\s*(?:NULL|nullptr)\b|(?:NULL|nullptr)\s*[!=]=)"
                r"|\bif\s*\((?:.*(?:&&|\|\|))?\s*!\s*[\w.>\[\]-]+\s*\)"
            ),
        },
    ),
    Safeguard(
        "bounds-check",
        "a bounds or size check",
        "correctness",
        {
            language: re.compile(
                rf"\b(?:if|while|assert|elif)\b.*(?:\b{_SIZE_WORD}\b\s*{_COMPARE}|{_COMPARE}=?\s*(?:\w+\s*[-+]\s*)?\b{_SIZE_WORD}\b)",
                re.IGNORECASE,
            )
            for language in (C, PYTHON, JS)
        },
    ),
    Safeguard(
        "error-check",
        "an error check or handler",
        "reliability",
        {
            C: re.compile(
                r"\bif\s*\(.*(?:<\s*0\b|==\s*-1\b|\berr(?:no|or)?\b|\bret\w*\s*[!=<]|\bfailed\b|== EOF)"
                rf"|{_FAILURE_STATUS}\s*;"
            ),
            PYTHON: re.compile(r"^\s*(?:try\s*:|except\b|finally\s*:|raise\b)"),
            SHELL: re.compile(
                r"\|\|\s*(?:exit|return|die|fail|false)\b|\bset\s+-[a-z]*[eu]|\$\?\s*-(?:ne|eq)|\bif\s+!\s"
                r"|\bset\s+-o\s+(?:errexit|nounset|pipefail)\b"
                rf"|{_SHELL_FAILURE_STATUS}\s*$"
            ),
        },
    ),
    Safeguard(
        "release",
        "a release of a resource (free, close, unlock)",
        "reliability",
        {
            C: re.compile(
                r"\b(?:free|fclose|close|closedir|munmap|pclose|freeaddrinfo|\w+_(?:free|destroy|release|unref|close)"
                r"|\w*[dD]ealloc\w*)\s*\("
            ),
            PYTHON: re.compile(
                r"\.(?:close|release|shutdown|terminate|unlink|cleanup)\s*\(\s*\)|^\s*with\s+.+\bas\b"
                r"|(?<![\w.])(?:\w*_)?close(?:_\w+)?\s*\(\s*\w"
            ),
            JS: re.compile(r"\.(?:close|end|destroy|release|removeListener|off|unref|abort)\s*\("),
        },
    ),
    Safeguard(
        "lock",
        "a lock",
        "reliability",
        {
            C: re.compile(r"\b\w*(?:mutex_(?:un)?lock|spin_(?:un)?lock|_lock|_unlock)\s*\("),
            PYTHON: re.compile(r"\.(?:acquire|release)\s*\(|^\s*with\s+[\w.]*(?:lock|Lock|mutex|semaphore)\b"),
            JS: re.compile(r"\b(?:lock|unlock|acquire|release)\s*\(|\bAtomics\.\w+\("),
        },
    ),
    Safeguard(
        "escaping",
        "an escaping or validation call",
        "security",
        {
            language: re.compile(
                r"\b(?:\w*escape\w*|\w*sanitiz\w*|quote|shlex\.quote|encodeURI(?:Component)?|realpath|normpath|"
                r"abspath|secure_filename|validate\w*|safe_load|safe_join)\s*\(",
                re.IGNORECASE,
            )
            for language in (C, PYTHON, JS)
        },
    ),
    Safeguard(
        "docker-hardening",
        "a Dockerfile hardening step (non-root USER, checksum or signature check, --no-install-recommends)",
        "security",
        {
            DOCKERFILE: re.compile(
                rf"^\s*USER\s+(?!root\b|0\b)\S|sha256sum|sha512sum|gpg\s+--verify|--checksum|--no-install-recommends|{_CURL_FAIL}"
                r"|^\s*SHELL\s*\[.*pipefail",
                re.IGNORECASE,
            )
        },
    ),
    Safeguard(
        "curl-fail",
        "curl's --fail (an HTTP error would pass as a successful download)",
        "reliability",
        {SHELL: re.compile(_CURL_FAIL)},
    ),
    Safeguard(
        "termination",
        "the NUL termination of a buffer",
        "security",
        {C: re.compile(r"^\s*[\w.>()*-]+\[[^\]]+\]\s*=\s*(?:0|'\\0'|NUL)\s*;")},
    ),
    Safeguard(
        "limit",
        "a resource, size or depth limit",
        "security",
        {
            language: re.compile(r"\b(?:set\w*limit\w*|\w+_limit|setrlimit)\s*\(", re.IGNORECASE)
            for language in (C, PYTHON, JS)
        },
    ),
    Safeguard(
        "version-pin",
        "a version pin or constraint on a package",
        "reliability",
        {DOCKERFILE: re.compile(r"""(?:^|[\s'"])[A-Za-z][\w.\[\]-]*\s*(?:==|<=?|~=|!=|>=)\s*v?\d[\w.*]*""")},
    ),
)
# A condition that loses a clause: `if a and b:` becomes `if a:`. Fixes add clauses; the
# change that takes one away lets through what the clause kept out.
CONDITION_CLAUSE = Safeguard("condition-clause", "a clause of a condition", "correctness", {})
_CONDITION = re.compile(r"^\s*(?:}\s*)?(?:if|elif|else\s+if|while)\b\s*\(?(.*?)\)?\s*(?::|\{|;?\s*then|;?\s*do|;)?\s*$")
# A C-style for loop's condition: `for (init; condition; step)`.
_FOR_CONDITION = re.compile(r"^\s*for\s*\([^;]*;([^;]*);[^;]*\)\s*\{?\s*$")
_CLAUSE_SPLIT = re.compile(r"\s*(?:&&|\|\||\band\b|\bor\b|-a\b|-o\b)\s*")
_TRAILING_COMMENT = {
    C: re.compile(r"\s*(?://.*|/\*.*\*/)\s*$"),
    JS: re.compile(r"\s*(?://.*|/\*.*\*/)\s*$"),
    PYTHON: re.compile(r"\s+#[^'\"]*$"),
    SHELL: re.compile(r"\s+#[^'\"]*$"),
    DOCKERFILE: re.compile(r"\s+#[^'\"]*$"),
}

# A guard clause: a check whose body leaves (returns, breaks, jumps to the error path, raises).
# Fixes add them in front of the code that would misbehave; removing one lets that code run.
GUARD_CLAUSE = Safeguard(
    "guard-clause", "a guard clause (a check that returns, breaks or fails early)", "correctness", {}
)
_GUARD_OPEN = {
    C: re.compile(r"^\s*(?:}\s*)?(?:else\s+)?if\s*\("),
    JS: re.compile(r"^\s*(?:}\s*)?(?:else\s+)?if\s*\("),
    PYTHON: re.compile(r"^\s*(?:el)?if\b"),
    SHELL: re.compile(r"^\s*(?:(?:el)?if|case)\s|^\s*\[\[?\s.*\]\]?\s*(?:&&|\|\|)"),
}
_GUARD_EXIT = {
    C: re.compile(r"\b(?:return|break|continue|goto\s+\w+|abort|exit)\b"),
    JS: re.compile(r"\b(?:return|break|continue|throw)\b"),
    PYTHON: re.compile(r"\b(?:return|break|continue|raise)\b"),
    SHELL: re.compile(r"\b(?:return|exit|break|continue|next|die|fail)\b"),
}
_GUARD_BODY = 6  # lines after the opening line searched for the exit
# The languages whose removed guard clauses are reported (JavaScript's were noise, see SAFEGUARDS).
_GUARDED_LANGUAGES = frozenset({C, PYTHON, SHELL})
_CONTINUED = 3  # lines a removed condition may continue on

# A block that ran under a condition and now runs always: the `if` line is removed, its body
# is kept (re-indented).
UNCONDITIONAL_BLOCK = Safeguard(
    "unconditional-block", "the condition a block ran under (the block now always runs)", "correctness", {}
)
_BLOCK_NOISE = re.compile(r"^[\s{}();:]*$|^\s*(?:fi|then|do|done|else|end|pass)\s*;?\s*$")

# A pointer reset to NULL right after it is freed: without it the stale pointer can be freed
# again or used after the free.
DANGLING_POINTER = Safeguard("null-after-free", "the reset of a pointer to NULL after it is freed", "reliability", {})
_NULL_ASSIGNMENT = re.compile(r"^\s*([\w.>\[\]-]+?)\s*=\s*(?:NULL|nullptr)\s*;")
_FREEING = re.compile(r"\b\w*(?:free|dealloc\w*|release|destroy|delete)\w*\s*\(", re.IGNORECASE)

# A line edited only by deleting part of it, where the part is a protection: a clause of a
# condition, the quotes around a shell expansion, a `${VAR:-default}`, a regex anchor, an escape,
# a `+ 1`/`- 1` size adjustment, the macro or call that checked a call's result, a precision
# in a format, a default argument, or the `s` of `https`. The rest of the line is untouched,
# so the deleted part was the whole point of the edit.
WEAKENED_LINE = Safeguard(
    "weakened-line",
    "a protective part of a line (a condition clause, quoting, a default, an anchor, a result check "
    "or a size adjustment)",
    "correctness",
    {},
)
_ANY = "any"
# The languages whose weakened lines are reported (JavaScript's and Dockerfiles' were noise, see SAFEGUARDS).
_WEAKENED_LANGUAGES = frozenset({C, PYTHON, SHELL})
_WEAKENING: dict[str, tuple[re.Pattern[str], ...]] = {
    # Each pattern is searched in the deleted parts joined with "\x00" (kept apart).
    _ANY: (
        re.compile(r"^\s*(?:&&|\|\||\band\b|\bor\b)\s*\S[^\x00]*$|^[^\x00]*\S\s*(?:&&|\|\||\band\b|\bor\b)\s*$"),
        re.compile(r"^\s*[-+]\s*1\s*$"),  # an off-by-one adjustment
    ),
    SHELL: (
        re.compile(r'^(?:"\x00?)+$'),  # quotes only
        re.compile(r"^\{?\x00?:?-[^\x00]*\}$|^\{\x00:?-\}$"),  # ${VAR:-...} -> $VAR
        re.compile(r"^\s*command\s*$"),  # `command` bypasses aliases and functions
        re.compile(r"^(?:\\+\x00?)+$"),  # an escape
        re.compile(r"^(?:[$^]\x00?)+$"),  # regex anchors
    ),
    C: (
        re.compile(r"^[A-Za-z_]\w*\s*\(\s*\x00\s*\)\s*$"),  # WRAP(call(...)) -> call(...)
        re.compile(r"^\.\*$|^\.\d+$"),  # a precision in a format: %.*s -> %s
    ),
    PYTHON: (
        re.compile(r"^\s*,\s*[^,\x00]+$"),  # a default argument (getattr/get/...)
        re.compile(r"^(?:[$^]\x00?)+$|^\\[AZz]$"),
    ),
}
_FALLBACK_GETATTR = re.compile(r"\bgetattr\(\s*([\w.]+)\s*,\s*['\"](\w+)['\"]\s*,\s*[^()]+?\)")
_FALLBACK_GET = re.compile(r"\b([\w.]+)\.get\(\s*([^,()]+?)\s*(?:,\s*[^()]+?)?\)")
_BRACKET_SPACE = re.compile(r"(?<=[(\[{])\s+|\s+(?=[)\]}])|(\s)\s+")
_CONTINUATION = re.compile(r"\s*\\$")
_DEFAULTED_CALL = re.compile(r"\b(?:getattr|get|pop|setdefault|next|environ\.get|getenv)\s*\(")

RULE_IDS = tuple(
    f"removed-{s.kind}"
    for s in (*SAFEGUARDS, CONDITION_CLAUSE, GUARD_CLAUSE, UNCONDITIONAL_BLOCK, DANGLING_POINTER, WEAKENED_LINE)
)


def language_of(depot_path: str) -> str | None:
    name = posixpath.basename(depot_path).lower()
    extension = posixpath.splitext(name)[1]
    if extension in _C:
        return C
    if extension in _PYTHON:
        return PYTHON
    if extension in _JS:
        return JS
    if extension in _SHELL:
        return SHELL
    if name in ("dockerfile", "containerfile") or name.startswith("dockerfile.") or name.endswith(".dockerfile"):
        return DOCKERFILE
    return None


_COMMENT = {
    C: re.compile(r"^\s*(?://|/\*|\*(?:\s|/|$))"),
    JS: re.compile(r"^\s*(?://|/\*|\*(?:\s|/|$))"),
    PYTHON: re.compile(r"^\s*#"),
    SHELL: re.compile(r"^\s*#"),
    DOCKERFILE: re.compile(r"^\s*#"),
}


@dataclass
class _Hunk:
    removed: list[tuple[int, str]] = field(default_factory=list)  # (new-side position, text)
    added: list[tuple[int, str]] = field(default_factory=list)
    # Every line in order: (marker " ", "-" or "+", new-side position, text).
    lines: list[tuple[str, int, str]] = field(default_factory=list)


def _hunks(diff: str) -> Iterator[_Hunk]:
    hunk: _Hunk | None = None
    old_left = new_left = new_line = 0
    for raw in split_diff_lines(diff):
        header = parse_hunk_header(raw) if old_left <= 0 and new_left <= 0 or raw.startswith("@@") else None
        if header is not None:
            if hunk is not None:
                yield hunk
            hunk = _Hunk()
            old_left, new_left, new_line = header.old_count, header.new_count, header.new_start
            continue
        if hunk is None or (old_left <= 0 and new_left <= 0) or raw.startswith("\\"):
            continue
        marker = raw[:1]
        if marker == "-":
            hunk.removed.append((new_line, raw[1:]))
            hunk.lines.append(("-", new_line, raw[1:]))
            old_left -= 1
        elif marker == "+":
            hunk.added.append((new_line, raw[1:]))
            hunk.lines.append(("+", new_line, raw[1:]))
            new_line += 1
            new_left -= 1
        else:
            hunk.lines.append((" ", new_line, raw[1:]))
            old_left -= 1
            new_left -= 1
            new_line += 1
    if hunk is not None:
        yield hunk


def _normal(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class RemovedSafeguard:
    line: int
    safeguard: Safeguard
    # The last removal point of the same kind in the hunk, when the hunk removes several.
    end_line: int | None = None


def _spanning(points: list[int], safeguard: Safeguard) -> RemovedSafeguard:
    low, high = min(points), max(points)
    return RemovedSafeguard(low, safeguard, high if high != low else None)


def removed_safeguards(depot_path: str, diff: str) -> list[RemovedSafeguard]:
    """One report per hunk and kind of safeguard the hunk removes and does not put back."""
    language = language_of(depot_path)
    if language is None:
        return []
    comment = _COMMENT[language]
    hunks = list(_hunks(diff))
    added_anywhere = {_normal(text) for hunk in hunks for _, text in hunk.added}
    found: list[RemovedSafeguard] = []
    for hunk in hunks:
        before = len(found)
        for safeguard in SAFEGUARDS:
            pattern = safeguard.patterns.get(language)
            if pattern is None:
                continue
            if any(pattern.search(text) and not comment.match(text) for _, text in hunk.added):
                continue  # the same kind of safeguard is (re)written in this hunk
            points = [
                _anchor(position, hunk)
                for position, text, logical in _logical_removed(hunk)
                if not comment.match(text) and pattern.search(logical) and _normal(text) not in added_anywhere
            ]
            if points:
                found.append(_spanning(points, safeguard))
        reported = len(found) > before
        dropped = _dropped_clause(hunk, comment, _TRAILING_COMMENT[language])
        if dropped is not None:
            found.append(RemovedSafeguard(dropped, CONDITION_CLAUSE))
            reported = True
        if not reported and (guards := _removed_guards(hunk, language, comment, added_anywhere)):
            found.append(_spanning(guards, GUARD_CLAUSE))
            reported = True
        if not reported and (unguarded := _unconditional_blocks(hunk, language, comment)):
            found.append(_spanning(unguarded, UNCONDITIONAL_BLOCK))
            reported = True
        if language == C and (resets := _removed_null_resets(hunk, comment)):
            found.append(_spanning(resets, DANGLING_POINTER))
        if not reported and language in _WEAKENED_LANGUAGES and (weakened := _weakened_lines(hunk, language, comment)):
            found.append(_spanning(weakened, WEAKENED_LINE))
    return found


def _logical_removed(hunk: _Hunk) -> Iterator[tuple[int, str, str]]:
    """Each removed line with its logical line: joined with the removed lines that follow
    while its parentheses are open (`if (a &&` + `b > n) {`), up to _CONTINUED lines."""
    removed = hunk.removed
    for index, (position, text) in enumerate(removed):
        logical = text
        for _, following in removed[index + 1 : index + 1 + _CONTINUED]:
            if logical.count("(") <= logical.count(")"):
                break
            logical = f"{logical} {following.strip()}"
        yield position, text, logical


def _replacements(hunk: _Hunk) -> Iterator[tuple[list[str], list[tuple[int, str]]]]:
    """Each run of removed lines with the run of added lines that replaces it."""
    removed: list[str] = []
    added: list[tuple[int, str]] = []
    for marker, position, text in [*hunk.lines, (" ", 0, "")]:
        if marker == "-" and added:
            yield removed, added
            removed, added = [], []
        if marker == "-":
            removed.append(text)
        elif marker == "+":
            added.append((position, text))
        else:
            if removed and added:
                yield removed, added
            removed, added = [], []


def _deleted_parts(before: str, after: str) -> list[str] | None:
    """The parts of `before` deleted to make `after`, when `after` is `before` with parts
    deleted and nothing added; else None. Greedy, on the longest common run first."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    parts: list[str] = []
    for operation, low, high, _, _ in matcher.get_opcodes():
        if operation == "equal":
            continue
        if operation != "delete":
            return None
        parts.append(before[low:high])
    return parts or None


def _weakened_lines(hunk: _Hunk, language: str, comment: re.Pattern[str]) -> list[int]:
    """The added lines that are removed lines with a protective part deleted."""
    patterns = (*_WEAKENING[_ANY], *_WEAKENING.get(language, ()))
    trailing = _TRAILING_COMMENT[language]

    def bare(text: str) -> str:  # no trailing comment, no line continuation, spacing normalized
        return _normal(_CONTINUATION.sub("", trailing.sub("", text)))

    points: list[int] = []
    for removed, added in _replacements(hunk):
        before_lines = [bare(text) for text in removed if not comment.match(text)]
        if len(removed) > 1 and len(added) == 1:  # a statement over several lines, now on one
            before_lines.append(_BRACKET_SPACE.sub(r"\1", " ".join(before_lines)))
        for position, text in added:
            after = bare(text)
            if not after or comment.match(text):
                continue
            for before in before_lines:
                # Most of the line is kept: a line cut down to a fragment is a rewrite, not a weakening.
                if len(before) > len(after) >= len(before) / 2 and _weakening(before, after, patterns):
                    points.append(position)
                    break
    return points


def _weakening(before: str, after: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    if after.replace("http://", "https://") == before:
        return True  # a scheme downgrade
    if "\\Z" in before and after.replace("$", "\\Z") == before:
        return True  # `$` also matches before a trailing newline; `\Z` does not
    if _FALLBACK_GETATTR.sub(r"\1.\2", before) == after or _FALLBACK_GET.sub(r"\1[\2]", before) == after:
        return True  # a lookup with a fallback became one that raises
    parts = _deleted_parts(before, after)
    if parts is None or not "".join(parts).strip():
        return False
    deleted = "\x00".join(part.strip() if len(parts) == 1 else part for part in parts)
    for pattern in patterns:
        if pattern.search(deleted):
            if pattern.pattern.startswith(r"^\s*,") and not _DEFAULTED_CALL.search(before):
                continue
            return True
    return False


def _removed_guards(hunk: _Hunk, language: str, comment: re.Pattern[str], added_anywhere: set[str]) -> list[int]:
    """The removal points of the guard clauses the hunk removes, unless it writes one itself."""
    opener, leaves = _GUARD_OPEN.get(language), _GUARD_EXIT.get(language)
    if opener is None or leaves is None or language not in _GUARDED_LANGUAGES:
        return []

    def guards(marker: str) -> Iterator[int]:
        lines = hunk.lines
        for index, (kind, position, text) in enumerate(lines):
            if kind != marker or comment.match(text) or not opener.search(text):
                continue
            body = [text]
            for following_kind, _, following in lines[index + 1 : index + 1 + _GUARD_BODY]:
                if following_kind != marker:
                    break
                body.append(following)
            if any(leaves.search(line) and not comment.match(line) for line in body):
                if marker == "+" or _normal(text) not in added_anywhere:
                    yield position

    if next(guards("+"), None) is not None:
        return []  # the hunk writes a guard of its own
    return [_anchor(position, hunk) for position in guards("-")]


def _unconditional_blocks(hunk: _Hunk, language: str, comment: re.Pattern[str]) -> list[int]:
    """The added lines that were the body of a removed `if` the hunk writes no condition for."""
    opener = _GUARD_OPEN.get(language)
    if opener is None or any(opener.search(text) for _, text in hunk.added):
        return []
    added = {_normal(text): position for position, text in hunk.added if not _BLOCK_NOISE.match(text)}
    lines = hunk.lines
    points: list[int] = []
    for index, (marker, _, text) in enumerate(lines):
        if marker != "-" or comment.match(text) or not opener.search(text) or text.lstrip().startswith("case"):
            continue
        for following_marker, _, following in lines[index + 1 : index + 1 + _GUARD_BODY]:
            if following_marker != "-":
                break
            if not comment.match(following) and (position := added.get(_normal(following))) is not None:
                points.append(position)
                break
    return points


def _removed_null_resets(hunk: _Hunk, comment: re.Pattern[str]) -> list[int]:
    """The removal points of `p = NULL;` lines removed from right after the free of p."""
    points: list[int] = []
    previous = ""
    for marker, position, text in hunk.lines:
        if marker == "+":
            continue
        if marker == "-" and not comment.match(text):
            match = _NULL_ASSIGNMENT.match(text)
            if match and _FREEING.search(previous) and match[1] in previous:
                points.append(_anchor(position, hunk))
        if text.strip():
            previous = text
    return points


def _clauses(text: str, trailing_comment: re.Pattern[str]) -> tuple[str, frozenset[str]] | None:
    text = trailing_comment.sub("", text)
    match = _CONDITION.match(text) or _FOR_CONDITION.match(text)
    if match is None or not match[1].strip():
        return None
    parts = frozenset(_normal(p).strip("() ") for p in _CLAUSE_SPLIT.split(match[1]) if p.strip("() "))
    return (match[0].split()[0], parts) if parts else None


def _dropped_clause(hunk: _Hunk, comment: re.Pattern[str], trailing_comment: re.Pattern[str]) -> int | None:
    """The added line of a condition that keeps some of a removed condition's clauses and
    drops others (and adds none), or None."""
    removed = [c for _, text in hunk.removed if not comment.match(text) and (c := _clauses(text, trailing_comment))]
    for line, text in hunk.added:
        added = None if comment.match(text) else _clauses(text, trailing_comment)
        if added is None:
            continue
        for _keyword, before in removed:
            if added[1] < before:
                return line
    return None


def _anchor(position: int, hunk: _Hunk) -> int:
    """The hunk's added line nearest the removal point, else the point itself."""
    if hunk.added:
        return min((line for line, _ in hunk.added), key=lambda line: (abs(line - position), line))
    return max(position, 1)
