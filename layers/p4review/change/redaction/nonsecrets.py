"""Values and names that sit where a credential could, and are not one: stand-ins for a password
(`password = "password"`, `"test-secret"`, `"changeit"`), versions and Maven coordinates under a
secret-looking name, alphabets (`SIGNING_KEY_ALPHABET = "ABC...xyz0123456789"`), and keys of
data rather than of locks (`idempotency_key`, `sort_key`, `cache_key`). Pure functions of strings.

Where the line between a stand-in and a weak password runs: a stand-in is made only of words that
say "a value goes here" (the secret's role: `password`, `secret`, `pass`, `token`; test data:
`test`, `fake`, `dummy`, `wrong`; conventional placeholders: `changeit`, `example`, `foo`).
Anything else, a digit, a symbol, or any other word, makes it a password someone may use:
`hunter2`, `passw0rd`, `admin`, `letmein`, `secret123` stay redacted. A famous example password is
still a password: people copy examples. So is a default (`default-pw`): it is the value a system
runs with when nobody sets one."""

from __future__ import annotations

import re

# The secret's role: `password = "password"` tells nothing the name did not.
_ROLE_WORDS = frozenset(
    """
password passwords passwd pass pwd pw passphrase passcode secret secrets token tokens key keys apikey
credential credentials cred creds auth pin
""".split()
)
# Words that say the value is not real: test data, defaults, placeholders, failure cases.
_STAND_IN_WORDS = frozenset(
    """
test tests testing tester fake dummy mock mocked stub sample example examples placeholder
changeme changeit replaceme foo bar baz qux foobar wrong invalid incorrect bad bogus nonexistent
unknown missing expired revoked none null empty blank todo tbd fixme xxx redacted masked hidden
value values string text
""".split()
)
# Qualifiers that may join role and stand-in words (`my-password`, `client-secret`, `new_pass`).
_QUALIFIER_WORDS = frozenset(
    """
my your our the a an some any this that other another new old current previous next real
db database user users client app api access admin root service account master shared super
private public local dev staging prod production secure strong weak good right correct long short
""".split()
)
_VOCABULARY = _ROLE_WORDS | _STAND_IN_WORDS | _QUALIFIER_WORDS
_VALUE_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_WORD_VALUE = re.compile(r"[A-Za-z]+(?:[-_. ][A-Za-z]+)*")


def is_stand_in(value: str) -> bool:
    """`password`, `PASS`, `test`, `fake-password`, `client_secret`, `my secret`: a value made
    only of role, stand-in and qualifier words, with at least one role or stand-in word."""
    if len(value) == 1:
        return True  # one character (`"x"`, an emoji in a symbol table) protects nothing
    if len(value) > 40 or _WORD_VALUE.fullmatch(value) is None:
        return False
    words = [word.lower() for word in _VALUE_WORDS.findall(value)]
    return all(word in _VOCABULARY for word in words) and any(
        word in _ROLE_WORDS or word in _STAND_IN_WORDS for word in words
    )


# `1.0.12`, `2.3.4-SNAPSHOT`, `5.7.1.RELEASE`: a release, never a credential.
_VERSION = re.compile(r"v?\d+(?:\.\d+){2,3}(?:[-.+][A-Za-z0-9]+)*")
# group:artifact[:packaging[:classifier]]:version (`io.jsonwebtoken:jjwt-api:0.11.5`).
_COORDINATE = re.compile(r"[A-Za-z][\w-]*(?:\.[\w-]+)+:[A-Za-z][\w.-]*(?::[\w.-]+){0,2}:\d[\w.-]*")


# package.module:function (`bandit.plugins.try_except_pass:try_except_pass`): a Python entry point.
_ENTRY_POINT = re.compile(r"[a-z_]\w*(?:\.[a-z_]\w*)+:[A-Za-z_]\w*(?:\.\w+)*")


def is_version_or_coordinate(value: str) -> bool:
    if "." not in value:
        return False  # each of the three has a dot
    return (
        _VERSION.fullmatch(value) is not None
        or _COORDINATE.fullmatch(value) is not None
        or _ENTRY_POINT.fullmatch(value) is not None
    )


# `0x0B95`, `0o755`, `0b1010`, `42UL`: an integer literal of C and its relatives.
_INTEGER_LITERAL = re.compile(r"0[xX][0-9a-fA-F]+[uUlL]*|0[oObB][0-7]+|\d+[uUlL]+")
# `PassInfoMixin<Pass>`, `std::vector<T>`: a generic type (C++, Java, C#, Rust) after a `:`.
_GENERIC_TYPE = re.compile(r"[A-Za-z_][\w:.]*<[\w:., <>*&]*>?")
# `OBJ_pilotAttributeType,21L`: a macro's expansion, a name then more of an expression.
_EXPANSION = re.compile(r"[A-Za-z_]\w*,[\w,]+")


