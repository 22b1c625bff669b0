"""Build `benchmarks/data/external-corpus.jsonl`: a redaction evaluation corpus from data this
project did not write, so that the figures do not grade the rules on their own generator.

Issue 13's sources (each record names its own; kept as they are unless all three snapshots are
given, so that their figures stay comparable):
- positives and negatives: the `examples` and `negative_examples` of the rule files of
  Kingfisher (mongodb/kingfisher, Apache-2.0) and Nosey Parker (praetorian-inc/noseyparker,
  Apache-2.0), read from snapshots of the two repositories (`--kingfisher`, `--noseyparker`:
  git directories). Kingfisher later adopted Betterleaks' rules; this snapshot predates that,
  so its examples were written independently of the ruleset the pipeline adopts;
- positives from secretlint's rule snapshot tests (secretlint/secretlint, MIT): each `ng.*`
  input with the ranges its rule reports; their `ok.*` inputs are rule negatives (below);
- hard negatives from real code: lines of the installed Python packages (site-packages) that
  assign to a secret-ish name (`password = ...`, `token: ...`, `api_key=`): `real_code`, the
  sample the rules were tuned on, and `real_code_fresh`, a second sample drawn afterwards and
  never tuned on; and lines holding digests or UUIDs (`real_code_digests`). Library code, not
  secrets; test credentials found among them go in `_REAL_CODE_SECRETS` and are left out.
- the rule files' `negative_examples` are kept as `rule_negative`, for information only: they
  are strings one *specific* rule must not match, and many are credentials of another kind
  (Slack bot tokens among the negatives of Slack's webhook rule), so they are not hard negatives.

A positive's `secret` is what the rule's own pattern captures in the example (its last
group that took part, else the whole match); examples the pattern does not match in Python are left out.
Rules that find identifiers rather than secrets (public keys, client and account ids, user
names, hosts, URLs without credentials) and password *hashes* are left out.

Issue 28's sources (tools/external_corpus_sources.py says how each is labelled):
- committed with the corpus: wpa_supplicant's example configs from Debian's wpasupplicant package
  (BSD-3-clause; `psk=`/`password=` values, spans by hand rule) and the comment lines of its and
  redis' shipped configs (negatives), JavaScript lines of permissively licensed npm packages
  (node_modules) and C header lines of OpenSSL, CPython, SQLite, expat and zlib as hard
  negatives, and look-alike lines written here (placeholders, digests, ids, coordinates);
- kept out of the repository (`.local/external-corpus-fetched.jsonl`, rebuilt from the pinned
  snapshots below; the workplace keeps fetched data out of developers' commits): the test data
  of Skyscanner/whispers (Apache-2.0) at 5832bf74dcb1, Yelp/detect-secrets (Apache-2.0) at
  5e141933554a, sirwart/ripsecrets (MIT) at 416e9d04d6ba, GitGuardian/ggshield (MIT) at
  eaa3e43b1ae1 and gitleaks/gitleaks (MIT) at b58d3f102cf3 (reported apart: the adopted
  ruleset derives from gitleaks); connection strings of the Go PostgreSQL drivers' tests
  (jackc/pgx, MIT, at 728cefa8008f; lib/pq, MIT, at f4654a41a62b) and the .pypirc files of
  twine's tests (pypa/twine, Apache-2.0, at f536ac5d0c77); netrc files, `Authorization: Basic`
  headers and SASL `AUTH PLAIN` lines of curl's test cases (curl/curl, curl licence (MIT-style),
  at 5c61e168698a); device secrets of the configurations napalm's tests replay
  (napalm-automation/napalm, Apache-2.0, at ee70e634555f); and the records of items 1, 7 and 8
  derived from them.

    python tools/build_external_corpus.py --kingfisher /work/.mirror/mongodb+kingfisher/repo \
        --noseyparker /work/.mirror/praetorian-inc+noseyparker/repo \
        --secretlint /work/.mirror/secretlint+secretlint/repo          # issue 13's, rebuilt

    M=/work/.mirror; python tools/build_external_corpus.py \
        --whispers $M/Skyscanner+whispers/repo --detect-secrets $M/Yelp+detect-secrets/repo \
        --ripsecrets $M/sirwart+ripsecrets/repo --ggshield $M/GitGuardian+ggshield/repo \
        --gitleaks $M/gitleaks+gitleaks/repo --pgx $M/jackc+pgx/repo --pq $M/lib+pq/repo \
        --twine $M/pypa+twine/repo --curl $M/curl+curl/repo \
        --napalm $M/napalm-automation+napalm/repo --debian DIR_OF_DPKG_X \
        --node-modules layers/analyzers-js/node_modules                # issue 28's

`DIR_OF_DPKG_X`: `apt-get download wpasupplicant redis-server` then `dpkg -x` of each into it.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import external_corpus_sources as sources

OUTPUT = Path(__file__).resolve().parents[1] / "benchmarks/data/external-corpus.jsonl"
_NOT_A_SECRET = re.compile(
    r"(?i)public|recipient|\b(?:client|app|application|account|organization|product|project|tenant|reporter|"
    r"org|instance|subscription|user|team|workspace|site|device)[ _-]?id\b|username(?! and password)|\bhost\b"
    r"|hostname|\bemail\b|\bdomain\b|password hash|\bhash\b|instance url|jfrog url|search url|salesforce instance"
    r"|weak password|\bkey id\b|private key id|(?<!access )\bkey id\b|\bname\b|\bregion\b|\bendpoint\b"
)
_CLASSES = (
    ("private_key", re.compile(r"(?i)private key|\bpem\b|putty|ssh key|pkcs")),
    ("uri", re.compile(r"(?i)\buri\b|\burl\b|connection string|credentials in")),
    ("password", re.compile(r"(?i)password|passwd|\bpass\b")),
)
_ASSIGNMENT = re.compile(r"(?i)\b\w*(?:password|passwd|secret|token|api_?key|credential)\w*\s*(?::|=|:=)\s*\S")
_REAL_CODE_SECRETS: set[str] = set()  # filled after review of what the tools flag


def classify(name: str) -> str:
    for label, pattern in _CLASSES:
        if pattern.search(name):
            return label
    return "token"


def _rules(repo: Path, prefix: str) -> list[tuple[str, dict]]:
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.split()
    found = []
    for path in sorted(listing):
        if path.startswith(prefix) and path.endswith((".yml", ".yaml")):
            text = subprocess.run(
                ["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
            ).stdout
            found += [(path, rule) for rule in (yaml.safe_load(text) or {}).get("rules") or []]
    return found


def _commit(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()[:12]


# Where a match holds a credential beside names and hosts, the credential is the secret:
# `scheme://user:<password>@host`, `Password=<value>;` in a connection string, `-p <value>`.
_CREDENTIAL_IN_MATCH = re.compile(
    r"://[^\s:/@]+:(?P<uri>[^\s/]+)@[\w.-]"
    r"|(?i:\b(?:password|pwd|accountkey|sharedaccesskey|secret)\s*=)\s*(?P<pair>[^;\"'\s]+)"
    r"|(?i:psexec\S*\s.*?\s-p)\s+(?P<flag>\S+)"
)


def _secret(pattern: str, example: str) -> str | None:
    try:
        compiled = re.compile(pattern)
    except (re.error, OverflowError):
        return None
    match = compiled.search(example)
    if match is None:
        return None
    credential = _CREDENTIAL_IN_MATCH.search(match.group(0))
    if credential is not None:
        return next(value for value in credential.groups() if value)
    # The last group that took part: rules that capture several parts (account name, then key;
    # user, then password) put the secret last.
    for index in range(compiled.groups, 0, -1):
        if match.group(index):
            return match.group(index)
    return match.group(0)


def rule_examples(project: str, repo: Path, prefix: str) -> list[dict]:
    records, seen = [], set()
    commit = _commit(repo)
    for path, rule in _rules(repo, prefix):
        source = f"{project}@{commit}:{path}"
        name = str(rule.get("name", ""))
        for example in rule.get("negative_examples") or []:
            if example not in seen:
                seen.add(example)
                records.append(
                    {
                        "label": "negative",
                        "class": "rule_negative",
                        "text": example,
                        "source": source,
                        "rule": rule.get("id"),
                    }
                )
        if _NOT_A_SECRET.search(name):
            continue
        for example in rule.get("examples") or []:
            secret = _secret(str(rule.get("pattern", "")), example)
            if secret is None or len(secret) < 6 or example in seen:
                continue
            seen.add(example)
            records.append(
                {
                    "label": "secret",
                    "class": classify(name),
                    "text": example,
                    "secret": secret,
                    "source": source,
                    "rule": rule.get("id"),
                    "name": name,
                }
            )
    return records


_DIGEST_OR_ID = re.compile(
    r"\b[0-9a-f]{32,}\b|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)


_SECRETLINT_SKIPPED = (
    "preset-",
    "rule-pattern",
    "no-homedir",
    "no-dotenv",
    "no-k8s",
    "filter-comments",
    "rule-example",
)
_SECRETLINT_IDENTIFIER = re.compile(r"AccountId|ClientId|TenantId|Username", re.IGNORECASE)
_SECRETLINT_CLASSES = (
    ("private_key", re.compile(r"(?i)privatekey|private-key")),
    ("uri", re.compile(r"(?i)basicauth|connection-string")),
    ("password", re.compile(r"(?i)password")),
)


def secretlint_snapshots(repo: Path) -> list[dict]:
    """secretlint's rule snapshot tests: an `ng.*` input with the ranges its rule reports (each
    range is a labelled secret), an `ok.*` input the rule must leave alone (a rule negative)."""
    commit = _commit(repo)
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    records = []
    for path in sorted(listing):
        parts = path.split("/")
        if (
            len(parts) != 7
            or parts[:2] != ["packages", "@secretlint"]
            or parts[3:5] != ["test", "snapshots"]
            or not parts[6].startswith("input")
            or any(skip in parts[2] for skip in _SECRETLINT_SKIPPED)
        ):
            continue
        rule, case = parts[2], parts[5]
        output = json.loads(
            subprocess.run(
                ["git", "-C", str(repo), "show", f"HEAD:{'/'.join(parts[:6])}/output.json"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        text = output.get("sourceContent") or ""
        source = f"secretlint@{commit}:{path}"
        if case.startswith("ok.") and text.strip():
            records.append(
                {"label": "negative", "class": "rule_negative", "text": text, "source": source, "rule": rule}
            )
        elif case.startswith("ng."):
            label = next((name for name, pattern in _SECRETLINT_CLASSES if pattern.search(rule + case)), "token")
            for message in output.get("messages", []):
                start, end = message["range"]
                secret = text[start:end]
                credential = _CREDENTIAL_IN_MATCH.search(secret)
                if credential is not None:
                    secret = next(value for value in credential.groups() if value)
                if len(secret) >= 6 and not _SECRETLINT_IDENTIFIER.search(str(message.get("messageId"))):
                    records.append(
                        {
                            "label": "secret",
                            "class": label,
                            "text": text,
                            "secret": secret,
                            "source": source,
                            "rule": f"{rule}:{message.get('messageId')}",
                        }
                    )
    return records


def real_code_negatives(
    count: int,
    seed: int = 13,
    pattern: re.Pattern[str] = _ASSIGNMENT,
    label: str = "real_code",
    exclude: frozenset[str] = frozenset(),
) -> list[dict]:
    """Lines of installed libraries that match `pattern` (by default: assign to a secret-ish
    name), shuffled by `seed`, leaving out the lines in `exclude`."""
    root = Path(sysconfig.get_paths()["purelib"])
    lines = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if "/test" in relative or relative.startswith(("_pytest", "p4review")):
            continue
        try:
            text = path.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for line in text.splitlines():
            stripped = line.strip()
            if (
                12 <= len(stripped) <= 200
                and pattern.search(stripped)
                and stripped not in _REAL_CODE_SECRETS
                and stripped not in exclude
            ):
                lines.append((relative.split("/")[0], stripped))
    random.Random(seed).shuffle(lines)
    unique, seen = [], set()
    for package, line in lines:
        if line not in seen:
            seen.add(line)
            unique.append({"label": "negative", "class": label, "text": line, "source": f"site-packages:{package}"})
        if len(unique) == count:
            break
    return unique


ROUND_ONE = ("kingfisher@", "noseyparker@", "secretlint@", "site-packages:")
# Records taken from repositories fetched for this corpus stay out of the repository (the
# workplace keeps fetched data out of developers' commits): they go to a local file, rebuilt from
# the pinned snapshots by this script, which the benchmark reads when it is there.
FETCHED_OUTPUT = Path(__file__).resolve().parents[1] / ".local" / "external-corpus-fetched.jsonl"


def round_one(args: argparse.Namespace) -> list[dict]:
    """Issue 13's sources, rebuilt from their snapshots when given, else kept as they are in the
    corpus file (so their figures stay comparable)."""
    if args.kingfisher and args.noseyparker and args.secretlint:
        tuning = real_code_negatives(args.real_code_negatives)
        # A second sample, drawn after the rules were tuned on the first and never used to tune them.
        fresh = real_code_negatives(
            args.real_code_negatives,
            seed=29,
            label="real_code_fresh",
            exclude=frozenset(record["text"] for record in tuning),
        )
        digests = real_code_negatives(
            args.real_code_negatives // 2, seed=31, pattern=_DIGEST_OR_ID, label="real_code_digests"
        )
        return (
            rule_examples("kingfisher", args.kingfisher, "data/rules/")
            + rule_examples("noseyparker", args.noseyparker, "crates/noseyparker/data/default/builtin/rules/")
            + secretlint_snapshots(args.secretlint)
            + tuning
            + fresh
            + digests
        )
    kept = [json.loads(line) for line in OUTPUT.read_text("utf-8").splitlines() if line.strip()]
    return [record for record in kept if record["source"].startswith(ROUND_ONE)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kingfisher", type=Path)
    parser.add_argument("--noseyparker", type=Path)
    parser.add_argument("--secretlint", type=Path)
    parser.add_argument("--real-code-negatives", type=int, default=300)
    # Issue 28's sources: git directories of the snapshots (`fetch`), unpacked Debian packages.
    parser.add_argument("--whispers", type=Path, help="Skyscanner/whispers (Apache-2.0)")
    parser.add_argument("--detect-secrets", type=Path, help="Yelp/detect-secrets (Apache-2.0)")
    parser.add_argument("--ripsecrets", type=Path, help="sirwart/ripsecrets (MIT)")
    parser.add_argument("--ggshield", type=Path, help="GitGuardian/ggshield (MIT)")
    parser.add_argument("--gitleaks", type=Path, help="gitleaks/gitleaks (MIT)")
    parser.add_argument("--pgx", type=Path, help="jackc/pgx (MIT): connection strings")
    parser.add_argument("--pq", type=Path, help="lib/pq (MIT): connection strings")
    parser.add_argument("--twine", type=Path, help="pypa/twine (Apache-2.0): .pypirc files")
    parser.add_argument("--curl", type=Path, help="curl/curl (curl licence): netrc, Basic auth, AUTH PLAIN")
    parser.add_argument("--napalm", type=Path, help="napalm-automation/napalm (Apache-2.0): device configs")
    parser.add_argument("--debian", type=Path, help="`dpkg -x` of wpasupplicant and redis-server")
    parser.add_argument("--node-modules", type=Path, help="JavaScript packages (hard negatives)")
    parser.add_argument("--include", type=Path, default=Path("/usr/include"), help="C headers (hard negatives)")
    parser.add_argument("--fetched-output", type=Path, default=FETCHED_OUTPUT)
    args = parser.parse_args()

    committed = round_one(args)
    # Issue 28's committed sources: rebuilt when given, else kept as the corpus file has them.
    existing = [json.loads(line) for line in OUTPUT.read_text("utf-8").splitlines() if line.strip()]

    def kept(prefix: str) -> list[dict]:
        return [record for record in existing if record["source"].startswith(prefix)]

    committed += sources.debian_examples(args.debian) if args.debian else kept("debian:")
    committed += sources.node_modules_negatives(args.node_modules, 300) if args.node_modules else kept("node_modules:")
    committed += sources.c_header_negatives(args.include, 200) if args.include.is_dir() else kept("usr-include:")
    committed += sources.lookalikes()

    fetched: list[dict] = []
    if args.whispers:
        fetched += sources.whispers(args.whispers)
    if args.detect_secrets:
        fetched += sources.detect_secrets(args.detect_secrets, sys.executable)
    if args.ripsecrets:
        fetched += sources.ripsecrets(args.ripsecrets)
    if args.ggshield:
        fetched += sources.ggshield(args.ggshield)
    if args.gitleaks:
        fetched += sources.gitleaks(args.gitleaks)
    if args.pgx:
        fetched += sources.driver_connection_strings(args.pgx, "pgx", ("pgconn/config_test.go",))
    if args.pq:
        fetched += sources.driver_connection_strings(args.pq, "pq", ("conn_test.go", "connector_test.go"))
    if args.twine:
        fetched += sources.twine_pypirc(args.twine)
    if args.curl:
        fetched += sources.curl_tests(args.curl)
    if args.napalm:
        fetched += sources.napalm_configs(args.napalm)
    # Derived shapes (items 1, 7, 8) from the fetched sources' positives, gitleaks' aside (it is
    # reported apart as the adopted ruleset's parent).
    fetched += sources.derived([record for record in fetched if not record["source"].startswith("gitleaks@")])

    _write(OUTPUT, committed)
    if fetched:
        args.fetched_output.parent.mkdir(parents=True, exist_ok=True)
        _write(args.fetched_output, fetched)
    return 0


def _write(path: Path, records: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for record in records:
        key = f"{record['label']}/{record['class']}"
        counts[key] = counts.get(key, 0) + 1
    print(f"{path}: {len(records)} records {counts}")


if __name__ == "__main__":
    sys.exit(main())
