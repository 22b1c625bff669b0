"""A generated run of characters on a line whose words say secret (`key`, `token`, `secret`,
`passw`, `auth`, `credential`...), within reach after the word, or joined to it in one run: the
vendor token that no rule knows and that no `name = value` shape introduces (`Authorization
header for the CI: gqd7Kx...`, `--token gqd7Kx...`, `{"Token", "gqd7Kx..."}` in a table of
test cases, `acme-apikey-dd52c2...`).

The last resort after every rule that knows a shape, so the masks those rules write stay
theirs. What counts as generated is `looks_generated` (three character classes, changing often,
few lower-case runs) or its one-case base36 form, on the run or on one of its `.`/`_`/`-`/`/`
pieces; digests in hex, UUIDs and paths are left alone. Measured on 8.3 million lines of
installed code, C headers and npm packages before adoption (docs/redaction.md)."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable

from p4review.change.redaction.base import Rule, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.keyless import looks_generated, looks_generated_one_case
from p4review.change.redaction.needles import MAX_AHEAD_RUN, needles
from p4review.change.redaction.nonsecrets import is_openpgp_fingerprint
from p4review.change.redaction.positional import own
from p4review.change.redaction.values import UUID, is_template_or_masked

_WORDS = ("key", "token", "secret", "passw", "pwd", "auth", "credential", "access", "bearer")
_WORD = re.compile("|".join(_WORDS), re.IGNORECASE)
_RUN_CHARACTERS = "A-Za-z0-9+/=._-"
# A run of 16 or more token characters, not part of a longer word or number; not after `\`
# (`\u0041KIA...`, an escape the normalized view reads), `\r` (the rest of a token it joins) or
# `$` (`$2b$12$...`: a password hash, left alone like every digest).
_RUN = re.compile(rf"(?<![\\\r${_RUN_CHARACTERS}])[{_RUN_CHARACTERS}]{{16,}}")
_PIECES = re.compile(r"[._/-]")
_HEX = re.compile(r"[0-9a-fA-F]+")
# A digest named by its algorithm: a wheel's RECORD (`sha256=`), Subresource Integrity and npm
# locks (`sha512-`).
_LABELLED_DIGEST = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[=-]", re.IGNORECASE)
_EDGES = "=._-/+"
# Words of three letters or more, capitalized or lower case: most of an identifier
# (`xmlSecOpenSSLKeyDataX509Id`, `XkbMaxLegalKeyCode`), a few percent of a random string.
# Upper-case words are not counted: that cost a point of token recall on the external corpus,
# and leaves `p4-KIND-CHANGE-vVERSION` (a placeholder in help text) masked.
# Not copies.name_like (pronounceable words over 60%): measured here, it let 9 lines of the 8.3
# million of installed code through against 1, for one point of token recall.
_WORDS_IN_NAME = re.compile(r"[A-Z][a-z]{2,}|[a-z]{3,}")
_WORD_SHARE = 0.35
# How far after a word its run may start: a few words (`auth for the nightly job: <run>`). The
# needle's lookahead runs at every occurrence of a word, so its reach bounds a hostile line's cost.
_REACH = 128
# Hex right after its word (a separator or two between them) is a key, further away a digest.
_BESIDE = 3
_SHORTEST_HEX_KEY = 32
# The needle's lookahead: such a run within reach (the text is lowercased for it).
_AHEAD = rf"[^\n]{{0,{_REACH}}}[{_RUN_CHARACTERS.replace('A-Z', '')}]{{16}}"


# The name a word is part of ends in `id` or `name` (`credentialId`, `access_key_id`, `secret_name`):
# what follows is an identifier. Bounded: asked at each run near the word, a name spanning the
# line (`keyé<run>é...`, `é` a word character) was read to its end each time.
_NAME_TAIL = re.compile(rf"[\w-]{{0,{MAX_AHEAD_RUN}}}")
_ID_NAME = re.compile(r"(?:[_-]?id|Id|ID|[_-]?name|Name)s?$")
# An OpenSSH public key's type, right before its base64 (`ssh-ed25519 AAAAC3...`).
_PUBLIC_KEY_TYPE = re.compile(r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d+|sk-[\w-]+@openssh\.com)[ \t]+$")
# An OpenPGP key's fingerprint fetched from a key server (`gpg --recv-keys 5BE8A3F6...`).
_KEY_SERVER_FETCH = re.compile(r"--recv-keys?[ \t]+$")
_NAME_HEAD = 64  # characters of a name read before its secret word


_RUN_REST = re.compile(rf"[{_RUN_CHARACTERS}]+")


def _disjoint(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """In order, each span starting after the one before ends (a run and a rest may overlap)."""
    kept: list[tuple[int, int, str]] = []
    for span in sorted(spans):
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def _names_an_id(body: str, word: re.Match[str]) -> bool:
    tail = _NAME_TAIL.match(body, word.end())
    return tail is not None and _ID_NAME.search(body, word.start(), tail.end()) is not None


def _name_around(body: str, word: re.Match[str]) -> str:
    """The name a secret word is part of (`NGINX_GPGKEYS` around `KEY`), bounded both ways."""
    start = word.start()
    while start > max(0, word.start() - _NAME_HEAD) and (body[start - 1].isalnum() or body[start - 1] in "_-"):
        start -= 1
    tail = _NAME_TAIL.match(body, word.end())
    return body[start : tail.end() if tail else word.end()]


def _reads_as_words(value: str) -> bool:
    return sum(map(len, _WORDS_IN_NAME.findall(value))) >= _WORD_SHARE * len(value)


def _generated_piece(piece: str, min_length: int) -> bool:
    return (looks_generated(piece, min_length) or looks_generated_one_case(piece, min_length)) and not _reads_as_words(
        piece
    )


def _generated(run: str, *, beside_word: bool) -> bool:
    value = run.strip(_EDGES)
    if _HEX.fullmatch(value):
        # A digest, unless the word is right before it: `newsapi KEY b6907d28...` (32 hex or more).
        return beside_word and looks_generated_one_case(value, _SHORTEST_HEX_KEY)
    if (
        UUID.search(value)
        or value.count("/") > 1
        or _LABELLED_DIGEST.match(value)
        or is_template_or_masked(value)
        or "example" in value.lower()
    ):
        return False
    # Whole, only without `_` and `.`: joined that way, short words and numbers look generated
    # (`X509_get_X509_PUBKEY`, `_aws_kms_18db7412.IKeyRef`); a token's pieces are long.
    if "_" not in value and "." not in value and looks_generated(value, 20) and not _reads_as_words(value):
        return True
    return any(_generated_piece(piece, 16) for piece in _PIECES.split(value))


class SecretWordRule(Rule):
    def __init__(self) -> None:
        # Own literals (`ey` behind `k`...): the rule runs where its lookahead holds, not on every
        # line the assignment rules' `key` flags.
        super().__init__("generic_secret", own(needles(*_WORDS, ahead=_AHEAD, folded=True)))

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        words = list(_WORD.finditer(body))
        if not words:
            return body
        ends = [word.end() for word in words]
        spans: list[tuple[int, int, str]] = []
        # The rest of a run that a word starts or sits in (`dd-apikey-dd52c2...`, `KEYUAaoJbHz...`):
        # a vendor's name, the word, then the secret, joined.
        read_to = 0  # one rest per run: the words after the first in a run read on to its end too
        for word in words:
            if word.start() < read_to:
                continue
            rest = _RUN_REST.match(body, word.end())
            if rest is None:
                continue
            read_to = rest.end()
            if _names_an_id(body, word):
                continue
            value = rest.group().lstrip(_EDGES)
            if len(value) >= 16 and _generated(value, beside_word=True):
                if is_openpgp_fingerprint(_name_around(body, word), value.rstrip(_EDGES)):
                    continue  # `NGINX_GPGKEY=573BFD6B...`: a public key's fingerprint
                end = rest.end() - (len(value) - len(value.rstrip(_EDGES)))
                spans.append((rest.end() - len(value), end, self.name))
        for run in _RUN.finditer(body, ends[0]):
            # Within reach of the last word before it: where the needle's lookahead holds.
            nearest = bisect.bisect_right(ends, run.start()) - 1
            distance = run.start() - ends[nearest]
            if distance > _REACH or _names_an_id(body, words[nearest]):
                continue
            before = body[max(0, run.start() - 64) : run.start()]
            if _PUBLIC_KEY_TYPE.search(before) or _KEY_SERVER_FETCH.search(before):
                continue  # `ssh-ed25519 AAAAC3...`, `--recv-keys 5BE8A3F6...`: a public key
            if _generated(run.group(), beside_word=distance <= _BESIDE):
                if is_openpgp_fingerprint(_name_around(body, words[nearest]), run.group().strip(_EDGES)):
                    continue  # `GPG_KEYS="573BFD6B..."`: a public key's fingerprint
                start, end = run.span()
                text = run.group()
                # The run's edges (`=`, `.`, a trailing `-`) are punctuation, not secret.
                start += len(text) - len(text.lstrip(_EDGES))
                end -= len(text) - len(text.rstrip(_EDGES))
                spans.append((start, end, self.name))
        spans = _disjoint(spans)
        counts[self.name] += len(spans)
        return splice(body, spans)


SECRET_WORD_RULE = SecretWordRule()
