"""Secrets recognisable by their own shape: API keys and tokens with a known prefix (AWS,
GitHub, GitLab, Slack, Stripe, Google, OpenAI, Anthropic, PyPI), JWTs, `Authorization: Bearer`
and `Basic` credentials, and connection URIs with credentials in them."""

from __future__ import annotations

import binascii
from typing import Any

from p4review.change.redaction.base import Match, PatternRule
from p4review.change.redaction.needles import Needle, needles
from p4review.change.redaction.values import has_digit, is_template_or_masked, looks_random


def _mixed_case_and_digit(_: Match, secret: str) -> bool:
    body = secret.split("-", 1)[-1]
    return has_digit(body) and any(c.isupper() for c in body) and any(c.islower() for c in body)


def _opaque_token(_: Match, secret: str) -> bool:
    return (len(secret) >= 12 and has_digit(secret)) or looks_random(secret, 20)


def _basic_credentials(_: Match, secret: str) -> bool:
    """`Basic <base64>` is a credential only if it decodes to `user:password`."""
    try:
        decoded = binascii.a2b_base64(secret + "=" * (-len(secret) % 4))
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


def _basic_blob(_: Match, secret: str) -> bool:
    """A base64 value assigned to an `auth` key (Docker's `config.json`, `.npmrc` `_auth`) is a
    credential when it decodes to printable `user:password`."""
    try:
        decoded = binascii.a2b_base64(secret + "=" * (-len(secret) % 4)).decode("ascii")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(user and colon and password) and decoded.isprintable() and " " not in decoded


def _uri_credentials(match: Match, secret: str) -> bool:
    if is_template_or_masked(secret):
        return False
    # Token-only userinfo (`https://<token>@host`) must look generated; `user:pass@` need not.
    return match.start("password") >= 0 or looks_random(secret, 20)


def _token_rule(name: str, pattern: str, needles: tuple[Needle, ...], **options: Any) -> PatternRule:
    """A token format: the mask runs to the token's real end, whatever the pattern matched."""
    return PatternRule(name, pattern, needles, whole_token=True, **options)


_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_NOT_ALNUM_AFTER = r"(?![A-Za-z0-9])"

# Minimum lengths are below the full token length on purpose: the prefixes are distinctive
# enough that a token cut off at a line end is still caught.
TOKEN_RULES: tuple[PatternRule, ...] = (
    _token_rule(
        "aws_access_key",
        _NOT_ALNUM_BEFORE + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{10,16}" + _NOT_ALNUM_AFTER,
        needles("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    # ghs_<installation id>_<JWT>: GitHub's newer installation token format.
    _token_rule(
        "github_token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{16,255}|github_pat_[A-Za-z0-9_]{16,255}"
        r"|gh[su]_[0-9]+_eyJ[A-Za-z0-9_.-]{16,})",
        needles("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    # Formats the adopted ruleset lacks (it knows `tskey-api-` and Shopify's 32-hex tokens only).
    _token_rule(
        "tailscale_key",
        r"(?<![A-Za-z0-9_-])tskey-(?:auth|client|scim|webhook|future)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}",
        needles("tskey-"),
    ),
    _token_rule(
        "shopify_token",
        r"(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_[A-Za-z0-9]{32,}",
        needles("shpat_", "shpca_", "shppa_", "shpss_"),
        validate=_mixed_case_and_digit,
    ),
    _token_rule("gitlab_token", r"(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{16,}", needles("glpat-")),
    _token_rule(
        "slack_token",
        r"(?<![A-Za-z0-9])xox[abpsre]-[A-Za-z0-9-]{10,}",
        needles("xoxa-", "xoxb-", "xoxp-", "xoxs-", "xoxr-", "xoxe-"),
        validate=lambda _, secret: has_digit(secret),
    ),
    _token_rule(
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>[A-Za-z0-9/_-]{10,})",
        needles("k.com/", behind="hooks.slac", folded=True),
        groups=("path",),
    ),
    _token_rule(
        "stripe_key",
        r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",
        needles("k_live_", "k_test_", folded=True),
    ),
    _token_rule("google_api_key", r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{20,}", needles("AIza")),
    _token_rule(
        "anthropic_key", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{16,}", needles("k-", behind="s", folded=True)
    ),
    _token_rule(
        "openai_key",
        r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        needles("k-", behind="s", folded=True),
        validate=_mixed_case_and_digit,
    ),
    _token_rule("pypi_token", r"(?<![A-Za-z0-9_-])pypi-AgE[A-Za-z0-9_-]{30,}", needles("AgE", behind="pypi-")),
    # Header and payload are base64url JSON (`{"` -> `eyJ`); the signature may be cut off.
    _token_rule(
        "jwt",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}(?:\.[A-Za-z0-9_-]*)?",
        needles("J", behind="ey"),
    ),
    _token_rule(
        "bearer_token",
        r"(?i:\bbearer|\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?token)[ \t]+"
        r"(?P<token>[A-Za-z0-9._~+/-]{12,}=*)(?![A-Za-z0-9._~+/=-])",
        needles("bearer", ahead=r"[ \t]+[a-z0-9._~+/-]{12}", folded=True)
        + needles("z", behind="authori", ahead=r"""ation["']?[ \t]*[:=][ \t]*["']?token[ \t]""", folded=True),
        groups=("token",),
        validate=_opaque_token,
    ),
    _token_rule(
        "basic_auth",
        r"(?i:\b[\w.-]*auth)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<b64>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        needles("auth", ahead=r"""[\w.-]*+["']?[ \t]*[:=]""", folded=True),
        groups=("b64",),
        validate=_basic_blob,
    ),
    _token_rule(
        "basic_auth",
        r"(?i:\bbasic)[ \t]+(?P<b64>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        needles("basic", ahead=r"[ \t]+[a-z0-9+/]{8}", folded=True),
        groups=("b64",),
        validate=_basic_credentials,
    ),
)

# `scheme://user:password@host` (password replaced) and `scheme://<token>@host` (token
# replaced). Runs before the token rules so a known token used as a password still yields
# one clean `user:[REDACTED:connection_uri]@host`.
CONNECTION_URI_RULE = PatternRule(
    "connection_uri",
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://"
    # The password runs to the last `@` of the authority: an unescaped `@` in it is common. It
    # never holds a parameter (`host:1433;user=sa;password=p@ss` is a port, then parameters).
    r"(?:(?P<user>[^\s:@/?#\"'<>\[\]]*):(?P<password>(?:[^\s/\"'<>;?&]|[;?&](?![\w.-]+=))+)"
    r"|(?P<bare>[A-Za-z0-9._~-]{20,}))@",
    needles("://", ahead=r"[^\s/@]*@"),
    groups=("password", "bare"),
    validate=_uri_credentials,
)
