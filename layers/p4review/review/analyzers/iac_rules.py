"""The `iac` rules as data (p4review.review.analyzers.iac_checks applies them).

RULES: each rule's id with its severity, category, the checkov check(s) it mirrors, title and
message (why it matters and what to do). COMPOSE_MATCHES and TERRAFORM_MATCHES: the rule records
that find them, one `Match` each: the rule id, where (a selector), which attribute (a path),
which value (a predicate) and what the report says was found. A rule may have several records
(the four S3 public-access-block flags); the checks that need a whole block's structure (ingress
from 0.0.0.0/0, GCP firewalls, IAM statements) are code, in iac_checks.

Only explicit values are matched (`privileged: true`, `encrypted = false`), never an absent
setting, and a Terraform value computed from variables never reaches a predicate."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from p4review.models.finding_labels import Category, Severity
from p4review.review.analyzers.iac_hcl import Node, literal


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

# A predicate: given a value, what was seen (for the report's "Found: ..."), or None.
Predicate = Callable[[str], str | None]


class Match(NamedTuple):
    """One rule record. The predicate is given the value as written (compose) or its
    lower-cased literal (Terraform); the detail is formatted with {key} (as written), {value}
    and {seen} (what the predicate returned)."""

    rule: str  # a key of RULES
    selector: str  # Terraform: the enclosing resource/data type (a glob; "*": any resource,
    # data, provider or module block); compose: the key whose mapping holds the attribute
    path: str  # the attribute; compose "key[]": each item of the list under key
    predicate: Predicate
    detail: str
    each_value: bool = False  # Terraform: any value of a list (`members = [...]`), not the one literal
    where: Callable[[Node], bool] | None = None  # Terraform: a condition on the rest of the block


def one_of(*literals: str) -> Predicate:
    wanted = frozenset(literals)
    return lambda value: value if value.lower() in wanted else None


def matching(pattern: re.Pattern[str]) -> Predicate:
    return lambda value: value if pattern.match(value) else None


def ends_with(*suffixes: str) -> Predicate:
    return lambda value: value if value.lower().endswith(suffixes) else None


# -- Docker compose

_DOCKER_SOCKET = re.compile(r"^(?:/var)?/run/docker\.sock(?::|$)")
_DANGEROUS_CAPS = {"ALL", "SYS_ADMIN", "SYS_MODULE", "SYS_PTRACE", "DAC_READ_SEARCH", "SYS_RAWIO"}
_UNCONFINED = re.compile(r"^(?:seccomp|apparmor)[:=]unconfined$|^label[:=]disable$", re.IGNORECASE)
_ROOT_USER = re.compile(r"^(?:root|0)(?::(?:root|0))?$", re.IGNORECASE)
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
_ALL_INTERFACES = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 # nosec B104 - the addresses we look for


def _dangerous_capability(value: str) -> str | None:
    capability = value.upper().removeprefix("CAP_")
    return capability if capability in _DANGEROUS_CAPS else None


def _unconfined(value: str) -> str | None:
    return value if _UNCONFINED.match(value.replace(" ", "")) else None


def public_service_port(value: str) -> str | None:
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


COMPOSE_MATCHES: tuple[Match, ...] = (
    Match("IAC-compose-privileged", "*", "privileged", one_of("true", "yes", "on"), "privileged: true"),
    Match("IAC-compose-host-network", "*", "network_mode", one_of("host"), "network_mode: host"),
    Match("IAC-compose-host-pid", "*", "pid", one_of("host"), "pid: host"),
    Match("IAC-compose-host-ipc", "*", "ipc", one_of("host"), "ipc: host"),
    Match("IAC-compose-root-user", "*", "user", matching(_ROOT_USER), "user: {value}"),
    Match("IAC-compose-docker-socket", "volumes", "source", matching(_DOCKER_SOCKET), "a volume from {value}"),
    Match("IAC-compose-docker-socket", "*", "volumes[]", matching(_DOCKER_SOCKET), "the volume {value}"),
    Match("IAC-compose-dangerous-capability", "*", "cap_add[]", _dangerous_capability, "cap_add: {seen}"),
    Match("IAC-compose-unconfined", "*", "security_opt[]", _unconfined, "security_opt: {value}"),
    Match("IAC-compose-public-db-port", "*", "ports[]", public_service_port, "ports: {value} publishes {seen}"),
)

# -- Terraform

_OLD_TLS = ("tls1_0", "tls1_1", "1.0", "1.1", "tls1.0", "tls1.1")
_S3_PUBLIC_GRANTEES = ("acs.amazonaws.com/groups/global/allusers", "acs.amazonaws.com/groups/global/authenticatedusers")
_SET = "{key} = {value}"


def _symmetric_key(node: Node) -> bool:
    """A KMS key that can rotate: asymmetric and HMAC keys cannot."""
    return (literal(node.value("customer_master_key_spec", "key_spec")) or "symmetric_default") == "symmetric_default"


TERRAFORM_MATCHES: tuple[Match, ...] = (
    Match("IAC-tf-s3-public-access-block-off", "*", "block_public_acls", one_of("false"), _SET),
    Match("IAC-tf-s3-public-access-block-off", "*", "block_public_policy", one_of("false"), _SET),
    Match("IAC-tf-s3-public-access-block-off", "*", "ignore_public_acls", one_of("false"), _SET),
    Match("IAC-tf-s3-public-access-block-off", "*", "restrict_public_buckets", one_of("false"), _SET),
    Match("IAC-tf-unencrypted-storage", "*", "encrypted", one_of("false"), _SET),
    Match("IAC-tf-unencrypted-storage", "*", "storage_encrypted", one_of("false"), _SET),
    Match("IAC-tf-unencrypted-storage", "*", "at_rest_encryption_enabled", one_of("false"), _SET),
    Match("IAC-tf-unencrypted-storage", "*", "transit_encryption_enabled", one_of("false"), _SET),
    Match("IAC-tf-publicly-accessible", "*", "publicly_accessible", one_of("true"), _SET),
    Match("IAC-tf-imdsv1", "*", "http_tokens", one_of("optional"), _SET),
    Match("IAC-tf-azure-public-blobs", "*", "allow_nested_items_to_be_public", one_of("true"), _SET),
    Match("IAC-tf-azure-public-blobs", "*", "allow_blob_public_access", one_of("true"), _SET),
    Match("IAC-tf-transport-not-enforced", "*", "ssl_enforcement_enabled", one_of("false"), _SET),
    Match("IAC-tf-transport-not-enforced", "*", "ssl_enforcement", one_of("disabled"), _SET),
    Match("IAC-tf-transport-not-enforced", "*", "enable_non_ssl_port", one_of("true"), _SET),
    Match("IAC-tf-transport-not-enforced", "*", "non_ssl_port_enabled", one_of("true"), _SET),
    Match("IAC-tf-transport-not-enforced", "*", "https_only", one_of("false"), _SET),
    Match("IAC-tf-old-tls", "*", "min_tls_version", one_of(*_OLD_TLS), _SET),
    Match("IAC-tf-old-tls", "*", "minimum_tls_version", one_of(*_OLD_TLS), _SET),
    Match(
        "IAC-tf-old-tls",
        "*",
        "ssl_minimal_tls_version_enforced",
        one_of("tls1_0", "tls1_1", "tlsenforcementdisabled"),
        _SET,
    ),
    Match("IAC-tf-tls-verify-off", "*", "insecure", one_of("true"), _SET),
    Match("IAC-tf-tls-verify-off", "*", "skip_tls_verify", one_of("true"), _SET),
    Match("IAC-tf-tls-verify-off", "*", "insecure_skip_verify", one_of("true"), _SET),
    Match("IAC-tf-tls-verify-off", "*", "tls_insecure_skip_verify", one_of("true"), _SET),
    Match("IAC-tf-tls-verify-off", "*", "verify_ssl", one_of("false"), _SET),
    Match("IAC-tf-tls-verify-off", "*", "ssl_verify", one_of("false"), _SET),
    Match("IAC-tf-tls-verify-off", "*", "insecure_ssl", one_of("true", "1"), _SET),
    Match("IAC-tf-privileged-container", "*", "privileged", one_of("true"), _SET),
    Match("IAC-tf-deletion-protection-off", "*", "deletion_protection", one_of("false"), _SET),
    Match("IAC-tf-deletion-protection-off", "*", "enable_deletion_protection", one_of("false"), _SET),
    Match("IAC-tf-skip-final-snapshot", "*", "skip_final_snapshot", one_of("true"), _SET),
    Match("IAC-tf-force-destroy", "*", "force_destroy", one_of("true"), _SET),
    Match(
        "IAC-tf-s3-public-acl",
        "aws_s3_bucket*",
        "acl",
        one_of("public-read", "public-read-write", "authenticated-read"),
        'acl = "{seen}"',
    ),
    Match("IAC-tf-s3-public-acl", "aws_s3*", "uri", ends_with(*_S3_PUBLIC_GRANTEES), "a grant to {value}"),
    Match(
        "IAC-tf-kms-rotation-off",
        "aws_kms_key",
        "enable_key_rotation",
        one_of("false"),
        "enable_key_rotation = false",
        where=_symmetric_key,
    ),
    Match(
        "IAC-tf-public-member",
        "*",
        "member",
        one_of("allusers", "allauthenticatedusers"),
        "{key} includes allUsers",
        each_value=True,
    ),
    Match(
        "IAC-tf-public-member",
        "*",
        "members",
        one_of("allusers", "allauthenticatedusers"),
        "{key} includes allUsers",
        each_value=True,
    ),
)
