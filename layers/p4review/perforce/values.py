"""Values to and from the server: text decoding, and the checks on untrusted values before
they become p4 arguments."""

from __future__ import annotations

import re

from p4review.observability import logger
from p4review.perforce.errors import P4ArgumentError

CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1
_BINARY_BASES = frozenset(
    {"binary", "ubinary", "xbinary", "uxbinary", "apple", "resource", "uresource", "tempobj", "xtempobj"}
)


def is_binary_type(file_type: str) -> bool:
    """`binary+l`, `ubinary`, `apple`... (modifiers after `+` never make text binary)."""
    return file_type.split("+", 1)[0].strip().lower() in _BINARY_BASES


def untrusted(value: str, what: str) -> str:
    """Values from the server or a request: refuse option look-alikes and control chars."""
    if not value or value.startswith("-") or CONTROL_CHARACTERS.search(value):
        raise P4ArgumentError(f"unsafe {what}")
    return value


def depot_path_operand(path: str) -> str:
    untrusted(path, "depot path")
    # p4 escapes @ # % * in file names, so raw ones (or "...") would be revision specifiers or
    # wildcards: they could widen a one-file command to many files.
    if not path.startswith("//") or any(token in path for token in ("@", "#", "*", "...")):
        raise P4ArgumentError("unsafe depot path")
    return path


def decode_field(value: bytes | None, what: str = "p4 record field") -> str:
    return decode_text(value or b"", what)


def decode_text(raw: bytes, what: str = "p4 text") -> str:
    """UTF-8, else Windows-1252: a non-unicode Perforce server stores whatever bytes the
    client sent, and on such servers that is almost always cp1252 (a superset of Latin-1).
    The fallback is a coercion, so it says so (spec G-4): which kind of text, how many bytes,
    never the text."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        logger.warning(
            "p4 text is not UTF-8: decoded as cp1252",
            extra={"diagnostic": "p4_text_cp1252_fallback", "field": what, "byte_count": len(raw)},
        )
        return raw.decode("cp1252", "replace")


def int_field(value: bytes | None) -> int | None:
    text = decode_field(value)
    return int(text) if text.isascii() and text.isdigit() else None
