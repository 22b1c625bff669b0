"""What every `p4review` command's output must hold at the operator's terminal
(layers/p4review/cli/display.py): no raw control, bidi or invisible character, and no secret
the service's redaction rules would find."""

from __future__ import annotations

import re
import unicodedata

from p4review.change.redaction import redact
from p4review.cli.display import ID_FIELDS

# A password planted in forged rows, in a form the redaction rules know (`password=...`).
PLANTED_SECRET = "Tr0ub4dor&3xyz"
PLANTED = f"password={PLANTED_SECRET}"
# A forged value's payload: OSC 52 (write the clipboard), clear screen, carriage return, a
# bidi override, a C1 CSI, a zero-width space, BEL, and the planted password.
HOSTILE = f"\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\r\u202eevil\u202c\x9b31m\u200b {PLANTED}"


def unsafe_characters(text: str) -> list[str]:
    return sorted(
        {
            repr(char)
            for char in text
            if char != "\n" and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")
        }
    )


# The service's id fields whose names the rules read as a secret's (display.ID_FIELDS): a plain
# id there is not a finding; anything else there still is.
_PLAIN_ID_FIELD = re.compile(rf'"({"|".join(ID_FIELDS)})": "[0-9A-Za-z._:/-]*"')


def assert_terminal_safe(*texts: str) -> None:
    for text in texts:
        assert unsafe_characters(text) == [], text
        assert PLANTED_SECRET not in text
        found = redact(_PLAIN_ID_FIELD.sub(r'"\1": "id"', text)).counts
        assert not found, f"the redactor still finds {dict(found)} in {text!r}"
