"""The second round of sources of the external redaction corpus (issue 28), read by
`tools/build_external_corpus.py`. Each function returns records of the corpus's form:

    {"label": "secret", "class": ..., "text": ..., "secret": ..., "source": "<origin>@<commit>:<path>",
     "labelled": "source" | "hand", "issue28_item": N (optional)}
    {"label": "negative", "class": ..., "text": ..., "source": ...}

Licences: every source here is MIT, Apache-2.0, BSD or ISC (checked on its licence file or its
Debian copyright file); GPL and AGPL sources (trufflehog, msmtp) are left out on purpose.

`labelled` says who drew the secret's span: "source" when the source's own test data marks it
(whispers' `hardcoded` marker and its noncompliant sections, detect-secrets' expected values,
GitGuardian's reported match ranges, gitleaks' own rule pattern), "hand" when the source only says
"this line/file holds a secret" and the span was cut here by a rule written for that file
(ripsecrets, Debian's wpa_supplicant examples) and checked by eye.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import re
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

# Classes the issue lists; those marked below were built after reading issue 28 (their rules
# did not exist when the issue was filed), and the benchmark reports them apart.
ISSUE28_CLASSES = ("credential_file", "connection_string", "path", "encoding", "copy")


def git_files(repo: Path, prefix: str = "") -> list[str]:
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD", "--", prefix or "."],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(line for line in listing.splitlines() if line)


def git_show(repo: Path, path: str) -> str | None:
    shown = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout
    try:
        return shown.decode("utf-8")
    except UnicodeDecodeError:
        return None


def commit_of(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()[:12]


# --- classes from context -------------------------------------------------------------------

_CREDENTIAL_FILES = re.compile(
    r"(?i)(?:^|/)(?:\.pgpass|\.netrc|_netrc|\.htpasswd|htpasswd|\.npmrc|\.pypirc|\.dockercfg|\.docker/config\.json"
    r"|\.aws/credentials|credentials|pip\.conf|\.git-credentials|msmtprc|\.msmtprc|wpa[_-]\S*\.conf|redis\.conf"
    r"|shadow|[^/]*\.ppk|chap-secrets|pap-secrets|\.s3cfg|\.boto|\.my\.cnf)$"
)
_URI_WITH_CREDENTIALS = re.compile(r"[a-z][a-z0-9+.-]*://[^\s:/@\"']*:([^\s/@\"']+)@", re.IGNORECASE)
_CONNECTION_STRING = re.compile(
    r"(?i)jdbc:|\b(?:server|data source|host|dsn|database|initial catalog)\s*=[^;\n]*;"
    r"|\buser\s*=\s*\S+\s+(?:password|dbname)|@tcp\(|\bdbname\s*="
)
_AUTH_HEADER = re.compile(r"(?i)\bauthorization\s*[:=]|\b(?:bearer|basic)\s+[A-Za-z0-9+/=._~-]{8,}|\bx-api-key\s*:")
_PASSWORD_NAME = re.compile(r"(?i)pass(?:word|wd|phrase)?\b|\bpwd\b|passwd|password|_pass\b|\bpsk\b")
_PRIVATE_KEY = re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY")


def _decodes_to_credential(value: str) -> bool:
    """A base64 value that decodes to printable text holding `user:password`."""
    if not re.fullmatch(r"[A-Za-z0-9+/]{8,}={0,2}", value):
        return False
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.strip().isprintable()


def classify(path: str, text: str, secret: str) -> str:
    """The issue's class of a labelled secret, from where it sits: the file's kind first (a
    credential file), then the shape around it."""
    line = next((line for line in text.splitlines() if secret.splitlines()[0] in line), "")
    if _PRIVATE_KEY.search(text) and ("\n" in secret or len(secret) > 200 or "PRIVATE KEY" in secret):
        return "private_key"
    if _CREDENTIAL_FILES.search(path):
        return "credential_file"
    if _decodes_to_credential(secret):
        return "encoded"
    if _CONNECTION_STRING.search(line):
        return "connection_string"
    uri = _URI_WITH_CREDENTIALS.search(line)
    if uri is not None and secret in uri.group(0):
        return "uri"
    if _AUTH_HEADER.search(line):
        return "auth_header"
    if _PASSWORD_NAME.search(line.split(secret)[0] if secret in line else line):
        return "password"
    return "token"


# The issue's item that names each class built after reading it.
_ITEM_OF_CLASS = {"copy": 1, "credential_file": 3, "connection_string": 4, "path": 7, "encoding": 8}


def _secret(record_class: str, text: str, secret: str, source: str, labelled: str, **extra: object) -> dict:
    record: dict = {
        "label": "secret",
        "class": record_class,
        "text": text,
        "secret": secret,
        "source": source,
        "labelled": labelled,
    }
    record.update({key: value for key, value in extra.items() if value is not None})
    if "issue28_item" not in record and record_class in _ITEM_OF_CLASS:
        record["issue28_item"] = _ITEM_OF_CLASS[record_class]
    elif "issue28_item" not in record and text.count(secret) > 1:
        record["issue28_item"] = 1  # a second copy in the same record: item 1's shape
    return record


def _negative(record_class: str, text: str, source: str) -> dict:
    return {"label": "negative", "class": record_class, "text": text, "source": source}


# --- Skyscanner/whispers (Apache-2.0) ------------------------------------------------------

_WHISPERS_VALUE = re.compile(r"[^\s\"'<>,;`(){}\[\]]+")
_WHISPERS_MARKER = re.compile(r"(?i)hardcoded")
_WHISPERS_KEY = re.compile(r"</?[\w.:-]+|^\s*-?\s*[\"']?[\w.-]+[\"']?\s*(?=:\s|:$|=)")
_WHISPERS_SECTION = re.compile(r"(?i)\b(non-?compliant|incompliant|compliant)\b")
# Fixtures whose noncompliant values carry no `hardcoded` marker: the keys whose values whispers'
# own tests expect it to find (test_detection_by_key), the values read from the fixture.
_WHISPERS_UNMARKED_KEYS = {
    "aws.yml": ("aws_id", "aws_key"),
    "aws.json": ("aws_id", "aws_key"),
    "aws.xml": ("aws_id", "aws_key"),
}


def _values_of_keys(text: str, keys: tuple[str, ...]) -> list[str]:
    """The non-placeholder values of `keys` in a YAML, JSON or XML fixture."""
    values = []
    for key in keys:
        pattern = rf"(?:^|[\s\"<]){key}[\">]?\s*[:=>]?\s*\"?([A-Za-z0-9/+=]{{16,}})"
        values += re.findall(pattern, text, re.MULTILINE)
    return values


_WHISPERS_SKIPPED = ("invalid.json", "creditcards.yml", "ruleslist.yml", "severity.yml", "excluded.")


def _whispers_secrets(text: str) -> list[str]:
    """Values in noncompliant sections that carry whispers' `hardcoded` marker (or decode to it)."""
    found: list[str] = []
    noncompliant = False
    for line in text.splitlines():
        section = _WHISPERS_SECTION.search(line)
        if section is not None and len(line.strip()) < 40:
            noncompliant = section.group(1).lower() != "compliant"
        if not noncompliant:
            continue
        # keys and tag names are not values: `01_hardcoded_password: v`, `<o1_hardcoded_password>v<`
        line = _WHISPERS_KEY.sub(lambda key: " " * len(key.group(0)), line)
        for match in _WHISPERS_VALUE.finditer(line):
            value = match.group(0)
            # `key=value`, `user:value@host`: the value is the piece holding the marker
            pieces = [piece for piece in re.split(r"(?<!=)=(?!=|$)|:(?!//)|@", value) if piece]
            for piece in pieces:
                piece = piece.rstrip(".")
                marked = _WHISPERS_MARKER.search(piece) is not None
                if not marked and re.fullmatch(r"[A-Za-z0-9+/]{12,}={0,2}", piece):
                    try:
                        marked = b"hardcoded" in base64.b64decode(piece + "=" * (-len(piece) % 4)).lower()
                    except (binascii.Error, ValueError):
                        marked = False
                if marked and "{" not in line[max(0, match.start() - 1) : match.start()] and len(piece) >= 6:
                    if piece.startswith(("//", "http")) or piece not in found:
                        found.append(piece)
    return list(dict.fromkeys(found))


