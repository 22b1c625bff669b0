"""Passwords that are not written `name = value`: positional arguments of login and connect
calls (`smtp.login("u", "...")`, `NetworkCredential("u", "...")`, `auth=("u", "...")`) and
command-line flags (`mysql -p'...'`, `redis-cli -a ...`, `smbclient -U user%...`); and the value
judgements and needle helpers the forms judged by a name share (named_values.py)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from p4review.change.redaction.assignments import classify_key
from p4review.change.redaction.base import Match, PatternRule, Rule
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import Needle, needles
from p4review.change.redaction.nonsecrets import is_stand_in
from p4review.change.redaction.values import (
    REDACTED_MARK,
    is_password_hash,
    is_template_or_masked,
    looks_random,
    names_a_secret,
    quoted_literal_is_secret,
    unquoted_value_is_secret,
)

# A path, a URL, a file name or a dotted/snake name: what a call's string argument usually is
# when it is not a password (`render(request, "accounts/login.html")`, `auth("oauth2", "client_id")`).
_NOT_A_PASSWORD = re.compile(
    r".*(?:://|^[./~\\]|/[\w.-]+/).*"
    r"|[\w-]+\.(?:html?|json|ya?ml|xml|txt|ini|cfg|conf|py|js|php|jsp|erb)"
    r"|[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
)


def literal_is_password(value: str) -> bool:
    """A quoted argument where a password is expected: a literal, not a stand-in, a hash, a
    name, a path or a sentence."""
    return (
        any(char.isalnum() for char in value)
        and REDACTED_MARK not in value
        and not any(ch.isspace() for ch in value)
        and quoted_literal_is_secret(value)
        and not is_password_hash(value)
        and _NOT_A_PASSWORD.fullmatch(value) is None
    )


def named_value(key: str, value: str, *, quoted: bool) -> str | None:
    """The class of `value` held under the name `key` (`DB_PASSWORD`, `API_TOKEN`), or None
    when the name is not secret-ish or the value is not a secret (token names need a
    generated-looking value, as in `name = value`)."""
    name = classify_key(key)
    if name is None or not value or REDACTED_MARK in value or is_password_hash(value):
        return None
    if name == "api_key":
        return name if looks_random(value) else None
    secret = quoted_literal_is_secret(value) if quoted else unquoted_value_is_secret(value, lambda: True)
    return name if secret else None


def _literal_password(_: Match, secret: str) -> bool:
    return literal_is_password(secret)


def _command_password(_: Match, secret: str) -> bool:
    return (
        any(char.isalnum() for char in secret)  # `-p'…'`: an ellipsis in documentation
        and not is_template_or_masked(secret)
        and not names_a_secret(secret)
        and not is_stand_in(secret)
        and not is_password_hash(secret)
    )


def own(needles_: tuple[Needle, ...]) -> tuple[Needle, ...]:
    """`needles_` with their first character moved into the lookbehind (`pass` -> `ass` behind
    `p`): the same lines match, but under a literal of their own. The prefilter tells rules
    apart by the literal found, not by its lookarounds, so a rule sharing `pass` with the
    assignment rules would run on every line they flag, whatever its own lookaheads say."""
    return tuple(
        Needle(needle.literal[1:], needle.behind + re.escape(needle.literal[0]), needle.ahead, needle.folded)
        if len(needle.literal) > 1
        else needle
        for needle in needles_
    )


def _gate(*literals: str) -> Callable[[str], bool]:
    """A cheap test a line must pass before a rule's regex runs: one of `literals` in it. The
    prefilter runs a rule on every line holding one of its needles' literals (`pass`, `http`),
    whatever their lookaheads, so most lines a rule sees are not its own."""
    search = re.compile("|".join(re.escape(literal) for literal in literals)).search
    return lambda body: search(body) is not None


class _GatedPatternRule(PatternRule):
    def __init__(self, gate: Callable[[str], bool], *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.gate = gate

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        return super().apply(body, kind, counts) if self.gate(body) else body


# `@"..."`: a C# verbatim string (`@"CORP\admin"`).
_QUOTED = r"@?(?P<q>[\"'])(?P<{0}>(?:(?!(?P=q))[^\\\n]|\\.)+)(?P=q)"
# A simple argument before the password: a literal or a name (`user`, `settings.SMTP_USER`).
_ARG = r"(?:@?\"[^\"\n]*\"|'[^'\n]*'|[\w.$\[\]>-]+)"
_LOGIN_CALLS = (
    "login",
    "simple_bind_s",
    "simple_bind",
    "bind_s",
    "auth",
    "authenticate",
    "HTTPBasicAuth",
    "HTTPDigestAuth",
    "HTTPProxyAuth",
    "BasicAuth",
    "DigestAuth",
    "NetworkCredential",
    "PasswordAuthentication",
    "UsernamePasswordCredentials",
    "UsernamePasswordAuthenticationToken",
    "PasswordCredential",
    "set_credentials",
    "setCredentials",
)
# Database drivers whose positional order puts the password third (host, user, password).
_DRIVERS = ("psycopg2", "pymysql", "MySQLdb", "mysql.connector", "pymssql")

# `login(user, "...")` and friends: the second argument; `getConnection(url, user, "...")`,
# .NET's `DirectoryEntry(path, user, "...")` and `pymysql.connect(host, user, "...")`: the
# third; `auth=("u", "...")`: a pair under an auth name.
CALL_RULE = _GatedPatternRule(
    _gate("(", "[", "auth", "Auth"),
    "password",
    r"(?<![\w$])(?:"
    + "|".join(_LOGIN_CALLS)
    + r")[ \t]*\([ \t]*"
    + _ARG
    + r"[ \t]*,[ \t]*"
    + _QUOTED.format("login")
    # `"...".toCharArray()` (Java's PasswordAuthentication)
    + r"(?=[ \t]*(?:[,)]|\.toCharArray\(\)))"
    r"|(?<![\w$])(?:getConnection|DirectoryEntry|(?:"
    + "|".join(re.escape(d) for d in _DRIVERS)
    + r")\.connect)[ \t]*\([ \t]*"
    + _ARG
    + r"[ \t]*,[ \t]*"
    + _ARG
    + r"[ \t]*,[ \t]*"
    + _QUOTED.format("connect").replace("(?P<q>", "(?P<q2>").replace("(?P=q)", "(?P=q2)")
    + r"(?=[ \t]*[,)])"
    r"|(?i:(?<![\w$])[\w]*auth)[\"']?[ \t]*[=:][ \t]*[(\[][ \t]*"
    + _ARG
    + r"[ \t]*,[ \t]*"
    + _QUOTED.format("pair").replace("(?P<q>", "(?P<q3>").replace("(?P=q)", "(?P=q3)")
    + r"[ \t]*[)\]]",
    # shared literals (`login`, `auth`) are fine here: the lines they flag are few
    (
        needles(
            *(call.lower() for call in _LOGIN_CALLS), "getconnection", "directoryentry", ahead=r"[ \t]*\(", folded=True
        )
        + needles(*(driver.lower() for driver in _DRIVERS), ahead=r"\.connect[ \t]*\(", folded=True)
        + needles("auth", ahead=r"""["']?[ \t]*[=:][ \t]*[(\[]""", folded=True)
    ),
    groups=("login", "connect", "pair"),
    validate=_literal_password,
)

