"""Connection strings that are not `scheme://user:password@host` URIs: keyword strings (libpq
`host=db user=app password=x`, ADO.NET and ODBC `Server=db;Pwd={a;b}`, JDBC parameters
`?user=u&password=x`, SQL Server's `;password=x`), Go's MySQL DSNs (`user:pw@tcp(host)/db`) and
Oracle's `user/pw@connect-identifier` (EZConnect, `sqlplus`, thin JDBC). Only the password is
replaced; keys, users and hosts stay for the reviewer."""

from __future__ import annotations

import bisect
import re
from collections import Counter

from p4review.change.redaction.base import Match, Rule, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import lowered_ascii, needles
from p4review.change.redaction.shaped import Kind, ShapeRule, literal_secret
from p4review.change.redaction.values import REDACTED_MARK, names_a_secret

# ---- keyword connection strings -------------------------------------------------------------

# A password key and its `=` (found in the lowercased line: the search starts at a literal `p`),
# then, looking back, what says which syntax this is: `;` (ADO.NET, ODBC, SQL Server JDBC), `?`/`&`
# (URL and JDBC parameters), or a blank, quote or line start (libpq, or the first pair of a `;`
# string), with the key's own first words between (`User Password=`, `Jet OLEDB:Database Password=`).
_KEY_WORD = re.compile(r"p(?:ass(?:w(?:or)?d)?|wd)=[ \t]*")
_KEY_START = re.compile(
    r"(?P<before>&amp;|[;?&]|^|(?<=[\s\"'`(]))(?P<gap>[ \t]*)"
    r"(?:user[ _]?|db[ _]?|database[ _]|ssl|admin[ _]?|root|jet[ ]oledb:database[ ])?$",
    re.IGNORECASE,
)
_LONGEST_KEY_PREFIX = len("&amp;jet oledb:database ") + 8
# The value right after `=`, quoted in one of the ways these syntaxes allow.
_QUOTED = re.compile(
    r"\{(?P<brace>(?:[^}]|\}\})*)\}"  # ODBC, SQL Server JDBC: `{a;b}`, `}}` escapes `}`
    r"|\\\"(?P<escaped>(?:[^\"\\]|\\\"\\\"|\\[^\"])*)\\\""  # `\"x;y\"` inside a code string
    r"|\"(?P<double>(?:[^\"]|\"\")*)\"(?=[ \t]*(?:[;&\s\"'`]|$))"  # ADO.NET: `""` escapes `"`
    r"|'(?P<single>(?:[^'\\]|''|\\.)*)'"  # ADO.NET `''`, libpq `\'`
)
_UNQUOTED = {
    "semicolon": re.compile(r"[^;\"'`\r\n]*[^;\"'`\s]"),  # to the next `;`: blanks inside are part of it
    "query": re.compile(r"(?:[^&;\s\"'`<>]|;(?![\w.-]+=))+"),
    "libpq": re.compile(r"(?:[^\s\"'`\\]|\\.)+"),
}
_NEXT_PAIR = re.compile(r";[ \t]*[A-Za-z][\w .:]*=")
# Another libpq keyword, between blanks or quotes (`f(user=u, ...)` is a call, `?x&user=u` a query).
_LIBPQ_PAIR = re.compile(
    r"(?:^|(?<=[\s\"'`]))(?:host|hostaddr|port|dbname|user|sslmode|connect_timeout|application_name|service"
    r"|options|target_session_attrs|sslrootcert|sslcert|sslkey)=(?:'[^']*'|[^\s,;&()\"'`]+)(?=[\s\"'`]|$)"
)
# `"...;Password=" + password + ";"`: the quote closes the code string, not the value.
_CONCATENATION = re.compile(r"^\s*(?:\+|\|\||&|\.\.?)\s|\s(?:\+|\|\||&|\.\.?)\s*$|^\+\s*[\w.$]+\s*\+$")


