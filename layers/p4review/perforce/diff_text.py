"""Unified diffs from p4's answers: `diff2 -du` output normalized, a new file as one hunk."""

from __future__ import annotations

from p4review.perforce.values import decode_text


def _header_name(path: str) -> str:
    return path[2:] if path.startswith("//") else path


def normalize_diff2(path: str, output: bytes) -> str | None:
    """`p4 diff2 -du` output -> standard unified diff (`--- a/...`, `+++ b/...`, hunks).

    Drops p4's `==== ... ====` header and its own ---/+++ lines; None when there is no
    textual difference (`==== identical`, type-only change, binary).
    """
    lines = decode_text(output, "diff2 output").split("\n")
    body = [line for line in lines if not line.startswith("==== ")]
    while body and (body[0].startswith("--- ") or body[0].startswith("+++ ")):
        body.pop(0)
    if not any(line.startswith("@@") for line in body):
        return None
    text = "\n".join(body)
    name = _header_name(path)
    return f"--- a/{name}\n+++ b/{name}\n{text if text.endswith(chr(10)) else text + chr(10)}"


def added_file_diff(path: str, content: bytes) -> str:
    """Whole new file as a unified diff: `--- /dev/null`, `+++ b/...`, one `@@ -0,0 +1,N @@`."""
    text = decode_text(content, "file content").removeprefix("\ufeff")
    header = f"--- /dev/null\n+++ b/{_header_name(path)}\n"
    if not text:
        return header
    # split("\n"), not splitlines(): the latter also breaks on \x0c, \x1c, \u2028 ...
    lines = text.split("\n")
    missing_newline = lines[-1] != ""
    if not missing_newline:
        lines.pop()
    hunk = "".join(f"+{line}\n" for line in lines)
    tail = "\\ No newline at end of file\n" if missing_newline else ""
    return f"{header}@@ -0,0 +1,{len(lines)} @@\n{hunk}{tail}"
