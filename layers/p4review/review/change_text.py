"""Change-supplied text in the model's request, as delimited data (docs/security.md "Change-supplied
text in the prompt").

Every piece of text the change brings (its description, its file list, the depot policy's
instructions, each file's diff) goes into the user message inside an element whose tag ends in a
per-request random nonce: `<cl_desc_3f9c... owner="alice">` ... `</cl_desc_3f9c...>` (the owner's
p4 user name, any printable text, is an attribute). The text cannot close an element it cannot
name, and a block it forges (a guidance block, a file list) is not one of the request's: it has
no nonce and sits inside the description's element.

Text that imitates one of the tags (with or without a nonce) is defused as well, so it does not
even look like one to a reader that is not strict about the suffix. The match runs on the text as
a reader would see it: Unicode NFKD compatibility forms (full-width `＜／`, small `﹤`), without
format characters (category Cf: zero-width spaces and joiners, bidi controls), combining marks
(`/̸`, `ć`, variation selectors, the grapheme joiner) and Hangul fillers; any run of up to 16
characters that are not letters or digits between `<` and the name (blanks, `/`, `\\/`, `∕`, `⁄`,
`⧸`, a braille blank), any case, and `<` spelled as an HTML character reference (`&lt;`, `&#60;`,
`&#x3c;`), a JSON or C escape (`\\u003c`, `\\x3c`) or a URL escape (`%3c`).
The `<` of each match (with whatever spells it) becomes `‹` (U+2039), which no normalization
turns back into `<`; everything else of the text is left as it is."""

from __future__ import annotations

import re
import secrets
import unicodedata

# Short names: every request carries each tag twice. None is a name code tends to use.
DESCRIPTION_TAG = "cl_desc"
GUIDANCE_TAG = "repository_review_guidance"
CHANGED_FILES_TAG = "cl_files"
FILE_DIFF_TAG = "cl_diff"
DELIMITER_TAGS = (DESCRIPTION_TAG, GUIDANCE_TAG, CHANGED_FILES_TAG, FILE_DIFF_TAG)
DEFUSED_BRACKET = "\u2039"  # ‹ : NFKC keeps it as it is
# 32 bits, unseen by the change's author: a closing tag is defused with any suffix anyway (the
# nonce is the second line of defence), and every tag carries it, in every request's tokens.
NONCE_HEX_CHARS = 8

# On the text as read: `<` (or an escape of it), a few characters that are neither letters nor
# digits (blanks, a slash or a look-alike of one, an escaped slash), a tag name.
_TAG_LOOK_ALIKE = re.compile(
    r"(<|&lt;?|&#0*60;?|&#x0*3c;?|\\u0*3c|\\x0*3c|%3c)[^\w<>]{0,16}(?:" + "|".join(DELIMITER_TAGS) + ")",
    re.IGNORECASE,
)
# Invisible, yet letters to a regex (category Lo), so not skipped as a separator: Hangul fillers.
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")
_NOT_READ = frozenset({"Cf", "Mn", "Me"})


def new_nonce() -> str:
    """A per-request nonce: unguessable, so no text of the change can spell a closing tag."""
    return secrets.token_hex(NONCE_HEX_CHARS // 2)


def _as_read(text: str) -> tuple[str, list[int]]:
    """The text NFKD-normalized character by character without format characters, combining
    marks and fillers, and for each character of it the index of the original character it came
    from."""
    shown: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char in _FILLERS:
            continue
        for normalized in unicodedata.normalize("NFKD", char):
            if unicodedata.category(normalized) not in _NOT_READ:
                shown.append(normalized)
                origin.append(index)
    return "".join(shown), origin


def defuse(text: str) -> str:
    """`text` with every look-alike of a delimiter tag's `<` replaced by `‹` (module docstring)."""
    if not text:
        return text
    shown, origin = _as_read(text)
    spans = [(origin[m.start(1)], origin[m.end(1) - 1] + 1) for m in _TAG_LOOK_ALIKE.finditer(shown)]
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for start, end in spans:
        if start < at:  # two matches from one original character (an NFKC expansion)
            continue
        out += [text[at:start], DEFUSED_BRACKET]
        at = end
    out.append(text[at:])
    return "".join(out)


def _attribute(value: str) -> str:
    """An attribute value on one line that cannot end its quotes or the tag."""
    return re.sub(r"\s+", " ", defuse(value)).replace('"', "%22").replace(">", "%3E")


def delimited(tag: str, text: str, nonce: str, **attributes: str) -> str:
    """`text` (defused) as the element `<tag_nonce ...>` on lines of its own."""
    name = f"{tag}_{nonce}"
    shown = "".join(f' {key}="{_attribute(value)}"' for key, value in attributes.items())
    return f"<{name}{shown}>\n{defuse(text)}\n</{name}>\n"
