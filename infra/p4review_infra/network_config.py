"""Where the notify function runs, from CDK context (docs/infra.md, "Notify network").

By default notify runs outside any VPC (AWS services and internet endpoints only). An on-premises
Swarm (or Perforce server, or SMTP relay) needs a route: `notifyVpcId`, `notifySubnetIds` and
`notifySecurityGroupIds` put notify in existing subnets of an existing VPC (one with a VPN or
Direct Connect to those hosts). They are imported by id, never looked up: synth needs no account."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p4review_infra.review_config import ContextError, _text

VPC_KEY = "notifyVpcId"
SUBNETS_KEY = "notifySubnetIds"
SECURITY_GROUPS_KEY = "notifySecurityGroupIds"
KEYS = (VPC_KEY, SUBNETS_KEY, SECURITY_GROUPS_KEY)

# EC2 resource ids: the prefix and 8 (older) or 17 hex digits.
_IDS = {
    VPC_KEY: re.compile(r"vpc-(?:[0-9a-f]{8}|[0-9a-f]{17})"),
    SUBNETS_KEY: re.compile(r"subnet-(?:[0-9a-f]{8}|[0-9a-f]{17})"),
    SECURITY_GROUPS_KEY: re.compile(r"sg-(?:[0-9a-f]{8}|[0-9a-f]{17})"),
}
# Lambda's limits for a function's VPC configuration.
MAX_SUBNETS = 16
MAX_SECURITY_GROUPS = 5


@dataclass(frozen=True)
class FunctionNetwork:
    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]


def notify_network(get: Callable[[str], Any]) -> FunctionNetwork | None:
    """The notify function's VPC placement, or None (no key given). All three keys go together."""
    given = {key: value for key in KEYS if _text(value := get(key))}
    if not given:
        return None
    missing = [key for key in KEYS if key not in given]
    if missing:
        raise ContextError(
            f"context {', '.join(missing)} required with {', '.join(given)}: notify's VPC needs "
            f"{VPC_KEY}, {SUBNETS_KEY} and {SECURITY_GROUPS_KEY} together"
        )
    vpc_id = _text(given[VPC_KEY])
    _check_id(VPC_KEY, vpc_id)
    subnets = _id_list(SUBNETS_KEY, given[SUBNETS_KEY], MAX_SUBNETS)
    security_groups = _id_list(SECURITY_GROUPS_KEY, given[SECURITY_GROUPS_KEY], MAX_SECURITY_GROUPS)
    return FunctionNetwork(vpc_id=vpc_id, subnet_ids=subnets, security_group_ids=security_groups)


def _id_list(key: str, value: Any, limit: int) -> tuple[str, ...]:
    """Comma-separated text (`-c key=a,b`), a JSON array in text, or a real list (cdk.json)."""
    items: Any = value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            items = json.loads(value)
        except json.JSONDecodeError:
            raise ContextError(f"context {key}={value!r}: not a JSON array") from None
    if isinstance(items, str):
        items = items.split(",")
    if not isinstance(items, (list, tuple)):
        raise ContextError(f"context {key}={value!r}: expected comma-separated ids or a JSON array")
    ids = tuple(dict.fromkeys(text for item in items if (text := _text(item))))
    if not ids or len(ids) > limit:
        raise ContextError(f"context {key}={value!r}: expected 1 to {limit} ids")
    for item in ids:
        _check_id(key, item)
    return ids


def _check_id(key: str, value: str) -> None:
    if not _IDS[key].fullmatch(value):
        raise ContextError(f"context {key}: {value!r} is not a {_IDS[key].pattern.split('-')[0]}-… id")
