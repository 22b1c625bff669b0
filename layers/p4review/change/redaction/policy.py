"""What the deployment's policy adds to the always-on secret rules: e-mail de-identification
and the hostnames / IP ranges it marks confidential. Validated once, at construction."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass, field

from p4review.errors import ConfigError

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_HOST_SUFFIX = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class RedactionPolicy:
    """`confidential_host_suffixes`: `.corp.example` (or `corp.example`) marks `corp.example`
    and every name under it; a single-label suffix (`.internal`) marks only names under it.
    `confidential_cidrs`: `10.0.0.0/8`, `fd00::/8`... Loopback addresses are never redacted,
    whatever the ranges say."""

    deidentify_emails: bool = False
    confidential_host_suffixes: tuple[str, ...] = ()
    confidential_cidrs: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        suffixes = []
        for raw in self.confidential_host_suffixes:
            suffix = str(raw).strip().lower().lstrip(".")
            if not _HOST_SUFFIX.match(suffix):
                raise ConfigError(f"confidential host suffix {raw!r} is not a DNS name suffix")
            suffixes.append(suffix)
        networks = []
        for raw in self.confidential_cidrs:
            try:
                networks.append(ipaddress.ip_network(str(raw).strip(), strict=False))
            except ValueError:
                raise ConfigError(f"confidential range {raw!r} is not a CIDR block") from None
        # Sorted and de-duplicated: two policies that mean the same have the same fingerprint.
        object.__setattr__(self, "confidential_host_suffixes", tuple(sorted(set(suffixes))))
        object.__setattr__(self, "networks", tuple(sorted(set(networks), key=lambda n: (n.version, n))))
        object.__setattr__(self, "confidential_cidrs", tuple(str(network) for network in self.networks))

    @property
    def fingerprint(self) -> str:
        """A short stable digest of the policy, recorded with every redacted document."""
        canonical = json.dumps(
            {
                "emails": self.deidentify_emails,
                "hosts": self.confidential_host_suffixes,
                "cidrs": self.confidential_cidrs,
            },
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]


DEFAULT_POLICY = RedactionPolicy()

# What every network keeps to itself: private, shared (carrier-grade NAT), link-local and
# unique-local ranges, and the names only an internal resolver answers.
PRIVATE_CIDRS = (
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",  # RFC 1918
    "100.64.0.0/10",  # RFC 6598
    "169.254.0.0/16",
    "fe80::/10",  # link-local
    "fc00::/7",
)  # IPv6 unique local
INTERNAL_HOST_SUFFIXES = (
    ".internal",
    ".local",
    ".corp",
    ".lan",
    ".intranet",
    ".home.arpa",
    ".consul",
    "svc.cluster.local",
)


def service_policy(
    *, private_by_default: bool = True, host_suffixes: tuple[str, ...] = (), cidrs: tuple[str, ...] = ()
) -> RedactionPolicy:
    """The service's policy: secure by default (e-mail addresses, internal names and private
    addresses are redacted), the deployment's own suffixes and ranges on top. With
    `private_by_default=False` only what is configured is redacted (the opt-out)."""
    if not private_by_default:
        return RedactionPolicy(
            deidentify_emails=False, confidential_host_suffixes=host_suffixes, confidential_cidrs=cidrs
        )
    return RedactionPolicy(
        deidentify_emails=True,
        confidential_host_suffixes=INTERNAL_HOST_SUFFIXES + host_suffixes,
        confidential_cidrs=PRIVATE_CIDRS + cidrs,
    )