def whispers(repo: Path) -> list[dict]:
    commit = commit_of(repo)
    records: list[dict] = []
    for path in git_files(repo, "tests/fixtures/"):
        name = path.removeprefix("tests/fixtures/")
        if name.startswith(_WHISPERS_SKIPPED):
            continue
        text = git_show(repo, path)
        if not text or len(text) > 20_000:
            continue
        source = f"whispers@{commit}:{path}"
        secrets = _whispers_secrets(text) + _values_of_keys(text, _WHISPERS_UNMARKED_KEYS.get(name, ()))
        if name.startswith("privatekeys."):
            # Noncompliant private keys: the body (labelled by whispers' tests by key name). The
            # compliant public key shares that body: its line is left out of the record.
            text = "\n".join(line for line in text.splitlines() if "PUBLIC KEY" not in line)
            body = re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:\\n|\s)+([A-Za-z0-9/+=]{40,})", text)
            if body is not None:
                records.append(_secret("private_key", text, body.group(1), source, "source"))
        for secret in secrets:
            # integration.*: a password whose key sits in another element (`key: password`,
            # then `value: ...`); hardcoded.*: a list under a password key. Issue 28, item 5.
            split = name.startswith("integration.") or (name.startswith("hardcoded.") and secret[-1].isdigit())
            record_class = "password" if split else classify(name, text, secret)
            records.append(_secret(record_class, text, secret, source, "source", issue28_item=5 if split else None))
        # Lines of a compliant section: placeholders, references, empty values (look-alikes).
        compliant = False
        for line in text.splitlines():
            section = _WHISPERS_SECTION.search(line)
            if section is not None and len(line.strip()) < 40:
                compliant = section.group(1).lower() == "compliant"
                continue
            stripped = line.strip()
            if (
                compliant
                and len(stripped) >= 8
                and not _WHISPERS_MARKER.search(stripped)
                and re.search(r"[=:>]", stripped)
                and _SECRETISH.search(stripped)
                and not _EMAIL.search(stripped)
            ):
                records.append(_negative("lookalike", stripped, source))
    return _dedupe(records)


# --- sirwart/ripsecrets (MIT) ---------------------------------------------------------------

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_PLACEHOLDER_VALUE = re.compile(r"(?i)^(?:x{6,}|[A-Z]{2}x{8,}|username|password)$|x{8,}")


def _value_of_line(line: str) -> str:
    """The value of a one-secret line, cut by hand rules: a URI's password, an XML element's
    text, the right side of `key = "value"`, else the line."""
    uri = _URI_WITH_CREDENTIALS.search(line)
    if uri is not None:
        return uri.group(1)
    element = re.fullmatch(r"\s*<(\w+)>(.*)</\1>\s*", line)
    if element is not None:
        return element.group(2).strip("{}\\")
    quoted = re.fullmatch(r'\s*"\w+":\s*"(.+)",?\s*', line)
    if quoted is not None:
        return quoted.group(1)
    assigned = re.search(r"(?:=|:=|:)\s*[\"'`]?([^\"'`\s]+)[\"'`]?\s*,?\s*$", line)
    if assigned is not None and not line.lstrip().startswith(("http", "eyJ")):
        return assigned.group(1)
    return line.strip()


