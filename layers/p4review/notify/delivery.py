"""Delivery identity: everything derived from (changelist_id, recipient, review_version)."""

from __future__ import annotations

import hashlib
import re

_ADDRESS = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


def normalize_recipient(address: str | None) -> str | None:
    """Trimmed, lower-cased address, or None when it is not a deliverable address."""
    if not address:
        return None
    candidate = address.strip().lower()
    if len(candidate) > 254 or not _ADDRESS.match(candidate):
        return None
    return candidate


def delivery_token(changelist_id: int, recipient: str, review_version: int) -> str:
    """The provider idempotency token: the same intent always yields the same token."""
    canonical = f"p4review|{changelist_id}|{recipient}|{review_version}"
    return hashlib.sha256(canonical.encode()).hexdigest()[:40]


def message_id_for(token: str, from_address: str) -> str:
    """Deterministic Message-ID, short enough (128 bits of the token) that the header is not
    folded onto a continuation line, which some mail systems mishandle."""
    domain = from_address.rsplit("@", 1)[-1].strip(" >") or "p4review.invalid"
    return f"<p4r.{token[:32]}@{domain}>"
