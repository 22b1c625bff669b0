"""What a changed file may not tell its analyzers (pure): the copy the analyzers read is the
file's content with these directives made inert, every line kept at its number.

A change's author writes the file the analyzers read, so anything in it that steers an analyzer
is the author steering their own review. The tools' switches cover most of it (the runner passes
`--ignore-nosec`, `--ignore-noqa`, `--neverignore`, `--disable-ignore-pragma`, no
`--inline-suppr`, eslint's `--no-inline-config`); what no switch covers is rewritten here:

- shellcheck's `# shellcheck disable=...` (and every other directive but a plain `shell=`): no
  switch turns them off. Placed before the first command, one silences the whole file; a
  malformed one (`# shellcheckdisable`) or one after a command makes shellcheck give up on the
  file. The comment stays a comment, marked: `# p4review-ignored shellcheck disable=SC2086`.
- hadolint's `# hadolint shell=pwsh` (any shell it does not take for POSIX): it turns off the
  shellcheck rules of every RUN below it, and no switch turns it off. Marked the same way.
- cppcheck's preprocessor reads the file an `#include` names, wherever it is (`/dev/zero` runs
  it to the time limit, `/etc/passwd` is read), and so does `__has_include`; `#line` moves its
  reports to other lines or another file, which the added-lines filter then drops. Those
  directives are blanked (each file sits alone in its folder, so no `#include` ever found a
  header: cppcheck sees what it saw before), and `__has_include(...)` in `#if`/`#elif` becomes 0,
  its answer for every header before.

Old lines and added lines alike, as the tools' switches do: a suppression one change adds would
otherwise silence the next change's lines beneath it. Reports are kept to the added lines anyway
(`analysis.on_added_lines`), so a line suppressed before is reported only when a change edits it.

The C scan is deliberately wider than a preprocessor, since a directive it missed could read a
file: `#` (or `%:`, `??=`) opens a directive after nothing but blanks or a comment's end, and the
directive runs on past a backslash-newline (`\\`, `??/`) or an open block comment; `\\r` alone
ends a line, as it does for simplecpp. A string that merely looks like such a line loses that line
for cppcheck and flawfinder."""

from __future__ import annotations

import re

from p4review.change.analyzer_files import CPPCHECK, FLAWFINDER, HADOLINT, SHELLCHECK

# ---------------------------------------------------------------------------------------
# shellcheck

# A comment starts a word: at a line's start or after a blank or an operator (`${#x}` and `$#`
# are not comments).
_SHELLCHECK_COMMENT = re.compile(r"(?:^|(?<=[\s;&|()]))#([ \t]*)(?=shellcheck)(.*)$", re.IGNORECASE | re.MULTILINE)
# The dialect directive only changes which shell the script is read as, as a shebang would.
_DIALECT_ONLY = re.compile(r"shellcheck[ \t]+shell=(?:sh|bash|dash|ksh|busybox)[ \t\r]*(?:#.*)?$")
IGNORED_MARK = "p4review-ignored "


def shell_script(text: str) -> str:
    """Every shellcheck directive but a plain `shell=` made an ordinary comment."""

    def inert(match: re.Match[str]) -> str:
        blanks, rest = match.group(1), match.group(2)
        return match.group(0) if _DIALECT_ONLY.match(rest) else f"#{blanks}{IGNORED_MARK}{rest}"

    return _SHELLCHECK_COMMENT.sub(inert, text)


# ---------------------------------------------------------------------------------------
# hadolint

# `# hadolint shell=pwsh` (or cmd, powershell, zsh: any shell it does not take for POSIX) makes
# hadolint skip shellcheck on every RUN below it, and --disable-ignore-pragma covers only
# `ignore=`. A pragma is a comment line of its own: `#`, blanks, `hadolint` (case as written).
_HADOLINT_PRAGMA = re.compile(r"^([ \t]*#[ \t]*)(hadolint\b.*)$", re.IGNORECASE | re.MULTILINE)
# A POSIX shell only tells shellcheck the dialect, as a SHELL instruction would.
_POSIX_SHELL_ONLY = re.compile(
    r"hadolint[ \t]+shell[ \t]*=[ \t]*(?:/(?:usr/)?bin/)?(?:sh|bash|dash|ksh|ash|busybox)"
    r"(?:[ \t]+[^\s#]+)*[ \t\r]*(?:#.*)?$"  # its arguments (`-o pipefail -c`): hadolint reads the first word
)


def dockerfile(text: str) -> str:
    """Every hadolint pragma but a POSIX `shell=` made an ordinary comment."""

    def inert(match: re.Match[str]) -> str:
        lead, rest = match.group(1), match.group(2)
        return match.group(0) if _POSIX_SHELL_ONLY.match(rest) else f"{lead}{IGNORED_MARK}{rest}"

    return _HADOLINT_PRAGMA.sub(inert, text)


# ---------------------------------------------------------------------------------------
# C and C++ (what cppcheck's preprocessor, simplecpp, acts on; flawfinder reads the same copy)

