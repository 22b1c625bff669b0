"""Credential files, recognised by the shape of their lines (a diff may give one without its
name, so the name is never required): `.pgpass` entries, `.netrc`/msmtprc/fetchmailrc `password`
lines, LDAP `bindpw`/`rootpw`/`olcRootPW`, htpasswd, shadow, pwdump and smbpasswd hashes, Wi-Fi
pre-shared keys, redis `requirepass`/`masterauth`/ACL passwords, `ipsec.secrets` keys, PuTTY
`.ppk` private lines, Subversion's auth cache, Docker config JSON and PEM private keys in base64
(kubeconfig), `.npmrc` credentials, FileZilla, Postfix `sasl_passwd`, `.cvspass` and sssd
entries, and SMTP `AUTH` transcripts. Network device configuration: network_devices.py.

A password hash is a secret here though not in code: a `user:hash` line is a copy of a
credential store, and its hashes can be cracked offline (`$1$`, `$apr1$`, `{SHA}` in minutes)
or used as they are (an NT hash). A lone `$2b$...` in code stays (values.is_password_hash): a
reviewer needs to see it is a hash."""

from __future__ import annotations

import binascii
import re
from collections import Counter
from collections.abc import Callable

from p4review.change.redaction.base import LinesBelow, Match, Rule
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import needles
from p4review.change.redaction.network_devices import NETWORK_DEVICE_RULE
from p4review.change.redaction.shaped import Kind, ShapeRule, literal_secret
from p4review.change.redaction.values import REDACTED_MARK, placeholder, unquoted_value_is_secret


def _config_literal(_: Match, __: str, value: str, kind: Kind) -> bool:
    """An unquoted word is a literal in a config file; in code, an identifier is a variable."""
    return unquoted_value_is_secret(value, literal_words=lambda: kind() is FileKind.CONFIG)


