"""Secrets recognisable by the name they are given: `password = "..."`, `PASSWORD: ...`,
`<password>...</password>`, `.netrc` and `curl -u` credentials, and generated-looking values
assigned to token-ish names (`api_key`, `auth_token`, `credentials`...)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

from p4review.logic.redaction.base import Match, PatternRule, Rule, not_template
from p4review.logic.redaction.filekind import FileKind
from p4review.logic.redaction.needles import Needle, lowered_ascii, needles
from p4review.logic.redaction.values import (
    looks_random,
    placeholder,
    quoted_literal_is_secret,
    unquoted_value_is_secret,
)

# `api_key`, `apiKey`, `access-key`...: the compound keys that count (a bare `key` does not).
_KEY_PREFIXES = ("api", "access", "private", "signing", "encryption", "master", "auth", "session", "app", "license")
_VALUE = (
    r"(?P<sp>[rRbBuUfF]{0,2})\"(?P<dq>(?:[^\"\\]|\\.)*)\""
    r"|(?P<sp2>[rRbBuUfF]{0,2})'(?P<sq>(?:[^'\\]|\\.)*)'"
    r"|`(?P<bq>[^`]*)`"
    r"|\\\"(?P<eq>(?:[^\"\\]|\\[^\"])*)\\\""                 # \"value\" inside an escaped JSON string
    r"|[\"'](?P<tq>[^\"'\s\\]+)$"                            # opening quote, cut off at the line end
    # unquoted (config, shell, URLs): `&` ends it only before the next `name=` of a query string
    r"|(?P<uv>(?:[^\s\"'`,;&)\]}>=]|&(?![\w.-]+=))(?:[^\s\"'`,;&)\]}>]|&(?![\w.-]+=))*)"
)
# Matched from the start of a key (or of its opening quote): see AssignmentRule.apply.
_ASSIGNMENT_AT = re.compile(
    r"(?P<kopen>\\?[\"'`])?"
    r"(?P<key>[\w.-]++)"
    r"(?P<kclose>\\?[\"'`])?\]?"
    r"[ \t]*+(?::[ \t]*[A-Za-z_][\w.\[\], |]*?[ \t]*(?==))?"  # a type annotation: `password: str = ...`
    r"(?P<op>:=|=>|=|:|(?(kopen),|(?!)))[ \t]*"
    r"(?:" + _VALUE + r")"
)
# Where a secret-ish key may be: one of these in the lowercased line (every key `classify_key`
# accepts contains one). Widened to the whole key, then matched from its start.
_KEY_SPOT = re.compile(r"pass|pw|cret|cred|ken|key|authoriz")
_KEY_RUN_REVERSED = re.compile(r"[\w.-]*")
_LONGEST_KEY = 256
# Needles for a key word: one of these occurs in every key `classify_key` accepts (pass, pw,
# secret, token, credential, authorization, api_key...), searched in the lowercased text. A bare
# `key` (`key=lambda`, dict keys) is everywhere in code, so only the compound keys count.
# `ahead` is what must follow the key word for the rule to have a chance, so that lines that
# merely mention a password (`if not password:` aside) are not even looked at.
def key_needles(ahead: str = "") -> tuple[Needle, ...]:
    return (needles("pass", "pw", "cret", "cred", ahead=ahead, folded=True)
            + needles("ken", behind="to", ahead=ahead, folded=True)
            + needles("z", behind="authori", ahead=ahead, folded=True)
            + tuple(needle for prefix in _KEY_PREFIXES for separator in ("", "_", "-", ".")
                    for needle in needles("key", behind=prefix + separator, ahead=ahead, folded=True)))


# The rest of the key, then an operator: `:`, `=` (also `:=`, `=>`, `==`), or `,` after a
# quoted key; possibly after a closing quote and bracket (`os.environ["PASSWORD"] =`).
# (The prefilter searches UTF-8 bytes, where `\w` is ASCII: \x80-\xff stands for the rest.)
KEY_NEEDLES = key_needles(ahead=r"""[\w.\x80-\xff-]*+(?:\\?["'`])?\]?[ \t]*[:=,]""")
_VALUE_GROUPS = frozenset(("dq", "sq", "bq", "eq", "tq", "uv"))
_WORDS_OF_KEY = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "passcode", "passwort")
_TOKEN_WORDS = ("token", "credential", "authorization")
_COMPOUND_KEY = re.compile("(?:" + "|".join(_KEY_PREFIXES) + ")[_.-]?key")
# A key ending in one of these names something *about* a secret (its id, path, length...).
_ABOUT_A_SECRET = frozenset("""
id ids arn name names path file filename dir directory location ref env var variable field fields
type kind mode format encoding algorithm algo schema version url uri endpoint host header param
parameter template store manager provider service source enabled required changed updated created
at date time sha sha1 sha256 sha512 digest checksum fingerprint bits scope scopes audience issuer
prefix suffix index idx offset position pos len length min max count size attempts retries
timeout ttl expiry expires expiration age lifetime policy rule rules regex pattern validator strength
complexity label hint placeholder prompt message msg text title description desc help error tooltip
caption column input widget form class cls factory handler callback fn func method list
""".split())


@lru_cache(maxsize=4096)
def classify_key(key: str) -> str | None:
    """The class a value assigned to `key` belongs to, or None when the key is not secret-ish."""
    words = [word.lower() for word in _WORDS_OF_KEY.findall(key)]
    if not words or words[-1] in _ABOUT_A_SECRET:
        return None
    secretish = any("secret" in word for word in words)
    if secretish and "aws" in words:
        return "aws_secret_key"
    if secretish or any(word in ("pw", "pwd", "pass") or any(w in word for w in _PASSWORD_WORDS) for word in words):
        return "password"
    lowered = key.lower()  # as the needles see it
    if any(word in lowered for word in _TOKEN_WORDS) or _COMPOUND_KEY.search(lowered):
        return "api_key"
    return None


