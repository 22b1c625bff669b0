"""Is a captured value a real secret, or a placeholder, a variable, an expression, a field
name? The rules capture generously; these predicates decide. Pure functions of strings."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from p4review.change.redaction.nonsecrets import (
    is_alphabet,
    is_code_literal,
    is_prose,
    is_stand_in,
    is_version_or_coordinate,
)

REDACTED_MARK = "[REDACTED:"


def placeholder(name: str) -> str:
    return f"[REDACTED:{name}]"


# An RFC 4122 UUID anywhere in a value: an identifier, never a secret by its shape alone.
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

_TEMPLATE = re.compile(
    # ${VAR} {{ jinja }} {% tag %} %(name)s <%= erb %>: opening the value (which may be cut at a
    # space: `{{`), or whole inside it. An unclosed mark inside is text: `m{{h}o)p${e]nob(ody...`.
    r"^(?:\$\{|\{\{|\{%|%\(|<%)"
    r"|\$\{[^{}\[\]()<>\s]*\}|\{\{[^{}]*\}\}|\{%.*?%\}|%\([\w.]+\)|<%.*?%>"
    # The value cut at a space or a quote before the mark closes: a mark ending it (`prefix-{{`,
    # `x${{`, `pre<%=`), or a name indexed, called or defaulted (`${arr[`, `${lookup(`, `${PW:`).
    r"|(?:\$\{\{?|\{\{-?|\{%-?|<%[=-]?)$|\$\{[A-Za-z_][\w.]*[\[(:]"
    r"|(?<!\{)\{[\w.]*\}(?!\})"  # "{}" / "{name}" format fields (not an escaped `{{x}}`)
    r"|^\$[A-Za-z_]\w*$|^\$\(|^\$\d$"  # $VAR, $(command), $1
    r"|^%[sdrvq]$|^%[A-Za-z_]\w*%$"  # %s, %WINDOWS_VAR%
    r"|^<[^<>]*>$"  # <your-password>
)
_KEYWORDS = frozenset("none null nil undefined true false yes no on off ~ - ? nan".split())
# `password: str` is an annotation (or a schema) even in a file of unknown kind.
_TYPE_NAMES = frozenset("str string bytes int text varchar char secretstr secretbytes optional any object".split())
_SECRET_WORDS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "pwd", "credential")
# DB_PASSWORD, db.password, secret_name: the *name* of a secret, not its value.
_SNAKE_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+")
_CALL_OR_INDEX = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\s*[(\[]")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_MODULE_PATH = re.compile(r"[\w$]+(?:\.[A-Za-z_$][\w$]*)+")
# A bare word shaped like an identifier (snake, camel, Pascal, UPPER): in code it is a variable
# or a type. `rJVTdmDEdS` has no such shape: a literal.
_IDENTIFIER = re.compile(r"_*(?:[a-z]+(?:_[a-z]+)*|[A-Z]+(?:_[A-Z]+)*|[a-z]+(?:[A-Z][a-z]+)+|[A-Z]*(?:[A-Z][a-z]+)+)_*")
_EXPRESSION_START = tuple("$%{[(<!&*:?|>@#")  # ... and `#` starts a comment
# A leading `$`, `#` or `?` starts a reference only in these shapes: `$VAR`, `$HOME/x`, `${VAR}`,
# `$(cmd)`, `$obj->x`, `$1`, `$$`; `# comment`, `#{ruby}`; `?`, `?1`, `?name` (bind parameters).
# Otherwise it is part of a secret: `$ecr3t!x9`, `#Pa55w0rd`, `?Qm7zLk2v`.
_SIGIL_REFERENCE = re.compile(
    r"\$(?:[A-Za-z_]\w*(?![!@#%^&*+=~?$\w])|\d$|[{($])|#(?:\s|$|[{#])|\?(?:\d*|_*[A-Za-z]+(?:_[A-Za-z]+)*)$"
)


# Values that stand in for a secret in samples, docs and tests (role and test words such as
# `secret` or `test`: nonsecrets.is_stand_in; a weak password such as `hunter2` is still
# redacted): `changeme`, `your_api_key_here`,
# `<token>`, `REPLACE_ME`, `ghp_XXXXXXXXXXXXXXXX`. Redacting them costs the reviewer context
# and protects nothing.
_PLACEHOLDER_WORDS = frozenset(
    """