_NEWLINE = re.compile(r"(\r\n|\n|\r)")
# simplecpp skips every byte up to a space as a blank; a byte-order mark may open the file.
_BLANK = r"[\x00-\x09\x0b\x0c\x0e-\x20\ufeff]"
# `#`, or its digraph or trigraph, opens a directive after nothing but blanks or a comment's end.
_MARK = r"(?:#|%:|\?\?=)"
_DIRECTIVE_START = re.compile(rf"(?:^|\*/){_BLANK}*{_MARK}")
_SPLICE_AT_END = re.compile(rf"(?:\\|\?\?/){_BLANK}*$")
_SPLICE = re.compile(rf"(?:\\|\?\?/){_BLANK}*(?:\r\n|\n|\r)")
# A comment left open runs to the directive's end (and the pattern stays linear on `/*/*/*...`).
_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)|//[^\n\r]*", re.DOTALL)
_NAME = re.compile(rf"{_MARK}{_BLANK}*(\w*)")
# Directives that read a file; those that move the reports (`#line 3`, GCC's `# 3 "file.c"`,
# simplecpp's `#file "x.c"` and `#endfile`).
_READS_A_FILE = frozenset({"include", "include_next", "import", "embed"})
_MOVES_REPORTS = frozenset({"line", "file", "endfile"})
# The conditions that only ask whether a macro is defined never open a file.
_ASKS_A_NAME = frozenset({"ifdef", "ifndef", "elifdef", "elifndef"})
_HAS_INCLUDE_CALL = re.compile(rf"__has_include(?:_next)?{_BLANK}*\([^()]*\)", re.IGNORECASE)
_HAS_INCLUDE_DEFINED = re.compile(
    rf"defined{_BLANK}*(?:\({_BLANK}*__has_include(?:_next)?{_BLANK}*\)|{_BLANK}__has_include(?:_next)?\b)",
    re.IGNORECASE,
)


def c_source(text: str) -> str:
    """`#include`-like and `#line`-like directives blanked, `__has_include(...)` in a condition
    made 0; every line ending kept, so every line keeps its number."""
    parts = _NEWLINE.split(text)
    lines, endings = parts[0::2], parts[1::2]
    index = 0
    while index < len(lines):
        start = _DIRECTIVE_START.search(lines[index])
        if start is None:
            index += 1
            continue
        column = start.end() - _mark_length(lines[index], start.end())
        last, pieces = index, [lines[index][column:]]
        in_comment = _ends_in_comment(pieces[0], in_comment=False)
        while last + 1 < len(lines) and (in_comment or _SPLICE_AT_END.search(lines[last])):
            last += 1
            pieces += [endings[last - 1], lines[last]]
            in_comment = _ends_in_comment(lines[last], in_comment)
        replacement = _inert("".join(pieces))
        if replacement is not None:
            lines[index] = lines[index][:column] + replacement
            for blanked in range(index + 1, last + 1):
                lines[blanked] = ""
        index = last + 1
    return "".join(line + ending for line, ending in zip(lines, [*endings, ""], strict=True))


def _mark_length(line: str, end: int) -> int:
    return 3 if line[end - 3 : end] == "??=" else 2 if line[end - 2 : end] == "%:" else 1


def _inert(directive: str) -> str | None:
    """What a directive becomes in the analyzers' copy: None to keep it as it is."""
    joined = _COMMENT.sub(" ", _SPLICE.sub("", directive))
    found = _NAME.match(joined)
    name = found.group(1).lower() if found else ""
    if name in _READS_A_FILE or name in _MOVES_REPORTS or name.isdigit():
        return ""
    if "has_include" not in joined.lower() and "has_include" not in directive.lower():
        return None
    if name in _ASKS_A_NAME:
        return None
    if name in ("if", "elif"):
        # Before, no header was ever found, and the preprocessor knows __has_include.
        answered = _HAS_INCLUDE_DEFINED.sub("1", _HAS_INCLUDE_CALL.sub("0", joined))
        if "has_include" not in answered.lower() and _NEWLINE.search(answered) is None:
            return answered
    return ""


def _ends_in_comment(line: str, in_comment: bool) -> bool:
    """Whether a block comment is open at the end of a directive's line, given whether one was at
    its start: the directive then runs on into the next line. Strings and `//` comments end with
    their line, as a C lexer reads them."""
    position, length = 0, len(line)
    while position < length:
        if in_comment:
            close = line.find("*/", position)
            if close < 0:
                return True
            position, in_comment = close + 2, False
            continue
        char = line[position]
        if char in "\"'":
            position += 1
            while position < length and line[position] != char:
                position += 2 if line[position] == "\\" else 1
            position += 1
        elif line.startswith("//", position):
            return False
        elif line.startswith("/*", position):
            position, in_comment = position + 2, True
        else:
            position += 1
    return in_comment


def analyzer_copy(analyzers: tuple[str, ...], text: str) -> str:
    """The content the analyzers that read a file are given."""
    if SHELLCHECK in analyzers:
        text = shell_script(text)
    if HADOLINT in analyzers:
        text = dockerfile(text)
    if CPPCHECK in analyzers or FLAWFINDER in analyzers:
        text = c_source(text)
    return text
