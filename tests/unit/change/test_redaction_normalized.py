"""Secrets in encodings the rules do not read (issue 28 item 8): the normalized view of a line
(normalized.py), how its spans map back onto the original, and what it must leave alone."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4review.change.redaction import RULESET_VERSION, RedactionError, RedactionPolicy, normalized, redact
from p4review.change.redaction.document import _mint, canonical_scanner
from p4review.change.redaction.normalized import View, replaced_spans
from p4review.change.redaction.policy import service_policy
from p4review.change.redaction.scanner import split_line

SERVICE = service_policy(host_suffixes=(".corp.example",))
PASSWORD = "Zq8rT4vLm2Pw"
GHP_HEAD, GHP_TAIL = "ghp_aBcDeFgHiJkLm", "NoPqRsTuVwXyZ0123456789"
_PLACEHOLDER = re.compile(r"\[REDACTED:[^\]\s]+\]")


# ---- the view -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "view"),
    [
        ('"\\u0070assword": "x"', '"password": "x"'),
        ('"\\ud83d\\ude00 ok"', '"\U0001f600 ok"'),  # a surrogate pair is one character
        ("https:\\/\\/host\\/x", "https://host/x"),
        ("postgres%3A%2F%2Fu%3Ap%40h", "postgres://u:p@h"),
        ("pass\u200bword gh\u00adp_ a\u2060b\ufeffc d\u200de\u200cf", "password ghp_ abc def"),
        ("ＡＫＩＡ１２ ｐａｓｓｗｏｒｄ＝", "AKIA12 password="),
        ("p\u0430ssword t\u03bfken \u0410\u041a\u0406\u04101234", "password token AKIA1234"),
        ("\u0440\u0430\u0455\u0455word DB_\u0420\u0410\u0405\u0405WORD", "password DB_PASSWORD"),
        ("ghp_abc\rdef", "ghp_abcdef"),
        ("ﬁle", "file"),
    ],
)
def test_the_view_reads_what_a_reader_sees(line: str, view: str):
    built = View.of(line)
    assert built is not None and built.text == view


@pytest.mark.parametrize(
    "line",
    [
        "plain ASCII, nothing escaped: a = b % 3; s = '\\n'",
        "设置密码的长度",  # CJK: NFKC leaves it alone
        "Пароль хранится в сейфе; ΑΚΙΑ",  # words wholly in Cyrillic or Greek are prose
        "Grüß Gott, café, naïve",  # composed accents are already NFKC
        "\\u000a \\u0000 \\ud800 \\u007f",  # control characters and lone surrogates stay escaped
    ],
)
def test_a_line_that_reads_as_itself_has_no_view(line: str):
    assert View.of(line) is None


def test_percent_escapes_decode_only_to_printable_ascii():
    built = View.of("100%25 %0a %ZZ %e2%80%8b")
    assert built is not None and built.text == "100% %0a %ZZ %e2%80%8b"


def test_a_span_of_the_view_maps_back_onto_whole_original_characters():
    line = "x\\u0041ﬁ\u200b%40y"
    built = View.of(line)
    assert built is not None and built.text == "xAfi@y"
    assert built.original_span(1, 2) == (1, 7)  # "A" <- the whole 6-character escape
    assert built.original_span(3, 4) == (7, 8)  # "i" <- all of "ﬁ"
    assert built.original_span(2, 5) == (7, 12)  # "fi@" <- "ﬁ", the invisible space, "%40"
    assert built.original_span(6, 6) == (len(line), len(line))


# ---- reading back what the rules replaced ------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "spans"),
    [
        ("a = secret", "a = [REDACTED:password]", [(4, 10, "password")]),
        ("k=x1; j=y2;", "k=[REDACTED:a]; j=[REDACTED:b];", [(2, 4, "a"), (8, 10, "b")]),
        ("[REDACTED:a] b=c", "[REDACTED:a] b=[REDACTED:p]", [(15, 16, "p")]),  # an old one stays out
        # `;x=` occurs twice: each span reaches over every placement (more, never less); they join.
        ("k=a;x=b;x=c;", "k=[REDACTED:p];x=[REDACTED:q];", [(2, 11, "p")]),
        ("abc", "zzz", [(0, 3, "secret")]),  # not of the rules' form: the differing part
    ],
)
def test_replaced_spans(before: str, after: str, spans: list[tuple[int, int, str]]):
    assert replaced_spans(before, after) == spans


# ---- through the pipeline ----------------------------------------------------------------------------

POSITIVES = [
    ('+  "\\u0070assword": "Zq8rT4vLm2Pw",', "password", PASSWORD),
    ('+  "aws_key_id": "\\u0041KIAZ3MJ7Q5KXW2TLN4B"', "aws_access_key", "KIAZ3MJ7Q5KXW2TLN4B"),
    ('+  "dsn": "mysql:\\/\\/app:Zq8rT4vLm2Pw@db.example.com\\/x"', "connection_uri", PASSWORD),
    ("+pass\u200bword = 'Zq8rT4vLm2Pw'", "password", PASSWORD),
    ("+DB_PASS\u2060WORD=Zq8rT4vLm2Pw", "password", PASSWORD),
    ("+client_sec\ufeffret: Zq8rT4vLm2Pw", "password", PASSWORD),
    (f'+Github("gh\u00adp_{GHP_HEAD[4:]}{GHP_TAIL}")', "github_token", GHP_TAIL),
    (f'+Github("{GHP_HEAD}\u200b{GHP_TAIL}")', "github_token", GHP_TAIL),
    (f'+Github("{GHP_HEAD}\u200d{GHP_TAIL}")', "github_token", GHP_TAIL),
    (f'+Github("{GHP_HEAD}\r{GHP_TAIL}")', "github_token", GHP_TAIL),
    ("+AWS_ID=ＡＫＩＡＺ３ＭＪ７Ｑ５ＫＸＷ２ＴＬＮ４Ｂ", "aws_access_key", "ＴＬＮ４Ｂ"),
    ("+ｐａｓｓｗｏｒｄ＝Zq8rT4vLm2Pw", "password", PASSWORD),
    ('+p\u0430ssword = "Zq8rT4vLm2Pw"', "password", PASSWORD),
    ('+\u0440\u0430ssw\u043erd = "Zq8rT4vLm2Pw"', "password", PASSWORD),
    ('+api_t\u03bfken = "9fK2xQ7vL4mN8pR3tW6y"', "api_key", "9fK2xQ7vL4mN8pR3tW6y"),
    ("+DATABASE_URL=postgres%3A%2F%2Fapp%3AZq8rT4vLm2Pw%40db.example.com%2Fx", "connection_uri", PASSWORD),
    ('+u = "https://a.example/run?proxy=app%3AZq8rT4vLm2Pw%40p.example.com&x=1"', "connection_uri", PASSWORD),
    ('+u = "https://a.example/run?db_url=postgres%3A%2F%2Fapp%3AZq8rT4vLm2Pw%40h%2Fx"', "connection_uri", PASSWORD),
]


@pytest.mark.spec("SEC-33")
@pytest.mark.parametrize(("line", "name", "secret"), POSITIVES)
def test_each_encoding_is_seen_through(line: str, name: str, secret: str):
    document = redact(line + "\n")
    assert name in document.counts, dict(document.counts)
    assert secret not in document.text
    _assert_only_spans_replaced(line + "\n", document.text)


@pytest.mark.parametrize(("line", "name", "secret"), POSITIVES)
def test_the_guard_sees_through_the_encodings(line: str, name: str, secret: str):
    with pytest.raises(RedactionError, match=name):
        _mint(line + "\n", {}, RULESET_VERSION, RedactionPolicy())


def test_bytes_that_were_not_utf8_pass_through_and_do_not_hide_a_secret():
    # p4 output decoded with surrogateescape: lone surrogates stand for the undecodable bytes.
    text = '+name = "caf\udce9"\n+p\u0430ssword = "Zq8rT4vLm2\udce9Pw"\n+x = "\udcff\udcfe\u200b"\n'
    document = redact(text)
    assert document.text == '+name = "caf\udce9"\n+p\u0430ssword = "[REDACTED:password]"\n+x = "\udcff\udcfe\u200b"\n'


def test_a_secret_found_both_ways_is_counted_once():
    # The original reading finds the token's head, the view all of it: one mask, one count.
    document = redact(f'+Github("{GHP_HEAD}1234\u200b{GHP_TAIL}")\n')
    assert dict(document.counts) == {"github_token": 1}
    assert document.text == '+Github("[REDACTED:github_token]")\n'


def test_the_mask_covers_the_original_characters_exactly():
    document = redact("+ｐａｓｓｗｏｒｄ: Ｚｑ８ｒＴ４ｖＬｍ２Ｐｗ # ｎｏｔｅ\n")
    assert document.text == "+ｐａｓｓｗｏｒｄ: [REDACTED:password] # ｎｏｔｅ\n"


NEGATIVES = [
    "+# 设置密码（password）：见文档的第三节",
    '+MESSAGES = {"login": "ログインしてください", "token": "トークンの有効期限が切れました"}',
    '+greeting = "Grüß Gott, café crème, naïve señor"',
    '+print("deploy finished ✅ 👩\u200d💻 🇫🇷 ❤️")',
    '+title = "Ｗｅｌｃｏｍｅ\u3000ｔｏ\u3000ｔｈｅ\u3000ｓｈｏｗ"',
    '+label = "ﬁle ﬂow ½ ² ™ №"',
    '+  "name": "Caf\\u00e9 \\u2014 na\\u00efve \\ud83d\\ude00",',
    '+  "path": "https:\\/\\/example.com\\/docs\\/index.html",',
    '+  "regex": "^\\/api\\/v1\\/users\\/[0-9]+$",',
    '+url = "https://example.com/search?q=from%3Aalice%40example.com&sort=date"',
    '+redirect = "https://example.com/login?next=%2Fhome%2Fsettings"',
    '+    printf("%3d items, %2f%%, %40s\\n", n, ratio, name);',
    "+# Пароль хранится в менеджере секретов, см. README",
    "+s = 'Αθήνα, Ελλάδα; Σωκράτης'",
    "+// 密钥轮换：每 90 天一次（见 docs/keys.md）",
    "+name = 'Zoë Ångström-Ørsted'",
    "+x = 1\r",  # a CRLF line: its \r is the ending, not part of the line
    "+\ufeffimport os",  # a BOM at the start of a file
    "+    if password != confirm:  # пароли не совпадают",
]


@pytest.mark.parametrize("line", NEGATIVES)
def test_legitimate_non_ascii_and_escaped_text_is_left_alone(line: str):
    document = redact(line + "\n", SERVICE)
    assert document.text == line + "\n"
    assert dict(document.counts) == {}


def test_the_policy_classes_read_the_line_as_written():
    # Decoded, `he%2F%2Fo@pypi...` would read as an e-mail address and take the host with it.
    line = "+https://user:he%2F%2Fo@pypi.company.com/simple\n"
    assert redact(line, SERVICE).text == "+https://user:[REDACTED:connection_uri]@pypi.company.com/simple\n"
    scanner = canonical_scanner(SERVICE)
    policy_rules = {rule.name for rule in scanner.rules[-3:]}
    assert policy_rules == normalized.WRITTEN_ONLY_CLASSES


def test_an_ascii_line_without_escapes_never_reads_a_view(monkeypatch: pytest.MonkeyPatch):
    read: list[str] = []
    original = normalized.read_as

    def counting(line: str) -> str | None:
        read.append(line)
        return original(line)

    monkeypatch.setattr(normalized, "read_as", counting)
    text = '+password = "hunter2x"\n+x = 1  # 50% done\n+path = "a/b\\\\c"\n+é = 1\n'
    redact(text)
    assert read == ["é = 1"]


def test_the_offsets_are_computed_only_when_the_view_reveals_something(monkeypatch: pytest.MonkeyPatch):
    built: list[str] = []
    original = View.of

    def counting(line: str) -> View | None:
        built.append(line)
        return original(line)

    monkeypatch.setattr(normalized.View, "of", staticmethod(counting))
    redact("+# 设置密码（见文档）：第三节\n+p\u0430ssword = 'Zq8rT4vLm2Pw'\n")
    assert built == ["p\u0430ssword = 'Zq8rT4vLm2Pw'"]


def test_ascii_lines_are_not_flagged_for_the_view():
    scanner = canonical_scanner(RedactionPolicy())
    view_bit = scanner._view_bit
    text = "+a = 1\n+b = 'x%2'\n+c = '\\\\u12'\r\n+d = 'é'\n+e = 'x%40y'\n+f = 'a\\/b'\n+g = 'a\rb'\n"
    flagged = {
        text[start : text.find("\n", start)] for start, bits in scanner._prefilter.flag(text).items() if bits & view_bit
    }
    assert flagged == {"+d = 'é'", "+e = 'x%40y'", "+f = 'a\\/b'", "+g = 'a\rb'"}


# ---- properties ---------------------------------------------------------------------------------------


def _assert_only_spans_replaced(before: str, after: str) -> None:
    """`after` is `before` with some spans replaced by placeholders: every other character is
    the original's, in place, and each line keeps its diff marker (a line without one may lose
    its first character to a mask) and its ending."""
    pieces = _PLACEHOLDER.split(after)
    pattern = "(?:.*?)".join(re.escape(piece) for piece in pieces)
    assert re.fullmatch(pattern, before, re.DOTALL), (before, after)
    old, new = before.split("\n"), after.split("\n")
    assert len(old) == len(new)
    assert [split_line(line)[0] for line in old] == [split_line(line)[0] for line in new]  # markers
    assert [line.endswith("\r") for line in old] == [line.endswith("\r") for line in new]


_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\r"]
_SNIPPETS = [
    "password",
    "p\u0430ssword",
    "ｐａｓｓｗｏｒｄ",
    "\\u0070assword",
    "secret",
    "token",
    " = ",
    ": ",
    "＝",
    '"',
    "'",
    PASSWORD,
    GHP_HEAD,
    GHP_TAIL,
    "ghp_",
    "gh\u00adp_",
    "ＡＫＩＡ",
    "AKIA",
    "Z3MJ7Q5KXW2TLN4B",
    "\\u0041KIA",
    "postgres%3A%2F%2F",
    "postgres://",
    "%3A",
    "%40",
    "@db.example.com",
    "\\/",
    "?proxy=",
    "&",
    "设置密码（见文档）",
    "café",
    "👩\u200d💻",
    "ﬁ",
    "Ｗｅｌｃｏｍｅ",
    "Αθήνα",
    "Пароль",
    "\udce9",  # an undecodable byte (surrogateescape)
    *_INVISIBLE,
]
_content = st.lists(
    st.one_of(st.sampled_from(_SNIPPETS), st.text(max_size=6).map(lambda t: t.replace("\n", ""))), max_size=10
).map("".join)
_line = st.tuples(st.sampled_from(["+", "-", " ", ""]), _content, st.sampled_from(["", "\r"])).map("".join)
_text = st.lists(_line, min_size=1, max_size=8).map("\n".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_text, st.booleans())
def test_output_keeps_lines_markers_and_every_unmasked_character(text: str, service: bool):
    document = redact(text, SERVICE if service else None)  # the guard inside: the view is clean
    _assert_only_spans_replaced(text, document.text)
    assert redact(document.text, SERVICE if service else None).text == document.text  # idempotent


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_text)
def test_a_line_changed_by_the_scan_was_flagged_for_a_rule_or_the_view(text: str):
    scanner = canonical_scanner(RedactionPolicy())
    flagged = scanner._prefilter.flag(text)
    output, _ = scanner.scan(text)
    start = 0
    for before, after in zip(text.split("\n"), output.split("\n"), strict=True):
        if before != after:
            assert flagged.get(start, 0), before
        start += len(before) + 1


def test_split_line_keeps_an_inner_carriage_return_in_the_body():
    assert split_line("+ghp_a\rb\r") == ("+", "ghp_a\rb", "\r")


@settings(max_examples=300, deadline=None)
@given(st.one_of(_content, st.text(max_size=40)).map(lambda text: text.replace("\n", "")))
def test_flag_line_is_flag_for_one_line(line: str):
    prefilter = canonical_scanner(SERVICE)._prefilter
    assert prefilter.flag_line(line) == prefilter.flag(line).get(0, 0)
