"""The redaction benchmark's corpus is what it claims to be: deterministic, every planted secret
on the line recorded for it, hunk headers that count their lines. No timing is asserted."""

from __future__ import annotations

import pytest

from benchmarks.redaction import POLICY_CLASSES, Corpus, generate, prefix, score_pipeline
from p4review.change.redaction import RedactionPolicy
from p4review.change.unified_diff import parse_hunk_header

SIZE = 300_000
POOL = 300  # distinct clean lines per language: enough here, and quick to build


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate(SIZE, pool=POOL)


def test_same_seed_same_corpus_and_plants_where_recorded(corpus: Corpus):
    again = generate(SIZE, pool=POOL)
    assert corpus.text == again.text and [p.secrets for p in corpus.plants] == [p.secrets for p in again.plants]
    assert generate(SIZE, seed=1, pool=POOL).text != corpus.text
    lines = corpus.text.split("\n")
    assert len({plant.name for plant in corpus.plants}) >= 12
    for plant in corpus.plants:
        assert plant.lines == list(range(plant.lines[0], plant.lines[-1] + 1))
        for line, secret in plant.secrets:
            assert line in plant.lines and secret in lines[line], (plant.name, plant.form)


def test_hunk_headers_count_their_lines(corpus: Corpus):
    lines = corpus.text.split("\n")
    for number, line in enumerate(lines):
        header = parse_hunk_header(line)
        if header is None:
            continue
        body = []
        for following in lines[number + 1 :]:
            if following.startswith(("@@ -", "--- a/")) or not following:
                break  # the next hunk, the next file, the end
            body.append(following)
        assert sum(not entry.startswith("+") for entry in body) == header.old_count
        assert sum(not entry.startswith("-") for entry in body) == header.new_count


def test_scoring_runs_on_a_prefix(corpus: Corpus):
    corpus = prefix(corpus, SIZE // 2)
    score, document = score_pipeline(
        corpus,
        RedactionPolicy(
            deidentify_emails=True,
            confidential_host_suffixes=(".corp.example",),
            confidential_cidrs=("10.0.0.0/8", "192.168.0.0/16"),
        ),
        repeats=1,
    )
    assert sum(score.planted.values()) == len(corpus.plants) > 0
    assert 0.0 <= score.catch_rate(POLICY_CLASSES) <= 1.0 and 0.0 <= score.false_positive_rate <= 1.0
    assert len(document.text.split("\n")) == len(corpus.text.split("\n"))
