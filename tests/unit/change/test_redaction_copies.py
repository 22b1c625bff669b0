"""Every copy of a masked value (issue 28 item 1, layers/p4review/change/redaction/copies.py):
which values qualify, how they are read back from a redacted line, that their copies are
masked anywhere in the text, and that the values never leave the call."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4review.change.redaction import RedactionPolicy, Redactor, redact
from p4review.change.redaction.copies import MaskedValues, masked_spans, qualifies
from p4review.change.redaction.document import canonical_scanner
from p4review.change.redaction.scanner import ScanRecord

POLICY = RedactionPolicy()
PASSWORD = "Qv7tLm2xRk9p"


@pytest.mark.parametrize(
    "value",
    [PASSWORD, "Tr0ub4dor&3", "s3cr3t-Pa55w0rd!", "9fK2mX7vB4nQ8rT1wY6z", "AKIAIOSFODNN7EXAMPL3", "pa$$w0rd.x"],
)
def test_values_that_qualify(value: str):
    assert qualifies(value)


@pytest.mark.parametrize(
    "value",
    [
        "hunter2",  # short
        "abc123",
        "development",  # one character class: a word
        "12345678",
        "MySecretValue",  # identifier-shaped, not random: a name code may use
        "db_password",  # the name of a secret
        "hunter22",  # a word a variable could be, not random enough
        "changeme",
        "${DB_PASSWORD}",
        "[REDACTED:password]",
        "abcdEF12[REDAC",  # could overlap a placeholder
        "correct horse 1",  # a blank: prose
        "XXXXXXXXXXXX",
    ],
)
def test_values_that_do_not_qualify(value: str):
    assert not qualifies(value)


def test_values_are_read_back_between_placeholders():
    original = '+a = "Qv7tLm2xRk9p", b = "x]y", c = "Tr0ub4dor&3"'
    redacted_line = '+a = "[REDACTED:password]", b = "x]y", c = "[REDACTED:api_key]"'
    assert masked_spans(original, redacted_line) == [(PASSWORD, "password"), ("Tr0ub4dor&3", "api_key")]
    assert masked_spans("+x = 1", "+x = 1") == []
    # Two placeholders side by side: where one ends is unknown, nothing is guessed.
    assert masked_spans("+k=aaaabbbb", "+k=[REDACTED:a][REDACTED:b]") == []
    # A line that does not align (not the rules' output) gives nothing.
    assert masked_spans("+k=abc", "-k=[REDACTED:a]") == []


def test_copies_on_the_same_line_other_lines_removed_lines_and_headers():
    text = (
        "--- a/notes/Qv7tLm2xRk9p.txt\n"
        "+++ b/notes/Qv7tLm2xRk9p.txt\n"
        "@@ -1 +1,2 @@\n"
        "-print('Qv7tLm2xRk9p')\n"
        "+password = 'Qv7tLm2xRk9p'  # Qv7tLm2xRk9p\n"
        " call(Qv7tLm2xRk9p)\n"
    )
    document = redact(text, POLICY)
    assert PASSWORD not in document.text
    assert document.text.count("[REDACTED:password]") == 6
    assert document.counts["password"] == 6
    assert document.text.split("\n")[3] == "-print('[REDACTED:password]')"  # the marker stays


def test_a_copy_before_the_line_that_finds_it():
    document = redact(f"+echo {PASSWORD}\n+password = {PASSWORD}\n", POLICY)
    assert document.text == "+echo [REDACTED:password]\n+password = [REDACTED:password]\n"


def test_regex_metacharacters_and_overlapping_values():
    value = "a.b*c+d(e)[f]|g$1"
    text = f'+password = "{value}"\n+x = "{value}"\n+y = "a.b*c+d(e)[f]"\n+z = "aXb*c+d(e)[f]|g$1"\n'
    document = redact(text, POLICY)
    lines = document.text.split("\n")
    assert lines[1] == '+x = "[REDACTED:password]"'
    assert lines[2] == '+y = "a.b*c+d(e)[f]"'  # a part of the value is not the value
    assert lines[3] == '+z = "aXb*c+d(e)[f]|g$1"'  # `.` is literal


def test_the_longest_value_wins_and_a_placeholder_is_never_cut():
    short, long = "Zq8vLm3pRt", "Zq8vLm3pRt-9xWk2"
    text = f"+password = {short}\n+api_token = {long}\n+both {long} {short}\n+[REDACTED:password]{short}\n"
    document = redact(text, POLICY)
    assert document.text.split("\n")[2] == "+both [REDACTED:api_key] [REDACTED:password]"
    assert document.text.split("\n")[3] == "+[REDACTED:password][REDACTED:password]"


def test_ordinary_text_is_left_alone():
    # Short or word-like values are masked where a rule found them, and nowhere else.
    text = '+password = "hunter2"\n+print("hunter2 is a name")\n+secret = "development"\n+env = "development"\n'
    document = redact(text, POLICY)
    assert document.text.split("\n")[1] == '+print("hunter2 is a name")'
    assert document.text.split("\n")[3] == '+env = "development"'


def test_values_shared_across_texts_and_never_shown():
    values = MaskedValues()
    redactor = Redactor(POLICY)
    first = redactor.redact(f"+password = {PASSWORD}\n", values)
    second = redactor.redact(f"+see {PASSWORD}\n", values)
    assert PASSWORD not in first.text + second.text
    assert second.counts == {"password": 1}
    assert PASSWORD not in repr(values) and PASSWORD not in repr(first) and PASSWORD not in str(vars(first))
    with pytest.raises(TypeError):
        pickle.dumps(values)
    # Without shared values, a text knows only its own.
    assert redactor.redact(f"+see {PASSWORD}\n").text == f"+see {PASSWORD}\n"


def test_mask_counts_and_keeps_placeholders():
    values = MaskedValues()
    values.collect(f"+password = {PASSWORD}", "+password = [REDACTED:password]")
    counts: Counter[str] = Counter()
    finder = values.finder(f"x {PASSWORD}")
    assert finder is not None
    assert values.mask(f"[REDACTED:api_key] {PASSWORD}{PASSWORD}", finder, counts) == (
        "[REDACTED:api_key] [REDACTED:password][REDACTED:password]"
    )
    assert counts == {"password": 2}
    assert values.finder("nothing here") is None


_copy_line = st.one_of(
    st.sampled_from(
        [
            f"+password = {PASSWORD}",
            f"-old {PASSWORD}",
            f" ctx {PASSWORD} and {PASSWORD}",
            "+api_token = 9fK2mX7vB4nQ8rT1wY6z",
            "+x 9fK2mX7vB4nQ8rT1wY6z",
            "+++ b/Qv7tLm2xRk9p.py",
            "@@ -1 +1 @@ Qv7tLm2xRk9p",
            "+plain line",
            "",
        ]
    ),
    st.text(alphabet="aQv7-+ =:\"'[]\t", max_size=12),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_copy_line, max_size=12).map("\n".join))
def test_copies_keep_the_structure_and_the_guard_record(text: str):
    scanner = canonical_scanner(POLICY)
    record = ScanRecord()
    output, _ = scanner.scan(text, record=record, values=MaskedValues())
    assert output.count("\n") == text.count("\n")
    for before, after in zip(text.split("\n"), output.split("\n"), strict=True):
        if before[:1] in "+- " and not before.startswith("@@"):
            assert after[:1] == before[:1]
    assert scanner._flags(output, record) == scanner._prefilter.flag(output)
    assert scanner.scan(output, previous=record) == scanner.scan(output)
    if "password = Qv7tLm2xRk9p" in text:
        assert PASSWORD not in output


@pytest.mark.parametrize("value", ["TpG6Jjck-jcwKclvi", "vkpFnjcgthV30kFh"])
def test_a_random_password_with_letter_runs_is_not_a_name(value: str) -> None:
    """Letter runs of a random password (`Jjck`, `Kclvi`) are not words: its copies are masked
    (counted as words, 6% of random 16-character base62 passwords kept their copies; still
    2%: `M3Meera4-Juyub9RT` reads as two words)."""
    redacted = redact(f'+password = "{value}"\n+mysql -u app --password {value[::-1]} && echo {value}\n').text
    assert value not in redacted