def ripsecrets(repo: Path) -> list[dict]:
    """`test/one_per_line/*` (a secret on every line), `test/one_per_file/*` (one in the file) and
    `test/none` (lines ripsecrets must leave alone, a look-alike negative each). Spans by hand."""
    commit = commit_of(repo)
    records: list[dict] = []
    for path in git_files(repo, "test/"):
        text = git_show(repo, path)
        if not text:
            continue
        source = f"ripsecrets@{commit}:{path}"
        if path.startswith("test/one_per_line/"):
            for line in text.splitlines():
                secret = _value_of_line(line)
                if len(secret) >= 6 and not _PLACEHOLDER_VALUE.search(secret):
                    records.append(_secret(classify(path, line, secret), line, secret, source, "hand"))
        elif path.startswith("test/one_per_file/"):
            key = re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----\n(.+?)\n-----END", text, re.DOTALL)
            secret = key.group(1) if key else re.search(r"AKIA[0-9A-Z]{16}", text).group(0)  # type: ignore[union-attr]
            records.append(_secret("private_key" if key else "token", text, secret, source, "hand"))
        elif path == "test/none":
            for line in text.splitlines():
                # two lines are real-shaped secrets ripsecrets skips by an allow-list, not negatives
                # an e-mail address is masked by the service's policy on purpose: not a negative
                if (
                    line.strip()
                    and "pragma: allowlist" not in line
                    and ".secretsignore" not in line
                    and not _EMAIL.search(line)
                ):
                    records.append(_negative("lookalike", line, source))
    return _dedupe(records)


# --- GitGuardian/ggshield (MIT): recorded API answers with the match ranges ------------------

_GG_NOT_SECRET = re.compile(r"(?i)^(?:username|host|port|database|login|client_id|scheme|email|connection_uri|url)$")


def ggshield(repo: Path) -> list[dict]:
    """ggshield's recorded scans (`tests/unit/cassettes/*.yaml`): each request holds documents,
    each answer the policy breaks GitGuardian found with every match's type and offsets. A match
    whose type is a secret (not a user name, host or port) is a labelled secret of its document."""
    import yaml

    commit = commit_of(repo)
    records: list[dict] = []
    for path in git_files(repo, "tests/unit/cassettes/"):
        text = git_show(repo, path)
        if not text or "policy_breaks" not in text:
            continue
        cassette = yaml.safe_load(text) or {}
        for interaction in cassette.get("interactions", []):
            body = (interaction.get("request") or {}).get("body")
            answer = ((interaction.get("response") or {}).get("body") or {}).get("string")
            if not body or not answer:
                continue
            try:
                documents, results = json.loads(body), json.loads(answer)
            except (json.JSONDecodeError, TypeError):
                continue
            if not isinstance(documents, list) or not isinstance(results, list):
                continue
            for document, result in zip(documents, results, strict=False):
                content = document.get("document", "")
                filename = document.get("filename", "")
                for policy_break in result.get("policy_breaks", []):
                    for match in policy_break.get("matches", []):
                        secret = match.get("match", "")
                        if _GG_NOT_SECRET.match(str(match.get("type"))) or len(secret) < 6 or secret not in content:
                            continue
                        record_class = classify(filename, content, secret)
                        records.append(
                            _secret(
                                record_class,
                                content,
                                secret,
                                f"ggshield@{commit}:{path}",
                                "source",
                                rule=policy_break.get("type"),
                            )
                        )
    return _dedupe(records)


# --- Yelp/detect-secrets (Apache-2.0): its plugins' test tables --------------------------------

_DETECT_SECRETS_PROBE = r"""
import importlib, json, sys, pathlib, pytest
sys.path.insert(0, sys.argv[1])
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.settings import transient_settings
out = []
plugins = [cls for cls in get_mapping_from_secret_type_to_class().values()]
for path in sorted(pathlib.Path(sys.argv[1], "tests", "plugins").glob("*_test.py")):
    name = "tests.plugins." + path.stem
    try:
        module = importlib.import_module(name)
    except Exception:
        continue
    tables = []
    for value in vars(module).values():  # keyword_test: module tables of (line, expected secret)
        if isinstance(value, list) and value and all(isinstance(i, tuple) and len(i) == 2 for i in value):
            tables += [("expected", line, expected) for line, expected in value if isinstance(line, str)]
    for owner in [module] + [v for v in vars(module).values() if isinstance(v, type)]:
        for func in vars(owner).values():
            for mark in getattr(func, "pytestmark", []):
                if mark.name != "parametrize" or len(mark.args) < 2:
                    continue
                names = mark.args[0] if isinstance(mark.args[0], str) else ",".join(mark.args[0])
                names = [n.strip() for n in names.split(",")]
                if "should_flag" not in names:
                    continue
                where = names.index("should_flag")
                lines = [n for n in names if n in ("line", "payload", "token", "secret")]
                if not lines:
                    continue
                for row in mark.args[1]:
                    row = getattr(row, "values", row)
                    if len(row) == len(names) and isinstance(row[names.index(lines[0])], str):
                        tables.append(("flag", row[names.index(lines[0])], bool(row[where])))
    for kind, line, expected in tables:
        found = []
        with transient_settings({"plugins_used": [{"name": cls.__name__} for cls in plugins]}):
            for cls in plugins:
                try:
                    found += [s.secret_value for s in cls().analyze_line(filename="mock_filename", line=line)]
                except Exception:
                    pass
        out.append({"module": path.name, "kind": kind, "line": line, "expected": expected, "found": found})
print(json.dumps(out))
"""


def detect_secrets(repo: Path, python: str) -> list[dict]:
    """detect-secrets' plugin tests: `(line, should_flag)` rows, and keyword_test's tables of
    `(line, expected secret)`. A flagged line's secret is what detect-secrets' own plugins (of
    that commit) report on it; a line its tests say must not be flagged is a look-alike negative."""
    import tarfile
    import tempfile

    commit = commit_of(repo)
    with tempfile.TemporaryDirectory() as checkout:
        archive = subprocess.run(["git", "-C", str(repo), "archive", "HEAD"], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(checkout, filter="data")
        probe = subprocess.run(
            [python, "-c", _DETECT_SECRETS_PROBE, checkout], capture_output=True, text=True, cwd=checkout, check=True
        )
    records: list[dict] = []
    for row in json.loads(probe.stdout):
        line = row["line"]
        if not line.strip() or len(line) > 2000:
            continue
        source = f"detect-secrets@{commit}:tests/plugins/{row['module']}"
        found = [value.strip(" =\"'") for value in row["found"]]
        secret = row["expected"] if row["kind"] == "expected" else (max(found, key=len) if found else None)
        flagged = row["expected"] is not None and row["expected"] is not False
        if flagged and isinstance(secret, str) and len(secret) >= 6 and secret in line:
            if not _PLACEHOLDER_VALUE.search(secret):
                records.append(_secret(classify("", line, secret), line, secret, source, "source"))
        elif not flagged:
            # What one plugin must not flag: often a credential of another kind (a GitHub
            # token among GitLab's negatives), so for information only, like the rule files'.
            records.append(_negative("rule_negative", line, source))
    return _dedupe(records)


# --- gitleaks/gitleaks (MIT): its rules' true and false positives -----------------------------

_GO_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"|`([^`]*)`')


def _go_strings(block: str) -> list[str]:
    values = []
    for match in _GO_STRING.finditer(block):
        if match.group(2) is not None:
            values.append(match.group(2))
        else:
            try:
                values.append(json.loads('"' + match.group(1) + '"'))
            except json.JSONDecodeError:
                continue
    return values


def _go_block(text: str, name: str) -> Iterator[str]:
    """The bodies of `name := []string{ ... }` literals (literal strings only; generated samples
    such as `utils.GenerateSampleSecrets(...)` are skipped: they are random at each run)."""
    for start in re.finditer(rf"\b{name}\s*:?=\s*(?:\[\]string\s*{{|append\({name},)", text):
        depth, index = 1, start.end()
        while depth and index < len(text):
            depth += {"{": 1, "(": 1, "}": -1, ")": -1}.get(text[index], 0)
            index += 1
        yield text[start.end() : index - 1]


def gitleaks(repo: Path) -> list[dict]:
    """The literal true positives (`tps`) and false positives (`fps`) of gitleaks' rule
    generators (cmd/generate/config/rules/*.go); a true positive's secret is what the rule's
    pattern in gitleaks' generated config (config/gitleaks.toml) captures (its secretGroup, else
    the first group, else the match). Betterleaks derives from gitleaks: reported apart."""
    import tomllib

    commit = commit_of(repo)
    config = tomllib.loads(git_show(repo, "config/gitleaks.toml") or "")
    patterns: list[tuple[str, re.Pattern[str], int]] = []
    for rule in config.get("rules", []):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # RE2 sets read as nested sets
                compiled = re.compile(rule.get("regex", ""))
            patterns.append((rule["id"], compiled, int(rule.get("secretGroup", 0))))
        except (re.error, KeyError, OverflowError):
            continue
    records: list[dict] = []
    for path in git_files(repo, "cmd/generate/config/rules/"):
        if not path.endswith(".go") or path.endswith("_test.go"):
            continue
        text = git_show(repo, path) or ""
        source = f"gitleaks@{commit}:{path}"
        own = set(re.findall(r'RuleID:\s*"([^"]+)"', text))
        mine = [pattern for pattern in patterns if pattern[0] in own] or patterns
        for block in _go_block(text, "tps"):
            for example in _go_strings(block):
                secret = _gitleaks_secret(mine, example)
                if secret is not None and len(secret) >= 8 and not _PLACEHOLDER_VALUE.search(secret):
                    records.append(_secret(classify(path, example, secret), example, secret, source, "source"))
        for block in _go_block(text, "fps"):  # what one rule must not match: for information
            records += [
                _negative("rule_negative", example, source) for example in _go_strings(block) if len(example) >= 8
            ]
    return _dedupe(records)


def _gitleaks_secret(patterns: list[tuple[str, re.Pattern[str], int]], example: str) -> str | None:
    for _rule, pattern, group in patterns:
        match = pattern.search(example)
        if match is None or _rule == "generic-api-key":
            continue
        if group and group <= pattern.groups and match.group(group):
            return match.group(group)
        for index in range(1, pattern.groups + 1):
            if match.group(index):
                return match.group(index)
        return match.group(0)
    return None


# --- Debian's example configs (BSD-3-clause: wpasupplicant; BSD: redis) ----------------------

_WPA_NETWORK = re.compile(r"^network=\{\n.*?^\}", re.MULTILINE | re.DOTALL)
_WPA_SECRET = re.compile(r'^\s*(?:psk|password|private_key_passwd|wep_key\d)=("?)([^"\n]+)\1\s*$', re.MULTILINE)


# Example values that read as placeholders, not secrets (left out): a dictionary word, a counting
# sequence, a description of the value.
_WPA_PLACEHOLDER = re.compile(r"(?i)^(?:password|foobar|\d+|(?:0[0-9a-f])+|0001020304\w*|pkcs.*)$")


def debian_examples(root: Path) -> list[dict]:
    """`network={...}` blocks of wpa_supplicant's examples (each with an uncommented `psk=`,
    `password=`, `private_key_passwd=` or `wep_keyN=`: spans by hand rule), and the lines of
    wpa_supplicant's and redis' shipped configs that name a secret without holding one (comments,
    directives) as config negatives. `root` holds the unpacked packages (`dpkg -x`)."""
    records: list[dict] = []
    examples = root / "usr/share/doc/wpasupplicant/examples"
    for path in sorted(examples.glob("*.conf")):
        text = path.read_text("utf-8", "replace")
        source = f"debian:wpasupplicant:{path.relative_to(root)}"
        seen: set[str] = set()
        for block in _WPA_NETWORK.finditer(text):
            for secret in _WPA_SECRET.finditer(block.group(0)):
                value = secret.group(2)
                if len(value) >= 6 and not _WPA_PLACEHOLDER.search(value) and value not in seen:
                    seen.add(value)
                    records.append(_secret("credential_file", block.group(0), value, source, "hand", issue28_item=3))
        for line in text.splitlines():
            stripped = line.strip()
            if (
                stripped.startswith("#")
                and re.search(r"(?i)pass|psk|secret|key", stripped)
                and not _WPA_SECRET.search(stripped.lstrip("#"))
            ):
                records.append(_negative("debian_config", stripped, source))
    redis = root / "etc/redis/redis.conf"
    if redis.exists():
        for line in redis.read_text("utf-8").splitlines():
            stripped = line.strip()
            if re.search(r"(?i)pass|auth|secret|key|token", stripped) and len(stripped) >= 12:
                records.append(_negative("debian_config", stripped, "debian:redis-server:etc/redis/redis.conf"))
    records = _dedupe(records)
    negatives = [record for record in records if record["label"] == "negative"]
    random.Random(47).shuffle(negatives)
    return [record for record in records if record["label"] == "secret"] + negatives[:150]


# --- hard negatives from real code not used before -------------------------------------------

_SECRETISH = re.compile(r"(?i)(?:password|passwd|secret|token|api_?key|credential|auth|private_?key|signature|session)")
# A secret-ish name given a value: `const token = ...`, `#define SSL_PASSWORD_LEN 64`, `key: ...`
_SECRETISH_ASSIGNMENT = re.compile(
    r"(?i)\b\w*(?:password|passwd|secret|token|api_?key|credential|auth|private_?key|signature|session)\w*"
    r"(?:\s*(?::|=|:=|\+=)\s*\S|\s+[\w\"'(-])"
)
_PERMISSIVE = re.compile(r"(?i)^\(?(?:MIT|ISC|Apache-2\.0|BSD-[23]-Clause|0BSD|BlueOak-1\.0\.0)")


def node_modules_negatives(root: Path, count: int, seed: int = 41) -> list[dict]:
    """Lines of the JavaScript packages under `root` (packages whose package.json names a
    permissive licence) that mention a secret-ish word: library code, not secrets."""
    lines: list[tuple[str, str]] = []
    for manifest in sorted(root.glob("**/package.json")):
        if manifest.parent.name == "node_modules" or "/test" in manifest.as_posix():
            continue
        try:
            meta = json.loads(manifest.read_text("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, OSError):
            continue
        if not isinstance(meta, dict) or "name" not in meta or not _PERMISSIVE.match(str(meta.get("license", ""))):
            continue
        for path in (
            sorted(manifest.parent.glob("*.js"))
            + sorted(manifest.parent.glob("lib/**/*.js"))
            + sorted(manifest.parent.glob("dist/**/*.js"))
        ):
            if ".min." in path.name:
                continue
            lines += [(str(meta["name"]), line) for line in _secretish_lines(path)]
    return _sample(lines, count, seed, "real_code_js", "node_modules")


def c_header_negatives(include: Path, count: int, seed: int = 43) -> list[dict]:
    """Lines of C headers from permissively licensed packages (OpenSSL 3: Apache-2.0; zlib;
    expat: MIT; SQLite: public domain; CPython: PSF; Brotli: MIT) that mention a secret-ish word
    (OpenSSL's key and password APIs, mostly)."""
    chosen = ["openssl/**/*.h", "python3*/**/*.h", "sqlite3*.h", "expat*.h", "zlib.h", "zconf.h", "brotli/*.h"]
    lines: list[tuple[str, str]] = []
    for pattern in chosen:
        for path in sorted(include.glob(pattern)):
            lines += [(path.relative_to(include).parts[0], line) for line in _secretish_lines(path)]
    return _sample(lines, count, seed, "real_code_c", "usr-include")


def _secretish_lines(path: Path) -> list[str]:
    try:
        text = path.read_text("utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    return [
        line.strip()
        for line in text.splitlines()
        if 12 <= len(line.strip()) <= 200
        and _SECRETISH_ASSIGNMENT.search(line)
        and not line.strip().startswith(("*", "//", "/*"))
    ]


def _sample(lines: list[tuple[str, str]], count: int, seed: int, label: str, origin: str) -> list[dict]:
    """`count` distinct lines, shuffled by `seed`, no package more than a fifth of them."""
    random.Random(seed).shuffle(lines)
    records, seen = [], set()
    per_package: dict[str, int] = {}
    for package, line in lines:
        if line not in seen and per_package.get(package, 0) < max(1, count // 5):
            per_package[package] = per_package.get(package, 0) + 1
            seen.add(line)
            records.append(_negative(label, line, f"{origin}:{package}"))
        if len(records) == count:
            break
    return records


def _dedupe(records: list[dict]) -> list[dict]:
    seen, unique = set(), []
    for record in records:
        key = (record["label"], record["text"], record.get("secret"))
        if key not in seen:
            seen.add(key)
            unique.append(record)
    return unique


# --- look-alike negatives written here (reported apart: this project wrote them) ---------------

# Values that sit where a secret could and are not one: placeholders and references, digests,
# identifiers, build coordinates, keys of a key-value store. Written for this corpus from the
# formats' documentation (npm lockfiles, Maven and Gradle, DynamoDB, Helm, Stripe's idempotency
# keys), not from any rule's tests.
LOOKALIKES = (
    'password: "<your-password-here>"',
    "DB_PASSWORD=${DB_PASSWORD:?set DB_PASSWORD}",
    "api_key = os.environ['API_KEY']",
    'token: "{{ .Values.auth.token }}"',
    "secret_key = REPLACE_ME",
    'password = "********"',
    "AWS_SECRET_ACCESS_KEY=<aws-secret-access-key>",
    "client_secret: ${{ secrets.CLIENT_SECRET }}",
    "export GITHUB_TOKEN=$(cat ~/.config/gh/token)",
    "password: !vault |",
    'PASSWORD_PLACEHOLDER = "your_password"',
    "smtp_password = %(SMTP_PASSWORD)s",
    "spring.datasource.password=${SPRING_DATASOURCE_PASSWORD}",
    'apiKey: process.env.STRIPE_SECRET_KEY ?? ""',
    "ssh_private_key_file: ~/.ssh/id_ed25519",
    "private_key_path = /etc/ssl/private/server.key",
    'secret_name = "prod/orders/db-credentials"',
    'token_url = "https://oauth2.googleapis.com/token"',
    "password_min_length = 12",
    'auth_mode: "oauth2"',
    "kms_key_id: alias/aws/s3",
    'keyArn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"',
    'TOKEN_TYPE = "Bearer"',
    'api_key_header = "X-API-Key"',
    "session_cookie_name = 'sessionid'",
    "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
    '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+N8V1aZ6W1m0uZ2VpeFpvVwXH8t4p1Q0lyU4V7Q==",',
    "sha256sums=('9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08')",
    'etag = "d41d8cd98f00b204e9800998ecf8427e"',
    "commit 3f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39",
    "checksum: md5:5eb63bbbe01eeed093cb22bb8f5acdc3",
    'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#679591c564c3bffaae8454cf0b3df370c3d6911c"',
    'request_id = "123e4567-e89b-12d3-a456-426614174000"',
    "trace_id: 4bf92f3577b34da6a3ce929d0e0e4736",
    'correlationId: "7c9e6679-7425-40de-944b-e07fc1f90ae7"',
    'subscription_id = "00000000-0000-0000-0000-000000000000"',
    "<artifactId>spring-security-crypto</artifactId>",
    'implementation "org.springframework.security:spring-security-oauth2-client:6.2.1"',
    'implementation("io.jsonwebtoken:jjwt-api:0.12.5")',
    "<groupId>com.auth0</groupId><artifactId>java-jwt</artifactId><version>4.4.0</version>",
    'idempotency_key = f"order-{order.id}-capture"',
    'headers = {"Idempotency-Key": "a8098c1a-f86e-11da-bd1a-00112444be1e"}',
    'SortKey: "USER#42#2024-01-01T00:00:00Z"',
    'partition_key = "tenant#acme-corp"',
    "sort_key='created_at#desc'",
    'cache_key = f"user:{user_id}:profile"',
    'lock_key = "jobs:reindex:lock"',
    'SIGNING_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"',
    'BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"',
    'PASS = "pass"',
    'public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ci@build"',
    "-----BEGIN PUBLIC KEY-----",
    "image: registry.example.com/team/api@sha256:45b23dee08af5e43a7fea6c4cf9c25ccf269ee113168c19722f87876677c5cb2",
    'src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="',
    "version: 3.12.0-rc.2+build.5a4f1c9",
    'font_key = "Inter-SemiBold"',
    "token_limit: 4096",
    "max_tokens = 1024",
    "csrf_token = request.cookies.get('csrftoken')",
    'password_reset_url = "https://example.com/account/reset"',
    "if not user.check_password(form.password.data):",
    "secret_ref: projects/my-project/secrets/db-password/versions/latest",
    "vault read -field=password secret/data/app/db",
    "aws secretsmanager get-secret-value --secret-id prod/app/db --query SecretString",
    'key = "{}/{}.json".format(prefix, object_id)',
    "key: spec.template.metadata.labels.app",
    "auth: {type: basic, username_field: user, password_field: pass}",
)


def lookalikes() -> list[dict]:
    return [_negative("lookalike_written", line, "written-here:lookalikes") for line in LOOKALIKES]


# --- shapes derived from labelled positives (items 1, 7, 8): a transformation of a real record ---

_FULL_WIDTH = {code: code + 0xFEE0 for code in range(0x21, 0x7F)}
_ZERO_WIDTH = "\u200b"
_KEYWORD = re.compile(r"(?i)password|secret|token|api_?key")


def derived(bases: list[dict], seed: int = 28) -> list[dict]:
    """Records of the issue's shapes built from labelled one-line positives of the fetched
    sources: the same secret encoded (item 8: a JSON-escaped or zero-width-split keyword, a
    Cyrillic letter in `password`, full-width letters, percent-encoding, a CR inside the value),
    copied a second time (item 1) or put in a file path (item 7). Each keeps `derived_from`,
    the text it came from, so the benchmark can show the same records untransformed."""
    rng = random.Random(seed)
    one_line = [
        record
        for record in bases
        if record["label"] == "secret"
        and "\n" not in record["text"]
        and len(record["text"]) <= 300
        and len(record["secret"]) >= 10
    ]
    rng.shuffle(one_line)
    records: list[dict] = []

    def add(record_class: str, item: int, base: dict, text: str, secret: str, how: str) -> None:
        records.append(
            _secret(
                record_class,
                text,
                secret,
                base["source"],
                base["labelled"],
                issue28_item=item,
                derived_from=base["text"],
                derived_secret=base["secret"],
                transform=how,
            )
        )

    def keyword_outside(text: str, secret: str, pattern: re.Pattern[str] = _KEYWORD) -> re.Match[str] | None:
        """The first keyword of `text` outside the secret (its span masked)."""
        return pattern.search(text.replace(secret, "\0" * len(secret)))

    def rewrite(text: str, match: re.Match[str], new: str) -> str:
        return text[: match.start()] + new + text[match.end() :]

    keyworded = [record for record in one_line if keyword_outside(record["text"], record["secret"])]
    for base in keyworded[:15]:
        match = keyword_outside(base["text"], base["secret"])
        assert match is not None
        escaped = f"\\u{ord(match.group(0)[0]):04x}" + match.group(0)[1:]  # `"\u0070assword"`
        add("encoding", 8, base, rewrite(base["text"], match, escaped), base["secret"], "json_escaped_keyword")
    for base in keyworded[15:30]:
        match = keyword_outside(base["text"], base["secret"])
        assert match is not None
        word = match.group(0)
        add(
            "encoding",
            8,
            base,
            rewrite(base["text"], match, word[:2] + _ZERO_WIDTH + word[2:]),
            base["secret"],
            "zero_width_keyword",
        )
    password = re.compile("password")
    passworded = [record for record in one_line if keyword_outside(record["text"], record["secret"], password)]
    for base in passworded[:10]:
        match = keyword_outside(base["text"], base["secret"], password)
        assert match is not None
        add("encoding", 8, base, rewrite(base["text"], match, "p\u0430ssword"), base["secret"], "cyrillic_keyword")
    tokens = [record for record in one_line if record["class"] == "token" and record not in keyworded[:30]]
    for base in tokens[:15]:
        wide = base["secret"].translate(_FULL_WIDTH)
        add("encoding", 8, base, base["text"].replace(base["secret"], wide), wide, "full_width")
    for base in tokens[15:25]:
        middle = len(base["secret"]) // 2
        split = base["secret"][:middle] + "\r" + base["secret"][middle:]
        add("encoding", 8, base, base["text"].replace(base["secret"], split), split, "carriage_return")
    uris = [record for record in one_line if record["class"] == "uri" and "://" in record["text"]]
    for base in uris[:10]:
        from urllib.parse import quote

        uri = re.search(r"[a-z][a-z0-9+.-]*://\S+", base["text"], re.IGNORECASE)
        if uri is None:
            continue
        encoded = quote(uri.group(0), safe="")
        add(
            "encoding",
            8,
            base,
            base["text"].replace(uri.group(0), encoded),
            quote(base["secret"], safe=""),
            "percent_encoded",
        )
    contexts = ('log.info("retrying with {}")', "-{}", "echo '{}' | docker login --password-stdin", "# old value: {}")
    for index, base in enumerate(tokens[25:55]):
        second = contexts[index % len(contexts)].format(base["secret"])
        add("copy", 1, base, base["text"] + "\n" + second, base["secret"], "second_copy")
    path_safe = [record for record in tokens[55:] if re.fullmatch(r"[A-Za-z0-9_.-]{10,}", record["secret"])]
    for base in path_safe[:25]:
        path = f"deploy/keys/{base['secret']}/config.yml"
        text = (
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            "@@ -1 +1 @@\n-region: eu-west-1\n+region: eu-west-2\n"
        )
        add("path", 7, base, text, base["secret"], "file_path")
    return records


# --- drivers' and clients' own tests: connection strings (item 4) and .pypirc (item 3) ---------

_DSN_PASSWORD = re.compile(
    r"(?i)(?<![\w-])(?P<key>password|sslpassword|pwd|userpass)\s*=\s*(?:'(?P<quoted>(?:[^'\\]|\\.)*)'|(?P<bare>[^\s&;'\"]+))"
)


def _dsn_secret(literal: str) -> tuple[str, str] | None:
    """The password of a connection string (libpq keywords, a URI's user-info or its query),
    and the class: a URI's user-info is `uri`, the rest `connection_string`."""
    uri = _URI_WITH_CREDENTIALS.search(literal)
    if uri is not None:
        return uri.group(1), "uri"
    keyword = _DSN_PASSWORD.search(literal)
    if keyword is not None:
        return (
            keyword.group("quoted") if keyword.group("quoted") is not None else keyword.group("bare")
        ), "connection_string"
    return None


def driver_connection_strings(repo: Path, project: str, paths: tuple[str, ...]) -> list[dict]:
    """Connection strings among the string literals of a database driver's Go tests (jackc/pgx,
    lib/pq): a literal holding a password (a libpq `password=` keyword, a URI's user-info or a
    `?password=` query parameter) is a record, the line of code it sits on its text, the password
    its secret (cut by hand rule; the tests' own expected `Password:` fields agree)."""
    commit = commit_of(repo)
    records: list[dict] = []
    per_value: dict[tuple[str, str], int] = {}
    for path in paths:
        source = f"{project}@{commit}:{path}"
        for line in (git_show(repo, path) or "").splitlines():
            for literal in _go_strings(line):
                found = _dsn_secret(literal)
                if found is None:
                    continue
                secret, record_class = found
                if len(secret) < 6 or _PLACEHOLDER_VALUE.search(secret) or set(secret) <= {"x", "*"}:
                    continue
                text = line.strip()
                # at most three records a value and shape: the tests repeat one DSN many times
                if secret in text and per_value.get((secret, record_class), 0) < 3:
                    per_value[(secret, record_class)] = per_value.get((secret, record_class), 0) + 1
                    records.append(_secret(record_class, text, secret, source, "hand"))
    return _dedupe(records)


def twine_pypirc(repo: Path) -> list[dict]:
    """The .pypirc files twine's tests write (triple-quoted blocks with a `[section]`); each
    `password = ...` value is a secret (spans by hand rule)."""
    commit = commit_of(repo)
    text = git_show(repo, "tests/test_utils.py") or ""
    records: list[dict] = []
    for block in re.finditer(r'"""\n(\s*\[[\w-]+\]\n.*?)"""', text, re.DOTALL):
        import textwrap

        pypirc = textwrap.dedent(block.group(1))
        for value in re.finditer(r"(?m)^password\s*[=:]\s*(\S+)\s*$", pypirc):
            if len(value.group(1)) >= 6:
                records.append(
                    _secret("credential_file", pypirc, value.group(1), f"twine@{commit}:tests/test_utils.py", "hand")
                )
    return _dedupe(records)


# --- curl/curl (curl licence, MIT-style): its test cases' netrc files and protocol transcripts ---

_CURL_B64 = re.compile(r"%b64\[(.*?)\]b64%")
_CURL_VARIABLE = re.compile(r"%(?:HOSTIP|HOST6IP|[A-Z0-9]+PORT|LOGDIR|TESTNUMBER|CLIENTIP|SRCDIR|PWD)\b")


def _curl_expand(text: str) -> str:
    """curl's test macros as its harness expands them: `%b64[...]b64%` (with `%XX` bytes inside)
    to base64, the host, port and directory variables to fixed values."""

    def encode(match: re.Match[str]) -> str:
        raw = re.sub(r"%([0-9A-Fa-f]{2})", lambda byte: chr(int(byte.group(1), 16)), match.group(1))
        return base64.b64encode(raw.encode("latin-1")).decode("ascii")

    text = _CURL_B64.sub(encode, text)
    return _CURL_VARIABLE.sub(lambda name: {"%HOSTIP": "127.0.0.1", "%LOGDIR": "log"}.get(name.group(0), "8990"), text)


def curl_tests(repo: Path) -> list[dict]:
    """Test cases of curl (tests/data/test*): each password of a `netrc` file the test writes
    (a credential file), each `Authorization: Basic` header and each base64 line after a
    SASL `AUTH PLAIN` in the protocol the test expects (an encoded credential, item 3's SMTP and
    IMAP transcripts). Spans by hand rule; at most two records a value."""
    commit = commit_of(repo)
    records: list[dict] = []
    per_value: dict[str, int] = {}

    def add(record_class: str, text: str, secret: str, source: str, item: int | None = None) -> None:
        if record_class != "credential_file":  # base64 of `user:password` (or `\0user\0password`)
            decoded = base64.b64decode(secret + "=" * (-len(secret) % 4)).decode("latin-1")
            if len(re.split(r"[:\x00]", decoded)[-1]) < 4:
                return  # no password, or a trivial one
        if re.search(r"(.)\1{9}", secret):
            return  # a length test's filler (`baaaa...ar`)
        if len(secret) >= 6 and "%" not in secret and per_value.get(secret, 0) < 2 and secret in text:
            per_value[secret] = per_value.get(secret, 0) + 1
            records.append(_secret(record_class, text, secret, source, "hand", issue28_item=item))

    for path in git_files(repo, "tests/data/"):
        if not re.fullmatch(r"tests/data/test\d+", path):
            continue
        raw = git_show(repo, path)
        if not raw or ("netrc" not in raw and "Basic" not in raw and "PLAIN" not in raw):
            continue
        source = f"curl@{commit}:{path}"
        for section in re.finditer(r'<file\d? name="[^"]*netrc[^"]*"[^>]*>\n(.*?)</file\d?>', raw, re.DOTALL):
            netrc = _curl_expand(section.group(1))
            for value in re.finditer(r"(?m)(?:^|\s)password\s+(\S+)", netrc):
                if (
                    not netrc[: value.start()].rstrip().endswith("#")
                    and "#" not in netrc[netrc.rfind("\n", 0, value.start()) + 1 : value.start()]
                ):
                    add("credential_file", netrc, value.group(1), source, 3)
        for section in re.finditer(r"<protocol[^>]*>\n(.*?)</protocol>", raw, re.DOTALL):
            protocol = _curl_expand(section.group(1))
            lines = protocol.splitlines()
            for index, line in enumerate(lines):
                window = "\n".join(lines[max(0, index - 6) : index + 3]) + "\n"
                header = re.match(r"(?i)(?:proxy-)?authorization: basic ([A-Za-z0-9+/=]{8,})\s*$", line)
                if header is not None:
                    add("auth_header", window, header.group(1), source)
                if index and re.search(r"(?:AUTH|AUTHENTICATE) PLAIN\s*$", lines[index - 1]):
                    plain = re.fullmatch(r"([A-Za-z0-9+/]{8,}={0,2})\s*", line)
                    if plain is not None:
                        add("encoded", window, plain.group(1), source, 3)
    return _dedupe(records)


# --- napalm-automation/napalm (Apache-2.0): network devices' running configs in its tests -------

_DEVICE_SECRET = re.compile(
    r"^\s*(?:enable (?:secret|password)(?: \d)?|username \S+ .*?(?:secret|password)(?: \d)?|snmp-server community)"
    r" (\S+)"
)
_DEVICE_DEFAULT = re.compile(r"^(?:public|private|<removed>|\$1\$[xy]{4}\$.*)$", re.IGNORECASE)


def napalm_configs(repo: Path) -> list[dict]:
    """Device secrets in the configurations napalm's tests replay (test/**): `enable secret`,
    `username ... secret|password`, `snmp-server community` values (hashes included: a shadow
    hash is a secret to mask, issue 28 item 3). Defaults (`public`, `private`), redacted values
    and short ones are left out. Text: seven lines around; at most two records a value."""
    commit = commit_of(repo)
    records: list[dict] = []
    per_value: dict[str, int] = {}
    for path in git_files(repo, "test/"):
        if path.endswith((".py", ".json", ".j2", ".yml", ".yaml")):
            continue
        text = git_show(repo, path)
        if not text or "secret" not in text and "community" not in text and "password" not in text:
            continue
        lines = text.splitlines()
        for index, line in enumerate(lines):
            match = _DEVICE_SECRET.match(line)
            if match is None:
                continue
            value = match.group(1)
            if len(value) < 6 or _DEVICE_DEFAULT.match(value) or per_value.get(value, 0) >= 2:
                continue
            per_value[value] = per_value.get(value, 0) + 1
            window = "\n".join(lines[max(0, index - 3) : index + 4]) + "\n"
            records.append(_secret("credential_file", window, value, f"napalm@{commit}:{path}", "hand", issue28_item=3))
    return _dedupe(records)
