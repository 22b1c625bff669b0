"""Secrets outside `name = value` (issue 28: positional arguments, command lines, values split
from their names, comparisons, environment fallbacks, Terraform defaults; tokens without a
usable keyword) and the look-alikes the name-based rules must leave alone (placeholders, keys
of data, versions, coordinates)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4review.change.redaction import redact
from p4review.change.redaction.nonsecrets import is_alphabet, is_stand_in, is_version_or_coordinate

PW = "Zx9kLm2qW"  # a fake password of a real shape
TOKEN = "9fQ2xLr7Vb4Nc8Km1Pz6Wd3T"  # a fake generated token

POSITIVES = [
    # (line, class, secret that must disappear)
    (f'+    server.login(user, "{PW}")', "password", PW),
    (f'+    smtp.login("mailer", "{PW}")', "password", PW),
    (f'+    var cred = new NetworkCredential("svc", "{PW}");', "password", PW),
    (f'+    conn = DriverManager.getConnection(url, "sa", "{PW}");', "password", PW),
    (f'+    conn = pymysql.connect("db.example.com", "app", "{PW}", "shop")', "password", PW),
    (f'+    return new PasswordAuthentication("u", "{PW}".toCharArray());', "password", PW),
    (f'+    l.simple_bind_s("cn=admin,dc=example,dc=org", "{PW}")', "password", PW),
    (f'+    r = requests.get(url, auth=HTTPBasicAuth("user", "{PW}"))', "password", PW),
    (f'+    r = requests.get(url, auth=("user", "{PW}"))', "password", PW),
    (f"+mysql -uroot -p'{PW}' app", "password", PW),
    (f"+redis-cli -h cache -a {PW} ping", "password", PW),
    (f"+http -a admin:{PW} https://api.example.com", "password", PW),
    (f"+curl --proxy-user proxy:{PW} https://example.com", "password", PW),
    (f"+smbclient //srv/share -U admin%{PW}", "password", PW),
    (f"+ldapwhoami -x -D cn=admin,dc=example,dc=org -w {PW}", "password", PW),
    (f"+keytool -list -keystore app.jks -storepass {PW}", "password", PW),
    (f"+openssl rsa -in k.pem -passin pass:{PW}", "password", PW),
    (f'+echo "{PW}" | docker login -u ci --password-stdin', "password", PW),
    (f'+  {{"Name": "DB_PASSWORD", "Value": "{PW}"}}', "password", PW),
    (f'+  <param name="db.password" value="{PW}"/>', "password", PW),
    (f'+  passwords: ["{PW}", "other-{PW}"]', "password", PW),
    (f'+if password == "{PW}":', "password", PW),
    (f'+    if (pw.equals("{PW}")) {{', "password", PW),
    (f'+    if ("{PW}".equals(userPassword)) {{', "password", PW),
    (f'+    if (strcmp(pass, "{PW}") == 0)', "password", PW),
    (f'+const s = process.env.SECRET || "{PW}";', "password", PW),
    (f"+      POSTGRES_PASSWORD: ${{DB_PASSWORD:-{PW}}}", "password", PW),
    (f'+  password = ENV.fetch("DB_PASSWORD", "{PW}")', "password", PW),
    (f'+SECRET_KEY = config("SECRET_KEY", default="{PW}")', "password", PW),
    (f'+const t = process.env.API_TOKEN ?? "{TOKEN}";', "api_key", TOKEN),
    (f'+variable "db_password" {{ default = "{PW}" }}', "password", PW),
]


@pytest.mark.parametrize("line, name, secret", POSITIVES, ids=[f"{i}" for i in range(len(POSITIVES))])
def test_secrets_outside_name_value_are_redacted(line: str, name: str, secret: str):
    document = redact(line + "\n")
    assert secret not in document.text, document.text
    assert document.counts.get(name) == 1, dict(document.counts)


def test_value_on_the_line_after_its_name():
    k8s = f"+++ b/k8s.yaml\n+        - name: DB_PASSWORD\n+          value: {PW}\n+        - name: LOG_LEVEL\n+          value: debug\n"
    document = redact(k8s)
    assert document.text == (
        "+++ b/k8s.yaml\n+        - name: DB_PASSWORD\n+          value: [REDACTED:password]\n"
        "+        - name: LOG_LEVEL\n+          value: debug\n"
    )
    pretty = f'+++ b/task.json\n+    "name": "SMTP_PASSWORD",\n+    "value": "{PW}"\n'
    assert redact(pretty).text.endswith('"value": "[REDACTED:password]"\n')
    assert redact(pretty).counts == {"password": 1}


def test_list_under_a_password_key():
    text = f'+++ b/app.yaml\n+  passwords:\n+    - {PW}\n+    - "x{PW}"\n+  users:\n+    - alice\n'
    assert redact(text).text == (
        '+++ b/app.yaml\n+  passwords:\n+    - [REDACTED:password]\n+    - "[REDACTED:password]"\n+  users:\n+    - alice\n'
    )
    prose = f"+++ b/README.md\n+Passwords:\n+- must be long\n+- {PW}\n"
    assert redact(prose).text == prose  # a list in prose is not a YAML value


def test_terraform_default_in_a_secret_named_block_only():
    text = (
        '+++ b/variables.tf\n+variable "db_password" {\n+  type    = string\n+  sensitive = true\n'
        f'+  default = "{PW}"\n+}}\n+variable "region" {{\n+  default = "eu-west-1"\n+}}\n'
    )
    document = redact(text)
    assert PW not in document.text and "eu-west-1" in document.text
    assert document.counts == {"password": 1}
    # The lines passed over on the way to `default` still get every rule.
    inner = f'+variable "db_password" {{\n+  description = "url postgres://u:{PW}@db/x"\n+  default = "{PW}"\n+}}\n'
    assert redact(inner).counts == {"password": 1, "connection_uri": 1}


CODE_NEGATIVES = [
    "+    login(request, user)",
    '+    return auth("basic", "token")',
    "+    server.login(user, password)",
    "+    smtp.login(settings.SMTP_USER, settings.SMTP_PASSWORD)",
    '+    return render(request, "accounts/login.html")',
    '+    assert auth("user", "changeme")',
    "+    r = requests.get(url, auth=(user, password))",
    '+    if password == "":',
    '+    if pass_arg == "environment":',
    '+	if (typeof passOnNoPatterns !== "boolean") {',
    '+    if token == "Bearer":',
    '+    pw = os.getenv("DB_PASSWORD", "")',
    "+    pw = os.environ.get('DB_PASSWORD', default_password)",
    '+redis-cli -h cache -a "$REDIS_PASSWORD" ping',
    '+mysql -uroot -p"$MYSQL_ROOT_PASSWORD" app',
    '+http -a "$USER:$PASS" https://api.example.com',
    '+smbclient //srv/share -U "$SMB_USER%$SMB_PASS"',
    "+      POSTGRES_PASSWORD: ${DB_PASSWORD:-}",
    "+      POSTGRES_PASSWORD: ${DB_PASSWORD:-$FALLBACK}",
    '+echo "$TOKEN" | docker login -u ci --password-stdin',
    '+  {"Name": "PASSWORD_MIN_LENGTH", "Value": "12"}',
    '+  {"Name": "API_TOKEN", "Value": "see-the-vault"}',
    "+keytool -list -keystore app.jks -storepass:env STOREPASS",
    # item 9: placeholders, keys of data, versions, coordinates, alphabets
    '+password = "password"',
    '+PASS = "pass"  # noqa: S105 - an outcome',
    '+password = "test"',
    '+client_secret = "client-secret"',
    '+db_password: "dummy-password"',
    "+  <password>changeit</password>",
    'idempotency_key="p4-submitted-4242-v1x9"',
    '+partition_key = "tenant-2024-08-31-eu7"',
    '+SIGNING_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"',
    '+"P4REVIEW_SECRET_CACHE_SECONDS": "300",',
    '+TEST_RUN_STATUSES = ("pass", "fail", "running", "notstarted")',
    "+<spring-security-token.version>2.3.4</spring-security-token.version>",
    '+    val token_lib = "io.jsonwebtoken:jjwt-api:0.11.5"',
    "+mvn dependency:get -Dartifact=org.passwordgen:passwordgen-core:3.1.4",
]


@pytest.mark.parametrize("line", CODE_NEGATIVES)
def test_code_and_names_around_them_are_left_alone(line: str):
    document = redact(line + "\n")
    assert document.text == line + "\n"
    assert dict(document.counts) == {}


def test_the_line_between_a_placeholder_and_a_password():
    for stand_in in ("password", "PASS", "test", "secret", "fake-password", "my_secret", "wrong", "changeit"):
        assert is_stand_in(stand_in), stand_in
    # A digit, a symbol or any other word: a password someone may use, famous or not.
    for password in ("hunter2", "passw0rd", "admin", "letmein", "secret123", "default-pw", "Tr0ub4dor&3"):
        assert not is_stand_in(password), password
        assert redact(f'+password = "{password}"\n').counts == {"password": 1}


def test_versions_coordinates_and_alphabets():
    assert is_version_or_coordinate("1.0.12") and is_version_or_coordinate("io.jsonwebtoken:jjwt-api:0.11.5")
    assert not is_version_or_coordinate("1.0") and not is_version_or_coordinate("Tr0ub4dor:3.1")
    assert is_alphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert not is_alphabet("0123456789abcdefABCDEF") and not is_alphabet(TOKEN)


@pytest.mark.parametrize("line", [line for line, _, _ in POSITIVES] + CODE_NEGATIVES)
def test_every_change_is_flagged_by_the_rules_own_needles(line: str):
    """base.py's invariant for the rules of this module, on lines that reach them."""
    from collections import Counter

    from p4review.change.redaction.document import canonical_scanner
    from p4review.change.redaction.filekind import FileKind
    from p4review.change.redaction.policy import DEFAULT_POLICY

    scanner = canonical_scanner(DEFAULT_POLICY)
    body = line[1:] if line[:1] == "+" else line
    bits = scanner._prefilter.flag(body).get(0, 0)
    for index, rule in enumerate(scanner.rules):
        if rule.apply(body, lambda: FileKind.CONFIG, Counter()) != body:
            assert bits >> (index + 1) & 1, (rule, body)


