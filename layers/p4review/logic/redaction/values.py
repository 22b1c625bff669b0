"""Is a captured value a real secret, or a placeholder, a variable, an expression, a field
name? The rules capture generously; these predicates decide. Pure functions of strings."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

REDACTED_MARK = "[REDACTED:"


def placeholder(name: str) -> str:
    return f"[REDACTED:{name}]"


_TEMPLATE = re.compile(
    r"\$\{|\{\{|\{%|%\(|<%"          # ${VAR} {{ jinja }} {% tag %} %(name)s <%= erb %>
    r"|\{[\w.]*\}"                   # "{}" / "{name}" format fields
    r"|^\$[A-Za-z_]\w*$|^\$\(|^\$\d$"  # $VAR, $(command), $1
    r"|^%[sdrvq]$|^%[A-Za-z_]\w*%$"  # %s, %WINDOWS_VAR%
    r"|^<[^<>]*>$"                   # <your-password>
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
_IDENTIFIER = re.compile(r"_*(?:[a-z]+(?:_[a-z]+)*|[A-Z]+(?:_[A-Z]+)*|[a-z]+(?:[A-Z][a-z]+)+|(?:[A-Z][a-z]+)+)_*")
_EXPRESSION_START = tuple("$%{[(<!&*:?|>@#")  # ... and `#` starts a comment


def is_template_or_masked(value: str) -> bool:
    """Empty, already redacted, a template/interpolation, or a mask like `****`."""
    if not value or REDACTED_MARK in value:
        return True
    if _TEMPLATE.search(value):
        return True
    return len(value) >= 3 and len(set(value)) == 1


def names_a_secret(value: str) -> bool:
    """`"password"`, `"DB_PASSWORD"`, `"clientSecret"`, `"api_key"`: a field or variable name
    (mappings between naming styles are common), not a value."""
    lowered = value.lower()
    if lowered in _SECRET_WORDS:
        return True
    named = _SNAKE_NAME.fullmatch(value) or _IDENTIFIER.fullmatch(value)
    return bool(named) and any(word in lowered for word in _SECRET_WORDS)


def quoted_literal_is_secret(value: str) -> bool:
    return not (is_template_or_masked(value) or names_a_secret(value))


def unquoted_value_is_secret(value: str, literal_words: Callable[[], bool]) -> bool:
    """An unquoted right-hand side. `literal_words()`: a bare word is a literal (config files);
    otherwise (code, prose) an identifier-shaped word is a variable or a type name. Called only
    for such words, since finding the file's kind costs a pass over the text."""
    if is_template_or_masked(value) or names_a_secret(value):
        return False
    if value.lower() in _KEYWORDS or value.lower() in _TYPE_NAMES or value.startswith(_EXPRESSION_START):
        return False
    if _CALL_OR_INDEX.match(value) or _DOTTED.fullmatch(value):
        return False
    if value.isdigit() and len(value) < 4:
        return False  # a count or a flag, not a credential
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
    classes = sum((any(ch.islower() for ch in value), any(ch.isupper() for ch in value),
                   any(ch.isdigit() for ch in value)))
    return classes >= 2 and shannon_entropy(value) >= 3.0


def has_digit(value: str) -> bool:
    return any(ch.isdigit() for ch in value)
