"""What the deployment's policy marks confidential: e-mail addresses (when it asks for
de-identification), host names under given suffixes, IP addresses in given ranges."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from p4review.change.redaction.base import Match, PatternRule
from p4review.change.redaction.needles import Needle, needles

# The classes this policy adds: people and places a deployment keeps from the model, not secrets
# (nothing to rotate; a finding that says "a secret was committed" is wrong for them).
POLICY_CLASSES = frozenset({"email", "internal_host", "internal_ip"})
_FILE_EXTENSIONS = frozenset("png jpg jpeg gif svg webp ico bmp css js ts py json yaml yml xml html md txt".split())


def _real_email(match: Match, _: str) -> bool:
    local = match.group("local")
    return match.group("tld").lower() not in _FILE_EXTENSIONS and local.lower() != "git"


EMAIL_RULE = PatternRule(
    "email",
    r"(?<![\w.%+-])(?P<local>[A-Za-z0-9._%+-]+)@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?P<tld>[A-Za-z]{2,24})(?![\w-])",
    (Needle("@", behind="[A-Za-z0-9._%+-]", ahead="[A-Za-z0-9]"),),
    validate=_real_email,
)


def host_rule(suffixes: tuple[str, ...]) -> PatternRule:
    """Names equal to a multi-label suffix or under any suffix; `a.corp.example.com` is not
    under `corp.example`."""
    label = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
    under = "|".join(re.escape(suffix) for suffix in suffixes)
    equal = "|".join(re.escape(suffix) for suffix in suffixes if "." in suffix)
    names = rf"(?:{label}\.)+(?:{under})" + (rf"|(?:{equal})" if equal else "")
    return PatternRule(
        "internal_host",
        rf"(?<![\w.-])(?i:{names})(?![\w-]|\.[A-Za-z0-9])",
        needles(*suffixes, folded=True),
        validate=_not_code,
    )


# `threading.local()`, `self.internal`: under a one-label suffix, code looks like a host name.
_RECEIVERS = frozenset("self this cls super threading".split())


def _not_code(match: Match, name: str) -> bool:
    if name.count(".") > 1:
        return True  # `db01.prod.internal`: several labels, a host
    after = match.string[match.end() : match.end() + 1]
    return after not in ("(", "[") and name.split(".", 1)[0].lower() not in _RECEIVERS


def _address_needles(network: Any) -> tuple[Needle, ...]:
    """IPv4: the leading octets every address of the network shares (`10.` for 10/8). IPv6:
    the leading hex digits of the first group when the network fixes them and they cannot be
    dropped (`fc`/`fd` then 2 digits and a colon for fc00::/7, `fe8`..`feb` for fe80::/10);
    otherwise (`::/0`, a first group with leading zeros) any colon, which flags most lines."""
    if network.version == 6:
        return _ipv6_needles(network)
    octets = str(network.network_address).split(".")[: min(network.prefixlen // 8, 3)]
    if not octets:  # a range wider than /8: the address's first dot, two more to follow
        return needles(".", ahead=r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}")
    rest = r"[0-9]{1,3}" + r"\.[0-9]{1,3}" * (3 - len(octets))  # the octets after the shared ones
    return needles(".".join(octets) + ".", ahead=rest)


def _ipv6_needles(network: Any) -> tuple[Needle, ...]:
    first_group = int(network.network_address) >> 112
    fixed_bits = min(network.prefixlen, 16)
    if fixed_bits < 4 or first_group >> 12 == 0:
        return needles(":")
    digits, spare = divmod(fixed_bits, 4)
    text = f"{first_group:04x}"
    prefixes = [text[:digits]]
    if spare:  # the next digit has `spare` fixed top bits: every value they allow
        top = int(text[digits], 16) >> (4 - spare) << (4 - spare)
        prefixes = [text[:digits] + f"{top + low:x}" for low in range(1 << (4 - spare))]
    found: tuple[Needle, ...] = ()
    for prefix in prefixes:
        found += needles(prefix, ahead=f"[0-9a-f]{{{4 - len(prefix)}}}:" if len(prefix) < 4 else ":", folded=True)
    return found


# A four-part version assigned to a name that says so (`ARG derby_version="10.17.1.0"`): the
# shape of an address, not one. Found by issue 30's ordinary-commit run (jupyter/docker-stacks).
_VERSION_NAME_BEFORE = re.compile(r"(?i)(?:version|release)[\"']?[ \t]*[:=][ \t]*[\"']?$")


def address_rule(networks: tuple[Any, ...]) -> PatternRule:
    def inside(match: Match, secret: str) -> bool:
        if _VERSION_NAME_BEFORE.search(match.string, max(0, match.start() - 64), match.start()):
            return False
        try:
            address = ipaddress.ip_address(secret)
        except ValueError:
            return False
        return not address.is_loopback and any(address in network for network in networks)

    ipv4 = r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"
    ipv6 = r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])"
    pattern = ipv4 + (f"|{ipv6}" if any(network.version == 6 for network in networks) else "")
    found = tuple(dict.fromkeys(needle for network in networks for needle in _address_needles(network)))
    return PatternRule("internal_ip", pattern, found, validate=inside)
