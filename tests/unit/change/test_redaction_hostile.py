"""Hostile input (a change is attacker-controlled text): no needle's check, no rule's walk may
cost more than a bounded amount per occurrence of its literal, or a long line of repeated
literals (`passwordpassword...`) turns quadratic and the review times out. Asserted on the
patterns' shape and on operation counts, never on time."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from p4review.change.redaction import needles, normalized, pem
from p4review.change.redaction.document import canonical_scanner
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import Needle
from p4review.change.redaction.policy import DEFAULT_POLICY

try:  # Python 3.11+
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

_MAXREPEAT: Any = sre_parse.MAXREPEAT


def _runaway(pattern: str, literal: str) -> list[str]:
    """The repeats of `pattern` with no upper bound (`*`, `+`, `{n,}`) over a class holding a
    character of `literal`: such a run reads on past the literal's next occurrences, at every
    one of them. (A run of blanks stops at the next literal: linear overall.)"""
    parsed = sre_parse.parse(pattern)
    found: list[str] = []

    def walk(items: Any) -> None:
        for op, argument in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                _, high, body = argument
                run = re._compiler.compile(sre_parse.SubPattern(parsed.state, list(body)), 0)  # type: ignore[attr-defined]
                if high == _MAXREPEAT and all(run.fullmatch(char) for char in literal):
                    found.append(f"{name} of {list(body)!r}"[:160])
                walk(body)
            elif name == "SUBPATTERN":
                walk(argument[-1])
            elif name == "BRANCH":
                for branch in argument[1]:
                    walk(branch)
            elif name in ("ASSERT", "ASSERT_NOT", "ATOMIC_GROUP"):
                walk(argument[-1] if isinstance(argument, tuple) else argument)

    walk(parsed)
    return found


# Their run starts after a character their literal lacks (a blank, `(`, `-`): it reads one word
# of the next occurrence at most.
_AFTER_A_SEPARATOR = frozenset({"conn", "equals", "neighbor", "jarsigner", "keytool"})


def _all_needles() -> list[Needle]:
    scanner = canonical_scanner(DEFAULT_POLICY)
    return [*pem.NEEDLES, *(needle for rule in scanner.rules for needle in rule.needles), *normalized.NEEDLES]


def test_every_needle_check_is_bounded() -> None:
    """A needle's lookahead runs at every occurrence of its literal: bounded, the prefilter is
    linear in the line's length whatever the line repeats."""
    offenders = {
        f"{needle.literal!r}: {repeat}"
        for needle in _all_needles()
        if needle.literal not in _AFTER_A_SEPARATOR
        for repeat in _runaway(needle.lookaround, needle.literal)
    }
    assert not offenders, sorted(offenders)


@pytest.mark.parametrize("repeat", ["password", "Password=x;", "login a -p ", "\\u0070assword", "h:5432:d:u:"])
def test_prefilter_finds_line_starts_without_rescanning_the_line(monkeypatch: pytest.MonkeyPatch, repeat: str) -> None:
    """One long line of many needles: each line start is searched back only to the previous
    match, so the bytes searched stay linear in the line's length (not matches x length)."""
    scanned = 0

    class Data(bytes):
        def rfind(self, sub: Any, start: Any = 0, end: Any = None) -> int:
            nonlocal scanned
            scanned += (len(self) if end is None else end) - start
            return bytes.rfind(self, sub, start, len(self) if end is None else end)

    monkeypatch.setattr(needles, "_utf8", lambda text: Data(text.encode("utf-8", "surrogatepass")))
    prefilter = canonical_scanner(DEFAULT_POLICY)._prefilter
    line = "+" + repeat * 5000 + "\n"
    flagged = prefilter.flag(line)
    assert set(flagged) <= {0}
    assert scanned <= len(line) * (len(prefilter._searches) + 1)


