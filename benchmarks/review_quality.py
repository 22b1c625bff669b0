"""Review quality on real defects: public fix commits played backwards (benchmarks/data/
reversed_fixes.json.xz, built and cited by tools/build_reversed_fixes.py; each case names its
commit). Four reviewers in the same run, on the same cases:

- `heuristics`: the offline reviewer before analyzers (its line heuristics alone);
- `reviewdog baseline`: the existing practice we compare with: ruff, bandit, shellcheck and
  cppcheck with their default rule sets, reports kept to added lines (reviewdog's `added` filter);
- `analyzers`: our analyzers with our rule sets alone, reports kept to added lines;
- `offline default`: what the service runs without a model, heuristics plus analyzers, merged,
  through `p4review review-diff` (the review stage itself).

A defect is hit when a finding on its file is within MATCH_LINES lines of it; precision counts
the findings that hit some defect. Figures per language and in all.

Three splits, each figured apart: `dev`, read while the rules were written; `test`, not read
(only its totals were seen); `fresh`, from ten repositories not used before (two a language),
chosen on 2026-11-25 after the dev rules were written and before any reviewer ran on them, by
the same kind of rule. Nobody tunes rules on `test` or `fresh`: their cases are not read.

Run alone: `python -m benchmarks.review_quality`."""

from __future__ import annotations

import contextlib
import hashlib
import json
import lzma
import os
import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.sizes import sized

DATA = Path(__file__).parent / "data" / "reversed_fixes.json.xz"
MATCH_LINES = 3
_LANGUAGE = {".c": "C", ".h": "C", ".py": "Python", ".sh": "shell", ".js": "JavaScript"}


@dataclass
class Score:
    defects: int = 0
    hit: int = 0
    findings: int = 0
    true_findings: int = 0

    def add(self, other: Score) -> None:
        self.defects += other.defects
        self.hit += other.hit
        self.findings += other.findings
        self.true_findings += other.true_findings

    @property
    def recall(self) -> float:
        return self.hit / self.defects if self.defects else 0.0

    @property
    def precision(self) -> float | None:
        return self.true_findings / self.findings if self.findings else None


@dataclass
class Located:
    file: str
    line: int
    end_line: int | None = None
    rule: str = ""


def load_cases(path: Path = DATA) -> list[dict[str, Any]]:
    return json.loads(lzma.decompress(path.read_bytes()))["cases"]


def _lines(case: dict[str, Any]) -> int:
    return sum(str(content).count("\n") for content in case["files"].values())


def language(case: dict[str, Any]) -> str:
    if case.get("language"):
        return str(case["language"])
    extensions = {posixpath.splitext(name)[1] for name in case["files"]}
    return _LANGUAGE.get(sorted(extensions)[0], "other") if extensions else "other"


def _defect_lines(defect: dict[str, Any]) -> list[int]:
    return defect["lines"] or [defect["removal_at"]]


def score_case(case: dict[str, Any], findings: Iterable[Located]) -> Score:
    findings = list(findings)
    score = Score(defects=len(case["defects"]), findings=len(findings))

    def hits(finding: Located, defect: dict[str, Any]) -> bool:
        if finding.file != defect["file"]:
            return False
        low, high = finding.line, finding.end_line or finding.line
        return any(low - MATCH_LINES <= line <= high + MATCH_LINES for line in _defect_lines(defect))

    score.hit = sum(1 for d in case["defects"] if any(hits(f, d) for f in findings))
    score.true_findings = sum(1 for f in findings if any(hits(f, d) for d in case["defects"]))
    return score


def review_with_service(case: dict[str, Any], analyzers: str | None) -> list[Located]:
    """The review stage through `p4review review-diff` (offline reviewer; analyzers as given)."""
    from p4review.cli.review_diff import review_diff

    stored = review_diff(case["diff"], case.get("fix_subject", ""), "offline", files=case["files"], analyzers=analyzers)
    return [Located(f.file, f.line, f.end_line, f.rule_id or "") for f in stored.result.findings]


