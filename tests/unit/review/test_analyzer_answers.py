"""Analyzer answers reused by content (review/analyzers/answers.py, identity.py, runner.py): a file
whose key is unchanged is not analyzed again; anything else is. The processes are faked here
(`AnalyzerRunner._run_one`), and counted; tests/integration/review/test_incremental_review.py runs
the real analyzers on the fixture's re-shelved change."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from p4review.models.review_result import Category, Severity, StoredReview
from p4review.review.analyzers import identity
from p4review.review.analyzers import runner as runner_module
from p4review.review.analyzers.analysis import AnalyzerReport
from p4review.review.analyzers.answers import AnalyzerAnswer, answer_key, read_answers, stored_answers
from p4review.review.analyzers.runner import ANALYZER_FAILED, AnalyzerRun, AnalyzerRunner

A, B = "//depot/app/a.py", "//depot/app/b.py"
CONTENTS = {A: "import os\n", B: "x = 1\n"}


def report(analyzer: str, path: str, line: int = 1) -> AnalyzerReport:
    return AnalyzerReport(
        analyzer=analyzer,
        rule="X1",
        file=path,
        line=line,
        severity=Severity.LOW,
        category=Category.MAINTAINABILITY,
        title=f"{analyzer} on {path}",
        message=f"{analyzer} says so",
    )


class FakeProcesses:
    """Stands for the analyzer processes: one report per file, or a failed run."""

    def __init__(self) -> None:
        self.given: list[tuple[str, list[str]]] = []  # (analyzer, depot paths) per process
        self.failing: set[str] = set()
        self.identity = "tool 1.0"

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        fake = self

        def run_one(runner, analyzer, files, local_of: Mapping[str, str], root, result: AnalyzerRun, options=()):
            depot = {local: path for path, local in local_of.items()}
            paths = [depot[name] for name in files]
            fake.given.append((analyzer, paths))
            if analyzer in fake.failing:
                return None
            return [report(analyzer, path) for path in paths]

        monkeypatch.setattr(AnalyzerRunner, "_run_one", run_one)
        monkeypatch.setattr(runner_module, "_command", lambda analyzer, files: ["tool", *files])
        monkeypatch.setattr(runner_module, "_module_available", lambda analyzer: True)
        monkeypatch.setattr(runner_module, "process_identity", lambda analyzer, command, files=(): fake.identity)

    def files(self, analyzer: str) -> list[str]:
        return sorted(path for name, paths in self.given if name == analyzer for path in paths)


@pytest.fixture
def processes(monkeypatch):
    fake = FakeProcesses()
    fake.install(monkeypatch)
    return fake


def test_an_unchanged_file_is_not_analyzed_again_and_gives_the_same_reports(processes):
    runner = AnalyzerRunner(["ruff", "bandit"])
    first = runner.run(CONTENTS)
    processes.given.clear()
    second = runner.run(CONTENTS, first.answers)
    assert processes.given == []
    assert second.reports == first.reports and second.ran == first.ran == ["ruff", "bandit"]
    assert (second.reused, second.analyzed) == (4, 0) and (first.reused, first.analyzed) == (0, 4)
    assert stored_answers(second.answers) == stored_answers(first.answers)  # carried on to the next version


def test_a_file_whose_content_changed_is_analyzed_again_and_only_it(processes):
    runner = AnalyzerRunner(["ruff", "bandit"])
    first = runner.run(CONTENTS)
    processes.given.clear()
    second = runner.run({**CONTENTS, B: "x = 2\n"}, first.answers)
    assert processes.files("ruff") == processes.files("bandit") == [B]
    assert (second.reused, second.analyzed) == (2, 2)
    assert [(r.analyzer, r.file) for r in second.reports] == [("ruff", A), ("ruff", B), ("bandit", A), ("bandit", B)]


def test_the_same_content_at_another_path_is_another_answer(processes):
    runner = AnalyzerRunner(["ruff"])
    first = runner.run({A: CONTENTS[A]})
    processes.given.clear()
    runner.run({"//depot/app/renamed.py": CONTENTS[A]}, first.answers)
    assert processes.files("ruff") == ["//depot/app/renamed.py"]


def test_a_new_analyzer_version_or_rule_set_analyzes_every_file_again(processes):
    runner = AnalyzerRunner(["ruff"])
    first = runner.run(CONTENTS)
    processes.given.clear()
    processes.identity = "tool 1.1"  # what identity.process_identity says when any part of it changed
    second = runner.run(CONTENTS, first.answers)
    assert processes.files("ruff") == [A, B] and second.reused == 0


def test_an_analyzer_whose_identity_cannot_be_read_always_runs_and_keeps_nothing(processes):
    processes.identity = None
    runner = AnalyzerRunner(["ruff"])
    first = runner.run(CONTENTS)
    assert first.answers == [] and first.analyzed == 2
    second = runner.run(CONTENTS, first.answers)
    assert second.analyzed == 2 and second.reports == first.reports


def test_a_failed_analyzer_is_never_kept_and_runs_again(processes):
    processes.failing = {"bandit"}
    runner = AnalyzerRunner(["ruff", "bandit"])
    first = runner.run(CONTENTS)
    assert {a.analyzer for a in first.answers} == {"ruff"} and first.ran == ["ruff"]
    processes.given.clear()
    processes.failing = set()
    second = runner.run(CONTENTS, first.answers)
    assert processes.files("ruff") == [] and processes.files("bandit") == [A, B]
    assert {a.analyzer for a in second.answers} == {"ruff", "bandit"}


def test_a_report_that_is_not_json_is_a_failed_run_not_a_clean_one():
    result = AnalyzerRun()
    assert runner_module._read("bandit", "Traceback (most recent call last):", {A: "f0000/a.py"}, "/x", result) is None
    assert [d.reason for d in result.diagnostics] == [ANALYZER_FAILED]
    clean = runner_module._read("bandit", '{"results": []}', {A: "f0000/a.py"}, "/x", AnalyzerRun())
    assert clean == []


def test_a_failing_in_process_check_is_never_kept(monkeypatch):
    calls: list[str] = []

    def check(path: str, text: str) -> list[AnalyzerReport]:
        calls.append(path)
        if "boom" in text:
            raise ValueError("a bug in a check")
        return [report("iac", path)]

    from p4review.review.analyzers import iac_checks  # the runner imports it on first use

    monkeypatch.setattr(iac_checks, "check", check)
    runner = AnalyzerRunner(["iac"])
    contents = {"//depot/infra/main.tf": "boom\n", "//depot/infra/compose.yaml": "services: {}\n"}
    failed = runner.run(contents)
    assert failed.answers == [] and [d.reason for d in failed.diagnostics] == [ANALYZER_FAILED]
    fixed = {**contents, "//depot/infra/main.tf": "x = 1\n"}
    kept = runner.run(fixed, failed.answers)
    calls.clear()
    again = runner.run(fixed, kept.answers)
    assert calls == [] and again.reused == 2 and again.reports == kept.reports


CORRUPT_ENTRIES = [
    "not an answer",
    {"analyzer": "ruff", "file": A},  # no key
    {"analyzer": "ruff", "file": A, "key": "not-a-sha256", "reports": []},
    {"analyzer": "ruff", "file": A, "key": "0" * 64, "reports": [{"line": 0}]},
    # A report of another file inside this file's answer.
    {"analyzer": "ruff", "file": A, "key": "0" * 64, "reports": [report("ruff", B).model_dump(mode="json")]},
    {"analyzer": "ruff", "file": A, "key": "0" * 64, "reports": [], "extra": 1},
]


@pytest.mark.parametrize("entry", CORRUPT_ENTRIES)
def test_a_corrupt_stored_answer_is_a_miss_never_a_failure(processes, entry):
    runner = AnalyzerRunner(["ruff"])
    good = runner.run({B: CONTENTS[B]}).answers
    assert read_answers([entry, *stored_answers(good)]) == good
    processes.given.clear()
    runner.run(CONTENTS, read_answers([entry, *stored_answers(good)]))
    assert processes.files("ruff") == [A]


def test_a_corrupt_answer_in_a_stored_result_loses_nothing_else():
    result = {"schema_version": "1.0", "prompt_version": "1.0.0", "findings": []}
    document = {"result": result, "analyzer_answers": CORRUPT_ENTRIES}
    stored = StoredReview.model_validate(document)  # the model's answers are still read
    assert read_answers(stored.analyzer_answers) == []


def test_a_stale_answer_under_the_same_file_is_not_taken(processes):
    """An answer for this file under another key (another content) is never used for it."""
    runner = AnalyzerRunner(["ruff"])
    stale = AnalyzerAnswer(analyzer="ruff", file=A, key="0" * 64, reports=(report("ruff", A, line=7),))
    run = runner.run(CONTENTS, [stale])
    assert run.reused == 0 and all(r.line == 1 for r in run.reports)


def test_cppcheck_answers_depend_on_every_c_file_of_its_run(processes):
    """cppcheck's whole-program checks read the files of a run together; flawfinder reads each alone."""
    runner = AnalyzerRunner(["flawfinder", "cppcheck"])
    c_files = {"//depot/c/a.c": "int f(int *p) { return *p; }\n", "//depot/c/b.c": "int g(void) { return 0; }\n"}
    first = runner.run(c_files)
    processes.given.clear()
    runner.run({**c_files, "//depot/c/b.c": "int g(void) { return 1; }\n"}, first.answers)
    assert processes.files("flawfinder") == ["//depot/c/b.c"]
    assert processes.files("cppcheck") == ["//depot/c/a.c", "//depot/c/b.c"]


