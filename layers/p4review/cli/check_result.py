"""`p4review check-result`: run the result parser on a model answer (stdin) and print the outcome.

    p4review check-result --changed-files files.txt --diff change.diff < answer.json

For prompt authors testing answers. Prints one JSON object, `{"rejected", "result",
"diagnostics"}`; the exit status is 0 when the answer is accepted, 1 when it is rejected and
2 for a usage error (e.g. an unreadable file). `--changed-files` holds one depot path per line
(blank lines and `#` comments ignored) or a JSON array. `--diff` is the change's diff
(`p4 describe -du`, `p4 diff2 -du`, or `---`/`+++` headed sections); with it, findings away from
the changed lines are dropped (or flagged, `--line-policy flag`). Without `--prompt-version`
the expected prompt version is the prompt registry's, as at run time: its canary version when the
answer names it, else its stable version, matched exactly. The report's `accepted` says which
versions were expected and why.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, TextIO

from p4review.change.diff_lines import ChangedLines, changed_lines_from_diff, split_describe_diff
from p4review.cli.display import print_json, say
from p4review.models.review_result import SCHEMA_VERSION
from p4review.review.prompts import load_registry
from p4review.review.result_parser import LINE_POLICIES, parse_review_result, reconcile_file


class UsageError(Exception):
    pass


def _version(pattern: str, what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise argparse.ArgumentTypeError(f"{what} must look like {pattern}, got {value!r}")
        return value

    return check


def _read(path: str, what: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")  # only line structure matters
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc


def read_changed_files(path: str) -> list[str]:
    text = _read(path, "--changed-files")
    if text.lstrip().startswith("["):
        try:
            files = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--changed-files {path}: invalid JSON array ({exc})") from exc
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise UsageError(f"--changed-files {path}: the JSON array must hold strings")
        return files
    stripped = (line.strip() for line in text.splitlines())
    return [line for line in stripped if line and not line.startswith("#")]


def read_changed_lines(path: str, changed_files: list[str]) -> dict[str, ChangedLines]:
    """Each diff section's lines, keyed by the changed_files entry its path reconciles to."""
    texts: dict[str, str] = {}
    for section_path, text in split_describe_diff(_read(path, "--diff")).items():
        canonical = reconcile_file(section_path, changed_files)
        if canonical is None:  # say so: its findings are then not line-checked
            say(f"note: --diff section {section_path} matches no single changed file")
            continue
        texts[canonical] = texts.get(canonical, "") + text
    return {canonical: changed_lines_from_diff(text) for canonical, text in texts.items()}


def _answer_prompt_version(answer: bytes) -> str | None:
    try:
        version = json.loads(answer).get("prompt_version")
    except (ValueError, AttributeError, RecursionError):
        return None
    return version if isinstance(version, str) else None


def expected_prompt_version(answer: bytes, given: str | None) -> tuple[str, str]:
    """(expected version, where it came from). The run-time rule: a change is served the
    registry's canary or its stable prompt, and its answer must name that version exactly."""
    if given:
        return given, "--prompt-version"
    registry = load_registry()
    if registry.canary and _answer_prompt_version(answer) == registry.canary:
        return registry.canary, "prompt registry (canary)"
    return registry.stable, "prompt registry (stable)"


def cmd_check_result(args: argparse.Namespace, stdin: BinaryIO | None = None, stdout: TextIO | None = None) -> int:
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout
    try:
        changed_files = read_changed_files(args.changed_files)
        changed_lines = read_changed_lines(args.diff, changed_files) if args.diff else None
    except UsageError as exc:
        say(f"error: {exc}")
        return 2
    answer = stdin.read()  # bytes: the parser reports bad UTF-8 as invalid_json
    prompt_version, prompt_version_source = expected_prompt_version(answer, args.prompt_version)
    outcome = parse_review_result(
        answer,  # type: ignore[arg-type]
        changed_files,
        expected_schema_version=args.schema_version,
        expected_prompt_version=prompt_version,
        allowed_prompt_patch_drift=args.allow_patch_drift,
        changed_lines=changed_lines,
        line_policy=args.line_policy,
    )
    report: dict[str, Any] = {
        "accepted": {
            "schema_version": args.schema_version,
            "prompt_version": prompt_version,
            "prompt_version_from": prompt_version_source,
            "prompt_patch_drift": args.allow_patch_drift,
        },
        "rejected": outcome.rejected,
        # exclude_none: a printed result validates against REVIEW_RESULT_SCHEMA.
        "result": outcome.result.model_dump(mode="json", exclude_none=True) if outcome.result else None,
        "diagnostics": [d.model_dump(mode="json", exclude_none=True) for d in outcome.diagnostics],
    }
    print_json(report, documents=True, file=stdout)
    return 1 if outcome.rejected else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--changed-files",
        required=True,
        metavar="FILE",
        help="the change's depot paths: one per line (# comments) or a JSON array",
    )
    parser.add_argument("--diff", metavar="FILE", help="the change's diff (p4 describe -du / p4 diff2 -du)")
    parser.add_argument(
        "--prompt-version",
        metavar="X.Y.Z",
        type=_version(r"[0-9]+\.[0-9]+(\.[0-9]+)?", "--prompt-version"),
        help="expected prompt_version (default: the prompt registry's, as at run time)",
    )
    parser.add_argument(
        "--schema-version",
        metavar="X.Y",
        default=SCHEMA_VERSION,
        type=_version(r"[0-9]+\.[0-9]+", "--schema-version"),
        help=f"expected schema_version (default: {SCHEMA_VERSION})",
    )
    parser.add_argument(
        "--allow-patch-drift", action="store_true", help="accept another patch level of --prompt-version"
    )
    parser.add_argument(
        "--line-policy",
        choices=LINE_POLICIES,
        default="drop",
        help="findings away from the diff's changed lines: drop (default) or flag",
    )
    parser.set_defaults(func=cmd_check_result)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `check-result` to a `p4review` sub-command parser set."""
    parser = subparsers.add_parser(
        "check-result",
        help="validate a model answer (stdin) like the review stage",
        description=__doc__.split("\n\n", 1)[0],
    )
    add_arguments(parser)
    return parser


def main(argv: list[str] | None = None, *, stdin: BinaryIO | None = None, stdout: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(prog="p4review check-result", description=__doc__.split("\n\n", 1)[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return cmd_check_result(args, stdin=stdin, stdout=stdout)
