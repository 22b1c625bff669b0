"""The `iac` analyzer (pure): a few high-signal security checks on Docker compose files and
Terraform, modelled on checkov's well-known checks, run in-process.

checkov itself does not fit in the review function's layers (265 MB installed, over Lambda's
250 MB). Compose files are read with PyYAML (node marks give each key's and list item's line)
and Terraform with python-hcl2 (p4review.review.analyzers.iac_hcl); both parsers are imported only when a
change has such a file, so the review function's cold start does not load them.

What it checks is what a security reviewer wants to see when a change writes it, and what
rarely misfires: an explicit setting (`privileged: true`, `encrypted = false`, `acl =
"public-read"`), never the absence of one (checkov also reports a resource that does not set
`encrypted`, but that is a default, not a line the change wrote). Values computed from
variables are not guessed at. The rules are data, in p4review.review.analyzers.iac_rules: RULES (each
rule's severity, message and checkov counterpart; checkov has no compose framework, so the
compose rules mirror its Kubernetes checks) and the records that find them (selector, attribute,
predicate). The checks that need a block's structure (ingress from anywhere, IAM statements)
are the code below.

Each report's line range is the attribute(s) that make the problem, so reviewdog's `added`
filter (`p4review.review.analyzers.analysis.on_added_lines`) keeps it only when the change wrote one of
them.

Unparseable input (a file in a change may be partial or wrong) is read as far as it parses and
never raises: Terraform block by block (p4review.review.analyzers.iac_hcl); a compose file up to the line
of its first YAML error (the documents before it, else the lines before it, re-read)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

from p4review.change.analyzer_files import IAC, is_compose_file
from p4review.models.finding_labels import Confidence, Severity
from p4review.review.analyzers.analysis import AnalyzerReport
from p4review.review.analyzers.iac_hcl import Attr, Node, literal, parse_hcl
from p4review.review.analyzers.iac_rules import COMPOSE_MATCHES, RULES, TERRAFORM_MATCHES, Match, Rule

__all__ = ["MAX_CHECKED_CHARS", "RULES", "Rule", "check", "check_compose", "check_terraform"]

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
            severity=Severity.HIGH if rule == "IAC-compose-public-db-port" and "2375" in detail else spec.severity,
            category=spec.category,
            confidence=Confidence.HIGH,
            title=spec.title,
            message=f"{spec.why} Found: {detail}.{mirrors}"[:600],
        )
        reports.setdefault((rule, line), report)
    return sorted(reports.values(), key=lambda r: (r.line, r.rule))


# A finding before it is a report: (rule, line, end line, what was seen).
Found = tuple[str, int, int, str]


def _by_path(matches: tuple[Match, ...]) -> dict[str, tuple[Match, ...]]:
    table: dict[str, tuple[Match, ...]] = {}
    for match in matches:
        table[match.path] = (*table.get(match.path, ()), match)
    return table


_COMPOSE_BY_PATH = _by_path(COMPOSE_MATCHES)
_TERRAFORM_BY_PATH = _by_path(TERRAFORM_MATCHES)


# ---------------------------------------------------------------------------------------
# Docker compose: PyYAML's node graph (values as written, with their lines).

_RETRIES = 3


def check_compose(text: str) -> Iterator[Found]:
    seen: set[int] = set()
    for document in _yaml_documents(text):
        yield from _compose_node(document, "", seen)


def _yaml_documents(text: str) -> list[Any]:
    """The documents' root nodes; on a YAML error, those of the lines before it (see the
    module's docstring)."""
    import yaml  # lazily: only a change with a compose file pays for the parser

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    documents: list[Any] = []
    for _ in range(_RETRIES):
        documents = []
        try:
            documents.extend(node for node in yaml.compose_all(text, Loader=loader) if node is not None)
            return documents
        except Exception as exc:  # noqa: BLE001 - YAMLError and any parser bug: read what came before
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            lines = text.split("\n")
            error_line = getattr(mark, "line", 0)  # counted from 0
            if documents or not isinstance(error_line, int) or not 0 < error_line < len(lines):
                return documents
            text = "\n".join(lines[:error_line]) + "\n"
    return documents


