"""PEM blocks (`-----BEGIN ... PRIVATE KEY-----` ... `-----END ...-----`), the only secrets
that span lines. The scanner drives a two-state machine with these functions:

- `redact_markers(body)` on any line with a BEGIN or END marker: a block that opens and closes
  on the line (one line of a JSON file with `\\n` escapes, several blocks per line allowed) is
  replaced whole; a block that opens and does not close is replaced from BEGIN to the end of
  its payload on that line and reported `open`; an END with no BEGIN before it (a hunk that
  starts inside a key) is reported `orphan`, and the scanner walks up over the payload lines.
- `continue_block(body)` on each line after an OPEN one: base64 payload and PEM headers
  (`Proc-Type:`...) are replaced and the block goes on; the END line closes it; anything else
  (code, a hunk header) ends a truncated block, untouched.

Every line of a block keeps its diff marker, indentation and string quotes, and gets one
placeholder: the block is counted once, on its first line."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from enum import Enum

from p4review.change.redaction.base import match_length
from p4review.change.redaction.needles import needles
from p4review.change.redaction.values import placeholder

# Every BEGIN/END marker contains `BEGIN ` or `END ` (uppercase E: a rare first character).
NEEDLES = needles("EGIN ", behind="B") + needles("END ")

# `-----BEGIN <label>-----` (SSH2: `---- BEGIN <label> ----`). The label must be a PEM one,
# or be cut off at the line end: `<!-- END OF LIST -->` and `---- END MESSAGE ----` are not.
_LABEL = (
    r"(?P<label>(?:[A-Z0-9]+ )*(?:PRIVATE KEY(?: BLOCK)?|PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?"
    r"|X509 CRL|PGP (?:MESSAGE|SIGNATURE)|PARAMETERS|PKCS7|CMS|KEY)) ?-{4,5}"  # `RSA KEY`: a key all the same
    r"|(?P<cut>[A-Z0-9 ]*)$"
)
_BEGIN = re.compile(r"(?<!-)-{4,5} ?BEGIN (?:" + _LABEL + ")")
_END = re.compile(r"(?<!-)-{4,5} ?END (?:" + _LABEL + ")")
# What follows BEGIN on its line: payload with literal or escaped (`\n`) line breaks.
_PAYLOAD_TAIL = re.compile(r"(?:\\[rn]|[A-Za-z0-9+/=:,._ \t-])*")
# Payload just before an orphan END on the same line (`...abc\n-----END`), matched on the
# reversed text so that it is one linear pass (a `...$` search would be quadratic).
_PAYLOAD_HEAD_REVERSED = re.compile(r"(?:[rn]\\|[A-Za-z0-9+/=])*")
_LEAD = re.compile(r"\s*[\"'`]?")
_PAYLOAD_LINE = re.compile(
    r"(?P<lead>\s*(?:[+,]\s*)?[\"'`]?)"
    r"(?P<data>[A-Za-z0-9+/=]+"
    r"|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset|Subject|Content-Domain|Originator-[A-Za-z-]+):[^\\]*)"
    r"(?P<trail>(?:\\r)?(?:\\n)?[\"'`]?\s*(?:[+,;]|\\)?\s*)"
)
# Public material: still redacted (it is useless to a reviewer), but not counted as a secret key.
_PUBLIC_LABELS = frozenset(
    {
        "CERTIFICATE",
        "TRUSTED CERTIFICATE",
        "CERTIFICATE REQUEST",
        "NEW CERTIFICATE REQUEST",
        "X509 CRL",
        "PUBLIC KEY",
        "RSA PUBLIC KEY",
        "SSH2 PUBLIC KEY",
        "PGP PUBLIC KEY BLOCK",
        "PGP SIGNATURE",
        "PGP MESSAGE",
        "DH PARAMETERS",
        "EC PARAMETERS",
        "PKCS7",
        "CMS",
    }
)


@dataclass(frozen=True)
class Markers:
    """A line after `redact_markers`: `orphan` names the class of an END that had no BEGIN
    before it (the lines above may be payload); `open` names the class of a block that is
    still open at the end of the line."""

    body: str
    orphan: str | None = None
    open: str | None = None


class LineVerdict(Enum):
    PAYLOAD = "payload"  # part of the block, block goes on
    CLOSED = "closed"  # the END line
    OUTSIDE = "outside"  # not payload: a truncated block ends before this line


def class_of(marker: re.Match[str]) -> str:
    """A marker's class: public material is `pem_block`; a private or cut-off label is
    `private_key` (when in doubt, the stricter class)."""
    label = marker.group("label")
    return "pem_block" if label in _PUBLIC_LABELS else "private_key"


def redact_markers(body: str, counts: Counter[str]) -> Markers:
    pieces: list[str] = []
    orphan: str | None = None
    still_open: str | None = None
    while True:
        # What follows a marker is searched as a string of its own: the `(?<!-)` of the next
        # marker must not see the previous marker's trailing dashes (`-----END X----------END`).
        begin, end = _BEGIN.search(body), _END.search(body)
        if end is not None and (begin is None or end.start() < begin.start()):
            name = class_of(end)
            head = match_length(_PAYLOAD_HEAD_REVERSED, body[: end.start()][::-1])
            pieces += [body[: end.start() - head], placeholder(name)]
            counts[name] += 1
            body = body[end.end() :]
            if still_open is None and orphan is None and len(pieces) == 2:
                orphan = name  # nothing before it on this line: the lines above may be payload
            continue
        if begin is None:
            break  # neither marker on what is left of the line
        name = class_of(begin)
        counts[name] += 1
        pieces += [body[: begin.start()], placeholder(name)]
        closing = _END.search(body, begin.end())
        if closing is None:
            # Open: replace the payload that follows on this line (escaped `\n` lines too);
            # keep looking, since whatever stopped the payload may be another BEGIN.
            body = body[begin.end() + match_length(_PAYLOAD_TAIL, body, begin.end()) :]
            still_open = name
            continue
        body = body[closing.end() :]
    if not pieces:
        return Markers(body)
    pieces.append(body)
    return Markers("".join(pieces), orphan=orphan, open=still_open)


def continue_block(body: str, name: str = "private_key") -> tuple[str, LineVerdict]:
    """One line after an open BEGIN (or, walking upwards, before an orphan END)."""
    if not body.strip():
        return body, LineVerdict.PAYLOAD
    end = _END.search(body)
    if end is not None:
        start = match_length(_LEAD, body)
        return body[:start] + placeholder(name) + body[end.end() :], LineVerdict.CLOSED
    line = _PAYLOAD_LINE.fullmatch(body)
    if line is None:
        return body, LineVerdict.OUTSIDE
    return body[: line.start("data")] + placeholder(name) + body[line.end("data") :], LineVerdict.PAYLOAD
