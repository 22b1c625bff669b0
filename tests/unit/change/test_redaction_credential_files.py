"""Credential files and connection strings (issue 28 items 3 and 4): every form of a network
device line the rule knows, and the lines below a line that names them (Rule.below)."""

from __future__ import annotations

import pytest

from p4review.change.redaction import redact

DEVICE_LINES = [
    ("enable secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0", "hx5rVt7rPNoS4wqbXKX7m0", "password_hash"),
    ("enable password Cisco123x", "Cisco123x", "password"),
    ("username admin privilege 15 password 7 0822455D0A16", "0822455D0A16", "password"),
    ("username ops secret 9 $9$nhEmQVczB7dqsO$X.HsgL6x1il0RxkOSSvyQYwucySCt7qFm4v7", "X.HsgL6x1il0", "password_hash"),
    ("tacacs-server host 10.1.1.1 key 7 0822455D0A17", "0822455D0A17", "password"),
    ("radius-server key R4d1usK3y", "R4d1usK3y", "password"),
    (" key 7 094F471A1A0B", "094F471A1A0B", "password"),
    (" password 7 0822455D0A18", "0822455D0A18", "password"),
    (" key-string 7 094F471A1A0A", "094F471A1A0A", "password"),
    (" ip ospf authentication-key 0sPfK3y9", "0sPfK3y9", "password"),
    (" ip ospf message-digest-key 1 md5 Md5K3yX", "Md5K3yX", "password"),
    ("ntp authentication-key 1 md5 NtpK3y77 7", "NtpK3y77", "password"),
    ("crypto isakmp key Is4kmpK3y address 203.0.113.5", "Is4kmpK3y", "password"),
    (" pre-shared-key local Psk3yL0cal", "Psk3yL0cal", "password"),
    (" neighbor 203.0.113.9 password 7 1511021F0725", "1511021F0725", "password"),
    (" ppp chap password 7 020512075A0C", "020512075A0C", "password"),
    (" wpa-psk ascii 0 W1f1Pass99", "W1f1Pass99", "password"),
    ('    secret "$9$dkb.Pn9Ct0IEcSr";', "dkb.Pn9Ct0IEcSr", "password_hash"),
    ('    encrypted-password "$6$Zq2Lw9Xv$Ab3De5Gh7Jk9Mn1";', "Ab3De5Gh7Jk9Mn1", "password_hash"),
    ("snmp-server community Pr1vComm RO 10", "Pr1vComm", "password"),
    ("snmp-server host 10.1.1.2 version 2c TrapC0mm", "TrapC0mm", "password"),
    ("rocommunity R0C0mmunity 10.0.0.0/8", "R0C0mmunity", "password"),
    ("com2sec readonly default S3cC0mm", "S3cC0mm", "password"),
]


@pytest.mark.parametrize("line, secret, name", DEVICE_LINES)
def test_every_network_device_form(line: str, secret: str, name: str):
    document = redact("+" + line + "\n")
    assert secret not in document.text
    assert document.counts.get(name) == 1, dict(document.counts)


def test_snmp_v3_users_have_two_secrets():
    for line in (
        "snmp-server user ops grp v3 auth sha Au7hPass1 priv aes 128 Pr1vPass2",
        'createUser ops SHA "Au7hPass1" AES "Pr1vPass2"',
    ):
        document = redact("+" + line + "\n")
        assert "Au7hPass1" not in document.text and "Pr1vPass2" not in document.text
        assert document.counts == {"password": 2}


def test_putty_key_lines_stop_where_the_count_says():
    text = "+Private-Lines: 1\n+AAABAHSnfAqK1mFpuU2y+3vbnNzZq0x4h9VbzJ1lD0Nx3N8\n+Private-MAC: 5f1c2a7d9b8e6f4a3c2d\n+QUFB\n"
    document = redact(text)
    assert document.text == (
        "+Private-Lines: 1\n+[REDACTED:private_key]\n+Private-MAC: [REDACTED:private_key]\n+QUFB\n"
    )
    assert document.counts == {"private_key": 1}


def test_smtp_password_after_the_prompt_and_plain_after_334():
    login = "+S: 334 UGFzc3dvcmQ6\n+C: U2VjcmV0UGFzczk=\n+C: QUIT\n"
    assert redact(login).text == "+S: 334 UGFzc3dvcmQ6\n+C: [REDACTED:password]\n+C: QUIT\n"
    plain = "+C: AUTH PLAIN\n+S: 334\n+C: AHVzZXIAUzNjcjN0UGFzcw==\n"
    assert redact(plain).text == "+C: AUTH PLAIN\n+S: 334\n+C: [REDACTED:basic_auth]\n"
    not_plain = "+C: AUTH PLAIN\n+S: 334\n+C: QUIT\n"
    assert redact(not_plain).text == not_plain


def test_ipsec_secrets():
    text = (
        '+@moon @sun : PSK "v+NkxY9LLZvwj4qCC2o/gGrWDF2d21jL"\n+: RSA moonKey.pem "Pr1vP4ss"\n+carol : EAP "Ca7olPw"\n'
    )
    document = redact(text)
    assert document.counts == {"password": 3}
    assert "Pr1vP4ss" not in document.text and "v+NkxY9" not in document.text


def test_one_line_netrc_and_fetchmail_entries():
    text = (
        "+machine api.example.com password 9fQx2LmZ7pWc login deploy\n"
        '+poll mail.example.com protocol pop3 user "joe" password "Fm7xQ2pLz"\n'
    )
    document = redact(text)
    assert "9fQx2LmZ7pWc" not in document.text and "Fm7xQ2pLz" not in document.text


def test_putty_key_lines_of_a_changed_key():
    text = "+Private-Lines: 2\n-QUFBQUFB0w==\n-QkJCQkJC1w==\n+Q0NDQ0ND2w==\n+RERERERE3w==\n Private-MAC: abcdef0123456789abcdef\n def f():\n"
    assert redact(text).text == (
        "+Private-Lines: 2\n"
        + "-[REDACTED:private_key]\n" * 2
        + "+[REDACTED:private_key]\n" * 2
        + " Private-MAC: [REDACTED:private_key]\n def f():\n"
    )