def review_with_analyzers_alone(case: dict[str, Any]) -> list[Located]:
    from p4review.change.diff_lines import changed_lines_from_diff, split_describe_diff
    from p4review.review.analyzers.analysis import on_added_lines
    from p4review.review.analyzers.runner import AnalyzerRunner

    changed = {path: changed_lines_from_diff(text) for path, text in split_describe_diff(case["diff"]).items()}
    run = AnalyzerRunner().run(case["files"])
    return [Located(r.file, r.line, r.end_line, r.rule_id) for r in on_added_lines(run.reports, changed)]


def _baseline_reports(files: dict[str, str]) -> list[Located]:
    """ruff, bandit, shellcheck and cppcheck as a CI job runs them: default rule sets, every
    severity, each on its files, in a scratch directory."""
    import subprocess  # nosec B404 - the analyzers, fixed arguments
    import sys
    import tempfile

    from p4review.change.analyzer_files import analyzers_for
    from p4review.review.analyzers.runner import _executable, _ruff_binary

    found: list[Located] = []
    with tempfile.TemporaryDirectory() as root:
        local: dict[str, str] = {}
        for index, (path, text) in enumerate(sorted(files.items())):
            name = f"f{index}/{posixpath.basename(path)}"
            Path(root, name).parent.mkdir(parents=True)
            Path(root, name).write_text(text)
            local[name] = path

        def run(command: list[str], stream: str = "stdout") -> str:
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)  # nosec B603
            return str(getattr(done, stream))

        def named(kind: str) -> list[str]:
            return [n for n, p in local.items() if kind in analyzers_for(p, files[p].split("\n", 1)[0])]

        if python := named("ruff"):
            for item in json.loads(
                run([str(_ruff_binary()), "check", "--isolated", "--output-format", "json", *python]) or "[]"
            ):
                found.append(
                    Located(
                        local[Path(item["filename"]).relative_to(root).as_posix()],
                        item["location"]["row"],
                        None,
                        f"ruff/{item['code']}",
                    )
                )
            for item in json.loads(run([sys.executable, "-m", "bandit", "-f", "json", "-q", *python]) or "{}").get(
                "results", []
            ):
                found.append(
                    Located(
                        local[item["filename"].removeprefix("./")],
                        item["line_number"],
                        None,
                        f"bandit/{item['test_id']}",
                    )
                )
        if shell := named("shellcheck"):
            for item in json.loads(run([str(_executable("shellcheck")), "-f", "json1", *shell]) or "{}").get(
                "comments", []
            ):
                found.append(
                    Located(local[item["file"]], item["line"], item.get("endLine"), f"shellcheck/SC{item['code']}")
                )
        if c_files := named("cppcheck"):
            template = "--template={file}\t{line}\t{id}"
            for line in run([sys.executable, "-m", "cppcheck", "--quiet", template, *c_files], "stderr").splitlines():
                name, _, rest = line.partition("\t")
                number, _, rule = rest.partition("\t")
                if name in local and number.isdigit() and int(number) > 0:
                    found.append(Located(local[name], int(number), None, f"cppcheck/{rule}"))
    return found


def review_with_reviewdog_baseline(case: dict[str, Any]) -> list[Located]:
    from p4review.change.diff_lines import changed_lines_from_diff, split_describe_diff

    changed = {path: changed_lines_from_diff(text) for path, text in split_describe_diff(case["diff"]).items()}
    return [
        f
        for f in _baseline_reports(case["files"])
        if f.file in changed and changed[f.file].touches_added(f.line, f.end_line)
    ]


REVIEWERS: dict[str, Callable[[dict[str, Any]], list[Located]]] = {
    "heuristics": lambda case: review_with_service(case, analyzers=""),
    "reviewdog baseline (ruff, bandit, shellcheck, cppcheck defaults)": review_with_reviewdog_baseline,
    "analyzers (our rule sets)": review_with_analyzers_alone,
    "offline default": lambda case: review_with_service(case, analyzers=None),
}


