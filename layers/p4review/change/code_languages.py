"""Which source language a depot path is in, for the files whose enclosing functions the review
can show the model (review/context/grammars.py maps each name to its tree-sitter grammar).

Here, below the stages, because fetch decides by it which files' new-side content to keep."""

from __future__ import annotations

import posixpath

LANGUAGE_BY_EXTENSION = {
    ".py": "python",
    ".pyi": "python",
    ".c": "c",
    # Headers go to the C++ grammar: it reads C declarations too, and C++ headers are common.
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".inl": "cpp",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".cs": "c_sharp",
    ".sh": "bash",
    ".bash": "bash",
    ".ksh": "bash",
    ".zsh": "bash",
}
_SHELLS = ("sh", "bash", "dash", "ksh", "zsh")


def code_language(depot_path: str, first_line: str = "") -> str | None:
    """The language of a file by its extension, else (no extension) by a shell's `#!` line."""
    language = LANGUAGE_BY_EXTENSION.get(posixpath.splitext(depot_path)[1].lower())
    if language is not None:
        return language
    if first_line.startswith("#!"):
        words = first_line[2:].replace("/", " ").split()
        if any(word in _SHELLS for word in words[:3]):
            return "bash"
    return None