_SNIPPETS = [
    "login(",
    "auth=(",
    "getConnection(",
    "pymysql.connect(",
    '"u", ',
    f'"{PW}"',
    f"'{PW}'",
    "mysql -p",
    "redis-cli -a ",
    "http -a u:",
    "--proxy-user u:",
    "smbclient -U u%",
    "ldapsearch -w ",
    "keytool -storepass ",
    "-passin pass:",
    "echo ",
    " | docker login --password-stdin",
    '{"Name": "DB_PASSWORD", "Value": ',
    "passwords: [",
    "password == ",
    "pw.equals(",
    ".equals(password)",
    "strcmp(pass, ",
    "process.env.SECRET || ",
    "${DB_PASSWORD:-",
    "}",
    'variable "db_password" { default = ',
    "?key=",
    "&sig=",
    "X-Api-Key: ",
    "-H 'PRIVATE-TOKEN: ",
    "key=",
    "token - ",
    "zkp_",
    "acme-live-",
    TOKEN,
    TOKEN + "Ab3dE5gH",
    "hvs.",
    " ",
    "=",
    ":",
    ",",
    ")",
    "\n",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_SNIPPETS), max_size=7).map("".join))
def test_generated_lines_keep_the_needle_invariant(text: str):
    """base.py's invariant on lines made of this module's forms, and the rules that change a
    line never leave a secret the guard would refuse (redact raises if they did)."""
    from collections import Counter

    from p4review.change.redaction.document import canonical_scanner
    from p4review.change.redaction.filekind import FileKind
    from p4review.change.redaction.policy import DEFAULT_POLICY

    scanner = canonical_scanner(DEFAULT_POLICY)
    for body in text.split("\n"):
        bits = scanner._prefilter.flag(body).get(0, 0)
        for index, rule in enumerate(scanner.rules):
            if rule.apply(body, lambda: FileKind.CONFIG, Counter()) != body:
                assert bits >> (index + 1) & 1, (rule, body)
    redact(text)
