"""The prefilter's one-pass needle scan (Hyperscan candidates, confirmed by the prefilter's own
`re` patterns) flags exactly what the reference `re` passes flag: same lines, same rule bits."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest

from p4review.change.redaction import Redactor, needle_scan
from p4review.change.redaction.needles import Needle, Prefilter, needles
from p4review.change.redaction.policy import service_policy
from tests.unit.change.test_redaction_regressions import load_cases

ROOT = Path(__file__).parents[3]
EXTERNAL_CORPUS = ROOT / "benchmarks" / "data" / "external-corpus.jsonl"


@pytest.fixture(autouse=True)
def one_pass_on_any_size(monkeypatch):
    """The one pass runs from 256 KB on; these tests compare it on texts of any size."""
    from p4review.change.redaction import needles as needles_module

    monkeypatch.setattr(needles_module, "ONE_PASS_MIN_BYTES", 0)


@pytest.fixture(scope="module")
def prefilter() -> Prefilter:
    """The canonical scanner's prefilter under the service's default policy (every rule)."""
    redactor = Redactor(service_policy(host_suffixes=(".corp.example",)))
    found = [value for value in vars(redactor._scanner).values() if isinstance(value, Prefilter)]
    assert len(found) == 1
    return found[0]


def _all_needles(prefilter: Prefilter) -> list[Needle]:
    return [needle for group in prefilter._groups for needle in group]


def test_the_one_pass_scan_is_available_where_the_service_runs():
    # The deps layer ships hyperscan for Lambda's x86_64 (the package smoke test checks it there).
    assert needle_scan.available()


@pytest.mark.parametrize(
    ("ahead", "widths"),
    [
        (r"[ \t]+\S", [2]),  # one of the run, then the rest unknown
        (r"(?=[a-z]{0,19}[0-9])[a-z0-9]{20}", [36] * 16),  # lookahead skipped, run capped at 16
        (r"\d{0,4}:x", []),  # optional first: nothing can be said
        (r"(?:thin|oci|kprb)", [3]),  # a group: the first bytes of its branches
        (r"[0-9]{1,3}\.[0-9]{1,3}", [10]),
        (r"\.connect[ \t]*\(", [1] * 8),
        (r"[^\n]{0,1024}x", []),
        (r"x\by", [1]),  # an anchor ends what can be said
        (r"(?i:k)ey", []),  # a flag changes what the characters match
        (r"(?i)key", []),
    ],
)
def test_required_prefix_lists_the_byte_classes_every_match_begins_with(ahead, widths):
    assert [len(characters) for characters in needle_scan.required_prefix(ahead)] == widths


def test_required_prefix_reads_classes_as_bytes_like_the_prefilter():
    (word,) = needle_scan.required_prefix(r"\w")
    assert ord("é".encode()[0:1]) not in word and ord("_") in word and ord("7") in word
    (high,) = needle_scan.required_prefix(r"[\x80-\xff]")
    assert high == frozenset(range(0x80, 0x100))


def test_a_behind_that_is_not_a_plain_literal_is_left_out_of_the_expression():
    literal_behind = Needle("ey", behind=r"api\-k")
    assert needle_scan.expression(literal_behind) == (b"\\x61\\x70\\x69\\x2d\\x6b\\x65\\x79", 2)
    class_behind = Needle("ey", behind=r"[kK]")
    assert needle_scan.expression(class_behind) == (b"\\x65\\x79", 2)
    escaped_letter = Needle("ey", behind=r"\d")  # `\d` is a class, not the letter d
    assert needle_scan.expression(escaped_letter) == (b"\\x65\\x79", 2)


def test_one_expression_serving_needles_of_two_groups_marks_both():
    # `k` + `ey` (group e) and `key` (group k) make the same expression: each group gets its start.
    scan = needle_scan.CandidateScan([needles("ey", behind="k"), needles("key")])
    assert scan.starts(b"a key") == [[3], [2]]


def _agree(prefilter: Prefilter, text: str) -> dict[int, int]:
    one_pass = prefilter.flag(text)
    assert one_pass == prefilter.flag(text, one_pass=False)
    return one_pass


def test_the_regression_cases_are_flagged_the_same(prefilter):
    texts = [case.text for case in load_cases()]
    assert any(_agree(prefilter, text) for text in texts)
    assert _agree(prefilter, "\n".join(texts))


def test_the_external_corpus_is_flagged_the_same(prefilter):
    records = [json.loads(line) for line in EXTERNAL_CORPUS.read_text(encoding="utf-8").splitlines() if line]
    assert len(records) > 500
    flagged = _agree(prefilter, "\n".join(record["text"] for record in records))
    assert len(flagged) > len(records) // 4


def _needle_soup(rng: random.Random, literals: list[str], lines: int) -> str:
    """Lines made of needle literals (in any case), separators their lookarounds look for, token
    characters, digits and non-ASCII text: where candidates overlap and lookarounds decide."""
    pieces = [
        *literals,
        " ",
        "\t",
        "=",
        ":",
        '"',
        "'",
        "_",
        "-",
        ".",
        "@",
        "/",
        "(",
        ")",
        "\r",
        "é",
        "ＡＫＩＡ",
        "\u200b",
    ]
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ+/"
    out = []
    for _ in range(lines):
        parts = []
        for _ in range(rng.randint(1, 12)):
            roll = rng.random()
            if roll < 0.45:
                piece = rng.choice(pieces)
                parts.append(piece.upper() if rng.random() < 0.2 else piece)
            elif roll < 0.8:
                parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
            else:
                parts.append(rng.choice(" \t=:") * rng.randint(1, 3))
        out.append("".join(parts))
    return "\n".join(out)


@pytest.mark.parametrize("seed", range(6))
def test_random_needle_soup_is_flagged_the_same(prefilter, seed):
    rng = random.Random(seed)
    literals = sorted({needle.behind.replace("\\", "") + needle.literal for needle in _all_needles(prefilter)})
    assert len(literals) > 300
    assert _agree(prefilter, _needle_soup(rng, literals, 400))


def test_overlapping_literals_of_one_group_follow_finditer():
    # `passpassword`: re's finditer takes `pass` at 0, then `password` at 4; so does the one pass.
    prefilter = Prefilter([(0, needles("pass")), (1, needles("password")), (2, needles("sword", ahead="="))])
    for text in ("passpassword=x", "passwordpassword", "ppassword=", "x\npassword=\npass"):
        _agree(prefilter, text)
    assert prefilter.flag("x\npassword=\npass") == {2: 0b111, 12: 0b1}


def test_scans_from_several_threads_at_once_agree(prefilter):
    # Each thread scans with its own scratch space (one shared space would raise "scratch in use").
    rng = random.Random(7)
    literals = sorted({needle.literal for needle in _all_needles(prefilter)})
    texts = [_needle_soup(rng, literals, 2000) for _ in range(4)]
    expected = [prefilter.flag(text, one_pass=False) for text in texts]
    results: dict[int, dict[int, int]] = {}
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            for _ in range(3):
                results[index] = prefilter.flag(texts[index])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert [results[index] for index in range(4)] == expected


def test_only_a_text_of_the_threshold_or_more_takes_the_one_pass(prefilter, monkeypatch):
    from p4review.change.redaction import needles as needles_module

    scanned: list[int] = []
    scan = prefilter._one_pass_scan()
    assert scan is not None
    original = type(scan).starts
    monkeypatch.setattr(type(scan), "starts", lambda self, data: scanned.append(len(data)) or original(self, data))
    monkeypatch.setattr(needles_module, "ONE_PASS_MIN_BYTES", 1000)
    line = 'token = "ghp_' + "a1" * 18 + '"\n'
    short, long = line * 3, line * 40
    assert prefilter.flag(short) == prefilter.flag(short, one_pass=False)
    assert scanned == []
    assert prefilter.flag(long) == prefilter.flag(long, one_pass=False)
    assert scanned == [len(long)]


def test_without_hyperscan_the_redactor_gives_the_same_text(monkeypatch):
    from p4review.change.redaction import needles as needles_module

    text = "\n".join(case.text for case in load_cases())
    with_scan = Redactor(service_policy()).redact(text).text
    monkeypatch.setattr(needles_module, "_candidate_scan", lambda groups: None)
    assert Redactor(service_policy()).redact(text).text == with_scan


_ALPHABET = [chr(code) for code in range(32, 127)] + ["\t", "\r", "é", "\udc80"]


def _sample(items, rng: random.Random) -> str:
    """A string the parsed regex `items` accepts, most of the time (lookarounds are not held to):
    each needle's own lookahead, so the candidates its required prefix proposes are put to the test."""
    from re import _constants as sre

    out = []
    for op, argument in items:
        members = needle_scan._one_character(op, argument)
        if members is not None:  # a character: one whose first UTF-8 byte the class holds
            fits = [c for c in _ALPHABET if c.encode("utf-8", "surrogatepass")[0] in members]
            out.append(rng.choice(fits) if fits else "")
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = argument
            out.extend(_sample(body, rng) for _ in range(rng.randint(low, min(high, low + 4))))
        elif op is sre.SUBPATTERN:
            out.append(_sample(argument[-1], rng))
        elif op is sre.BRANCH:
            out.append(_sample(rng.choice(argument[1]), rng))
    return "".join(out)


def test_each_needle_meeting_its_own_lookahead_in_any_case_is_flagged_the_same(prefilter):
    # Case mixed within a needle (`pAsSwOrD`): folded needles are confirmed on the lowered text,
    # proposed by Hyperscan's caseless match on the original.
    from re import _parser

    rng = random.Random(28)
    lines = []
    for needle in _all_needles(prefilter):
        behind = needle_scan._behind_literal(needle.behind) or ""
        for _ in range(4):
            ahead = _sample(list(_parser.parse(needle.ahead)), rng) if needle.ahead else ""
            line = behind + needle.literal + ahead
            if needle.folded:
                line = "".join(c.upper() if rng.random() < 0.5 else c for c in line)
            lines.append(rng.choice(["", "x ", "é"]) + line)
    text = "\n".join(lines)
    flagged = _agree(prefilter, text)
    assert len(flagged) > len(lines) // 2