changeme change_me change-me changeit replaceme replace_me replace-me placeholder dummy example sample
todo tbd fixme redacted masked hidden notset not_set unset empty foo bar foobar baz xxx yyy
""".split()
)
_PLACEHOLDER_SHAPE = re.compile(
    r"(?i)(?:your|my|insert|enter|put|add|replace)[-_ ](?:[a-z0-9]+[-_ ])*[a-z0-9]+"  # your_api_key_here
    r"|(?:[a-z0-9]+[-_])+(?:here|goes[-_]here)"  # api_key_here
)
# A token with its generated part masked: `ghp_XXXXXXXXXXXXXXXX`, `sk-...`, `AKIA************`.
_MASKED_TAIL = re.compile(r"(?:[^/\s]{0,20}?)([Xx*.#•])\1{5,}")


def is_template_or_masked(value: str) -> bool:
    """Empty, already redacted, a template/interpolation, a mask like `****` or a masked token,
    or a placeholder word (`changeme`, `your_token_here`)."""
    if not value or REDACTED_MARK in value:
        return True
    if _TEMPLATE.search(value):
        return True
    if len(value) >= 3 and len(set(value)) == 1:
        return True
    return (
        value.lower() in _PLACEHOLDER_WORDS
        or _PLACEHOLDER_SHAPE.fullmatch(value) is not None
        or _MASKED_TAIL.fullmatch(value) is not None
    )


def is_masked_token(value: str) -> bool:
    """`ghp_XXXXXXXXXXXXXXXX`, `sk_live_xxxxxxxx`, `AKIA************`: a token shown masked."""
    return _MASKED_TAIL.fullmatch(value) is not None


# Password hashes (crypt formats, Django's): stored to be compared, useless to an attacker
# without cracking, and what a reviewer needs to recognise.
_PASSWORD_HASH = re.compile(
    r"\$(?:2[abxy]?|1|5|6|y|argon2(?:id|i|d)|scrypt|pbkdf2[-\w]*)\$\S+|pbkdf2_sha\d+\$\S+|bcrypt\$\S+"
)


def is_password_hash(value: str) -> bool:
    return _PASSWORD_HASH.fullmatch(value) is not None


def names_a_secret(value: str) -> bool:
    """`"password"`, `"DB_PASSWORD"`, `"clientSecret"`, `"api_key"`: a field or variable name
    (mappings between naming styles are common), not a value."""
    lowered = value.lower()
    if lowered in _SECRET_WORDS:
        return True
    named = _SNAKE_NAME.fullmatch(value) or _IDENTIFIER.fullmatch(value)
    return bool(named) and any(word in lowered for word in _SECRET_WORDS)


# `"_aws_cdk_0cae9daa.SecretValue"`, `"models.Credential"`: a type named in a string (a
# forward reference, a stub), not a value.
_QUOTED_TYPE = re.compile(r"[\w$]+(?:\.[A-Za-z_$][\w$]*)*\.[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+")


# Two of these and a string is a regular expression (`r"(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{16,}"`).
_REGEX_PART = re.compile(r"\(\?[:=!<P]|\[\^?[^\]]*\w-\w[^\]]*\]|\\[dswbDSWB]|\{\d+,\d*\}|\)[*+?]")


def looks_like_a_pattern(value: str) -> bool:
    return len(_REGEX_PART.findall(value)) >= 2


# `"...;Password=" + password + ";"`: the quotes close and reopen code strings around a variable.
_CONCATENATED = re.compile(r"\s*(?:\+|\|\||&|\.\.?)\s+[\w$.()\[\]]+\s+(?:\+|\|\||&|\.\.?)\s*")


def quoted_literal_is_secret(value: str) -> bool:
    return not (
        is_template_or_masked(value)
        or _CONCATENATED.fullmatch(value)
        or names_a_secret(value)
        or _QUOTED_TYPE.fullmatch(value)
        or looks_like_a_pattern(value)
        or is_stand_in(value)
        or is_version_or_coordinate(value)
        or is_prose(value)
    )


_NUMBER = re.compile(r"-\d+|[-+]?\d*\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+")


def unquoted_value_is_secret(value: str, literal_words: Callable[[], bool]) -> bool:
    """An unquoted right-hand side. `literal_words()`: a bare word is a literal (config files);
    otherwise (code, prose) an identifier-shaped word is a variable or a type name. Called only
    for such words, since finding the file's kind costs a pass over the text."""
    if is_template_or_masked(value) or names_a_secret(value):
        return False
    if is_stand_in(value) or is_version_or_coordinate(value) or is_code_literal(value):
        return False
    if value.lower() in _KEYWORDS or value.lower() in _TYPE_NAMES:
        return False
    if value.startswith(_EXPRESSION_START) and (value[0] not in "$#?" or _SIGIL_REFERENCE.match(value)):
        return False
    if _CALL_OR_INDEX.match(value) or _DOTTED.fullmatch(value):
        return False
    if value.isdigit() and len(value) < 4:
        return False  # a count or a flag, not a credential
    if _NUMBER.fullmatch(value):
        return False  # `-1`, `1.0`, `2.5e6`: a quantity
    if not any(ch.isalnum() for ch in value):
        return False  # `/`, `|`, `*`: punctuation is syntax (a path root, a pipe), not a credential
    if _IDENTIFIER.fullmatch(value) and not literal_words():
        return False
    return True


def shannon_entropy(value: str) -> float:
    total = len(value)
    return -sum(count / total * math.log2(count / total) for count in Counter(value).values())


def looks_random(value: str, min_length: int = 16) -> bool:
    """Generated-looking: long, no spaces, mixed character classes, high entropy.
    Keeps words, paths, dotted names and `replace-with-your-key` out."""
    if len(value) < min_length or any(ch.isspace() for ch in value) or "://" in value:
        return False
    if _IDENTIFIER.fullmatch(value) or _MODULE_PATH.fullmatch(value):
        return False  # `apiKeySelectionExpression`, `pkg_3170ac3a.IApiKeyRef`: names
    if is_alphabet(value):
        return False  # `ABC...xyz0123456789`: a character set spelt out
    classes = sum(
        (any(ch.islower() for ch in value), any(ch.isupper() for ch in value), any(ch.isdigit() for ch in value))
    )
    return classes >= 2 and shannon_entropy(value) >= 3.0


def has_digit(value: str) -> bool:
    return any(ch.isdigit() for ch in value)
