"""Tokens without a usable keyword: a vendor's token no adopted rule knows (a lower-case prefix,
`_` or `-`, then generated characters), a bare `key=` in a log line, `<name> token - '...'` list
layouts, URL query parameters (`?key=`, `&sig=`, `X-Amz-Signature=`), and custom API-key
headers (`X-Api-Key: ...`, `PRIVATE-TOKEN: ...`, `X-Vault-Token: hvs....`), in `-H '...'`
arguments and dict entries too. Each masks a value only when it looks generated."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from urllib.parse import unquote

from p4review.change.redaction.base import Match, PatternRule, Rule, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import needles
from p4review.change.redaction.positional import own
from p4review.change.redaction.values import UUID, is_template_or_masked, looks_random, shannon_entropy

_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")


def _class_of(char: str) -> int:
    return 0 if char.islower() else 1 if char.isupper() else 2 if char.isdigit() else 3


_LOWER_RUN = re.compile(r"[a-z]{4,}")


def looks_generated(value: str, min_length: int = 20) -> bool:
    """Base62-like random text: upper case, lower case and digits, the class changing at least
    every third character or so, and few runs of four lower-case letters. A random base62
    string changes class at 6 of 10 characters and has a run of four in one of 30 places;
    identifiers (`AbstractFactoryBean2`, `xXF86DRIQueryVersionReq`) are mostly such runs."""
    if len(value) < min_length:
        return False
    if sum(len(run) for run in _LOWER_RUN.findall(value)) * 4 >= len(value):
        return False
    classes = [_class_of(char) for char in value]
    if not {0, 1, 2} <= set(classes):
        return False
    changes = sum(1 for left, right in zip(classes, classes[1:], strict=False) if left != right)
    return changes * 10 >= (len(value) - 1) * 3 and shannon_entropy(value) >= 3.5


# ---- vendor tokens ------------------------------------------------------------------------------

# Digests, identifiers and published keys carry such prefixes without being secrets.
_NOT_VENDOR_PREFIXES = frozenset(
    "sha sha1 sha256 sha384 sha512 md5 sri pk pub public id uuid guid ref rev commit hash build run job "
    "trace span req request test tests data img image file v".split()
)
# A prefix that says "secret" (`sk_`, `*_key_`, `tkn`, `pat`, `live`): 20 generated characters
# suffice. Other prefixes name objects as often as tokens (`toolu_01D7...`, `msg_01...`,
# `pi_3Mtw...`: 24-character ids), so their generated part must be longer than an id's.
_SECRET_HINT = re.compile(r"(?:^|[_-])(?:sk|rk|key|tok|tkn|token|secret|sec|pat|live|prod|api|auth|pass|pwd|priv)")
_ID_LENGTH = 30


def _vendor_token(match: Match, secret: str) -> bool:
    prefix = match.group("prefix").rstrip("_-")
    if prefix.split("_", 1)[0].split("-", 1)[0] in _NOT_VENDOR_PREFIXES or prefix.isdigit():
        return False
    shortest = 20 if _SECRET_HINT.search(prefix) else _ID_LENGTH
    segments = re.split(r"[_-]", match.group("body"))
    # the needle's condition: a digit among the first 20 characters after the separator
    return not is_template_or_masked(secret) and any(
        looks_generated(segment, shortest) and any(char.isdigit() for char in segment[:20]) for segment in segments
    )


# `zkp_Ab3d...`, `acme-live-Qx8L...`, `xoxq-1234567890-Ab3d...`: a lower-case prefix of one to three
# short parts, then a body whose last part is 20 or more generated characters.
VENDOR_TOKEN_RULE = PatternRule(
    "vendor_token",
    r"(?<![A-Za-z0-9_.-])(?P<prefix>[a-z][a-z0-9]{1,9}(?:[_-][a-z0-9]{1,9}){0,2}[_-])"
    r"(?P<body>(?:[A-Za-z0-9]{4,}[_-]){0,3}[A-Za-z0-9]{20,})(?![A-Za-z0-9+/=_-])",
    # 20 letters or digits, a digit among them (not `_internationalization`). Every `_` is a
    # candidate (~0.015 s per 8 MB of Python); `<letter>_` needles cost more, as they take the
    # literal prefix away from the groups of digits and rare letters.
    needles("_", "-", ahead=r"(?=[a-z]{0,19}[0-9])[a-z0-9]{20}", folded=True),
    validate=_vendor_token,
)


# ---- a bare key, a list layout ------------------------------------------------------------------------


def looks_generated_one_case(value: str, min_length: int = 20) -> bool:
    """Random base36 text in one case (`grevetn5owrs1ybhxtcen0ibvg2mi85x`, `LY027C40U2KNNZLF...`):
    at least four letters and four digits, the kind (letter or digit) changing at 30% or more of
    neighbouring characters (about 45% in random base36; names and versions such as
    `release2024final` or `x86_64` change far less often), and high entropy."""
    if len(value) < min_length or not value.isalnum() or not value.isascii():
        return False
    digits = sum(char.isdigit() for char in value)
    if digits < 4 or len(value) - digits < 4:
        return False
    changes = sum(left.isdigit() != right.isdigit() for left, right in zip(value, value[1:], strict=False))
    return changes * 10 >= (len(value) - 1) * 3 and shannon_entropy(value) >= 3.5


def _bare_key(_: Match, secret: str) -> bool:
    """A bare `key` says little: only a generated value (all three character classes, or base36
    in one case) counts; not a digest in hex, not a UUID."""
    if UUID.fullmatch(secret) is not None or _HEX.fullmatch(secret):
        return False
    return looks_generated(secret) or looks_generated_one_case(secret)


# `key=3f9aB7...` in a log line, `"Key": "..."`: the name is exactly `key`.
BARE_KEY_RULE = PatternRule(
    "api_key",
    r"(?<![\w.$>-])(?i:key)[\"']?[ \t]*[=:][ \t]*[\"']?(?P<value>[A-Za-z0-9+_-]{20,}={0,2})(?![\w+/=.-])",
    own(needles("key", ahead=r"""["']?[ \t]*[=:][ \t]*["']?[a-z0-9+_-]{20}""", folded=True)),
    groups=("value",),
    validate=_bare_key,
)

