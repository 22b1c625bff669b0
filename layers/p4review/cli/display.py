"""The operator's terminal: the one display path of every `p4review` command.

What a command shows may come from a row, a message or an answer someone else wrote (a forged
outbox row, a dead-letter message, an API body, a model's answer), so nothing reaches the
terminal as it arrived: every value is redacted (the service's secret rules) and every control,
invisible and look-alike character escaped (`\\x1b`, `\\u202e`), never interpreted.

  * `print_table(headers, rows)`: each cell redacted, escaped and kept on one line;
  * `print_json(value)`: every string (keys too) redacted, also beside its key (`"token": ...`),
    and escaped as a cell is, then JSON with every other non-ASCII character as a `\\uXXXX`
    escape, so that a value taken out with `jq -r` is as inert as the JSON text;
    `documents=True` (a review result, whose strings are multi-line code and prose) does not
    escape the strings: the JSON text is still inert;
  * `say(text)` / `fail(message)`: one line on stderr, redacted and escaped.

`terminal_guard()`, installed by `p4review`'s main around every command, redacts and escapes
whatever else reaches `sys.stdout` and `sys.stderr` (a new command that prints on its own
cannot forget); what the functions above print is only escaped there, having been redacted
field by field. Only bytes written to `sys.stdout.buffer` pass as they are: `p4review redact`
is a byte-exact filter of the operator's own input.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from p4review.change.depot_paths import escaped_character, sanitize_for_log
from p4review.change.redaction import RedactionError, redact

# A shown value's length cap (a dead letter's last_stack is the longest field the runtime writes).
SHOWN_LIMIT = 8192
# What is shown instead of a value the redactor could not vouch for (its guard failed).
WITHHELD = "[withheld: redaction failed]"
# The service's own fields whose names the redaction rules read as a secret's (`*_key`, `*_token`)
# but whose values are ids and hashes (models/): their values are redacted on their own, not
# beside their name, so `jobs show` keeps the idempotency key and `deliveries list --json` the
# provider token (the Message-ID is made from it: docs/runbook.md, "Deliveries").
ID_FIELDS = frozenset({"idempotency_key", "provider_token", "change_key", "result_key"})
# Categories never written raw: controls (C0, DEL, C1), format characters (bidi overrides,
# zero-width), line/paragraph separators, surrogates, private use and unassigned.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def redacted(text: str) -> str:
    try:
        return redact(text).text
    except RedactionError:
        return WITHHELD


def _beside(key: Any, text: str) -> str:
    """`text` (redacted on its own) as it reads beside `key`: `[REDACTED:<class>]` when the rules
    find a secret in `"key": "text"` (a password under `"password"`, a token under `"token"`)."""
    if not isinstance(key, str) or key in ID_FIELDS:
        return text
    try:
        found = redact(json.dumps({key: text})).counts
    except RedactionError:
        return WITHHELD
    return f"[REDACTED:{min(found)}]" if found else text


def _for_json(value: Any, *, documents: bool, key: Any = None) -> Any:
    if isinstance(value, str):
        text = _beside(key, redacted(value))
        return text if documents else sanitize_for_log(text, limit=SHOWN_LIMIT)
    if isinstance(value, dict):
        return {
            _for_json(name, documents=False): _for_json(item, documents=documents, key=name)
            for name, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_for_json(item, documents=documents, key=key) for item in value]
    return value


def json_text(value: Any, *, documents: bool = False) -> str:
    """`value` as the JSON a command prints (see the module docstring). `ensure_ascii` writes every
    control and non-ASCII character as `\\uXXXX`: the text holds printable ASCII and newlines only."""
    return json.dumps(_for_json(value, documents=documents), indent=2, sort_keys=True, ensure_ascii=True)


def _emit(text: str, stream: TextIO) -> None:
    """Text the display path made: past the guard, escaped only (its fields are redacted)."""
    if isinstance(stream, TerminalStream):
        stream.write_vetted(text + "\n")
    else:
        stream.write(text + "\n")
    stream.flush()


def print_json(value: Any, *, documents: bool = False, file: TextIO | None = None) -> None:
    _emit(json_text(value, documents=documents), file or sys.stdout)


def cell(value: Any, *, width: int | None = None) -> str:
    """One table cell: redacted, escaped, whitespace runs folded to one space, cut to `width`."""
    text = " ".join(redacted("-" if value is None else str(value)).split())
    text = sanitize_for_log(text, limit=SHOWN_LIMIT)
    if width is not None and len(text) > width:
        text = text[: width - 3] + "..."
    return text


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, widths: Sequence[int | None] = ()) -> None:
    _emit(format_table(headers, rows, widths=widths), sys.stdout)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, widths: Sequence[int | None] = ()) -> str:
    """Left-aligned columns; `widths` caps a column's cells (None: no cap)."""
    caps = list(widths) + [None] * (len(headers) - len(widths))
    lines = [list(headers)] + [[cell(value, width=cap) for value, cap in zip(row, caps, strict=True)] for row in rows]
    sizes = [max(len(line[column]) for line in lines) for column in range(len(headers))]
    return "\n".join(
        "  ".join(text.ljust(size) for text, size in zip(line, sizes, strict=True)).rstrip() for line in lines
    )


def say(text: str, *, file: TextIO | None = None) -> None:
    """A line for the operator (stderr by default): redacted and escaped."""
    _emit(sanitize_for_log(redacted(text), limit=SHOWN_LIMIT), file or sys.stderr)


def fail(message: str) -> int:
    """Say `error: message` on stderr; the exit status of a command that could not do its job."""
    say(f"error: {message}")
    return 2


# ---- the guard around every command -------------------------------------------------------------


def terminal_text(text: str, *, redact_secrets: bool = True) -> str:
    """`text` as the guard writes it: secrets redacted; unsafe characters but the newline escaped
    (a backslash is left alone: JSON and Windows paths keep theirs)."""
    if redact_secrets:
        text = redacted(text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        char if char == "\n" or unicodedata.category(char) not in _UNSAFE_CATEGORIES else escaped_character(char)
        for char in text
    )


class TerminalStream(io.TextIOBase):
    """A text stream that writes `terminal_text` of everything to `stream`; its `buffer` (bytes)
    is the stream's own."""

    def __init__(self, stream: TextIO):
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def write_vetted(self, text: str) -> int:
        """Text the display path made (its fields redacted one by one): escaped only."""
        self._stream.write(terminal_text(text, redact_secrets=False))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    @property
    def buffer(self) -> Any:
        return self._stream.buffer


@contextlib.contextmanager
def terminal_guard() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` as TerminalStreams for the duration."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalStream(saved[0]), TerminalStream(saved[1])
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved
