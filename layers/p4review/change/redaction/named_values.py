"""Values judged by a secret-ish name that is not right before them: a value split from its
name (`{"Name": "DB_PASSWORD", "Value": "..."}`, a Kubernetes `- name:` / `value:` pair, Postman's
`{"key": "token", "value": "..."}`, a list under a password key, a Terraform `variable
"db_password"` block's `default`), comparisons with a literal (`if password == "..."`,
`strcmp(pass, "...")`) and the fallback default of an environment lookup (`process.env.SECRET ||
"..."`, `${DB_PASSWORD:-...}`).

The rules handle one line each; for the forms spread over lines (a value on the line after its
name, a list, a Terraform block), `key_above` tells the scanner which line starts one and
`line_below` redacts the lines that follow (see Scanner._split_value_below)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from p4review.change.redaction.assignments import classify_key, key_needles
from p4review.change.redaction.base import CompiledOnFirstUse, Rule, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import Needle, needles
from p4review.change.redaction.positional import literal_is_password, named_value, own
from p4review.change.redaction.values import placeholder

# Compared with a name, a lower-case word is a state or a mode (`pass_arg == "environment"`,
# `typeof pass !== "boolean"`), not a password.
_LOWER_WORD = re.compile(r"[a-z]+")


def _own_key_needles(ahead: str) -> tuple[Needle, ...]:
    """`key_needles(ahead)` under literals of their own (`own`), the ~40 compound keys
    (`api_key`, `access-key`...) as one `ke`+`y` needle: forty lookbehinds tried at every `y`
    of the text cost more than the few lines a bare `key` adds (`classify_key` judges them)."""
    every = key_needles(ahead=ahead)
    compound = any(needle.literal == "key" for needle in every)
    # `token` keeps `ken` (behind `to`): shifted to `en`, every `e` of the text would be a candidate.
    kept = tuple(needle for needle in every if needle.literal == "ken")
    shifted = own(tuple(needle for needle in every if needle.literal not in ("key", "ken")))
    return shifted + kept + (Needle("y", "ke", ahead, folded=True),) * compound


class _KeyedValueRule(CompiledOnFirstUse, Rule):
    """A pattern with one or more forms, each a value group and the group naming its secret
    (`forms`: value group -> key group); the value is judged by its name (`named_value`)."""

    def __init__(
        self,
        literals: tuple[str, ...],
        pattern: str,
        needles_: tuple[Needle, ...],
        forms: dict[str, str],
        *,
        quoted: bool = True,
        words_are_code: bool = False,
    ):
        super().__init__("password", needles_)
        self.literals = literals
        self.words_are_code = words_are_code
        self._compile_later(pattern)
        self.forms = forms
        self.quoted = quoted

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        return self.apply_gated(body, kind, counts) if any(lit in body for lit in self.literals) else body

    def apply_gated(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        """`apply` on a line known to hold one of `literals`."""
        spans: list[tuple[int, int, str]] = []
        for match in self.pattern.finditer(body):
            group = next((g for g in self.forms if match.start(g) >= 0), None)
            if group is None:
                continue
            value = match.group(group)
            name = named_value(match.group(self.forms[group]), value, quoted=self.quoted)
            if name is None or (self.quoted and name == "password" and not literal_is_password(value)):
                continue
            if self.words_are_code and _LOWER_WORD.fullmatch(value):
                continue
            counts[name] += 1
            spans.append((*match.span(group), name))
        return splice(body, spans)


_RECORD_NAME = r"(?i:[\"']?(?:key|name|parameterkey|parameter_name|variable|env)[\"']?)"
_RECORD_VALUE = r"(?i:[\"']?(?:value|parametervalue|parameter_value|defaultvalue)[\"']?)"
_VALUE_WORDS = "(?:value|parametervalue|parameter_value|defaultvalue)"

# `{"Name": "DB_PASSWORD", "Value": "..."}`, `{"ParameterKey": "DbPassword", "ParameterValue": "..."}`,
# `<param name="db.password" value="..."/>`, and a list under a secret name (`passwords: ["...", "..."]`).
RECORD_RULE = _KeyedValueRule(
    ("alue", "ALUE"),
    _RECORD_NAME + r"[ \t]*[:=][ \t]*[\"'](?P<key>[\w.-]+)[\"'][ \t]*[,;]?[ \t]*" + _RECORD_VALUE + r"[ \t]*[:=][ \t]*"
    r"(?:\"(?P<dq>[^\"\\\n]+)\"|'(?P<sq>[^'\\\n]+)')",
    _own_key_needles(ahead=r"""[\w.\x80-\xff-]*+["'][ \t]*[,;]?[ \t]*["']?""" + _VALUE_WORDS + r"""["']?[ \t]*[:=]"""),
    {"dq": "key", "sq": "key"},
)


class _ListRule(Rule):
    """`passwords: ["...", "..."]`, `"api_tokens" = ['...']`: every quoted item of a one-line list
    under a secret name, judged like `name = item`."""

    _LIST = re.compile(r"(?P<key>[\w.-]+)[\"']?[ \t]*[:=][ \t]*\[(?P<items>[^\]\n]*)\]")
    _ITEM = re.compile(r"\"(?P<dq>[^\"\\\n]*)\"|'(?P<sq>[^'\\\n]*)'")

    def __init__(self) -> None:
        super().__init__("password", _own_key_needles(ahead=r"""[\w.\x80-\xff-]*+["']?[ \t]*[:=][ \t]*\[[ \t]*["']"""))

    literals = ('["', "['", "[ ")

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        return self.apply_gated(body, kind, counts) if any(lit in body for lit in self.literals) else body

    def apply_gated(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        spans: list[tuple[int, int, str]] = []
        for match in self._LIST.finditer(body):
            key = match.group("key")
            found = False
            for item in self._ITEM.finditer(match.group("items")):
                group = "dq" if item.start("dq") >= 0 else "sq"
                value = item.group(group)
                name = named_value(key, value, quoted=True)
                if name is None or (name == "password" and not literal_is_password(value)):
                    continue
                found = True
                offset = match.start("items")
                spans.append((offset + item.start(group), offset + item.end(group), name))
            if found:
                counts[spans[-1][2]] += 1
        return splice(body, spans)


LIST_RULE = _ListRule()

_CMP = r"(?:===?|!==?|\beq\b|\bne\b)"
# `if password == "..."`, `pw.equals("...")`, `"...".equals(password)`, `strcmp(pass, "...")`.
COMPARISON_RULE = _KeyedValueRule(
    ("==", "!=", " eq ", " ne ", "quals", "ompare", "cmp", "Equal"),
    r"(?<![\w.$>-])[$@]?(?P<key>[A-Za-z_][\w.]*(?:->\w+)*)(?:\(\))?[\"'\]]*[ \t]*" + _CMP + r"[ \t]*"
    r"(?:[fbrFBR]{1,2}(?=[\"']))?"  # Python's f"...", b"...", r"..."
    r"(?:\"(?P<dq>[^\"\\\n]+)\"|'(?P<sq>[^'\\\n]+)')"
    r"|(?<![\w$])(?P<key2>[A-Za-z_][\w.]*)\.(?:equals|equalsIgnoreCase|Equals|contentEquals|compareTo)\([ \t]*"
    r"\"(?P<eq>[^\"\\\n]+)\"[ \t]*\)"
    r"|\"(?P<rq>[^\"\\\n]+)\"\.(?:equals|equalsIgnoreCase|Equals|contentEquals)\([ \t]*"
    r"(?P<key3>[A-Za-z_][\w.]*)[ \t]*\)"
    r"|\b(?:strn?cmp|strn?casecmp|wcscmp|_?stricmp|strcmpi|compare_digest|constant_time_compare|safe_str_cmp"
    r"|timingSafeEqual|secure_compare|ConstantTimeCompare|Objects\.equals|StringUtils\.equals)[ \t]*\([ \t]*"
    r"(?:(?P<key4>[\w.>-]+)[ \t]*,[ \t]*\"(?P<fq>[^\"\\\n]+)\"|\"(?P<gq>[^\"\\\n]+)\"[ \t]*,[ \t]*(?P<key5>[\w.>-]+))",
    _own_key_needles(
        ahead=r"""[\w\x80-\xff-]*+(?:\(\))?["'\]]*[ \t]*"""
        r"""(?:[!=]==?|eq[ \t]|ne[ \t]|\.equals|\.contentequals|\.compareto|,[ \t]*["'])"""
    )
    # `"...".equals(password)`: the name comes after the value
    + needles("equals", ahead=r"(?:ignorecase)?\([ \t]*[\w.]*(?:pass|pw|cret|cred|token|key|auth)", folded=True),
    {"dq": "key", "sq": "key", "eq": "key2", "rq": "key3", "fq": "key4", "gq": "key5"},
    words_are_code=True,
)


# `process.env.SECRET || "..."`, `ENV["X"] || "..."`, `getenv("X") ?: "..."`, `os.getenv("X") or "..."`,
# `ENV.fetch("X", "...")`, `config("X", default="...")`, `${DB_PASSWORD:-...}`.
FALLBACK_RULE = _KeyedValueRule(
    ("||", "??", "?:", " or ", '("', "('"),
    r"(?:\bprocess\.env\.|\bENV\[[\"']|\b(?:getenv|get|env|config|fetch|GetEnvironmentVariable)\([ \t]*[\"'])"
    r"(?P<key>\w+)(?:[\"']\]|[\"'][ \t]*\))?[ \t]*(?:\|\||\?\?|\?:|\bor\b)[ \t]*"
    r"(?:\"(?P<dq>[^\"\\\n]+)\"|'(?P<sq>[^'\\\n]+)'|`(?P<bq>[^`$\\\n]+)`)"
    r"|\b(?:ENV\.fetch|config|env|getenv|get)\([ \t]*[\"'](?P<key2>\w+)[\"'][ \t]*,[ \t]*(?:default[ \t]*=[ \t]*)?"
    r"(?:\"(?P<kq>[^\"\\\n]+)\"|'(?P<lq>[^'\\\n]+)')",
    _own_key_needles(ahead=r"""[\w\x80-\xff]*+(?:["']\]|["'][ \t]*\))?[ \t]*(?:\|\||\?\?|\?:|or[ \t])""")
    + _own_key_needles(ahead=r"""[\w\x80-\xff]*+["'][ \t]*,[ \t]*(?:default[ \t]*=[ \t]*)?["']"""),
    {"dq": "key", "sq": "key", "bq": "key", "kq": "key2", "lq": "key2"},
)
SHELL_DEFAULT_RULE = _KeyedValueRule(
    ("${",),
    r"\$\{(?P<key>\w+):?[-=](?P<uv>[^}\s\"'$]+)\}",
    # The default's run is bounded (and possessive): at every `pass` of `password=password=...`
    # an unbounded one would read to the line's end.
    _own_key_needles(ahead=r"[\w\x80-\xff]*+:?[-=][^}\s\"'$]{1,1024}+\}"),
    {"uv": "key"},
    quoted=False,
)


# ---- values on the lines after their name -----------------------------------------------------

# `- name: DB_PASSWORD` / `"name": "DB_PASSWORD",` / `"key": "token",` then `value: ...` on the next
# line (Kubernetes env lists, ECS task definitions, Postman variables in pretty JSON).
# In XML (.NET settings, Tomcat and Jenkins credential stores): `<key>db_password</key>` then
# `<value>...</value>`; in an Apple property list, `<string>...</string>`.
_RECORD_NAME_LINE = re.compile(
    r"(?P<indent>[ \t]*)(?:(?:-[ \t]+)?[\"']?(?i:key|name)[\"']?[ \t]*:[ \t]*[\"']?(?P<key>[\w.-]+)[\"']?[ \t]*,?"
    r"|<(?i:key|name)>(?P<xml_key>[\w.-]+)</(?i:key|name)>)[ \t]*"
)
_RECORD_VALUE_LINE = re.compile(
    r"(?P<indent>[ \t]*)(?:[\"']?(?i:value)[\"']?[ \t]*:[ \t]*"
    r"(?:\"(?P<dq>[^\"\\]+)\"|'(?P<sq>[^'\\]+)'|(?P<uv>[^\s\"'#,{}\[\]][^\s,#]*))[ \t]*,?"
    r"|<(?P<element>(?i:value|string))>(?P<xv>[^<\s][^<]*)</(?P=element)>)[ \t]*"
)
# `variable "db_password" {`: a Terraform variable block, and its `default = "..."`.
_TF_VARIABLE = re.compile(r"[ \t]*variable[ \t]+\"(?P<key>[\w-]+)\"[ \t]*\{(?P<rest>.*)")
_TF_DEFAULT = re.compile(r"(?P<lead>.*?\bdefault[ \t]*=[ \t]*)\"(?P<value>[^\"\\]*)\"")
_LIST_ITEM = re.compile(
    r"(?P<indent>[ \t]*)-[ \t]+(?:\"(?P<dq>[^\"\\]+)\"|'(?P<sq>[^'\\]+)'|(?P<uv>[^\s\"'#&*!|>{\[][^\s#]*))[ \t]*"
)
_DANGLING_LIST_KEY = re.compile(r"(?P<indent>[ \t]*)[\"']?(?P<key>[\w.-]+)[\"']?:[ \t]*(?:#.*)?")
# `"passwords": [` (JSON), `PASSWORDS = [` (code) with one quoted item a line below.
_OPEN_ARRAY = re.compile(r"(?P<indent>[ \t]*)[\"']?(?P<key>[\w.-]+)[\"']?[ \t]*(?::=|[:=])[ \t]*\[[ \t]*")
_ARRAY_ITEM = re.compile(r"[ \t]*(?:\"(?P<dq>[^\"\\]+)\"|'(?P<sq>[^'\\]+)')[ \t]*,?[ \t]*")


@dataclass(frozen=True)
class Follow:
    """What a line announces for the lines after it: `mode` "record" (the next line's `value:`),
    "list" (the `- item` lines), "array" (the quoted items up to `]`), or "terraform" (the
    block's `default`); `key` names the secret."""

    mode: str
    key: str
    indent: int
    reach: int


def key_above(body: str, kind: Callable[[], FileKind]) -> Follow | None:
    """A `Follow` when `body` starts a value written on the lines below it."""
    if "ariable" in body:
        variable = _TF_VARIABLE.fullmatch(body)
        if (
            variable is not None
            and classify_key(variable.group("key")) is not None
            and "}" not in variable.group("rest")
        ):
            return Follow("terraform", variable.group("key"), 0, 20)
    if body.endswith("[") or body.rstrip().endswith("["):
        array = _OPEN_ARRAY.fullmatch(body)
        if array is not None and classify_key(array.group("key")) is not None:
            return Follow("array", array.group("key"), len(array.group("indent")), 50)
        return None
    if ":" not in body and "</" not in body:
        return None
    record = (
        _RECORD_NAME_LINE.fullmatch(body) if "ame" in body or "ey" in body or "AME" in body or "EY" in body else None
    )
    if record is not None:
        key = record.group("key") or record.group("xml_key")
        if classify_key(key) is None:
            return None
        return Follow("record", key, len(record.group("indent")), 1)
    dangling = _DANGLING_LIST_KEY.fullmatch(body) if body.rstrip().endswith(":") or "#" in body else None
    if dangling is not None and classify_key(dangling.group("key")) is not None and kind() is FileKind.CONFIG:
        return Follow("list", dangling.group("key"), len(dangling.group("indent")), 50)
    return None


def line_below(follow: Follow, body: str) -> tuple[str, str | None, bool] | None:
    """One line after `follow`'s start: None when the form has ended before this line;
    otherwise (new body, class counted or None, whether the form goes on after it)."""
    if follow.mode == "terraform":
        if body.strip() == "}" or ("ariable" in body and _TF_VARIABLE.fullmatch(body)):
            return None  # the block's end, or another block (this one was cut short)
        default = _TF_DEFAULT.match(body)
        if default is None:
            return body, None, True
        value = default.group("value")
        name = named_value(follow.key, value, quoted=True)
        if name is None:
            return body, None, False
        start, end = default.span("value")
        return body[:start] + placeholder(name) + body[end:], name, False
    if follow.mode == "array":
        item = _ARRAY_ITEM.fullmatch(body)
        if item is None:
            return None  # `]`, or an item that is not a literal: the list is code
        group = "dq" if item.start("dq") >= 0 else "sq"
        value = item.group(group)
        name = named_value(follow.key, value, quoted=True)
        if name is None or (name == "password" and not literal_is_password(value)):
            return body, None, True
        start, end = item.span(group)
        return body[:start] + placeholder(name) + body[end:], name, True
    pattern = _RECORD_VALUE_LINE if follow.mode == "record" else _LIST_ITEM
    match = pattern.fullmatch(body)
    if match is None or (follow.mode == "list" and len(match.group("indent")) < follow.indent):
        return None
    group = next(g for g in ("dq", "sq", "xv", "uv") if g in match.re.groupindex and match.start(g) >= 0)
    value = match.group(group)
    name = named_value(follow.key, value, quoted=group != "uv")
    if name == "password" and group != "uv" and not literal_is_password(value):
        name = None
    if name is None:
        return (body, None, True) if follow.mode == "list" else None
    start, end = match.span(group)
    return body[:start] + placeholder(name) + body[end:], name, follow.mode == "list"


class TerraformDefaultRule(Rule):
    """`variable "db_password" { default = "..." }` on one line (over lines: `key_above`). Its
    needles also flag the first line of every form `key_above` knows, so the scanner visits it."""

    def __init__(self) -> None:
        super().__init__(
            "password",
            _own_key_needles(ahead=r"""[\w\x80-\xff-]*+"[ \t]*\{""")
            # `- name: DB_PASSWORD` with `value:` on the next line (after its diff marker)
            + _own_key_needles(ahead=r"""[\w.\x80-\xff-]*+["']?[ \t]*,?[ \t]*\r?\n[-+ ]?[ \t]*["']?value["']?[ \t]*:""")
            # `<key>db_password</key>` with `<value>` (a plist: `<string>`) on the next line
            + _own_key_needles(ahead=r"""[\w.\x80-\xff-]*+</(?:key|name)>[ \t]*\r?\n[-+ ]?[ \t]*<(?:value|string)>""")
            # `passwords:` with `- item` on the next line
            + _own_key_needles(ahead=r"""[\w.\x80-\xff-]*+["']?:[ \t]*\r?\n[-+ ]?[ \t]*-[ \t]""")
            # `"passwords": [` with a quoted item on the next line
            + _own_key_needles(ahead=r"""[\w.\x80-\xff-]*+["']?[ \t]*(?::=|[:=])[ \t]*\[[ \t]*\r?\n[-+ ]?[ \t]*["']"""),
        )

    literals = ("ariable",)

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        return self.apply_gated(body, kind, counts) if "ariable" in body else body

    def apply_gated(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        variable = _TF_VARIABLE.fullmatch(body)
        if variable is None:
            return body
        rest_start = variable.start("rest")
        default = _TF_DEFAULT.match(body, rest_start)
        if default is None or "}" not in body[default.end() :]:
            return body
        name = named_value(variable.group("key"), default.group("value"), quoted=True)
        if name is None:
            return body
        counts[name] += 1
        return splice(body, [(*default.span("value"), name)])


TERRAFORM_RULE = TerraformDefaultRule()

_Member = _KeyedValueRule | _ListRule | TerraformDefaultRule


def _merged(needles_: Iterable[Needle]) -> tuple[Needle, ...]:
    """One needle per literal, its lookaheads merged: they all start with the rest of a key
    name (`[\\w.-]*+`), which is then scanned once per kind of run instead of once per
    lookahead, at every place the literal occurs."""
    aheads: dict[tuple[str, str, bool], dict[str, list[str]]] = {}
    for needle in needles_:
        run, possessive, rest = needle.ahead.partition("*+")
        by_run = aheads.setdefault((needle.literal, needle.behind, needle.folded), {})
        by_run.setdefault(run + possessive, []).append(rest)
    return tuple(
        Needle(
            literal,
            behind,
            "(?:" + "|".join(run + "(?:" + "|".join(dict.fromkeys(rests)) + ")" for run, rests in by_run.items()) + ")",
            folded,
        )
        for (literal, behind, folded), by_run in aheads.items()
    )


class NamedValueFamily(Rule):
    """The rules above that judge a value by a secret-ish name share their needles (`pass`,
    `token`, `key`...), so the prefilter sends them the same lines, most of which are none of
    theirs: each runs only where one of its literals is (plain substring tests: cheaper than
    one regex alternation, which `re` tries at every position)."""

    def __init__(self, members: tuple[_Member, ...]):
        super().__init__("password", _merged(needle for member in members for needle in member.needles))
        self.members = members

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        for member in self.members:
            for literal in member.literals:
                if literal in body:
                    body = member.apply_gated(body, kind, counts)
                    break
        return body


NAMED_VALUE_RULES = NamedValueFamily(
    (RECORD_RULE, LIST_RULE, COMPARISON_RULE, FALLBACK_RULE, SHELL_DEFAULT_RULE, TERRAFORM_RULE)
)