# Password flags of command-line clients.
_COMMANDS = (
    "mysql",
    "mariadb",
    "redis-cli",
    "http ",
    "https ",
    "--proxy-user",
    "curl",
    "smb",
    "rpcclient",
    "ldap",
    "keytool",
    "jarsigner",
    "-pass",
    "echo",
)
CLI_RULE = _GatedPatternRule(
    lambda body: any(command in body.lower() for command in _COMMANDS),
    "password",
    # `mysql -p'...'` (the unquoted `-p...` is COMMAND_RULE's)
    r"(?i:\bmysql(?:dump|admin|import|show|check)?\b|\bmariadb\b)[^\n]{0,1024}?[ \t]-p"
    r"(?P<mq>[\"'])(?P<mysql>[^\"'`\s]+)(?P=mq)"
    r"|\bredis-cli\b[^\n]{0,1024}?[ \t](?:-a|--pass)[ \t]+(?P<rq>[\"']?)(?P<redis>[^\s\"'`]+)(?P=rq)"
    # httpie: `http -a user:pw`, `https --auth=user:pw`
    r"|(?<![\w./-])https?(?=[ \t])[^\n]{0,1024}?(?:[ \t]-a|--auth)[ =]"
    r"(?P<hq>[\"']?)[^\s:\"'\[]+:(?P<httpie>[^\s\"'`@]+)(?P=hq)"
    r"|(?:--proxy-user|\bcurl\b[^\n]{0,1024}?[ \t]-U)[ =](?P<pq>[\"']?)[^\s:\"'\[]+:(?P<proxy>[^\s\"'`@]+)(?P=pq)"
    # Samba: `-U user%pw` (also `DOMAIN\user%pw`)
    r"|\b(?:smbclient|rpcclient|smbget|smbcacls|smbtree|smbmap)\b[^\n]{0,1024}?(?:-U|--user(?:name)?)[ =](?P<sq>[\"']?)"
    r"[^\s%\"'`]+%(?P<smb>[^\s\"'`]+)(?P=sq)"
    r"|\bldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)\b[^\n]{0,1024}?[ \t]-w[ \t]+"
    r"(?P<lq>[\"']?)(?P<ldap>[^\s\"'`]+)(?P=lq)"
    r"|\b(?:keytool|jarsigner)\b[^\n]{0,1024}?[ \t]-(?:src|dest)?(?:storepass|keypass)[ \t]+"
    r"(?P<kq>[\"']?)(?P<keytool>[^\s\"'`]+)(?P=kq)"
    # OpenSSL pass phrase arguments: `-passin pass:pw`, `-passout pass:pw`
    r"|(?<![\w-])-pass(?:in|out)?[ \t]+(?P<oq>[\"']?)pass:(?P<openssl>[^\s\"'`]+)(?P=oq)"
    # a password piped into a client that reads it from stdin
    r"|\becho[ \t]+(?:-n[ \t]+)?(?P<eq>[\"']?)(?P<echo>[^\s\"'|]+)(?P=eq)[ \t]*\|[ \t]*"
    r"(?=[^\n|]*--password-stdin|sudo[ \t]+-S\b)",
    needles("mysql", "mariadb", ahead=r"""[^\n]*[ \t]-p["']""", folded=True)
    + needles("redis-cli", ahead=r"[^\n]*[ \t](?:-a|--pass)[ \t]", folded=True)
    + needles("http", ahead=r"s?(?=[ \t])[^\n]*?(?:[ \t]-a|--auth)[ =]", folded=True)
    + needles("--proxy-user", folded=True)
    + needles("curl", ahead=r"[^\n]*[ \t]-u[ =]", folded=True)
    + needles(
        "smbclient",
        "rpcclient",
        "smbget",
        "smbcacls",
        "smbtree",
        "smbmap",
        ahead=r"[^\n]*(?:-u|--user)",
        folded=True,
    )
    + needles("ldap", ahead=r"[^\n]*[ \t]-w[ \t]", folded=True)
    + needles("keytool", "jarsigner", ahead=r"[^\n]*[ \t]-[a-z]*pass[ \t]", folded=True)
    + needles("-pass", ahead=r"""(?:in|out)?[ \t]+["']?pass:""", folded=True)
    + needles("echo", ahead=r"[^\n]*\|[^\n]*(?:--password-stdin|sudo[ \t]+-s)", folded=True),
    groups=("mysql", "redis", "httpie", "proxy", "smb", "ldap", "keytool", "openssl", "echo"),
    validate=_command_password,
)


POSITIONAL_RULES: tuple[Rule, ...] = (CALL_RULE, CLI_RULE)