_LIST_NAMES = ("token", "key", "secret", "password", "pat", "passwd")
# `- github token: '...'` is `name: value`; `Slack token - 'xoxq-...'` is a list layout.
LIST_LAYOUT_RULE = PatternRule(
    "api_key",
    r"(?i:\b(?:" + "|".join(_LIST_NAMES) + r"))[ \t]+-[ \t]+(?P<q>[\"'])(?P<value>[^\"'\s]{8,})(?P=q)",
    own(needles(*_LIST_NAMES, ahead=r"""[ \t]+-[ \t]+["']""", folded=True)),
    groups=("value",),
    validate=lambda _, secret: looks_random(secret) or looks_generated(secret, 16),
)


# ---- query parameters and headers -----------------------------------------------------------------------

_QUERY_NAMES = (
    "key",
    "api_key",
    "apikey",
    "api-key",
    "access_token",
    "auth_token",
    "token",
    "auth",
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-security-token",
    "x-goog-signature",
    "client_secret",
    "secret",
    "private_token",
    "access_key",
    "password",
)


def _query_value(_: Match, secret: str) -> bool:
    value = unquote(secret)
    if is_template_or_masked(value) or UUID.fullmatch(value):
        return False
    # A signature in hex (SigV4, HMAC) is a secret here: the parameter's name says so.
    return looks_random(value) or (len(value) >= 32 and _HEX.fullmatch(value) is not None)


QUERY_PARAMETER_RULE = PatternRule(
    "api_key",
    r"[?&;](?i:" + "|".join(re.escape(name) for name in _QUERY_NAMES) + r")=(?P<value>[^&#\s\"'<>`]+)",
    tuple(
        needle
        for separator in ("?", "&", ";")
        for needle in needles(*(name + "=" for name in _QUERY_NAMES), behind=separator, folded=True)
    ),
    groups=("value",),
    validate=_query_value,
)

# Header names that carry a credential: `X-Api-Key`, `Api-Key`, `PRIVATE-TOKEN`, `X-Vault-Token`,
# `X-Auth-Token`, `Ocp-Apim-Subscription-Key`...: a dashed name ending in key, token or secret.
_HEADER = re.compile(
    r"(?<![\w-])(?P<name>(?:[A-Za-z0-9]+-)+(?i:key|token|secret|apikey)|(?i:apikey))[\"']?[ \t]*:[ \t]*[\"']?"
    r"(?P<value>[A-Za-z0-9._~+/=-]+)"
)


class HeaderRule(Rule):
    """`X-Api-Key: ...` as a header line, inside `-H '...'` (where the quote opens before the
    name) or as a dict entry. The value counts when it, or its part after a `prefix.`
    (`hvs.`, `SG.`), looks generated."""

    def __init__(self) -> None:
        super().__init__(
            "api_key",
            needles("-key", "-token", "-secret", ahead=r"""["']?[ \t]*:[ \t]*["']?[a-z0-9._~+/=-]""", folded=True)
            + own(needles("apikey", ahead=r"""["']?[ \t]*:[ \t]*["']?[a-z0-9._~+/=-]""", folded=True)),
        )

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        if ":" not in body:
            return body
        spans: list[tuple[int, int, str]] = []
        for match in _HEADER.finditer(body):
            value = match.group("value")
            if not self._secret(value):
                continue
            counts[self.name] += 1
            spans.append((*match.span("value"), self.name))
        return splice(body, spans)

    @staticmethod
    def _secret(value: str) -> bool:
        if is_template_or_masked(value) or UUID.fullmatch(value):
            return False
        if looks_random(value) or (len(value) >= 20 and _HEX.fullmatch(value) is not None):
            return True
        return any(looks_random(part) for part in value.split(".") if part)


HEADER_RULE = HeaderRule()

KEYLESS_RULES: tuple[Rule, ...] = (
    QUERY_PARAMETER_RULE,
    HEADER_RULE,
    BARE_KEY_RULE,
    LIST_LAYOUT_RULE,
    VENDOR_TOKEN_RULE,
)