def _compose_node(node: Any, context: str, seen: set[int]) -> Iterator[Found]:
    """Each key's value and each list item, with `context` the key holding the mapping."""
    import yaml  # already loaded by _yaml_documents

    if id(node) in seen:  # an alias (`<<: *defaults`) is read where its anchor is
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else ""
            if isinstance(value, yaml.ScalarNode):
                yield from _compose_value(key, context, value, key_node.start_mark.line + 1)
                continue
            if isinstance(value, yaml.SequenceNode):
                for item in value.value:
                    if isinstance(item, yaml.ScalarNode):
                        yield from _compose_value(f"{key}[]", context, item, item.start_mark.line + 1)
            yield from _compose_node(value, key, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            if not isinstance(item, yaml.ScalarNode):
                yield from _compose_node(item, context, seen)


def _compose_value(path: str, context: str, value: Any, line: int) -> Iterator[Found]:
    if value.style in ("|", ">"):  # a block of text (a script), not a setting
        return
    for match in _COMPOSE_BY_PATH.get(path, ()):
        if fnmatchcase(context, match.selector) and (seen := match.predicate(value.value)) is not None:
            yield (match.rule, line, line, match.detail.format(key=path, value=value.value, seen=seen))
            return


# ---------------------------------------------------------------------------------------
# Terraform: the blocks and objects of p4review.review.analyzers.iac_hcl.


def check_terraform(text: str) -> Iterator[Found]:
    root = parse_hcl(text)
    for node, resource, parents in _walk(root):
        if resource == "" and node.header[:1] not in (["provider"], ["module"]):
            continue  # variables, outputs, locals: defaults and values, not resources
        yield from _settings(node, resource)
        yield from _ingress(node, resource, parents)
        yield from _statement(node)


def _settings(node: Node, resource: str) -> Iterator[Found]:
    """TERRAFORM_MATCHES on the block's attributes: at most one report per attribute."""
    for attr in node.attrs:
        value = literal(attr.values[0]) if len(attr.values) == 1 else None
        for match in _TERRAFORM_BY_PATH.get(attr.key.lower(), ()):
            if not fnmatchcase(resource, match.selector):
                continue
            candidates = [literal(v) for v in attr.values] if match.each_value else [value]
            seen = next((s for c in candidates if c is not None and (s := match.predicate(c)) is not None), None)
            if seen is None or (match.where is not None and not match.where(node)):
                continue
            yield (
                match.rule,
                attr.line,
                attr.end_line,
                match.detail.format(key=attr.key, value=attr.values[0].strip(), seen=seen),
            )
            break


def _walk(node: Node, resource: str = "", parents: tuple[str, ...] = ()) -> Iterator[tuple[Node, str, tuple[str, ...]]]:
    """Each node with the type of its enclosing resource/data block and its ancestors' names."""
    for child in node.children:
        kind = resource
        if not parents and len(child.header) >= 2 and child.header[0] in ("resource", "data"):
            kind = child.header[1]
        name = child.header[0] if child.header else ""
        yield child, kind, parents
        yield from _walk(child, kind, (*parents, name))


def _int(value: str | None) -> int | None:
    text = literal(value)
    if text is None or not text.lstrip("-").isdigit():
        return None
    return int(text)


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
    if resource == "aws_security_group_rule" and literal(node.value("type")) != "ingress":
        return
    cidrs = [node.get(key) for key in ("cidr_blocks", "ipv6_cidr_blocks", "cidr_ipv4", "cidr_ipv6")]
    anywhere = [attr for attr in cidrs if attr is not None and _ANYWHERE & set(attr.words())]
    if not anywhere or literal(node.value("self")) == "true":
        return
    protocol = literal(node.value("protocol", "ip_protocol"))
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
    if literal(node.value("direction")) == "egress" or node.get("source_tags", "source_service_accounts"):
        return
    for allow in (child for child in node.children if child.header == ["allow"]):
        protocol = literal(allow.value("protocol"))
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
    if (literal(node.value("Effect")) or "allow") != "allow":
        return
    resource = node.get("Resource", "resources")
    if resource is not None and "*" in resource.words():
        line, end_line = _span(action, resource)
        yield ("IAC-tf-iam-admin", line, end_line, 'Action "*" on Resource "*"')
    elif node.get("Principal", "principals", "NotPrincipal") is None:  # resource policies have their own rules
        yield ("IAC-tf-iam-star-action", action.line, action.end_line, 'Action "*"')