@contextlib.contextmanager
def _analyzer_runs_remembered() -> Iterator[None]:
    """Both reviewers that run analyzers see the same files: run them once per case (shellcheck
    takes ~25 s on nvm.sh's 5,000 lines)."""
    import copy

    from p4review.review.analyzers.runner import AnalyzerRunner

    original = AnalyzerRunner.run
    remembered: dict[str, Any] = {}

    def run(self: AnalyzerRunner, contents: Any, known: Any = ()) -> Any:
        key = hashlib.sha256(json.dumps([self.enabled, contents], sort_keys=True).encode()).hexdigest()
        if key not in remembered:  # `known` (a previous version's answers) is empty here: one version a case
            remembered[key] = original(self, contents, known)
        return copy.deepcopy(remembered[key])

    AnalyzerRunner.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        AnalyzerRunner.run = original  # type: ignore[method-assign]


def score_cases(cases: list[dict[str, Any]], workers: int = 1) -> list[dict[str, Score]]:
    """Each case's score per reviewer, in case order. With `workers` > 1 the cases are reviewed in
    that many processes, the largest first so that no large case is left to run alone at the end
    (each case wholly in one process, so its analyzer runs are still shared by the reviewers)."""
    if workers <= 1:
        with _analyzer_runs_remembered():
            return [_score_every_reviewer(case) for case in cases]
    from concurrent.futures import ProcessPoolExecutor

    largest_first = sorted(range(len(cases)), key=lambda index: -_lines(cases[index]))
    with ProcessPoolExecutor(max_workers=workers, initializer=_quiet_worker) as pool:
        scored = dict(
            zip(largest_first, pool.map(_score_every_reviewer, [cases[i] for i in largest_first]), strict=True)
        )
    return [scored[index] for index in range(len(cases))]


def tabulate(cases: list[dict[str, Any]], per_case: list[dict[str, Score]]) -> dict[str, dict[str, Score]]:
    """reviewer -> language (and "all") -> Score, summed over the cases."""
    table: dict[str, dict[str, Score]] = {name: defaultdict(Score) for name in REVIEWERS}
    for case, scores in zip(cases, per_case, strict=True):
        for name, score in scores.items():
            table[name][language(case)].add(score)
            table[name]["all"].add(score)
    return {name: dict(per_language) for name, per_language in table.items()}


def _score_every_reviewer(case: dict[str, Any]) -> dict[str, Score]:
    return {name: score_case(case, review(case)) for name, review in REVIEWERS.items()}


def _quiet_worker() -> None:
    """A worker process: the stages' JSON logs to nowhere, each case's analyzer runs shared."""
    import io
    import sys

    sys.stdout = io.StringIO()
    _analyzer_runs_remembered().__enter__()


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.2f}"


def bench_review_quality() -> None:
    import io

    # Quick: every 8th case, and none whose files hold more than 2,000 lines (shellcheck alone
    # takes ~25 s on nvm.sh's 5,000).
    all_cases = [case for case in load_cases()[:: sized(1, 8)] if sized(True, _lines(case) <= 2_000)]
    print(
        f"review quality on {len(all_cases)} reversed public fix commits "
        f"({sum(len(c['defects']) for c in all_cases)} defects; benchmarks/data/reversed_fixes.json.xz). "
        "'dev' was read while the rules were written; 'test' was not; 'fresh' came from new repositories, "
        "chosen before any reviewer ran on them:"
    )
    with contextlib.redirect_stdout(io.StringIO()):  # the stages log JSON to stdout
        # The cases are independent: one process a core (the analyzers' time dominates), every
        # split in one pool.
        scores = score_cases(all_cases, workers=os.cpu_count() or 1)
    for split in ("dev", "test", "fresh"):
        in_split = [index for index, case in enumerate(all_cases) if case.get("split", "dev") == split]
        cases = [all_cases[index] for index in in_split]
        table = tabulate(cases, [scores[index] for index in in_split])
        languages = sorted({language(c) for c in cases}) + ["all"]
        counts = {lang: sum(1 for c in cases if lang in ("all", language(c))) for lang in languages}
        print(f" {split} ({len(cases)} changes):")
        for name, per_language in table.items():
            cells = []
            for lang in languages:
                score = per_language.get(lang, Score())
                cells.append(
                    f"{lang} ({counts[lang]} changes, {score.defects} defects) recall {_fmt(score.recall)} "
                    f"precision {_fmt(score.precision)} [{score.findings} findings]"
                )
            print(f"  {name}: " + "; ".join(cells))


if __name__ == "__main__":
    bench_review_quality()
