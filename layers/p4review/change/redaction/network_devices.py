"""Network device configuration (Cisco IOS/NX-OS, Juniper, net-snmp): enable and user passwords
and their hashes, SNMP communities and SNMPv3 passwords, TACACS+/RADIUS keys, key chains, routing
protocol and IKE pre-shared keys. A credential file of its own kind: see credential_files.py."""

from __future__ import annotations

import re
from collections import Counter

from p4review.change.redaction.base import Rule, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import needles
from p4review.change.redaction.shaped import Kind, literal_secret
from p4review.change.redaction.values import REDACTED_MARK, unquoted_value_is_secret

# What precedes a secret on a device configuration line (the line starts with it).
_DEVICE_PREFIX = re.compile(
    r"^[ \t]*(?:"
    r"enable[ \t]+(?:secret|password)(?:[ \t]+level[ \t]+\d+)?"
    r"|username[ \t]+\S+(?:[ \t]+\S+)*?[ \t]+(?:password|secret)"
    r"|(?:tacacs|radius)-server[ \t]+(?:host[ \t]+\S+(?:[ \t]+\S+)*?[ \t]+)?key"
    r"|key(?=[ \t]+[067][ \t])"  # `key 7 ...` inside a `tacacs server` or `radius server` block
    r"|password(?=[ \t]+[07][ \t])"  # `password 7 ...` inside a `line vty` block
    r"|key-string"
    r"|(?:ip[ \t]+ospf[ \t]+|ntp[ \t]+)?authentication-key(?:[ \t]+\d+[ \t]+md5)?"
    r"|(?:ip[ \t]+ospf[ \t]+)?message-digest-key[ \t]+\d+[ \t]+md5"
    r"|crypto[ \t]+isakmp[ \t]+key"
    r"|pre-shared-key(?:[ \t]+(?:local|remote|address[ \t]+\S+|ascii-text))?"
    r"|neighbor[ \t]+\S+[ \t]+password"
    r"|ppp[ \t]+(?:chap|pap)[ \t]+(?:password|sent-username[ \t]+\S+[ \t]+password)"
    r"|wpa-psk[ \t]+ascii"
    r"|(?:secret|encrypted-password)(?=[ \t]+\"\$)"  # Juniper: `secret "$9$..."`
    r"|snmp-server[ \t]+community"
    r"|snmp-server[ \t]+host[ \t]+\S+(?:[ \t]+(?:informs|traps))?(?:[ \t]+version[ \t]+(?:1|2c))?"
    r"|(?:ro|rw|trap)community6?"
    r"|com2sec6?(?:[ \t]+-Cn[ \t]+\S+)?[ \t]+\S+[ \t]+\S+"
    r")[ \t]+",
    re.IGNORECASE,
)
# Then: an optional encryption type (0 plain, 7 reversible, 5/8/9 hashes), and the value.
_DEVICE_VALUE = re.compile(r"(?:(?P<type>\d)[ \t]+(?=\S))?(?:\"(?P<quoted>[^\"]+)\"|(?P<value>\S+))")
# Two secrets on one line: `snmp-server user u g v3 auth sha AUTH priv aes 128 PRIV`, net-snmp's
# `createUser u SHA "auth" AES "priv"`.
_SNMP_V3 = re.compile(
    r"^[ \t]*(?:snmp-server[ \t]+user[ \t]+\S+[ \t]+\S+[ \t]+v3(?:[ \t]+encrypted)?[ \t]+auth[ \t]+\S+"
    r"|createUser[ \t]+(?:-e[ \t]+\S+[ \t]+)?\S+[ \t]+(?:MD5|SHA\S*))[ \t]+(?P<auth>\"[^\"]+\"|\S+)"
    r"(?:[ \t]+(?:priv[ \t]+\S+(?:[ \t]+\d+)?|DES|AES\S*)[ \t]+(?P<priv>\"[^\"]+\"|\S+))?",
    re.IGNORECASE,
)
_CRYPT_VALUE = re.compile(r"\$\w+\$\S+")
# What may follow a typed password on a `username` line (NX-OS, IOS).
_DEVICE_TRAIL = re.compile(r"[ \t]+(?:role|privilege|expire|sshkey|priv-lvl)\b", re.IGNORECASE)
# The first words _DEVICE_PREFIX and _SNMP_V3 accept: a cheap test first, since the needles
# `key`, `secret`, `password` also flag every assignment of code.
_DEVICE_WORDS = (
    "enable",
    "username",
    "tacacs",
    "radius",
    "key",
    "password",
    "ip ",
    "ntp",
    "authentication-key",
    "message-digest-key",
    "crypto",
    "pre-shared-key",
    "neighbor",
    "ppp",
    "wpa-psk",
    "secret",
    "encrypted-password",
    "snmp-server",
    "rocommunity",
    "rwcommunity",
    "trapcommunity",
    "com2sec",
    "createuser",
)
_WELL_KNOWN_COMMUNITIES = frozenset(("public", "version", "informs", "traps", "vrf"))