class AssignmentRule(Rule):
    """`password = "..."`, `PASSWORD: ...`, `"db_password": "..."`, `DB_PASSWORD=...` (.env, shell,
    .ini, YAML, properties, connection strings `Password=...;`), `--password=...`,
    `define('DB_PASSWORD', '...')`, `os.environ["PASSWORD"] = "..."`. Only the value is replaced;
    the key, the operator and the quotes stay.

    Password-like keys (password, passwd, pwd, pw, pass, passphrase, secret) redact any literal;
    token-like keys (token, api_key, access_key, credential, authorization...) only a value
    that looks generated (`looks_random`), since `max_tokens = 4096` is not a secret."""

    def __init__(self) -> None:
        super().__init__("password", KEY_NEEDLES)

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        # Equivalent to one regex `(?<![\w.-])[\w.-]*?(?i:password|...)[\w.-]* = value` run
        # with `sub`, which costs ~30 us a line (a lazy scan and a 15-way alternation at every
        # position); finding keyword spots first and matching from the key's start is faster.
        lowered = lowered_ascii(body)
        pieces: list[str] = []
        copied = resume = 0
        tried = -1
        for spot in _KEY_SPOT.finditer(lowered):
            if spot.start() < resume:
                continue  # inside an assignment already handled (a key word in a value)
            window = body[max(0, spot.start() - _LONGEST_KEY):spot.start()]
            key_start = spot.start() - _KEY_RUN_REVERSED.match(window[::-1]).end()
            if key_start == tried or body.endswith("[REDACTED:", 0, key_start):
                continue
            tried = start = key_start
            if start and body[start - 1] in "\"'`":
                start -= 1 + (start >= 2 and body[start - 2] == "\\")
            match = _ASSIGNMENT_AT.match(body, start)
            if match is None:
                continue
            resume = match.end()
            secret = self._secret(match, kind)
            if secret is not None:
                (value_start, value_end), name = secret
                counts[name] += 1
                pieces += [body[copied:value_start], placeholder(name)]
                copied = value_end
        if not pieces:
            return body
        pieces.append(body[copied:])
        return "".join(pieces)

    @staticmethod
    def _secret(match: Match, kind: Callable[[], FileKind]) -> tuple[tuple[int, int], str] | None:
        """The span of the value to replace and its class, or None to leave it."""
        name = classify_key(match.group("key"))
        if name is None:
            return None
        group = match.lastgroup  # the value alternatives' groups close last
        if group not in _VALUE_GROUPS:
            return None
        value = match.group(group)
        quoted = group != "uv"
        if name == "api_key" and not looks_random(value):
            return None  # checked first: it is cheap, and spares the file-kind question below
        if match.group("op") == ",":
            # `define('DB_PASSWORD', '...')`: only a quoted single token; `get("password", default)` is code.
            if not quoted or any(ch.isspace() for ch in value):
                return None
        if quoted:
            if not quoted_literal_is_secret(value):
                return None
        elif not unquoted_value_is_secret(value, literal_words=lambda: kind() is FileKind.CONFIG):
            return None
        span = match.span(group)
        if not quoted and match.group("op") == ":":
            rest = match.string[match.end():]
            words = rest.lstrip(" \t")
            if words and words != rest and not words.startswith(("#", "//")):
                # More words follow. In a config file that is one YAML plain scalar
                # (`password: correct horse battery staple`): the value runs to the end of the
                # line or a comment. In code or prose it is a sentence (`:param password: The...`).
                if kind() is not FileKind.CONFIG:
                    return None
                span = (span[0], match.end() + len(rest.split(" #", 1)[0].rstrip()))
        if name == "api_key" and not looks_random(match.string[span[0]:span[1]]):
            return None
        return span, name


ASSIGNMENT_RULE = AssignmentRule()

# Credentials written as command words rather than assignments: `.netrc` lines
# (`machine h login u password p`) and `curl -u user:password`.
COMMAND_RULE = PatternRule(
    "password",
    r"(?i:\blogin[ \t]+\S+[ \t]+password[ \t]+)(?P<netrc>[^\s:=]\S*)"
    r"|(?i:\bcurl\b)[^\n]*?[ \t](?:-u|--user)[ =]?[\"']?[^\s:\"']+:(?P<curl>[^\s\"'@]+)",
    needles("curl", ahead=r"[^\n]*[ \t](?:-u|--user)", folded=True)
    + needles("password", ahead=r"[ \t]+[^\s:=]", folded=True),
    groups=("netrc", "curl"), validate=not_template,
)

_SECRET_NAME = r"[\w.:-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey)[\w.:-]*"
MARKUP_RULE = PatternRule(
    "password",
    r"<(?P<tag>" + _SECRET_NAME + r")>(?P<element>[^<\s][^<]*)</(?P=tag)>"
    r"|\bkey[ \t]*=[ \t]*\"" + _SECRET_NAME + r"\"[ \t]+value[ \t]*=[ \t]*\"(?P<attribute>[^\"]+)\"",
    key_needles(ahead=r"""[\w.:\x80-\xff-]*+(?:>|"[ \t]+value[ \t]*=)"""), groups=("element", "attribute"),
    validate=not_template, flags=re.IGNORECASE,
)
