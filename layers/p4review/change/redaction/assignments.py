"""Secrets recognisable by the name they are given: `password = "..."`, `PASSWORD: ...`,
`<password>...</password>`, `.netrc` and `curl -u` credentials, and generated-looking values
assigned to token-ish names (`api_key`, `auth_token`, `credentials`...)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

from p4review.change.redaction.base import Match, PatternRule, Rule, match_length, not_template, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import Needle, lowered_ascii, needles
from p4review.change.redaction.nonsecrets import (
    is_openpgp_fingerprint,
    is_stand_in,
    is_version_or_coordinate,
    names_a_data_key,
    spells_its_name,
)
from p4review.change.redaction.values import (
    REDACTED_MARK,
    is_password_hash,
    looks_random,
    names_a_secret,
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
    r"|\\\"(?P<eq>(?:[^\"\\]|\\[^\"])*)\\\""  # \"value\" inside an escaped JSON string
    r"|[\"'](?P<tq>[^\"'\s\\]+)$"  # opening quote, cut off at the line end
    # unquoted (config, shell, URLs): `&` ends it only before the next `name=` of a query string
    r"|(?P<uv>(?:[^\s\"'`,;&)\]}>=]|&(?![\w.-]+=))(?:[^\s\"'`,;&)\]}>]|&(?![\w.-]+=))*)"
)
# Matched from the start of a key (or of its opening quote): see AssignmentRule.apply.
_ASSIGNMENT_AT = re.compile(
    r"(?P<kopen>\\?[\"'`])?"
    r"(?P<key>[\w.-]++)"
    r"(?P<kclose>\\?[\"'`])?\]?"
    # a type annotation: `password: str = ...`, `token: &str =`
    r"[ \t]*+(?::[ \t]*[&*]?(?:'\w+[ \t]+)?[A-Za-z_][\w.\[\], |<>]*?[ \t]*(?==))?"
    r"(?:\{[^{}]*\}[ \t]*(?==))?"  # a C# property: `Password { get; set; } = ...`
    r"(?:\*?[A-Za-z_][\w.\[\]]*[ \t]*(?==))?"  # a Go type after the name: `var apiToken string = ...`
    # := (Go, Makefile), ::= (BSD make), ?= and .= (make, PHP), => (PHP, Ruby), = and :
    r"(?P<op>::=|:=|\?=|\.=|=>|=|:|(?(kopen),|(?!)))[ \t]*"
    r"(?:" + _VALUE + r")"
)
# Where a secret-ish key may be: one of these in the lowercased line (every key `classify_key`
# accepts contains one). Widened to the whole key, then matched from its start.
_KEY_SPOT = re.compile(r"pass|pw|cret|cred|ken|key|pat|authoriz")
_KEY_RUN_REVERSED = re.compile(r"[\w.-]*")
_LONGEST_KEY = 256


# Needles for a key word: one of these occurs in every key `classify_key` accepts (pass, pw,
# secret, token, credential, authorization, api_key...), searched in the lowercased text. A bare
# `key` (`key=lambda`, dict keys) is everywhere in code, so only the compound keys count.
# `ahead` is what must follow the key word for the rule to have a chance, so that lines that
# merely mention a password (`if not password:` aside) are not even looked at.
def key_needles(ahead: str = "") -> tuple[Needle, ...]:
    return (
        needles("pass", "pw", "cret", "cred", ahead=ahead, folded=True)
        + needles("ken", behind="to", ahead=ahead, folded=True)
        + needles("z", behind="authori", ahead=ahead, folded=True)
        + tuple(
            needle
            for prefix in _KEY_PREFIXES
            for separator in ("", "_", "-", ".")
            for needle in needles("key", behind=prefix + separator, ahead=ahead, folded=True)
        )
    )


# The rest of the key, then an operator: `:`, `=` (also `:=`, `=>`, `==`), or `,` after a
# quoted key; possibly after a closing quote and bracket (`os.environ["PASSWORD"] =`).
# (The prefilter searches UTF-8 bytes, where `\w` is ASCII: \x80-\xff stands for the rest.)
KEY_NEEDLES = key_needles(
    ahead=r"""[\w.\x80-\xff-]*+(?:\\?["'`])?\]?[ \t]*(?:\*?[a-z_][\w.\[\]]{0,128}[ \t]*)?[:=,?.{]"""
) + needles(
    # `<vendor>_key = <generated value>` (`ALCHEMY_KEY=...`, `apitemplateKEY ...` aside): a key
    # word right before the operator. Only a generated-looking value counts (see classify_key).
    "key",
    "pat",
    ahead=r"""(?:\\?["'`])?\]?[ \t]*(?:[:?.]?=|:|=>)""",
    folded=True,
)
_VALUE_GROUPS = frozenset(("dq", "sq", "bq", "eq", "tq", "uv"))
_WORDS_OF_KEY = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_WORDS = ("password", "passwd", "passphrase", "passcode", "passwort")
_TOKEN_WORDS = ("token", "credential", "authorization")
_COMPOUND_KEY = re.compile("(?:" + "|".join(_KEY_PREFIXES) + ")[_.-]?key")
# A key ending in one of these names something *about* a secret (its id, path, length...).
_ABOUT_A_SECRET = frozenset(
    """
id ids arn name names path file filename dir directory location ref env var variable field fields
type kind mode format encoding algorithm algo schema version url uri endpoint host header param
parameter template store manager provider service source enabled required changed updated created
at date time sha sha1 sha256 sha512 digest checksum fingerprint bits scope scopes audience issuer
prefix suffix index idx offset position pos len length min max count size attempts retries
timeout ttl expiry expires expiration age lifetime policy rule rules regex pattern validator strength
complexity label hint placeholder prompt message msg text title description desc help error tooltip
caption column input widget form class cls factory handler callback fn func method list
seconds secs minutes mins hours days ms millis alphabet charset chars characters used mgr
""".split()
)


_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")  # `("P4PASSWD", "P4TICKET")`: names
_DOC_FIELDS = (":param", "@param", ":arg", ":keyword", ":type", ":ivar", ":cvar", "@property", "* @param")
_CODE_RECEIVERS = ("self.", "this.", "cls.", "self._", "this._")
# `password_hash`, `api_key_sha256`, `token_digest`: a hash of a secret, not the secret.
_HASH_WORDS = frozenset("hash hashed hashes sha md5 digest checksum fingerprint bcrypt".split())


@lru_cache(maxsize=4096)
def classify_key(key: str) -> str | None:
    """The class a value assigned to `key` belongs to, or None when the key is not secret-ish."""
    words = [word.lower() for word in _WORDS_OF_KEY.findall(key)]
    if not words or words[-1] in _ABOUT_A_SECRET or any(word in _HASH_WORDS for word in words):
        return None
    if names_a_data_key(words):
        return None  # `idempotency_key`, `sort_key`: a key of a record, not of a lock
    secretish = any("secret" in word and not word.startswith("secretar") for word in words)  # not a secretary
    if secretish and "aws" in words:
        return "aws_secret_key"
    if secretish or any(word in ("pw", "pwd", "pass") or any(w in word for w in _PASSWORD_WORDS) for word in words):
        return "password"
    lowered = key.lower()  # as the needles see it
    if any(word in lowered for word in _TOKEN_WORDS) or _COMPOUND_KEY.search(lowered):
        return "api_key"
    if len(words) > 1 and words[-1] in ("key", "pat"):  # ALCHEMY_KEY, atera_key, githubPat: a vendor's key
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
        spans: list[tuple[int, int, str]] = []
        resume = 0
        tried = failed_run_end = -1
        for spot in _KEY_SPOT.finditer(lowered):
            if spot.start() < resume:
                continue  # inside an assignment already handled (a key word in a value)
            window = body[max(0, spot.start() - _LONGEST_KEY) : spot.start()]
            walked = match_length(_KEY_RUN_REVERSED, window[::-1])
            run_end = -1
            if walked == _LONGEST_KEY:
                # Inside a run longer than any key (`keykeykey...`): matching from each of its key
                # words would read the rest of the run each time (quadratic). Only the key words
                # near the run's end can end a name (`<long generated prefix>_db_password = ...`):
                # the first of them is tried, the name taken as the run's last characters; what
                # follows the run decides for all of them.
                run_end = spot.end() + match_length(_KEY_RUN_REVERSED, body[spot.end() : spot.end() + _LONGEST_KEY])
                if run_end - spot.end() == _LONGEST_KEY or run_end == failed_run_end:
                    continue
            key_start = spot.start() - walked
            if key_start == tried or body.endswith("[REDACTED:", 0, key_start):
                continue
            tried = start = key_start
            if start and body[start - 1] in "\"'`":
                start -= 1 + (start >= 2 and body[start - 2] == "\\")
            match = _ASSIGNMENT_AT.match(body, start)
            if match is None:
                failed_run_end = run_end
                continue
            resume = match.end()
            secret = self._secret(match, kind)
            if secret is not None:
                (value_start, value_end), name = secret
                resume = max(resume, value_end)  # a value may run on past the match
                counts[name] += 1
                spans.append((value_start, value_end, name))
        return splice(body, spans)

    @staticmethod
    def _secret(match: Match, kind: Callable[[], FileKind]) -> tuple[tuple[int, int], str] | None:
        """The span of the value to replace and its class, or None to leave it."""
        key = match.group("key")
        name = classify_key(key)
        if name is None:
            return None
        if match.group("kopen") and not match.group("kclose") and match.group("op") != "=":
            # `"secretsmanager:GetSecretValue"`: one string with a colon in it (but a string
            # `"DB_PASSWORD=..."`, a compose or argv entry, holds an assignment)
            return None
        # A bounded window: copying all that precedes each key would make a line of many keys quadratic.
        before = match.string[max(0, match.start() - 256) : match.start()].rstrip()
        if before.endswith(_DOC_FIELDS):
            return None  # `:param password: The password...`: documentation of a parameter
        # `self.password = value`: an attribute, so this is code whatever the file says.
        in_code = key.startswith(_CODE_RECEIVERS)
        group = match.lastgroup  # the value alternatives' groups close last
        if group not in _VALUE_GROUPS:
            return None
        value = match.group(group)
        quoted = group != "uv"
        if name == "api_key" and not looks_random(value):
            return None  # checked first: it is cheap, and spares the file-kind question below
        if match.group("op") == ",":
            # `define('DB_PASSWORD', '...')`: a call's first argument, then a quoted single token;
            # `get("password", default)` is code, `("password", "passcode")` a tuple of names.
            if (
                not quoted
                or key.lower() == "pass"  # `("pass", "fail")`: an outcome
                or len(value) < 4
                or any(ch.isspace() for ch in value)
                or not before.endswith("(")
                or _CONSTANT_NAME.fullmatch(value)
            ):
                return None
        if group == "tq" and not any(ch.isalnum() for ch in value):
            return None  # `"if not password:",`: a quote and punctuation closing a string
        if is_password_hash(value):
            return None
        if match.group("op") == ":" and is_version_or_coordinate(f"{key}:{value}"):
            return None  # `-Dartifact=org.passgen:passgen-core:3.1.4`: a Maven coordinate
        if not quoted and value.startswith("#") and match.group("op") == ":" and match.start(group) > match.end("op"):
            return None  # YAML: `#` after a blank starts a comment
        if quoted:
            if not quoted_literal_is_secret(value):
                return None
        elif not unquoted_value_is_secret(value, literal_words=lambda: not in_code and kind() is FileKind.CONFIG):
            return None
        span = match.span(group)
        if not quoted and not in_code and _runs_on(match) and kind() is FileKind.CONFIG:
            # A config line's value (`.env`, ini, properties, YAML) runs to a blank: `;`, `&`,
            # `=` and `#` inside it are part of it (`DB_PASSWORD=va;l&u=e#x`).
            span = (span[0], span[1] + match_length(_CONFIG_VALUE_TAIL, match.string, span[1]))
        if not quoted and match.group("op") != ":" and not key.startswith("-"):  # `--password=x -h db`: a flag
            rest = match.string[span[1] :].lstrip(" \t")
            if rest and rest[0] not in "#;,)}]" and not rest.startswith("//") and kind() is FileKind.CODE:
                return None  # `$pw = ConvertTo-SecureString "..."`: a command or an expression, not a literal
        if not quoted and match.group("op") == ":":
            rest = match.string[span[1] :]
            words = rest.lstrip(" \t")
            if words and words != rest and not words.startswith(("#", "//")):
                # More words follow. In a config file that is one YAML plain scalar
                # (`password: correct horse battery staple`): the value runs to the end of the
                # line or a comment. In code or prose it is a sentence (`:param password: The...`).
                if kind() is not FileKind.CONFIG:
                    return None
                span = (span[0], span[1] + len(rest.split(" #", 1)[0].rstrip()))
        if name == "api_key" and not looks_random(match.string[span[0] : span[1]]):
            return None
        if spells_its_name(key, value):
            return None  # `PASS = "pass"`: the name again
        if is_openpgp_fingerprint(key, value):
            return None  # `PGP_KEY = "573BFD6B..."`: a public key's fingerprint
        return span, name


ASSIGNMENT_RULE = AssignmentRule()

# A config line: the key starts it (after blanks, `export`, Dockerfile `ENV`..., a YAML list's
# `- `, as in a compose file's `environment:`, and the quote of `- "KEY=value"`).
_CONFIG_LINE_START = re.compile(r"[ \t]*(?:-[ \t]+)?(?:(?:export|set|readonly|ENV|ARG)[ \t]+)?[\"']?")
# What follows an unquoted value that stopped early: more of it, up to a blank or a quote; a
# `;` that starts the next `Name=` of a connection string (`Password=x;Server=y`) or ends the
# line (`token = other_value;`, a statement) ends it.
_CONFIG_VALUE_TAIL = re.compile(r"(?:[^\s;\"']|;(?![A-Za-z][\w ]*=|[ \t]*$))*")


def _runs_on(match: Match) -> bool:
    """An unquoted value stopped before a blank, on a line its key starts."""
    end = match.end()
    return (
        end < len(match.string)
        and not match.string[end].isspace()
        and _CONFIG_LINE_START.fullmatch(match.string, 0, match.start()) is not None
    )


class SpacedRule(Rule):
    """A value separated from its secret-ish name by blanks, where the syntax says it is one:
    a command-line flag (`--password Tr0ub...`, `--with-token ...`), a Dockerfile `ENV`/`ARG`
    (`ENV DB_PASSWORD Tr0ub...`), a C macro (`#define API_KEY "..."`), or a DSL call with one
    quoted argument and nothing after it (Gradle's `password 'Tr0ub...'`). Prose (`the password
    is required`) has none of these shapes. Values are judged like `name = value`."""

    _PATTERN = re.compile(
        r"(?:(?P<flag>(?<![\w-])--?)|(?P<directive>\b(?:ENV|ARG)[ \t]+|#[ \t]*define[ \t]+)|(?P<dsl>^[ \t]*))"
        r"(?P<key>[A-Za-z_][\w.-]*)[ \t]+"
        # an unquoted value that is a path (`--secret-file /run/s`, `~/.token`, `./key`) says where
        # a secret is, not what it is
        r"(?:\"(?P<dq>[^\"\s]+)\"|'(?P<sq>[^'\s]+)'|(?P<uv>(?!\.{1,2}/)[^\s\"'`=/~-][^\s\"'`]*))"
        r"(?P<end>[ \t]*$)?"
    )

    def __init__(self) -> None:
        # The value's first character as _PATTERN allows it (quotes included), so the needle
        # flags every line the rule can change.
        super().__init__("password", key_needles(ahead=r"[\w.\x80-\xff-]*+[ \t]+[^\s`=/~-]"))

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        spans: list[tuple[int, int, str]] = []
        for match in self._PATTERN.finditer(body):
            name = classify_key(match.group("key"))
            group = next((g for g in ("dq", "sq", "uv") if match.group(g) is not None), None)
            if name is None or group is None:
                continue
            if match.group("dsl") is not None and (group == "uv" or match.group("end") is None):
                continue  # `password 'x'` alone on its line, or it is a sentence
            value = match.group(group)
            if name == "api_key" and not looks_random(value):
                continue
            if spells_its_name(match.group("key"), value):
                continue  # `#define SN_id_PasswordBasedMAC "id-PasswordBasedMAC"`
            if is_password_hash(value) or not (
                quoted_literal_is_secret(value) if group != "uv" else unquoted_value_is_secret(value, lambda: True)
            ):
                continue
            counts[name] += 1
            spans.append((*match.span(group), name))
        return splice(body, spans)


SPACED_RULE = SpacedRule()


def _command_secret(match: Match, secret: str) -> bool:
    return (
        not_template(match, secret)
        and not is_password_hash(secret)
        and not names_a_secret(secret)
        and not is_stand_in(secret)
    )


def _markup_secret(match: Match, secret: str) -> bool:
    """`<password>...</password>` and friends: a secret-ish tag (not `<jjwt.version>`), a value
    that is not a stand-in."""
    tag = match.group("tag")
    return (
        not_template(match, secret)
        and (tag is None or classify_key(tag) is not None)
        and not is_stand_in(secret)
        and not is_version_or_coordinate(secret)
    )


# Credentials written as command words rather than assignments: `.netrc` lines
# (`machine h login u password p`), `curl -u user:password`, and the password flags of
# `psexec`/`sshpass` (`-p secret`) and the MySQL clients (`-psecret`, `--password=secret`), and a
# quoted password in a sentence (`the password is 'Secret123'`).
COMMAND_RULE = PatternRule(
    "password",
    r"(?i:\blogin[ \t]+\S+[ \t]+password[ \t]+)(?P<netrc>[^\s:=]\S*)"
    r"|(?i:\bcurl\b)[^\n]{0,1024}?[ \t](?:-u|--user)[ =]?[\"']?[^\s:\"'\[]+:(?P<curl>[^\s\"'@]+)"
    r"|(?i:\b(?:psexec|sshpass))[^\n]{0,1024}?[ \t]-p[ \t]+[\"']?(?P<flag>[^\s\"']+)"
    r"|(?i:\bmysql(?:dump|admin)?\b|\bmariadb\b)[^\n]{0,1024}?[ \t]-p(?P<mysql>[^\s\"'-][^\s\"']*)"
    r"|(?i:\bpassword[ \t]+is[ \t]+)(?P<q>[\"'])(?P<prose>[^\"'\s]{4,})(?P=q)"
    # SQL: `IDENTIFIED BY 'x'`, `WITH PASSWORD 'x'`, `PASSWORD 'x'`
    r"|(?i:\bidentified[ \t]+by[ \t]+|\bpassword[ \t]+)'(?P<sql>[^'\s]+)'"
    # setters and builders: `setPassword("x")`, `withApiToken("x")`
    r"|\b(?:set|with)(?:[A-Z]\w*)?(?:Password|Passwd|Secret|Token|ApiKey|Credentials?)"
    r"\([ \t]*\"(?P<setter>[^\"]+)\"[ \t]*\)"
    # PowerShell: `ConvertTo-SecureString "x" -AsPlainText`
    r"|(?i:\bconvertto-securestring[ \t]+(?:-string[ \t]+)?)[\"'](?P<pwsh>[^\"']+)[\"'](?=(?i:[^\n]*-asplaintext))"
    # `docker login -u user -p x` (also `psexec`, `sshpass` above)
    r"|(?i:\b(?:docker|podman|helm)[ \t]+(?:registry[ \t]+)?login\b)[^\n]{0,1024}?"
    r"[ \t]-p[ \t]+[\"']?(?P<login>[^\s\"']+)",
    needles("curl", ahead=r"[^\n]*[ \t](?:-u|--user)", folded=True)
    + needles("password", ahead=r"[ \t]+[^\s:=]", folded=True)
    + needles("psexec", "sshpass", ahead=r"[^\n]*[ \t]-p[ \t]", folded=True)
    + needles("mysql", "mariadb", ahead=r"[^\n]*[ \t]-p[^\s\"'-]", folded=True)
    + needles("password", ahead=r"""[ \t]+is[ \t]+["']""", folded=True)
    + needles("by", behind="identified ", ahead=r"""[ \t]+'""", folded=True)
    + needles("password", ahead=r"""[ \t]+'""", folded=True)
    + needles(
        "password(",
        "passwd(",
        "secret(",
        "token(",
        "apikey(",
        "credential(",
        "credentials(",
        ahead=r"""[ \t]*\"""",
        folded=True,
    )
    + needles("securestring", behind="convertto-", folded=True)
    + needles("login", ahead=r"[^\n]*[ \t]-p[ \t]", folded=True),
    groups=("netrc", "curl", "flag", "mysql", "prose", "sql", "setter", "pwsh", "login"),
    validate=_command_secret,
)

_SECRET_NAME = r"[\w.:-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey)[\w.:-]*"  # noqa: S105 - a pattern
MARKUP_RULE = PatternRule(
    "password",
    r"<(?P<tag>" + _SECRET_NAME + r")>(?P<element>[^<\s][^<]*)</(?P=tag)>"
    r"|\bkey[ \t]*=[ \t]*\"" + _SECRET_NAME + r"\"[ \t]+value[ \t]*=[ \t]*\"(?P<attribute>[^\"]+)\""
    r"|\b(?:key|name)[ \t]*=[ \t]*\""
    + _SECRET_NAME
    + r"\"[ \t]*>(?P<entry>[^<\s][^<]*)</",  # <entry key="db.password">x</entry>
    key_needles(ahead=r"""[\w.:\x80-\xff-]*+(?:>|"[ \t]+value[ \t]*=|"[ \t]*>)"""),
    groups=("element", "attribute", "entry"),
    validate=_markup_secret,
    flags=re.IGNORECASE,
)


# YAML puts a value on the line after its key when the writer wraps it:
#   password:
#     Tr0ub4dor&3
# The key line is flagged like any assignment; the scanner then asks `value_below` about the
# next line. Only in config files: `password:` alone on a line of code or prose is not a key.
_DANGLING_YAML_KEY = re.compile(
    r"(?P<indent>[ \t]*)(?:-[ \t]+)?[\"']?(?P<key>[\w.-]+)[\"']?:[ \t]*(?P<block>[|>][-+]?[ \t]*)?(?:#.*)?"
)
_PLAIN_SCALAR = re.compile(r"(?P<indent>[ \t]+)(?P<value>[^\s#\"'{}\[\]&*!|>%@`][^\s]*|\"[^\"]+\"|'[^']+')[ \t]*")


def dangling_yaml_key(body: str) -> tuple[int, str, bool] | None:
    """(indentation, class, block) when `body` is a secret-ish YAML key whose value is on the
    next line; `block`: a block scalar (`password: |`), whose value is every more-indented line."""
    match = _DANGLING_YAML_KEY.fullmatch(body)
    if match is None:
        return None
    name = classify_key(match.group("key"))
    return None if name is None else (len(match.group("indent")), name, match.group("block") is not None)


def block_line_below(body: str, key_indent: int, name: str) -> str | None:
    """A line of a block scalar's value, redacted whole (it is all value), or None when the
    line is not more indented than the key (the block has ended)."""
    stripped = body.lstrip(" \t")
    indent = len(body) - len(stripped)
    if not stripped or indent <= key_indent or REDACTED_MARK in stripped:
        return None
    return body[:indent] + placeholder(name)


def value_below(body: str, key_indent: int, name: str) -> str | None:
    """`body` with its value redacted when it is the dangling key's value: more indented than
    the key, one scalar, and a secret by the same tests as `key: value` on one line."""
    match = _PLAIN_SCALAR.fullmatch(body)
    if match is None or len(match.group("indent")) <= key_indent:
        return None
    value = match.group("value")
    quoted = value[0] in "\"'"
    literal = value[1:-1] if quoted else value
    if name == "api_key" and not looks_random(literal):
        return None
    if not (quoted_literal_is_secret(literal) if quoted else unquoted_value_is_secret(literal, lambda: True)):
        return None
    start = match.start("value") + (1 if quoted else 0)
    return body[:start] + placeholder(name) + body[start + len(literal) :]