class NetworkDeviceRule(Rule):
    """`enable secret 5 $1$...`, `username u password 7 0822...`, `snmp-server community NAME RO`,
    `tacacs-server key x`, `key-string 7 ...`, `crypto isakmp key x address ...`, Juniper
    `secret "$9$..."`, net-snmp `rocommunity NAME`: the value; a hash (type 5/8/9, `$n$...`)
    counts as `password_hash`, anything else (plain, type 7: reversible) as `password`. The
    default community `public` is left: it is not a secret anyone holds."""

    def __init__(self) -> None:
        super().__init__(
            "password",
            needles("enable", ahead=r"[ \t]+(?:secret|password)[ \t]", folded=True)
            + needles("username", ahead=r"[ \t][^\n]*(?:password|secret)[ \t]", folded=True)
            + needles("-server", ahead=r"[ \t]", behind="tacacs", folded=True)
            + needles("-server", ahead=r"[ \t]", behind="radius", folded=True)
            + needles("snmp-server", ahead=r"[ \t]+(?:community|host|user)[ \t]", folded=True)
            + needles("key ", "key\t", ahead=r"[ \t]*[067][ \t]+\S", folded=True)
            + needles("password ", "password\t", ahead=r"[ \t]*[07][ \t]+\S", folded=True)
            + needles("key-string", "authentication-key", "message-digest-key", "pre-shared-key", folded=True)
            + needles("isakmp", ahead=r"[ \t]+key[ \t]", folded=True)
            + needles("neighbor", ahead=r"[ \t]+\S+[ \t]+password[ \t]", folded=True)
            + needles("ppp", ahead=r"[ \t]+(?:chap|pap)[ \t]", folded=True)
            + needles("wpa-psk", folded=True)
            + needles("secret ", "secret\t", "encrypted-password", ahead=r"""[ \t]*"\$""", folded=True)
            + needles("community", ahead=r"6?[ \t]+\S", folded=True)
            + needles("com2sec", "createuser", folded=True),
        )

    def apply(self, body: str, kind: Kind, counts: Counter[str]) -> str:
        if not body.lstrip(" \t")[:20].lower().startswith(_DEVICE_WORDS):
            return body
        spans: list[tuple[int, int, str]] = []
        prefix = _DEVICE_PREFIX.match(body)
        if prefix is not None:
            value = _DEVICE_VALUE.match(body, prefix.end())
            # `enable password x`, `username u password x` end their line: else it is a sentence;
            # unless a device keyword follows (`username admin password x role network-admin`,
            # NX-OS, typed or not) or an encryption type and a crypt hash
            may_trail = not prefix.group(0).lstrip().lower().startswith(("enable", "username"))
            if value is not None and not may_trail:
                may_trail = _DEVICE_TRAIL.match(body, value.end()) is not None or (
                    value.group("type") is not None
                    and _CRYPT_VALUE.fullmatch(value.group("quoted") or value.group("value")) is not None
                )
            if value is not None and (may_trail or not body[value.end() :].strip()):
                group = "quoted" if value.start("quoted") >= 0 else "value"
                secret = value.group(group)
                is_hash = value.group("type") in ("5", "8", "9") or _CRYPT_VALUE.fullmatch(secret) is not None
                community = "community" in prefix.group(0).lower() or "snmp-server" in prefix.group(0).lower()
                if (
                    REDACTED_MARK not in secret
                    and literal_secret(secret)
                    and not (community and secret.lower() in _WELL_KNOWN_COMMUNITIES)
                    and (is_hash or unquoted_value_is_secret(secret, lambda: kind() is FileKind.CONFIG))
                ):
                    spans.append((*value.span(group), "password_hash" if is_hash else "password"))
        v3 = _SNMP_V3.match(body)
        if v3 is not None:
            for group in ("auth", "priv"):
                start, end = v3.span(group)
                if start >= 0 and body[start] == '"':
                    start, end = start + 1, end - 1
                if start >= 0 and REDACTED_MARK not in body[start:end] and literal_secret(body[start:end]):
                    spans.append((start, end, "password"))
        for _, _, name in spans:
            counts[name] += 1
        return splice(body, sorted(spans))


NETWORK_DEVICE_RULE = NetworkDeviceRule()