def test_quote_parity_is_found_once_per_line() -> None:
    """KeywordConnectionStringRule asks, at each key word, whether it sits in a string literal:
    the quotes are found once a line (counting those before each key word was quadratic), and
    give the answer the count did."""
    import random

    from p4review.change.redaction.connection_strings import _Quotes

    def counted(body: str, position: int) -> bool:
        before = body[:position].replace('\\"', "")
        return before.count('"') % 2 == 1 or before.count("'") % 2 == 1

    rng = random.Random(28)
    for _ in range(300):
        body = "".join(rng.choice("ab\"'\\;=") for _ in range(rng.randrange(0, 40)))
        quotes = _Quotes(body)
        for position in range(len(body) + 1):
            assert quotes.inside_a_string(position) == counted(body, position), (body, position)


def test_walks_below_cost_a_bounded_number_of_rule_runs_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line that starts a value written below it (a Terraform variable named like a secret)
    walks the lines after it: a text of nothing but such lines must not run the rules on each
    line once per walk that passes it (20 walks a line, every rule each time)."""
    from p4review.change.redaction.scanner import Scanner

    runs = 0
    real_body = Scanner._body

    def counting_body(self: Scanner, body: str, bits: int, *args: Any) -> Any:
        nonlocal runs
        runs += len(self._rules_for(bits))
        return real_body(self, body, bits, *args)

    monkeypatch.setattr(Scanner, "_body", counting_body)
    lines = 200
    text = '+variable "db_password" {\n' * lines
    canonical_scanner(DEFAULT_POLICY).scan(text)
    assert runs <= 5 * lines


def test_copies_of_many_values_are_masked_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A change with thousands of masked values: each copy is found by a finder of the values
    its own line may hold, not by one alternation of every value run over the whole text
    (which tries each value at each position: text length x values). Work counted as the
    characters each finder reads times the values it tries."""
    import random
    import string

    from p4review.change.redaction.copies import MaskedValues
    from p4review.change.redaction.pipeline import redact

    work = 0
    real_finder = MaskedValues.finder

    def counting_finder(self: MaskedValues, text: str) -> Any:
        nonlocal work
        work += len(text) * len(self.present(text))
        return real_finder(self, text)

    monkeypatch.setattr(MaskedValues, "finder", counting_finder)
    rng = random.Random(28)
    # Letters and digits alternate: no word in it (copies.name_like), so every copy qualifies.
    values = [
        "".join(rng.choice(string.ascii_letters) + rng.choice(string.digits) for _ in range(8)) for _ in range(300)
    ]
    text = "".join(f'+password = "{value}"\n' for value in values) + "".join(f"+copy {value}\n" for value in values)
    redacted = redact(text).text
    assert not any(value in redacted for value in values)
    assert work <= 4 * len(text)


def _rest_of_line_runs(pattern: str) -> list[str]:
    """Lazy or greedy unbounded runs over "any character but a line break" (`[^\\n]*?`)."""
    parsed = sre_parse.parse(pattern)
    found: list[str] = []

    def walk(items: Any) -> None:
        for op, argument in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT"):
                _, high, body = argument
                run = re._compiler.compile(sre_parse.SubPattern(parsed.state, list(body)), 0)  # type: ignore[attr-defined]
                if high == _MAXREPEAT and all(run.fullmatch(char) for char in "a -p'\"=:@"):
                    found.append(name)
                walk(body)
            elif name == "SUBPATTERN":
                walk(argument[-1])
            elif name == "BRANCH":
                for branch in argument[1]:
                    walk(branch)

    walk(parsed)
    return found


@pytest.mark.parametrize(("module", "name"), [("positional", "CLI_RULE"), ("assignments", "COMMAND_RULE")])
def test_command_line_rules_read_a_bounded_rest_of_line(module: str, name: str) -> None:
    """`mysql ... -p'...'`: a run from the command's name to its flag, tried at every name on
    the line, is bounded (a line of `mysql -p'` repeated was quadratic)."""
    import importlib

    rule = getattr(importlib.import_module(f"p4review.change.redaction.{module}"), name)
    assert not _rest_of_line_runs(rule.pattern.pattern)


def test_a_list_of_names_under_a_password_key_is_not_masked() -> None:
    """Found on real code (cfn-lint): `password_properties = [` then `"ADDomainJoinPassword",`:
    an acronym before the humps still spells a name."""
    from p4review.change.redaction.pipeline import redact

    text = '+password_properties = [\n+    "AccountPassword",\n+    "ADDomainJoinPassword",\n+    "KdcAdminPassword",\n+]\n'
    assert redact(text).text == text