def _b64decode(value: str) -> bytes | None:
    try:
        return binascii.a2b_base64(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return None


# ---- .pgpass: hostname:port:database:username:password (`\:` escapes a colon) -------------------

_PGPASS_FIELD = r"(?:[^:\\\s]|\\.)+"


def _not_an_address(match: Match, _: str, value: str, __: Kind) -> bool:
    # `fe80:1:2:3:abcd` is an address, `12:30:45:00:01` a time: not a credential entry.
    return re.fullmatch(r"[0-9A-Fa-f:.*]+", match.group(0).strip()) is None and not (value.isdigit() and len(value) < 4)


def _pgpass_entry(match: Match, group: str, value: str, kind: Kind) -> bool:
    return group != "password" or (literal_secret(value) and _not_an_address(match, group, value, kind))


# Password hashes as credential stores write them: crypt(3) formats, and LDAP's `{SCHEME}...`.
_CRYPT = r"\$(?:1|2[abxy]?|5|6|7|y|gy|sha1|md5|apr1|argon2(?:id|i|d))\$[./A-Za-z0-9$=,+-]+"
_SCHEME = r"\{(?i:S?SHA(?:256|384|512)?|S?MD5|CRYPT|PBKDF2[\w-]*|ARGON2|BCRYPT)\}[A-Za-z0-9+/=.$-]+"
_SCHEME_VALUE = re.compile(_SCHEME)

# ---- .netrc, msmtprc, fetchmailrc: `password VALUE` (`passwordeval` runs a command) ------------------

_PASSWORD_WORD = r"password[ \t]+(?:\"(?P<{q}>(?:[^\"\\]|\\.)+)\"|(?P<{v}>[^\s\"]\S*))"  # noqa: S105 - a pattern
# LDAP clients (nss/pam_ldap), slapd.conf, keepalived
_OTHER_PASSWORD_WORDS = r"(?i:bindpw|rootpw)|auth_pass"  # noqa: S105 - a pattern
PASSWORD_LINE_RULE = ShapeRule(
    "password",
    # alone on its line (a multi-line .netrc entry, msmtprc, a Cisco `line vty` block), or within
    # a one-line .netrc/fetchmailrc entry (`machine h password p login u`, `poll h ... password "p"`)
    r"^[ \t]*" + _PASSWORD_WORD.format(q="quoted", v="password") + r"[ \t]*$"
    r"|^[ \t]*(?:" + _OTHER_PASSWORD_WORDS + r")[ \t]+(?:\"(?P<other_quoted>[^\"]+)\"|(?P<other>[^\s\"]\S*))[ \t]*$"
    r"|^[ \t]*(?:machine|default|account|poll|skip|user)\b[^\n]{0,1024}?[ \t]"
    + _PASSWORD_WORD.format(q="entry_quoted", v="entry")
    + r"(?=[ \t]|$)",
    needles("password ", "password\t", folded=True)
    + needles("bindpw", "rootpw", "auth_pass", ahead=r"[ \t]+\S", folded=True),
    {
        "quoted": "password",
        "password": "password",
        "other_quoted": "password",
        "other": "password",
        "entry_quoted": "password",
        "entry": "password",
    },
    judge=lambda match, group, value, kind: (
        _SCHEME_VALUE.fullmatch(value) is not None
        or (literal_secret(value) and (group.endswith("quoted") or _config_literal(match, group, value, kind)))
    ),
    literal=lambda _: True,  # `rootpw {SSHA}...` is a hash, not a template: judged above
)

# ---- htpasswd, /etc/shadow, LDIF: `user:hash`; and .pgpass entries -----------------------------------

# Both `user:...` shapes of credential stores, and .pgpass entries.
CREDENTIAL_STORE_RULE = ShapeRule(
    "password",
    # pwdump and smbpasswd: `user:uid:LM hash:NT hash:...` (an NT hash is enough to sign in)
    r"^[ \t]*[^:\s]+:\d+:(?:(?P<lm>[0-9A-Fa-f]{32})|[^:\s]+):(?P<nt>[0-9A-Fa-f]{32}):"
    r"|^[ \t]*[A-Za-z0-9_][\w.@-]*\$?:(?P<hash>!{0,2}(?:" + _CRYPT + "|" + _SCHEME + r"))(?=:|[ \t]*$)"
    r"|^(?i:[ \t]*(?:userPassword|olcRootPW))(?::[ \t]*(?P<ldap>"
    + _SCHEME
    + r")|::[ \t]*(?P<ldif>[A-Za-z0-9+/]{8,}={0,2}))[ \t]*$"
    r"|(?:^|(?<=[\s\"'`]))[ \t]*(?:\*|[\w.-]*[A-Za-z.][\w.-]*):(?:\*|\d{1,5}):"
    + _PGPASS_FIELD
    + ":"
    + _PGPASS_FIELD
    + r":(?P<password>(?:[^:\\\s\"'`]|\\.)+)(?=[\s\"'`]|$)",
    # `:` and the next character as the literal: `://` (every URI) must not run this rule too.
    needles(":$", ":{")
    + needles(":!", ahead=r"!?[${]")
    + needles(*(f":{first}" for first in "0123456789*"), ahead=r"\d{0,4}:(?:[^\s:\\]|\\.)++:(?:[^\s:\\]|\\.)++:\S")
    + needles("userpassword:", "olcrootpw:", folded=True),
    {
        "lm": "password_hash",
        "nt": "password_hash",
        "hash": "password_hash",
        "ldap": "password_hash",
        "ldif": "password_hash",
        "password": "password",
    },
    judge=_pgpass_entry,
    literal=lambda _: True,  # `{SHA}...` is a scheme, not a template; a .pgpass password is judged apart
)

# ---- Wi-Fi: wpa_supplicant `psk="..."`/64 hex, hostapd, NetworkManager, ifupdown `wpa-psk` -----------


def _psk(match: Match, group: str, value: str, kind: Kind) -> bool:
    # Unquoted: a passphrase to the end of the line in a config file; in code only 64 hex digits
    # (`psk=psk,` is an argument). Commented out, only a quoted one: `# WPA-PSK = WPA pre-shared
    # key` is the example file's prose.
    if group == "quoted":
        return True
    if match.group("comment") is not None:
        return False
    if kind() is FileKind.CONFIG:
        return _config_literal(match, group, value, kind)
    return re.fullmatch(r"[0-9a-fA-F]{64}", value) is not None


WIFI_RULE = ShapeRule(
    "password",
    r"^[ \t]*(?P<comment>#[ \t]*)?(?i:psk|wpa_psk|wpa_passphrase|sae_password|wpa-psk)(?:[ \t]*=[ \t]*|[ \t]+)"
    r"(?:\"(?P<quoted>[^\"]+)\"|(?P<password>[^\s\"'#][^\n]*?))[ \t]*$",
    needles("psk", ahead=r"[ \t]*=|[ \t]+\S", folded=True) + needles("wpa_passphrase", "sae_password", folded=True),
    {"quoted": "password", "password": "password"},
    judge=_psk,
)

# ---- redis: `requirepass x`, `masterauth x`, `CONFIG SET requirepass x`, ACL `user u on >pw` ----------

_REDIS_ACL_LINE = re.compile(r"(?i:[ \t]*(?:user|acl[ \t]+setuser))[ \t]+\S+[ \t][^\n]*(?<=[ \t])(?:on|off)(?=[ \t]|$)")


def _redis_acl(match: Match, group: str, _: str, __: Kind) -> bool:
    return group != "acl" or _REDIS_ACL_LINE.match(match.string) is not None


REDIS_RULE = ShapeRule(
    "password",
    r"(?:^[ \t]*|(?i:\bconfig[ \t]+set[ \t]+))(?i:requirepass|masterauth)[ \t]+"
    r"(?:\"(?P<quoted>(?:[^\"\\]|\\.)+)\"|'(?P<single>[^']+)'|(?P<password>[^\s\"']\S*))[ \t]*$"
    # ACL rules: every `>password` of a `user`/`ACL SETUSER` line that switches the user on or off
    r"|(?<=[ \t])>(?P<acl>\S+)(?=(?:[ \t]|$))",
    needles("requirepass", "masterauth", folded=True)
    + needles("user ", ahead=r"[^\n]*[ \t]>", folded=True)
    + needles("setuser", ahead=r"[^\n]*[ \t]>", folded=True),
    {"quoted": "password", "single": "password", "password": "password", "acl": "password"},
    judge=_redis_acl,
)


# ---- strongSwan/libreswan ipsec.secrets: `[ids] : PSK "secret"`, `: EAP "pw"`, `: RSA key.pem "passphrase"` --

IPSEC_SECRETS_RULE = ShapeRule(
    "password",
    r"(?:^|[ \t]):[ \t]*(?:PSK|EAP|XAUTH|NTLM|PIN|(?:RSA|ECDSA|BLISS|P12|PKCS8|PKCS12)[ \t]+\S+)[ \t]+"
    r"(?:\"(?P<quoted>[^\"]+)\"|'(?P<single>[^']+)'|(?P<encoded>0[xs][A-Za-z0-9+/=]+))",
    needles(*(f": {kind}" for kind in ("PSK", "EAP", "XAUTH", "NTLM", "PIN", "RSA", "ECDSA", "BLISS", "P12", "PKCS"))),
    {"quoted": "password", "single": "password", "encoded": "password"},
)

# ---- PuTTY .ppk: `Private-Lines: N`, then N base64 lines, then `Private-MAC: <hex>` ------------------

_PPK_PRIVATE_LINES = re.compile(r"[ \t]*Private-Lines:[ \t]*(?P<count>\d{1,3})[ \t]*")
# base64: 64 characters a line, the last one shorter (but not a word of code: `return`, `pass`)
_PPK_PAYLOAD = re.compile(r"(?P<lead>[ \t]*)(?![A-Za-z]{1,31}[ \t]*$)[A-Za-z0-9+/]+={0,2}[ \t]*")
_PPK_MAC = re.compile(r"(?P<lead>[ \t]*Private-(?:MAC|Hash):[ \t]*)[0-9a-fA-F]{16,}[ \t]*")


def _ppk_lines() -> Callable[[str], str | None]:
    """A judge for the lines after `Private-Lines:`: base64 payload, then the MAC, which ends it."""
    ended = False

    def judge(body: str) -> str | None:
        nonlocal ended
        line = None if ended else _PPK_PAYLOAD.fullmatch(body) or _PPK_MAC.fullmatch(body)
        if line is None:
            return None
        ended = line.re is _PPK_MAC
        return line.group("lead") + placeholder("private_key")

    return judge


# ---- SMTP AUTH: `AUTH PLAIN <base64 of \0user\0password>`, and the client's line after the server's
# `334 UGFzc3dvcmQ6` ("Password:" in base64) or after a bare `AUTH PLAIN`; IMAP's `A1 AUTHENTICATE
# PLAIN` likewise (its server continues with `+`) --------------------------------------------------

_TRANSCRIPT_LINE = re.compile(
    r"(?P<lead>[ \t]*(?:[CS]:|<<<|>>>|<-|->|[<>])?[ \t]*)(?P<b64>[A-Za-z0-9+/]{4,}={0,2})(?P<trail>[ \t]*)"
)
_SERVER_CONTINUE = re.compile(r"[ \t]*(?:S:|<<<|<-|<)?[ \t]*(?:334|\+)[ \t]*")
_PASSWORD_PROMPT = re.compile(r"\b334[ \t]+(?:UGFzc3dvcmQ6|cGFzc3dvcmQ6)[ \t]*$")
_AUTH_PLAIN_ALONE = re.compile(r"(?i:\bauth(?:enticate)?[ \t]+plain)[ \t]*$")


def _plain_credentials(value: str) -> bool:
    decoded = _b64decode(value)
    return decoded is not None and decoded.count(b"\0") == 2 and len(decoded) > 3


def _transcript_secret(body: str, plain: bool) -> str | None:
    """The client's base64 line redacted (`plain`: an AUTH PLAIN blob, after which a bare `334`
    server line is passed over; else the password after a `334 Password:` prompt)."""
    if plain and _SERVER_CONTINUE.fullmatch(body):
        return body
    line = _TRANSCRIPT_LINE.fullmatch(body)
    if line is None or _b64decode(line.group("b64")) is None:
        return None
    if plain and not _plain_credentials(line.group("b64")):
        return None
    return line.group("lead") + placeholder("basic_auth" if plain else "password") + line.group("trail")


class SmtpAuthRule(ShapeRule):
    def __init__(self) -> None:
        super().__init__(
            "basic_auth",
            r"(?i:\bauth(?:enticate)?[ \t]+plain)[ \t]+(?P<b64>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
            needles("auth plain", "authenticate plain", folded=True)
            + needles("ugfzc3dvcmq6", "cgfzc3dvcmq6", folded=True),
            {"b64": "basic_auth"},
            judge=lambda _, __, value, ___: _plain_credentials(value),
        )

    def below(self, body: str) -> LinesBelow | None:
        if _PASSWORD_PROMPT.search(body):
            return LinesBelow("password", 1, lambda line: _transcript_secret(line, plain=False), every=False)
        if _AUTH_PLAIN_ALONE.search(body):
            return LinesBelow("basic_auth", 2, lambda line: _transcript_secret(line, plain=True), every=False)
        return None


class PuttyKeyRule(Rule):
    """The private lines of a PuTTY `.ppk` key file (the scanner walks them: Rule.below)."""

    def __init__(self) -> None:
        super().__init__("private_key", needles("private-lines:", folded=True))

    def apply(self, body: str, kind: Kind, counts: Counter[str]) -> str:
        return body

    def below(self, body: str) -> LinesBelow | None:
        header = _PPK_PRIVATE_LINES.fullmatch(body)
        if header is None:
            return None
        # In a diff a changed key has its removed and added lines one after the other: up to
        # twice the count, and the MAC line (the payload ends at the first line that is not).
        return LinesBelow("private_key", 2 * int(header.group("count")) + 1, _ppk_lines(), every=True)


# ---- Subversion's auth cache (`~/.subversion/auth/svn.simple/*`): `password`, then `V <length>`, then
# the password on a line of its own ------------------------------------------------------------------

_SVN_LENGTH = re.compile(r"[ \t]*V[ \t]+\d+[ \t]*")


def _svn_value() -> Callable[[str], str | None]:
    """A judge for the lines after `password`: the `V <length>` line, then the value."""
    seen_length = False

    def judge(body: str) -> str | None:
        nonlocal seen_length
        if not seen_length:
            seen_length = _SVN_LENGTH.fullmatch(body) is not None
            return body if seen_length else None
        return placeholder("password") if body.strip() and REDACTED_MARK not in body else None

    return judge


class SvnAuthRule(Rule):
    def __init__(self) -> None:
        super().__init__("password", needles("password", ahead=r"[ \t]*\r?\n[-+ ]?v[ \t]+\d", folded=True))

    def apply(self, body: str, kind: Kind, counts: Counter[str]) -> str:
        return body

    def below(self, body: str) -> LinesBelow | None:
        return LinesBelow("password", 2, _svn_value(), every=False) if body.strip() == "password" else None


# ---- Docker config JSON (`{"auths": {...}}`) as base64: a `.dockerconfigjson`/`.dockercfg` value --------

# `{"auths"`, `{\n  "auths"`, `{\n    "auths"`, `{\n\t"auths"`, `{ "auths"`, `{\r\n  "auths"` and the
# old `.dockercfg`'s `{"https://` in base64 (searched from a later letter: `e` is everywhere).
_DOCKER_CONFIG_STARTS = (  # (what comes before, the literal searched): literals of existing groups
    ("ey", "JhdXRocyI"),
    ("ewogIC", "JhdXRocyI"),
    ("ewogICA", "gImF1dGhzIj"),
    ("ewo", "JImF1dGhzIj"),
    ("ey", "AiYXV0aHMiO"),
    ("ew0KIC", "AiYXV0aHMi"),
    ("ey", "JodHRwczovL"),
)


def _docker_config(_: Match, __: str, value: str, ___: Kind) -> bool:
    decoded = _b64decode(value)
    return decoded is not None and any(key in decoded for key in (b'"auth"', b'"password"', b'"identitytoken"'))


DOCKER_CONFIG_RULE = ShapeRule(
    "docker_config",
    r"(?<![A-Za-z0-9+/=_-])(?P<blob>e[wy][A-Za-z0-9+/]{16,}={0,2})(?![A-Za-z0-9+/=_-])",
    tuple(needle for behind, rest in _DOCKER_CONFIG_STARTS for needle in needles(rest, behind=behind))
    + needles("dockerconfigjson", "dockercfg", folded=True),
    {"blob": "docker_config"},
    judge=_docker_config,
)

# ---- .npmrc / .yarnrc.yml: `_authToken=`, `//registry/:_auth=`, `_password=`, `npmAuthIdent:` ------

NPMRC_RULE = ShapeRule(
    "api_key",
    r"(?:^|(?<=[\s:\"']))(?:(?:_authToken|npmAuthToken)[ \t]*[=:][ \t]*[\"']?(?P<token>[^\s\"'#;]+)"
    r"|(?:_auth|_authIdent|npmAuthIdent)[ \t]*[=:][ \t]*[\"']?(?P<auth>[^\s\"'#;]+)"
    r"|_password[ \t]*=[ \t]*[\"']?(?P<password>[^\s\"'#;]+))",
    needles("_auth", ahead=r"(?:token|ident)?[ \t]*[=:]", folded=True)
    + needles("_password", ahead=r"[ \t]*=", folded=True)
    + needles("npmauth", ahead=r"(?:token|ident)[ \t]*:", folded=True),
    {"token": "api_key", "auth": "basic_auth", "password": "password"},
    judge=_config_literal,
)

# ---- a PEM private key in base64 (kubeconfig `client-key-data:`, a Secret's `tls.key:`) --------------

_PRIVATE_PEM_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _private_pem(_: Match, __: str, value: str, ___: Kind) -> bool:
    decoded = _b64decode(value[:64])  # `-----BEGIN <label>-----` is in the first 48 bytes
    return decoded is not None and b"PRIVATE KEY" in decoded


BASE64_PRIVATE_KEY_RULE = ShapeRule(
    "private_key",
    r"(?<![A-Za-z0-9+/])(?P<key>LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2})(?![A-Za-z0-9+/=])",
    needles("JTi", behind="LS0tLS1CRUd"),  # base64 of `-----BEGIN` (searched from its rarer `J`)
    {"key": "private_key"},
    judge=_private_pem,
)

# ---- FileZilla `<Pass>`, Postfix sasl_passwd `[host]:port user:password`, ~/.cvspass, sssd.conf -------

OTHER_CLIENT_RULE = ShapeRule(
    "password",
    r"<Pass(?:[ \t]+encoding=\"base64\")?>(?P<filezilla>[^<\s]+)</Pass>"
    r"|^[ \t]*\[[\w.-]+\]:\d{1,5}[ \t]+[^\s:]+:(?P<sasl>\S+)[ \t]*$"
    r"|^(?:/1[ \t]+)?:pserver:\S+[ \t]+(?P<cvs>A\S*)[ \t]*$"  # ~/.cvspass: a scrambled, reversible password
    r"|(?i:\bldap_default_authtok)[ \t]*=[ \t]*(?P<sssd>\S(?:[^\n]*\S)?)[ \t]*$",  # sssd.conf
    # literals of existing first-character groups (`p`, `:`), longer than other rules' `pass`
    needles("pass>", "pass encoding=", behind="<", folded=True)
    + needles(":", behind="]", ahead=r"\d{1,5}[ \t]+[^\s:]+:\S")
    + needles(":pserver:")
    + needles("authtok", ahead=r"[ \t]*=", folded=True),
    {"filezilla": "password", "sasl": "password", "cvs": "password", "sssd": "password"},
)

CREDENTIAL_FILE_RULES: tuple[Rule, ...] = (
    CREDENTIAL_STORE_RULE,
    PASSWORD_LINE_RULE,
    WIFI_RULE,
    REDIS_RULE,
    NETWORK_DEVICE_RULE,
    IPSEC_SECRETS_RULE,
    PuttyKeyRule(),
    SmtpAuthRule(),
    DOCKER_CONFIG_RULE,
    NPMRC_RULE,
    BASE64_PRIVATE_KEY_RULE,
    OTHER_CLIENT_RULE,
    SvnAuthRule(),
)