def is_code_literal(value: str) -> bool:
    """An unquoted value that is code: an integer literal, a generic type, a name and a list."""
    return (
        _INTEGER_LITERAL.fullmatch(value) is not None
        or _GENERIC_TYPE.fullmatch(value) is not None
        or _EXPANSION.fullmatch(value) is not None
    )


def is_prose(value: str) -> bool:
    """Six or more words: a description (`"The password for the kmsuser CU account..."`), not a
    passphrase (diceware's are four to six words, and rarely sit in code)."""
    if value.count(" ") < 5:
        return False
    words = value.split()
    return len(words) >= 6 and sum(word.isalpha() for word in words) >= 5


_ROLE_STEMS = re.compile(r"(?i:pass|pw|secret|token|key|cred|auth|pin)")  # in every role word
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def spells_its_name(key: str, value: str) -> bool:
    """`SN_id_PasswordBasedMAC = "id-PasswordBasedMAC"`, `PASS = "pass"`: the value is the name
    again, its secret word included (an identifier's string form), not a secret. A value that
    is another word of the name is still a secret (`postgres` under `POSTGRES_PASSWORD` is a default)."""
    if not value.isascii() or _ROLE_STEMS.search(value) is None:
        return False
    value_words = [word.lower() for word in _NAME_WORDS.findall(value)]
    key_words = {word.lower() for word in _NAME_WORDS.findall(key)}
    return (
        value.isascii()
        and all(word in key_words for word in value_words)
        and any(word in _ROLE_WORDS for word in value_words)
    )


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def is_alphabet(value: str) -> bool:
    """`ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_`: a character set spelt
    out (an encoder's, a generator's): the whole Latin alphabet in order, and nine in ten
    neighbours consecutive. A generated value has almost none."""
    if len(value) < 26 or _LETTERS not in value.lower():
        return False
    steps = sum(1 for left, right in zip(value, value[1:], strict=False) if ord(right) - ord(left) == 1)
    return steps * 10 >= (len(value) - 1) * 9


# `idempotency_key`, `PartitionKey`, `sort-key`, `cache_key`: keys that identify a record or
# an entry, not keys that open something.
_DATA_KEY_QUALIFIERS = frozenset(
    """
idempotency idempotence partition sort range primary foreign cache lookup dedup dedupe deduplication
composite unique row group routing shard sharding index search order entity natural surrogate
candidate secondary join cursor pagination page continuation exclusive start last next dict map
memo lock mutex queue topic message event translation i18n locale label display field column
attribute property prop setting config registry hotkey shortcut keyboard react list item node sequence
result results response output marker
""".split()
)


def names_a_data_key(words: list[str]) -> bool:
    """`words` (lowercased, in order) of a name ending in `key`: a key of data when the word
    before it says so."""
    return len(words) > 1 and words[-1] in ("key", "keys") and words[-2] in _DATA_KEY_QUALIFIERS


# An OpenPGP key's fingerprint (40 hex digits, RFC 4880 section 12.2) or long key ID (16), under
# a name that says OpenPGP key (`NGINX_GPGKEYS="573B... 8540..."`, `PGP_KEY=0x2FD2...`): a public
# key's identifier, which Dockerfiles list to check signatures. No private key has this shape; a
# name that says password, secret, token or private is left to redaction (`openssl rand -hex 20`).
_OPENPGP_KEY_NAME = re.compile(r"(?i)(?=.*(?:gpg|pgp))(?=.*(?:key|fingerprint|fpr))(?!.*(?:pass|secret|token|priv))")
_FINGERPRINT = r"(?:0x)?(?:[0-9A-Fa-f]{40}|[0-9A-Fa-f]{16})"
_OPENPGP_FINGERPRINTS = re.compile(rf"{_FINGERPRINT}(?:[\s,]+{_FINGERPRINT})*")


def is_openpgp_fingerprint(name: str, value: str) -> bool:
    """`GPG_KEYS` = `573BFD6B3D8FBC641079A6ABABF5BD827BD9BF62 8540A6F1...`: fingerprints, named as such."""
    return _OPENPGP_KEY_NAME.match(name) is not None and _OPENPGP_FINGERPRINTS.fullmatch(value.strip()) is not None