class _ReadCounter:
    """A compiled pattern's stand-in counting the characters its matches read: to the end of the
    line (`to_line_end`: a possessive run may read that far, matched or not), else to the match's end."""

    def __init__(self, pattern: re.Pattern[str], *, to_line_end: bool) -> None:
        self.pattern, self.to_line_end, self.read = pattern, to_line_end, 0

    def match(self, body: str, start: int) -> re.Match[str] | None:
        found = self.pattern.match(body, start)
        self.read += len(body) - start if self.to_line_end else (0 if found is None else found.end() - start)
        return found


@pytest.mark.parametrize("repeat", ["key", "password", "_token", "secretkey"])
def test_a_run_of_key_words_is_read_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch, repeat: str) -> None:
    """The assignment rule matches from a key's start at each key word: inside one long run of
    key words (`keykeykey...`, no separator) each match read the rest of the run, so 1 MB of
    `key` took 642 s. A run longer than any key is not a name: the characters its matches read
    stay proportional to the line."""
    from p4review.change.redaction import assignments

    counter = _ReadCounter(assignments._ASSIGNMENT_AT, to_line_end=True)
    monkeypatch.setattr(assignments, "_ASSIGNMENT_AT", counter)
    body = repeat * (20_000 // len(repeat))
    assignments.ASSIGNMENT_RULE.apply(body, lambda: FileKind.CONFIG, Counter())
    assert counter.read <= 4 * len(body)


@pytest.mark.parametrize("repeat", ["key", "token_", "secretA1b2", "key "])
def test_the_secret_word_rule_reads_each_run_once(monkeypatch: pytest.MonkeyPatch, repeat: str) -> None:
    """The secret-word rule reads the rest of the run a word sits in: once a run, not once per
    word in it (`keykeykey...` would read the rest of the line at each `key`)."""
    from p4review.change.redaction import secret_words

    counter = _ReadCounter(secret_words._RUN_REST, to_line_end=False)
    monkeypatch.setattr(secret_words, "_RUN_REST", counter)
    body = repeat * (20_000 // len(repeat))
    secret_words.SECRET_WORD_RULE.apply(body, lambda: FileKind.CONFIG, Counter())
    assert counter.read <= 2 * len(body)


def test_the_name_after_a_secret_word_is_read_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """The secret-word rule asks, at each run near a word, whether the word names an id: the
    rest of that name was read to its end, and a name of non-ASCII letters between the runs
    (`keyé<run>ékeyé<run>é...`: `é` is a word character, not a token one) spans the line, at
    every run. A name longer than any key is not read past its first characters."""
    from p4review.change.redaction import secret_words

    counter = _ReadCounter(secret_words._NAME_TAIL, to_line_end=False)
    monkeypatch.setattr(secret_words, "_NAME_TAIL", counter)
    body = ("keyé" + "a" * 16 + "é") * 1000
    secret_words.SECRET_WORD_RULE.apply(body, lambda: FileKind.CONFIG, Counter())
    assert counter.read <= 8 * len(body)


def test_the_key_words_ending_a_long_run_are_matched_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name run longer than any key is read from the key words near its end (a long prefix may
    precede `_db_password = ...`): what follows the run decides for all of them, so one match for
    them (and one from the run's start), not one per key word (`pwpw...pw ` repeated: 129 matches
    a run)."""
    from p4review.change.redaction import assignments

    calls = 0
    real = assignments._ASSIGNMENT_AT

    class Counting:
        def match(self, body: str, start: int) -> Any:
            nonlocal calls
            calls += 1
            return real.match(body, start)

    monkeypatch.setattr(assignments, "_ASSIGNMENT_AT", Counting())
    runs = 100
    body = ("pw" * 256 + " ") * runs
    assignments.ASSIGNMENT_RULE.apply(body, lambda: FileKind.CONFIG, Counter())
    assert calls <= 2 * runs