def _style(body: str, key: Match, end: int, kind: Kind, quotes: _Quotes) -> str | None:
    """Which syntax a key is written in (`key`: what precedes it; `end`: after its `=`), or None
    when it is not a connection string."""
    before = key.group("before").lower()
    if before in ("?", "&", "&amp;"):
        return "query"
    if before == ";":
        style = "semicolon"
    elif _NEXT_PAIR.search(body, end):
        style = "semicolon"  # the first pair of `Password=x y;Server=db`
    elif _LIBPQ_PAIR.search(body):
        style = "libpq"
    else:
        return None
    # In code, these syntaxes live inside string literals: `a = b; password = pw;` is code.
    # (A file's kind costs a pass over the whole text the first time: asked last.)
    if not quotes.inside_a_string(key.start()) and kind() is FileKind.CODE:
        return None
    return style


class _Quotes:
    """Is a position of `body` inside a string literal (an odd number of quotes before it, an
    escaped double quote aside)? The quotes are found once per line, when first asked: counting
    them before every key word would make a line of many key words quadratic."""

    _DOUBLE = re.compile(r'(?<!\\)"')

    def __init__(self, body: str):
        self._body = body
        self._double: list[int] | None = None
        self._single: list[int] = []

    def inside_a_string(self, position: int) -> bool:
        if self._double is None:
            self._double = [match.start() for match in self._DOUBLE.finditer(self._body)]
            self._single = [index for index, char in enumerate(self._body) if char == "'"]
        return (
            bisect.bisect_left(self._double, position) % 2 == 1 or bisect.bisect_left(self._single, position) % 2 == 1
        )


def _value_span(body: str, start: int, style: str) -> tuple[int, int] | None:
    quoted = _QUOTED.match(body, start)
    if quoted is not None and (style != "libpq" or quoted.lastgroup == "single"):
        group = quoted.lastgroup or ""
        value = quoted.group(group)
        if _CONCATENATION.search(value) or (group == "brace" and not literal_secret(body[start : quoted.end()])):
            return None  # code around a value (`" + pw + "`), or a format field (`{0}`, `{password}`)
        return quoted.span(group)
    unquoted = _UNQUOTED[style].match(body, start)
    return None if unquoted is None else unquoted.span()


class KeywordConnectionStringRule(Rule):
    """`Password={a;b}`, `Pwd="x;y"`, `PWD='...'`, `;password=p@ss`, `?user=u&userpass=x`,
    `host=db user=app password='a b' dbname=x`: the value, to its real end by the syntax's
    own quoting rules. A value in a connection string is a literal even inside code."""

    def __init__(self) -> None:
        super().__init__(
            "password",
            # Literals longer than the assignment rules' `pass`, so that their hits (every
            # `password = ...`) do not run this rule too (see needles.Prefilter).
            needles("password=", "passwd=", "pass=", "pwd=", folded=True),
        )

    def apply(self, body: str, kind: Kind, counts: Counter[str]) -> str:
        spans: list[tuple[int, int, str]] = []
        resume = 0
        quotes = _Quotes(body)
        for word in _KEY_WORD.finditer(lowered_ascii(body)):
            if word.start() < resume:
                continue
            key = _KEY_START.search(body, max(0, word.start() - _LONGEST_KEY_PREFIX), word.start())
            if key is None:
                continue
            style = _style(body, key, word.end(), kind, quotes)
            if style is None:
                continue
            span = _value_span(body, word.end(), style)
            if span is None:
                continue
            value = body[span[0] : span[1]]
            if REDACTED_MARK in value or not literal_secret(value) or names_a_secret(value):
                continue
            resume = span[1]
            counts[self.name] += 1
            spans.append((*span, self.name))
        return splice(body, spans)


KEYWORD_CONNECTION_STRING_RULE = KeywordConnectionStringRule()


# ---- Go MySQL DSNs and Oracle connect strings -----------------------------------------------


def _no_blank(_: Match, __: str, value: str, ___: Kind) -> bool:
    return not any(ch.isspace() for ch in value)


# `user:password@tcp(host:3306)/db`, `user:pw@unix(/path)/db`, `user:pw@/db`: the password runs
# to the `@` before the protocol (an `@` inside it is part of it).
GO_DSN_RULE = ShapeRule(
    "connection_uri",
    r"(?<![\w.:/@%-])[\w.+~-]+:(?P<password>[^\s\"'`]+?)"
    r"@(?:(?:tcp6?|udp|unix|unixgram|memory|pipe)\(|/[\w$-]*(?=[?\"'`\s]|$))",
    needles("@tcp", "@udp", "@unix", "@memory", "@pipe", ahead=r"\w*\(")
    + needles("@/", ahead=r"""[\w$-]*(?:[?"'`\s]|$)"""),
    {"password": "connection_uri"},
    judge=_no_blank,
    flags=re.ASCII,  # as the needles see the text (bytes): `\s` is an ASCII blank
)


