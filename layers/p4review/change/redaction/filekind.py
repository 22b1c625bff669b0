"""Which kind of file a diff line belongs to, from the nearest file header above it.

Only the password rule uses it, to read an unquoted bare word: in a config file
`password = hunter2` is a literal, in code `password = pw` is a variable. Built lazily (one
regex pass), the first time such a word needs judging."""

from __future__ import annotations

import bisect
import posixpath
import re
from enum import Enum


class FileKind(Enum):
    CODE = "code"
    CONFIG = "config"  # also the default: text with no header, unknown extensions
    PROSE = "prose"


_CODE = frozenset(
    """
py pyi pyx js jsx mjs cjs ts tsx java kt kts scala groovy c h cc cpp cxx hpp hh hxx inl ipp
cs go rs rb php swift m mm lua pl pm r dart ex exs erl hs clj cljs fs fsx vb html htm vue svelte
hlsl glsl usf ush shader cg sql ps1 psm1
""".split()
)
_PROSE = frozenset("md markdown rst txt adoc rtf".split())

# A file header starts a line with one of these (unified, p4 describe/diff2, git, svn).
_HEADER_PREFIXES = ("+++ ", "==== ", "diff --git ", "Index: ")
_HEADER = re.compile(r"\n(?:\+\+\+ |==== |diff --git |Index: )")


def kind_of_path(path: str) -> FileKind:
    name = posixpath.basename(path.strip().split("#", 1)[0].split("\t", 1)[0]).lower()
    _, dot, extension = name.rpartition(".")
    if not dot:
        return FileKind.CONFIG
    if extension in _CODE:
        return FileKind.CODE
    if extension in _PROSE:
        return FileKind.PROSE
    return FileKind.CONFIG


def _header_path(line: str) -> str:
    if line.startswith("+++ "):
        path = line[4:]
        return path[2:] if path.startswith("b/") else path
    if line.startswith("==== "):
        return line[5:].split(" ", 1)[0]
    if line.startswith("diff --git "):
        return line.rsplit(" ", 1)[-1]
    return line[len("Index: ") :]


class FileKinds:
    """`kind_at(position)`: the kind of the file whose header is the last one before it."""

    def __init__(self, text: str):
        starts = [0] if text.startswith(_HEADER_PREFIXES) else []
        starts += [match.start() + 1 for match in _HEADER.finditer(text)]
        self._starts = starts
        self._kinds = [self._kind(text, start) for start in starts]

    @staticmethod
    def _kind(text: str, start: int) -> FileKind:
        end = text.find("\n", start)
        return kind_of_path(_header_path(text[start : end if end >= 0 else len(text)].rstrip("\r")))

    def kind_at(self, position: int) -> FileKind:
        index = bisect.bisect_right(self._starts, position) - 1
        return self._kinds[index] if index >= 0 else FileKind.CONFIG
