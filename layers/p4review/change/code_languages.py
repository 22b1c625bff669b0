"""Which source language a depot path is in, for the files whose enclosing functions the review
can show the model (review/context/grammars.py maps each name to its tree-sitter grammar), and the
`#!` lines that name a script's language.

Here, below the stages, because fetch decides by it which files' new-side content to keep."""

from __future__ import annotations

import posixpath
import re

LANGUAGE_BY_EXTENSION = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
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
    ".h++": "cpp",
    ".ipp": "cpp",
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
    ".bats": "bash",
    ".zsh": "bash",
}
# A script without an extension says its language on its first line (the analyzers read it too:
# change/analyzer_files.py).
SHELL_SHEBANG = re.compile(r"#!\s*(?:/usr)?/bin/(?:env\s+)?(?:ba|k|da)?sh\b")
PYTHON_SHEBANG = re.compile(r"#!\s*(?:/usr)?(?:/local)?/bin/(?:env\s+)?python[0-9.]*\b")


def code_language(depot_path: str, first_line: str = "") -> str | None:
    """The language of a file by its extension, else (no extension) by its `#!` line."""
    extension = posixpath.splitext(depot_path)[1].lower()
    if extension:
        return LANGUAGE_BY_EXTENSION.get(extension)
    if SHELL_SHEBANG.match(first_line):
        return "bash"
    return "python" if PYTHON_SHEBANG.match(first_line) else None