def _oracle_password(group: str) -> str:
    # A double-quoted password may hold anything; an unquoted one runs to the last `@`.
    return rf"(?P<{group}>\"[^\"]+\"|[^\s/\"'@]+(?:@[^\s/\"'@]+)*?)"


_ORACLE_TOOLS = ("sqlplus", "sqlldr", "rman", "expdp", "impdp", "dgmgrl")
# `user/password@` where the rest says Oracle: a thin/OCI JDBC URL, an EZConnect address
# (`@host:1521/service`, `@//host`), a `userid=` parameter, `CONNECT user/pw` in SQL*Plus, or
# any `user/password` argument of an Oracle tool (`sqlplus -s scott/tiger@orcl`).
_ORACLE_GROUPS = ("jdbc", "ezconnect", "userid", "connect")
_ORACLE = re.compile(
    r"(?i:jdbc:oracle:(?:thin|oci8?|kprb):)[\w$#]+/" + _oracle_password("jdbc") + "@"
    r"|(?<![\w$#@/.:-])[A-Za-z_][\w$#]*/" + _oracle_password("ezconnect") + r"@(?://[\w.-]|[\w.-]+:\d{2,5}[/:][\w$.-])"
    r"|(?i:\buserid[ \t]*=[ \t]*[\"']?)[\w$#]+/" + _oracle_password("userid") + r"(?=[@\s\"',]|$)"
    r"|^(?i:[ \t]*conn(?:ect)?[ \t]+)[\w$#]+/" + _oracle_password("connect") + r"(?=[@\s;]|$)"
)
_ORACLE_ARGUMENT = re.compile(r"(?<=[ \t=\"'])[A-Za-z_][\w$#]*/" + _oracle_password("password") + r"(?=[@\s\"']|$)")
_ORACLE_TOOL = re.compile(r"(?i)\b(?:" + "|".join(_ORACLE_TOOLS) + r")\b")


class OracleConnectRule(Rule):
    def __init__(self) -> None:
        super().__init__(
            "connection_uri",
            needles("oracle:", ahead="(?:thin|oci|kprb)", folded=True)
            + needles("@//")
            + needles("@", ahead=r"[\w.-]+:\d{2,5}[/:]")
            + needles("userid", ahead=r"[ \t]*=", folded=True)
            + needles("conn", ahead=r"(?:ect)?[ \t]+[\w$#]+/", folded=True)
            + needles(*_ORACLE_TOOLS, ahead=r"[^\n]*[\w$#]/", folded=True),
        )

    def apply(self, body: str, kind: Kind, counts: Counter[str]) -> str:
        if "/" not in body:
            return body  # every form has `user/password` (the `@` needle also flags e-mail lines)
        spans: dict[int, int] = {}
        for match in _ORACLE.finditer(body):
            for group in _ORACLE_GROUPS:
                if match.start(group) >= 0:
                    spans[match.start(group)] = match.end(group)
        tool = _ORACLE_TOOL.search(body)
        if tool is not None:
            for match in _ORACLE_ARGUMENT.finditer(body, tool.end()):
                spans.setdefault(match.start("password"), match.end("password"))
        kept: list[tuple[int, int, str]] = []
        for start, end in sorted(spans.items()):
            value = body[start:end].strip('"')
            if kept and start < kept[-1][1]:
                continue
            if REDACTED_MARK in value or not literal_secret(value):
                continue
            counts[self.name] += 1
            kept.append((start, end, self.name))
        return splice(body, kept)


ORACLE_CONNECT_RULE = OracleConnectRule()

CONNECTION_STRING_RULES: tuple[Rule, ...] = (KEYWORD_CONNECTION_STRING_RULE, GO_DSN_RULE, ORACLE_CONNECT_RULE)
