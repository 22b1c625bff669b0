"""The `iac` analyzer (pure): a few high-signal security checks on Docker compose files and
Terraform, modelled on checkov's well-known checks, run in-process.

checkov itself does not fit in the review function's layers (265 MB installed, over Lambda's
250 MB), and the layers hold no YAML or HCL parser. So this reads the files line by line:
compose `key: value` lines and list items, and Terraform through a small tokenizer that keeps
blocks, `attr = value` pairs, lists, `jsonencode({...})` objects and JSON heredocs (IAM
policies), with the enclosing `resource "type" "name"` block known from brace depth.

What it checks is what a security reviewer wants to see when a change writes it, and what
rarely misfires: an explicit setting (`privileged: true`, `encrypted = false`, `acl =
"public-read"`), never the absence of one (checkov also reports a resource that does not set
`encrypted`, but that is a default, not a line the change wrote). Values computed from
variables are not guessed at. The rule table is RULES: each rule's checkov counterpart is named
there (checkov has no compose framework; the compose rules mirror its Kubernetes checks).

Each report's line range is the attribute(s) that make the problem, so reviewdog's `added`
filter (`p4review.review.analyzers.analysis.on_added_lines`) keeps it only when the change wrote one of
them."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from p4review.change.analyzer_files import IAC, is_compose_file
from p4review.models.review_result import Category, Confidence, Severity
from p4review.review.analyzers.analysis import AnalyzerReport


class Rule(NamedTuple):
    severity: Severity
    category: Category
    checkov: str  # the checkov check(s) it mirrors, or "" when checkov has none
    title: str
    why: str  # why it matters and what to do


_S, _R = Category.SECURITY, Category.RELIABILITY
_HIGH, _MEDIUM, _LOW = Severity.HIGH, Severity.MEDIUM, Severity.LOW

RULES: dict[str, Rule] = {
    # -- Docker compose (checkov has no compose framework: its Kubernetes checks are the model)
    "IAC-compose-privileged": Rule(
        _HIGH,
        _S,
        "CKV_K8S_16",
        "Container runs privileged",
        "`privileged: true` gives the container every capability and the host's devices: a process in it "
        "can take over the host. Grant the one capability it needs (`cap_add`) instead.",
    ),
    "IAC-compose-host-network": Rule(
        _MEDIUM,
        _S,
        "CKV_K8S_19",
        "Container shares the host's network namespace",
        "`network_mode: host` puts the container on the host's interfaces: every port it opens is open on "
        "the host and it can reach services bound to localhost. Publish the ports it needs instead.",
    ),
    "IAC-compose-host-pid": Rule(
        _HIGH,
        _S,
        "CKV_K8S_17",
        "Container shares the host's process namespace",
        "`pid: host` lets the container see and signal (and, as root, ptrace) every process on the host. "
        "Remove it unless this is a host-monitoring agent.",
    ),
    "IAC-compose-host-ipc": Rule(
        _MEDIUM,
        _S,
        "CKV_K8S_18",
        "Container shares the host's IPC namespace",
        "`ipc: host` gives the container the host's shared memory and semaphores. Remove it, or share IPC "
        "with one named service (`ipc: service:NAME`).",
    ),
    "IAC-compose-docker-socket": Rule(
        _HIGH,
        _S,
        "CKV_K8S_27",
        "Docker daemon socket mounted into a container",
        "Whoever can talk to /var/run/docker.sock is root on the host (a read-only mount does not change "
        "that: it is an API). Use a socket proxy that allows only the calls needed, or remove the mount.",
    ),
    "IAC-compose-dangerous-capability": Rule(
        _HIGH,
        _S,
        "CKV_K8S_39 / CKV_K8S_37",
        "Container is given a capability that breaks isolation",
        "`cap_add` of ALL, SYS_ADMIN or SYS_MODULE (or SYS_PTRACE, DAC_READ_SEARCH) lets a process in the "
        "container escape it. Add only the narrow capability the service needs.",
    ),
    "IAC-compose-unconfined": Rule(
        _MEDIUM,
        _S,
        "CKV_K8S_31 / CKV_K8S_29",
        "Seccomp or AppArmor/SELinux confinement turned off",
        "`security_opt` with `seccomp:unconfined`, `apparmor:unconfined` or `label:disable` removes the "
        "kernel filters that stop most container escapes. Keep the default profile or write a narrower one.",
    ),
    "IAC-compose-root-user": Rule(
        _LOW,
        _S,
        "CKV_K8S_23 / CKV_K8S_40",
        "Container is told to run as root",
        "`user: root` (or uid 0) overrides an image that runs as an unprivileged user. Run as a non-root "
        "user unless the service needs root, and say why.",
    ),
    "IAC-compose-public-db-port": Rule(
        _MEDIUM,
        _S,
        "",
        "Database or daemon port published on all interfaces",
        "A `ports` entry without a host address publishes on every interface, and Docker's own firewall "
        "rules bypass the host firewall (ufw). Bind it to loopback (`127.0.0.1:HOST:CONTAINER`) or leave it "
        "unpublished and reach it over the compose network.",
    ),
    # -- Terraform
    "IAC-tf-open-admin-ingress": Rule(
        _HIGH,
        _S,
        "CKV_AWS_24 / CKV_AWS_25 / CKV_AWS_277 / CKV_GCP_2 / CKV_GCP_3",
        "Ingress from the whole internet to SSH, RDP or all ports",
        "0.0.0.0/0 (or ::/0) may reach this port range, which covers SSH (22), RDP (3389) or every port: it "
        "will be scanned and brute-forced within minutes. Allow only known address ranges, or use a bastion "
        "or SSM Session Manager.",
    ),
    "IAC-tf-open-ingress": Rule(
        _MEDIUM,
        _S,
        "CKV_AWS_24 family, other ports (CKV_AWS_260 is port 80, left out here)",
        "Ingress from the whole internet",
        "0.0.0.0/0 (or ::/0) may reach this port. Unless it is a public service behind TLS, allow only the "
        "address ranges or security groups that need it.",
    ),
    "IAC-tf-s3-public-acl": Rule(
        _HIGH,
        _S,
        "CKV_AWS_20 / CKV_AWS_57",
        "S3 bucket ACL makes it public",
        "A `public-read` / `authenticated-read` ACL lets anyone list and read the objects "
        "(`public-read-write`: also write them). Keep the bucket private and serve it through CloudFront "
        "with origin access control, or grant access by policy to named principals.",
    ),
    "IAC-tf-s3-public-access-block-off": Rule(
        _MEDIUM,
        _S,
        "CKV_AWS_53 / CKV_AWS_54 / CKV_AWS_55 / CKV_AWS_56",
        "S3 public access block turned off",
        "Setting a public access block flag to false lets a later ACL or bucket policy make data public. "
        "Keep all four flags true unless the bucket is meant to be public.",
    ),
    "IAC-tf-unencrypted-storage": Rule(
        _MEDIUM,
        _S,
        "CKV_AWS_3 / CKV_AWS_8 / CKV_AWS_16 / CKV_AWS_96 / CKV_AWS_29 / CKV_AWS_30",
        "Encryption explicitly turned off",
        "Data in this resource (or in transit to it) is not encrypted, and for most storage this cannot be "
        "turned on later without recreating it. Set it to true (encryption at rest costs nothing noticeable).",
    ),
    "IAC-tf-publicly-accessible": Rule(
        _HIGH,
        _S,
        "CKV_AWS_17 / CKV_AWS_87 / CKV_AWS_89",
        "Database or instance reachable from the internet",
        "`publicly_accessible = true` gives it a public address: only its security group stands between the "
        "internet and the database login. Keep it private and connect through the VPC.",
    ),
    "IAC-tf-iam-admin": Rule(
        _HIGH,
        _S,
        "CKV_AWS_62 / CKV_AWS_1",
        "IAM policy allows every action on every resource",
        'A statement allowing Action "*" on Resource "*" is full administrator access. Grant the '
        "actions and resources this principal needs.",
    ),
    "IAC-tf-iam-star-action": Rule(
        _MEDIUM,
        _S,
        "CKV_AWS_63 / CKV_AWS_49",
        "IAM policy allows every action",
        'Action "*" allows every action of every service on the listed resources, including deleting them '
        "and changing their policies. List the actions needed.",
    ),
    "IAC-tf-kms-rotation-off": Rule(
        _MEDIUM,
        _S,
        "CKV_AWS_7",
        "KMS key rotation turned off",
        "A symmetric customer key that is never rotated keeps one key material for all time. Set "
        "`enable_key_rotation = true`.",
    ),
    "IAC-tf-imdsv1": Rule(
        _MEDIUM,
        _S,
        "CKV_AWS_79",
        "Instance metadata service v1 allowed",
        '`http_tokens = "optional"` keeps IMDSv1, which an SSRF in any app on the instance can use to steal '
        'its role\'s credentials. Set `http_tokens = "required"`.',
    ),
    "IAC-tf-public-member": Rule(
        _HIGH,
        _S,
        "CKV_GCP_28",
        "Resource granted to allUsers / allAuthenticatedUsers",
        "A binding to `allUsers` or `allAuthenticatedUsers` makes the resource readable (or worse) by anyone "
        "with a Google account or none. Grant named members or groups.",
    ),
    "IAC-tf-azure-public-blobs": Rule(
        _MEDIUM,
        _S,
        "CKV_AZURE_190",
        "Storage account allows public blob containers",
        "`allow_nested_items_to_be_public = true` lets any container in the account be made public. Set it to false.",
    ),
    "IAC-tf-transport-not-enforced": Rule(
        _HIGH,
        _S,
        "CKV_AZURE_28 / CKV_AZURE_29 / CKV_AZURE_47 / CKV_AZURE_91 / CKV_AZURE_14",
        "Unencrypted connections allowed",
        "This turns off TLS enforcement (or opens the non-TLS port), so clients may send credentials and data "
        "in clear text. Keep TLS enforced.",
    ),
    "IAC-tf-old-tls": Rule(
        _MEDIUM,
        _S,
        "CKV_AZURE_44 / CKV_AZURE_52 / CKV_AZURE_54",
        "Minimum TLS version below 1.2",
        "TLS 1.0 and 1.1 are deprecated (RFC 8996) and allow downgrade attacks. Set the minimum to 1.2.",
    ),
    "IAC-tf-tls-verify-off": Rule(
        _MEDIUM,
        _S,
        "CKV_GIT_2",
        "TLS certificate verification turned off",
        "With certificate verification off, anyone on the network path can impersonate the server and read "
        "or change the traffic (credentials included). Trust the right CA instead.",
    ),
    "IAC-tf-privileged-container": Rule(
        _HIGH,
        _S,
        "CKV_AWS_334 / CKV_K8S_16",
        "Container runs privileged",
        "A privileged container has every capability and the host's devices: a process in it can take over "
        "the host. Grant the one capability it needs instead.",
    ),
    "IAC-tf-deletion-protection-off": Rule(
        _LOW,
        _R,
        "CKV_AWS_139 / CKV_AWS_293 / CKV_AWS_150",
        "Deletion protection turned off",
        "Without deletion protection one mistaken `terraform destroy` or replacement deletes the database "
        "or load balancer. Turn it on for anything that is not throwaway.",
    ),
    "IAC-tf-skip-final-snapshot": Rule(
        _LOW,
        _R,
        "",
        "Database deleted without a final snapshot",
        "`skip_final_snapshot = true` means deleting or replacing the database loses its data for good. "
        "Fine for throwaway environments; otherwise take the final snapshot.",
    ),
    "IAC-tf-force-destroy": Rule(
        _LOW,
        _R,
        "",
        "Resource deleted with all its contents",
        "`force_destroy = true` lets terraform delete the bucket (or registry, zone...) and everything in it "
        "without asking. Fine for throwaway environments; otherwise leave it false.",
    ),
}

MAX_CHECKED_CHARS = 2_000_000  # larger files are not checked (a generated file, not a review)


def check(depot_path: str, text: str) -> list[AnalyzerReport]:
    """The `iac` reports on one file: a compose file or a Terraform file, else nothing."""
    if len(text) > MAX_CHECKED_CHARS:
        return []
    if posixpath.splitext(depot_path)[1].lower() == ".tf":
        found = list(check_terraform(text))
    elif is_compose_file(depot_path):
        found = list(check_compose(text))
    else:
        return []
    reports: dict[tuple[str, int], AnalyzerReport] = {}
    for rule, line, end_line, detail in found:
        spec = RULES[rule]
        mirrors = f" (like checkov {spec.checkov})" if spec.checkov else ""
        report = AnalyzerReport(
            analyzer=IAC,
            rule=rule,
            file=depot_path,
            line=line,
            end_line=end_line if end_line > line else None,
            severity=_HIGH if rule == "IAC-compose-public-db-port" and "2375" in detail else spec.severity,
            category=spec.category,
            confidence=Confidence.HIGH,
            title=spec.title,
            message=f"{spec.why} Found: {detail}.{mirrors}"[:600],
        )
        reports.setdefault((rule, line), report)
    return sorted(reports.values(), key=lambda r: (r.line, r.rule))


# A finding before it is a report: (rule, line, end line, what was seen).
Found = tuple[str, int, int, str]


# ---------------------------------------------------------------------------------------
# Docker compose: line by line.

_YAML_KEY = re.compile(r"^(?P<indent>\s*)(?P<dash>-\s+)?(?P<key>[A-Za-z_][\w.-]*)\s*:(?:\s+(?P<value>.*))?$")
_YAML_ITEM = re.compile(r"^(?P<indent>\s*)-\s*(?P<value>.*)$")
_DOCKER_SOCKET = re.compile(r"^(?:source:\s*)?(?:/var)?/run/docker\.sock(?::|$)")
_DANGEROUS_CAPS = {"ALL", "SYS_ADMIN", "SYS_MODULE", "SYS_PTRACE", "DAC_READ_SEARCH", "SYS_RAWIO"}
_UNCONFINED = re.compile(r"^(?:seccomp|apparmor)[:=]unconfined$|^label[:=]disable$", re.IGNORECASE)
_ROOT_USER = re.compile(r"^(?:root|0)(?::(?:root|0))?$")
# Container ports of databases, caches and daemons that should never face the internet.
_SERVICE_PORTS = {
    2375: "the Docker daemon API (unencrypted, root on the host)",
    2379: "etcd",
    3306: "MySQL/MariaDB",
    33060: "MySQL X protocol",
    1433: "SQL Server",
    1521: "Oracle",
    5432: "PostgreSQL",
    5984: "CouchDB",
    6379: "Redis",
    7687: "Neo4j",
    8086: "InfluxDB",
    9042: "Cassandra",
    9200: "Elasticsearch",
    9300: "Elasticsearch transport",
    11211: "memcached",
    26257: "CockroachDB",
    27017: "MongoDB",
}
_TRUE = {"true", "yes", "on"}
_ALL_INTERFACES = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 # nosec B104 - the addresses we look for


def _yaml_scalar(value: str) -> str:
    """A YAML scalar without its comment and quotes."""
    value = value.strip()
    if value[:1] in ("'", '"'):
        end = value.find(value[0], 1)
        return value[1:end] if end > 0 else value[1:]
    return re.split(r"\s+#", value, maxsplit=1)[0].strip()


def _flow_items(value: str) -> list[str] | None:
    """`[A, "B"]` as its items, else None."""
    value = _yaml_scalar(value) if not value.strip().startswith("[") else re.split(r"\s+#", value.strip())[0]
    if not (value.startswith("[") and value.endswith("]")):
        return None
    return [_yaml_scalar(item) for item in value[1:-1].split(",") if item.strip()]


def check_compose(text: str) -> Iterator[Found]:
    list_key, list_indent = "", -1
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        key_match = _YAML_KEY.match(raw)
        indent = len(raw) - len(raw.lstrip())
        if key_match and not key_match.group("dash"):
            if indent <= list_indent:
                list_key, list_indent = "", -1
            key, value = key_match.group("key"), key_match.group("value") or ""
            scalar = _yaml_scalar(value)
            if not scalar or scalar in ("|", ">"):
                list_key, list_indent = key, indent
                continue
            yield from _compose_setting(key, scalar, value, number, list_key)
            continue
        item = _YAML_ITEM.match(raw)
        if item is None:
            continue
        if indent < list_indent:
            list_key, list_indent = "", -1
        if not list_key:
            continue
        value = item.group("value")
        if key_match and key_match.group("dash"):  # `- source: ...` (long syntax) or `- KEY: v`
            value = f"{key_match.group('key')}: {key_match.group('value') or ''}"
        yield from _compose_item(list_key, _yaml_scalar(value), number)


def _compose_setting(key: str, scalar: str, value: str, number: int, list_key: str) -> Iterator[Found]:
    lowered = scalar.lower()
    if key == "privileged" and lowered in _TRUE:
        yield ("IAC-compose-privileged", number, number, "privileged: true")
    elif key == "network_mode" and lowered == "host":
        yield ("IAC-compose-host-network", number, number, "network_mode: host")
    elif key == "pid" and lowered == "host":
        yield ("IAC-compose-host-pid", number, number, "pid: host")
    elif key == "ipc" and lowered == "host":
        yield ("IAC-compose-host-ipc", number, number, "ipc: host")
    elif key == "user" and _ROOT_USER.match(lowered):
        yield ("IAC-compose-root-user", number, number, f"user: {scalar}")
    elif key in ("cap_add", "security_opt", "volumes", "ports"):
        for entry in _flow_items(value) or []:
            yield from _compose_item(key, entry, number)
    elif key == "source" and list_key == "volumes" and _DOCKER_SOCKET.match(f"{key}: {scalar}"):
        yield ("IAC-compose-docker-socket", number, number, f"a volume from {scalar}")


def _compose_item(list_key: str, value: str, number: int) -> Iterator[Found]:
    if list_key == "cap_add":
        capability = value.upper().removeprefix("CAP_")
        if capability in _DANGEROUS_CAPS:
            yield ("IAC-compose-dangerous-capability", number, number, f"cap_add: {capability}")
    elif list_key == "security_opt" and _UNCONFINED.match(value.replace(" ", "")):
        yield ("IAC-compose-unconfined", number, number, f"security_opt: {value}")
    elif list_key == "volumes" and _DOCKER_SOCKET.match(value):
        yield ("IAC-compose-docker-socket", number, number, f"the volume {value}")
    elif list_key == "ports":
        service = _public_service_port(value)
        if service:
            yield ("IAC-compose-public-db-port", number, number, f"ports: {value} publishes {service}")


def _public_service_port(value: str) -> str | None:
    """The service a short-syntax `ports` entry publishes on all interfaces, if it is one of
    _SERVICE_PORTS; None for a host address other than 0.0.0.0/::, a range or a variable."""
    spec = value.split("/", 1)[0]
    host_ip = ""
    if spec.startswith("["):  # [::1]:5432:5432
        host_ip, _, spec = spec[1:].partition("]:")
    parts = spec.split(":")
    if len(parts) == 3:
        host_ip, parts = parts[0], parts[1:]
    if len(parts) != 2 or host_ip not in _ALL_INTERFACES:
        return None
    container = parts[1]
    if not container.isdigit():
        return None
    port = int(container)
    name = _SERVICE_PORTS.get(port)
    return f"{name} (port {port}) on all interfaces" if name else None


# ---------------------------------------------------------------------------------------
# Terraform: a small tokenizer and a tree of blocks, objects and attributes.


@dataclass
class Attr:
    key: str
    line: int
    end_line: int
    values: list[str] = field(default_factory=list)  # the strings and words of its value

    def words(self) -> list[str]:
        return [value.strip() for value in self.values]


@dataclass
class Node:
    """A block (`resource "aws_s3_bucket" "b" {`) or an object value (`ingress = [{`,
    `jsonencode({`, a JSON heredoc's `{`); header is the block's labels or the owning key."""

    header: list[str]
    line: int
    end_line: int = 0
    attrs: list[Attr] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)

    def get(self, *keys: str) -> Attr | None:
        wanted = {key.lower() for key in keys}
        found = [attr for attr in self.attrs if attr.key.lower() in wanted]
        return found[-1] if found else None

    def value(self, *keys: str) -> str | None:
        attr = self.get(*keys)
        return attr.values[0].strip() if attr is not None and len(attr.values) == 1 else None


class _Token(NamedTuple):
    kind: str  # "str", "word", "punct", "nl"
    text: str
    line: int


_PUNCT = "{}[](),=:"
_HEREDOC = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_]*)")


def _skip_string(text: str, start: int) -> int:
    """The index after the string that opens at text[start] (a `"`), template interpolations
    (`${...}`, `%{...}`, with their own strings) included."""
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == '"':
            return i + 1
        if char == "\n":
            return i  # an unterminated string ends at the line
        if char in "$%" and text[i + 1 : i + 2] == "{":
            depth, i = 1, i + 2
            while i < len(text) and depth:
                if text[i] == '"':
                    i = _skip_string(text, i)
                    continue
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            continue
        i += 1
    return i


def _tokens(text: str, first_line: int = 1) -> Iterator[_Token]:
    i, line = 0, first_line
    length = len(text)
    while i < length:
        char = text[i]
        if char == "\n":
            yield _Token("nl", "", line)
            line += 1
            i += 1
        elif char in " \t\r":
            i += 1
        elif char == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            i = length if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = length if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif char == '"':
            end = _skip_string(text, i)
            yield _Token("str", text[i + 1 : end - 1] if text[end - 1 : end] == '"' else text[i + 1 : end], line)
            line += text.count("\n", i, end)
            i = end
        elif char == "<" and (heredoc := _HEREDOC.match(text, i)):
            body_start = text.find("\n", heredoc.end())
            if body_start < 0:
                return
            closing = re.compile(rf"^[ \t]*{heredoc.group(1)}[ \t]*$", re.MULTILINE)
            close = closing.search(text, body_start + 1)
            body_end = close.start() if close else length
            body = text[body_start + 1 : body_end]
            if body.lstrip()[:1] in ("{", "["):  # JSON (a policy): its structure is read too
                yield from _tokens(body, line + 1)
            else:
                yield _Token("str", body, line + 1)
            end = close.end() if close else length
            line += text.count("\n", i, end)
            i = end
        elif char in _PUNCT:
            if char in "=:" and text[i + 1 : i + 2] in ("=", ">") or char == "=" and i > 0 and text[i - 1] in "!<>":
                yield _Token("word", text[i : i + 2], line)
                i += 2 if text[i + 1 : i + 2] in ("=", ">") else 1
                continue
            yield _Token("punct", char, line)
            i += 1
        else:
            start = i
            while i < length and text[i] not in ' \t\r\n"#' + _PUNCT and not text.startswith(("//", "/*"), i):
                i += 1
            if i == start:
                i += 1
                continue
            yield _Token("word", text[start:i], line)


@dataclass
class _Frame:
    kind: str  # "object" or "list"
    node: Node
    owner: Attr | None = None  # the attribute this list or object value belongs to
    pending: list[_Token] = field(default_factory=list)
    attr: Attr | None = None  # in an object: the attribute whose value is being read


def parse_hcl(text: str) -> Node:
    """Terraform (or JSON) as a tree of blocks and objects. Unbalanced input is read as far as it
    goes; nothing raises."""
    root = Node(header=[], line=1)
    stack = [_Frame("object", root)]
    for token in _tokens(text):
        frame = stack[-1]
        kind, value = token.kind, token.text
        if frame.kind == "list":
            if kind in ("str", "word") and frame.owner is not None:
                frame.owner.values.append(value)
                frame.owner.end_line = token.line
            elif value == "{" and kind == "punct":
                child = Node([frame.owner.key if frame.owner else ""], token.line)
                frame.node.children.append(child)
                stack.append(_Frame("object", child, owner=frame.owner))
            elif value in ("[", "(") and kind == "punct":
                stack.append(_Frame("list", frame.node, owner=frame.owner))
            elif value in ("]", ")", "}") and kind == "punct":
                stack.pop()
                if value == "}" and len(stack) > 1:  # a mismatch: close the object too
                    _close(stack, token.line)
            continue
        # an object (or the file)
        if kind == "nl" or (kind == "punct" and value == ","):
            frame.pending, frame.attr = [], None
        elif kind == "punct" and value in "=:" and frame.attr is None:
            keys = [t for t in frame.pending if t.kind in ("str", "word")]
            if len(keys) == 1 and len(frame.pending) == 1:
                frame.attr = Attr(keys[0].text, keys[0].line, token.line)
                frame.node.attrs.append(frame.attr)
        elif kind == "punct" and value == "{":
            if frame.attr is not None:
                child = Node([frame.attr.key], token.line)
            else:
                child = Node([t.text for t in frame.pending if t.kind in ("str", "word")], token.line)
            frame.node.children.append(child)
            stack.append(_Frame("object", child, owner=frame.attr))
            frame.pending = []
        elif kind == "punct" and value in "[(":
            stack.append(_Frame("list", frame.node, owner=frame.attr))
        elif kind == "punct" and value == "}":
            if len(stack) == 1:
                return root  # more closing braces than opening ones: stop here
            _close(stack, token.line)
        elif kind == "punct" and value in "])":
            continue
        elif frame.attr is not None:
            frame.attr.values.append(value)
            frame.attr.end_line = token.line
        else:
            frame.pending.append(token)
    return root


def _close(stack: list[_Frame], line: int) -> None:
    frame = stack.pop()
    frame.node.end_line = line
    if frame.owner is not None:
        frame.owner.end_line = max(frame.owner.end_line, line)


def _walk(node: Node, resource: str = "", parents: tuple[str, ...] = ()) -> Iterator[tuple[Node, str, tuple[str, ...]]]:
    """Each node with the type of its enclosing resource/data block and its ancestors' names."""
    for child in node.children:
        kind = resource
        if not parents and len(child.header) >= 2 and child.header[0] in ("resource", "data"):
            kind = child.header[1]
        name = child.header[0] if child.header else ""
        yield child, kind, parents
        yield from _walk(child, kind, (*parents, name))


def _literal(value: str | None) -> str | None:
    """A plain literal (`true`, `22`, `public-read`), None for an expression."""
    if value is None or "${" in value or "%{" in value:
        return None
    return value.strip().lower()


def _int(value: str | None) -> int | None:
    literal = _literal(value)
    if literal is None or not literal.lstrip("-").isdigit():
        return None
    return int(literal)


def _span(*attrs: Attr | None) -> tuple[int, int]:
    present = [attr for attr in attrs if attr is not None]
    return min(a.line for a in present), max(a.end_line for a in present)


_ANYWHERE = {"0.0.0.0/0", "::/0"}
_PUBLIC_WEB_PORTS = {80, 443}
_SG_RESOURCES = {"aws_security_group", "aws_security_group_rule", "aws_vpc_security_group_ingress_rule"}


def _ingress(node: Node, resource: str, parents: tuple[str, ...]) -> Iterator[Found]:
    """0.0.0.0/0 ingress: in an aws_security_group's `ingress` block, an ingress
    aws_security_group_rule, an aws_vpc_security_group_ingress_rule, a google_compute_firewall."""
    if resource == "google_compute_firewall" and node.header[:1] == ["resource"]:
        yield from _gcp_firewall(node)
        return
    if resource not in _SG_RESOURCES:
        return
    if resource == "aws_security_group" and not (node.header == ["ingress"] and parents == ("resource",)):
        return
    if resource != "aws_security_group" and node.header[:1] != ["resource"]:
        return
    if resource == "aws_security_group_rule" and _literal(node.value("type")) != "ingress":
        return
    cidrs = [node.get(key) for key in ("cidr_blocks", "ipv6_cidr_blocks", "cidr_ipv4", "cidr_ipv6")]
    anywhere = [attr for attr in cidrs if attr is not None and _ANYWHERE & set(attr.words())]
    if not anywhere or _literal(node.value("self")) == "true":
        return
    protocol = _literal(node.value("protocol", "ip_protocol"))
    if protocol in ("icmp", "icmpv6", "1", "58"):
        return
    low, high = _int(node.value("from_port")), _int(node.value("to_port"))
    ports = node.get("from_port"), node.get("to_port"), node.get("protocol", "ip_protocol")
    line, end_line = _span(anywhere[0], *ports)
    if protocol in ("-1", "all") or (low == 0 and high in (0, 65535)) or (low == -1 and high == -1):
        yield ("IAC-tf-open-admin-ingress", line, end_line, "ingress from anywhere to all ports")
        return
    if low is None or high is None:
        yield ("IAC-tf-open-ingress", line, end_line, "ingress from anywhere to ports computed by the configuration")
        return
    where = f"ingress from anywhere to port {low}" if low == high else f"ingress from anywhere to ports {low}-{high}"
    if any(low <= port <= high for port in (22, 3389)):
        yield ("IAC-tf-open-admin-ingress", line, end_line, where)
    elif not (low == high and low in _PUBLIC_WEB_PORTS):
        yield ("IAC-tf-open-ingress", line, end_line, where)


def _gcp_firewall(node: Node) -> Iterator[Found]:
    sources = node.get("source_ranges")
    if sources is None or not _ANYWHERE & set(sources.words()):
        return
    if _literal(node.value("direction")) == "egress" or node.get("source_tags", "source_service_accounts"):
        return
    for allow in (child for child in node.children if child.header == ["allow"]):
        protocol = _literal(allow.value("protocol"))
        ports = allow.get("ports")
        if protocol in ("icmp", "ipip", "esp", "ah", "sctp"):
            continue
        line, end_line = _span(sources, ports)
        if ports is None:
            if protocol in ("all", "tcp", "udp"):
                yield ("IAC-tf-open-admin-ingress", line, end_line, f"firewall allows {protocol} from anywhere")
            continue
        ranges = [_port_range(word) for word in ports.words()]
        if any(r is None for r in ranges):
            continue
        known = [r for r in ranges if r is not None]
        if any(low <= port <= high for low, high in known for port in (22, 3389)):
            yield ("IAC-tf-open-admin-ingress", line, end_line, f"firewall allows ports {', '.join(ports.words())}")
        elif any(not (low == high and low in _PUBLIC_WEB_PORTS) for low, high in known):
            yield ("IAC-tf-open-ingress", line, end_line, f"firewall allows ports {', '.join(ports.words())}")


def _port_range(word: str) -> tuple[int, int] | None:
    low, _, high = word.strip().partition("-")
    if not low.isdigit() or (high and not high.isdigit()):
        return None
    return int(low), int(high or low)


def _statement(node: Node) -> Iterator[Found]:
    """An IAM statement (policy JSON, jsonencode or an aws_iam_policy_document `statement`)."""
    action = node.get("Action", "actions")
    if action is None or "*" not in action.words():
        return
    if (_literal(node.value("Effect")) or "allow") != "allow":
        return
    resource = node.get("Resource", "resources")
    if resource is not None and "*" in resource.words():
        line, end_line = _span(action, resource)
        yield ("IAC-tf-iam-admin", line, end_line, 'Action "*" on Resource "*"')
    elif node.get("Principal", "principals", "NotPrincipal") is None:  # resource policies have their own rules
        yield ("IAC-tf-iam-star-action", action.line, action.end_line, 'Action "*"')


# attribute name -> (the literal that is the problem, rule, what was seen)
_SETTINGS: dict[str, tuple[frozenset[str], str]] = {
    "block_public_acls": (frozenset({"false"}), "IAC-tf-s3-public-access-block-off"),
    "block_public_policy": (frozenset({"false"}), "IAC-tf-s3-public-access-block-off"),
    "ignore_public_acls": (frozenset({"false"}), "IAC-tf-s3-public-access-block-off"),
    "restrict_public_buckets": (frozenset({"false"}), "IAC-tf-s3-public-access-block-off"),
    "encrypted": (frozenset({"false"}), "IAC-tf-unencrypted-storage"),
    "storage_encrypted": (frozenset({"false"}), "IAC-tf-unencrypted-storage"),
    "at_rest_encryption_enabled": (frozenset({"false"}), "IAC-tf-unencrypted-storage"),
    "transit_encryption_enabled": (frozenset({"false"}), "IAC-tf-unencrypted-storage"),
    "publicly_accessible": (frozenset({"true"}), "IAC-tf-publicly-accessible"),
    "http_tokens": (frozenset({"optional"}), "IAC-tf-imdsv1"),
    "allow_nested_items_to_be_public": (frozenset({"true"}), "IAC-tf-azure-public-blobs"),
    "allow_blob_public_access": (frozenset({"true"}), "IAC-tf-azure-public-blobs"),
    "ssl_enforcement_enabled": (frozenset({"false"}), "IAC-tf-transport-not-enforced"),
    "ssl_enforcement": (frozenset({"disabled"}), "IAC-tf-transport-not-enforced"),
    "enable_non_ssl_port": (frozenset({"true"}), "IAC-tf-transport-not-enforced"),
    "non_ssl_port_enabled": (frozenset({"true"}), "IAC-tf-transport-not-enforced"),
    "https_only": (frozenset({"false"}), "IAC-tf-transport-not-enforced"),
    "min_tls_version": (frozenset({"tls1_0", "tls1_1", "1.0", "1.1", "tls1.0", "tls1.1"}), "IAC-tf-old-tls"),
    "minimum_tls_version": (frozenset({"tls1_0", "tls1_1", "1.0", "1.1", "tls1.0", "tls1.1"}), "IAC-tf-old-tls"),
    "ssl_minimal_tls_version_enforced": (frozenset({"tls1_0", "tls1_1", "tlsenforcementdisabled"}), "IAC-tf-old-tls"),
    "insecure": (frozenset({"true"}), "IAC-tf-tls-verify-off"),
    "skip_tls_verify": (frozenset({"true"}), "IAC-tf-tls-verify-off"),
    "insecure_skip_verify": (frozenset({"true"}), "IAC-tf-tls-verify-off"),
    "tls_insecure_skip_verify": (frozenset({"true"}), "IAC-tf-tls-verify-off"),
    "verify_ssl": (frozenset({"false"}), "IAC-tf-tls-verify-off"),
    "ssl_verify": (frozenset({"false"}), "IAC-tf-tls-verify-off"),
    "insecure_ssl": (frozenset({"true", "1"}), "IAC-tf-tls-verify-off"),
    "privileged": (frozenset({"true"}), "IAC-tf-privileged-container"),
    "deletion_protection": (frozenset({"false"}), "IAC-tf-deletion-protection-off"),
    "enable_deletion_protection": (frozenset({"false"}), "IAC-tf-deletion-protection-off"),
    "skip_final_snapshot": (frozenset({"true"}), "IAC-tf-skip-final-snapshot"),
    "force_destroy": (frozenset({"true"}), "IAC-tf-force-destroy"),
}
_S3_PUBLIC_ACLS = {"public-read", "public-read-write", "authenticated-read"}
_S3_PUBLIC_GRANTEES = ("acs.amazonaws.com/groups/global/allusers", "acs.amazonaws.com/groups/global/authenticatedusers")
_PUBLIC_MEMBERS = {"allusers", "allauthenticatedusers"}


def _settings(node: Node, resource: str) -> Iterator[Found]:
    for attr in node.attrs:
        key = attr.key.lower()
        literal = _literal(attr.values[0]) if len(attr.values) == 1 else None
        setting = _SETTINGS.get(key)
        if setting is not None and literal in setting[0]:
            yield (setting[1], attr.line, attr.end_line, f"{attr.key} = {attr.values[0].strip()}")
        elif key == "acl" and literal in _S3_PUBLIC_ACLS and resource.startswith("aws_s3_bucket"):
            yield ("IAC-tf-s3-public-acl", attr.line, attr.end_line, f'acl = "{literal}"')
        elif key == "uri" and literal and literal.endswith(_S3_PUBLIC_GRANTEES) and resource.startswith("aws_s3"):
            yield ("IAC-tf-s3-public-acl", attr.line, attr.end_line, f"a grant to {attr.values[0].strip()}")
        elif key == "enable_key_rotation" and literal == "false" and resource == "aws_kms_key":
            spec = _literal(node.value("customer_master_key_spec", "key_spec")) or "symmetric_default"
            if spec == "symmetric_default":  # asymmetric and HMAC keys cannot rotate
                yield ("IAC-tf-kms-rotation-off", attr.line, attr.end_line, "enable_key_rotation = false")
        elif key in ("member", "members") and _PUBLIC_MEMBERS & {_literal(v) for v in attr.values}:
            yield ("IAC-tf-public-member", attr.line, attr.end_line, f"{attr.key} includes allUsers")


def check_terraform(text: str) -> Iterator[Found]:
    root = parse_hcl(text)
    for node, resource, parents in _walk(root):
        if resource == "" and node.header[:1] not in (["provider"], ["module"]):
            continue  # variables, outputs, locals: defaults and values, not resources
        yield from _settings(node, resource)
        yield from _ingress(node, resource, parents)
        yield from _statement(node)