def test_the_key_is_the_text_the_analyzer_read():
    """The analyzers read the redacted text (placeholders as identifiers): a text that redacts
    differently, under a new rule, is another key, so no answer made from other text is reused."""
    key = answer_key("ruff", "tool 1.0", A, "token = REDACTED_api_key\n")
    assert key != answer_key("ruff", "tool 1.0", A, "token = REDACTED_generic_secret\n")
    assert key != answer_key("ruff", "tool 1.1", A, "token = REDACTED_api_key\n")
    assert key != answer_key("bandit", "tool 1.0", A, "token = REDACTED_api_key\n")
    assert key != answer_key("ruff", "tool 1.0", A, "token = REDACTED_api_key\n", together="other files")
    assert key == answer_key("ruff", "tool 1.0", A, "token = REDACTED_api_key\n")


def test_concurrent_runs_of_one_job_keep_the_same_answers(processes):
    """A duplicate delivery runs the same review twice at once: both write the same answers."""
    runner = AnalyzerRunner(["ruff", "bandit"])
    previous = runner.run({A: CONTENTS[A]}).answers
    documents: list[list[dict]] = []

    def review() -> None:
        documents.append(stored_answers(runner.run(CONTENTS, previous).answers))

    threads = [threading.Thread(target=review) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(documents) == 4 and all(document == documents[0] for document in documents)
    assert stored_answers(reversed(runner.run(CONTENTS, previous).answers)) == documents[0]


# ---- identity.py: what the key says about the analyzer ----------------------------------------


@pytest.fixture
def versions(monkeypatch):
    found = {"tool": "tool 1.0"}
    monkeypatch.setattr(identity, "_tool_version", lambda executable, module: found.get(executable))
    return found


def test_the_identity_changes_with_the_version_the_options_or_the_python(versions, monkeypatch):
    base = identity.process_identity("ruff", ["tool", "check", "--isolated"])
    assert base is not None
    assert identity.process_identity("ruff", ["tool", "check", "--isolated", "--extend-select", "B"]) != base
    versions["tool"] = "tool 1.1"
    assert identity.process_identity("ruff", ["tool", "check", "--isolated"]) != base
    versions["tool"] = "tool 1.0"
    # The machine's paths are not part of it: the same tool installed elsewhere is the same.
    versions["/opt/python/bin/tool"] = "tool 1.0"
    assert identity.process_identity("ruff", ["/opt/python/bin/tool", "check", "--isolated"]) == base
    monkeypatch.setattr(identity.sys, "version_info", (3, 99, 0))
    assert identity.process_identity("ruff", ["tool", "check", "--isolated"]) != base


def test_the_identity_changes_with_our_adapter_and_the_files_it_names(versions, monkeypatch, tmp_path: Path):
    config = tmp_path / "eslint.config.mjs"
    config.write_text("export default [];\n")
    base = identity.process_identity("eslint", ["tool"], [config])
    config.write_text("export default [{ rules: {} }];\n")
    assert identity.process_identity("eslint", ["tool"], [config]) != base
    assert identity.process_identity("eslint", ["tool"], [tmp_path / "missing.json"]) is None
    before = identity.process_identity("ruff", ["tool"])
    monkeypatch.setattr(identity, "_adapter_digest", lambda: "another reader")
    assert identity.process_identity("ruff", ["tool"]) != before


def test_an_unknown_version_is_no_identity(versions):
    assert identity.process_identity("shellcheck", ["missing-tool", "--format", "json1"]) is None


def test_the_remote_javascript_analyzers_are_never_reused(processes):
    """Their version is the deployed function's, which the review function cannot see."""
    runner = AnalyzerRunner(["eslint"], node_runner=lambda analyzer, files: "[]")
    assert runner._identity("eslint") is None
    assert AnalyzerRunner(["eslint"])._identity("eslint") == "tool 1.0"


def test_the_stored_answers_are_bounded_and_the_rest_analyzed_again(processes):
    """A noisy file does not grow the stored result: past the bound its answer is not kept."""
    runner = AnalyzerRunner(["ruff"])
    first = runner.run(CONTENTS)
    kept = read_answers(stored_answers(first.answers, max_reports=1))
    assert [a.file for a in kept] == [A]  # in the stored order; b.py's report would pass the bound
    processes.given.clear()
    runner.run(CONTENTS, kept)
    assert processes.files("ruff") == [B]
