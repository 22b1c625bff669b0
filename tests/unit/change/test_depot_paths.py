"""p4review.change.depot_paths (pure) and the settings that configure it."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4review.change.depot_paths import (
    DEFAULT_ALLOW_LIST,
    DenialReason,
    DepotAllowList,
    PathDecision,
    PathRejected,
    normalize_depot_path,
    parse_allow_list,
    resolve_allow_list,
    sanitize_for_log,
    validate_allow_list_entry,
)
from p4review.errors import ConfigError, ErrorClass
from p4review.settings.blocks import P4Block

ALLOW = DepotAllowList(["//depot/ok/...", "//depot/libs/security/..."])


# --- entries ------------------------------------------------------------------------------------
@pytest.mark.spec("SEC-1")
@pytest.mark.parametrize(
    "entry", ["//depot/...", "//depot/projectA/...", "//Proj-x.1/a b/c_d/...", "  //depot/ok/...  "]
)
def test_valid_entries_are_kept_in_canonical_form(entry):
    assert validate_allow_list_entry(entry) == entry.strip()


@pytest.mark.spec("SEC-1")
def test_entries_are_stored_nfc():
    assert validate_allow_list_entry("//depot/cafe\u0301/...") == "//depot/caf\u00e9/..."


@pytest.mark.spec("SEC-2")
@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("//...", "names no depot"),
        ("///...", "names no depot"),
        ("//depot", "must have the form"),
        ("//depot/proj", "must have the form"),
        ("depot/proj/...", "must have the form"),
        ("/depot/...", "must have the form"),
        ("//depot/.../...", "wildcard"),
        ("//depot/proj.../...", "wildcard"),
        ("//depot/*/...", "wildcard"),
        ("//depot/proj/*", "must have the form"),
        ("//depot/%%1/...", "%%n"),
        ("//depot/proj@48000/...", "revision specifier"),
        ("//depot/proj#head/...", "revision specifier"),
        ("//depot/a%40b/...", "escape"),
        ("//depot//proj/...", "empty"),
        ("//depot/../secret/...", "'..'"),
        ("//depot/./proj/...", "'.'"),
        ("//depot/proj\u2215x/...", "lookalike character"),
        ("//depot/proj\uff0fx/...", "lookalike character"),
        ("//depot/\u202eproj/...", "invisible character"),
        ("//depot/pr\u200boj/...", "invisible character"),
        ("//depot/proj\x1b[2J/...", "control character"),
    ],
)
def test_invalid_entries_are_a_config_error_naming_the_entry(entry, problem):
    with pytest.raises(ConfigError) as caught:
        parse_allow_list(["//depot/ok/...", entry])
    message = caught.value.message
    assert caught.value.error_class is ErrorClass.CONFIG_ERROR
    assert "P4REVIEW_DEPOT_ALLOW_LIST entry #2" in message and problem in message
    assert all(unicodedata.category(char)[0] != "C" for char in message)  # control chars are escaped


def test_config_error_shows_control_characters_escaped():
    with pytest.raises(ConfigError) as caught:
        parse_allow_list("//depot/a\x1b[31m\u202e/...")
    assert "//depot/a\\x1b[31m\\u202e/..." in caught.value.message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('["//depot/a/...", "//depot/b/..."]', ("//depot/a/...", "//depot/b/...")),
        ("//depot/a/...,//depot/b/...", ("//depot/a/...", "//depot/b/...")),
        ("//depot/a/...\n//depot/b/...\n", ("//depot/a/...", "//depot/b/...")),
        ("//depot/a/...\r\n//depot/b/...", ("//depot/a/...", "//depot/b/...")),
        (" //depot/a/... , //depot/b/... ", ("//depot/a/...", "//depot/b/...")),
        ("//depot/a/...,//depot/a/...", ("//depot/a/...",)),
        ('["//depot/a,b/..."]', ("//depot/a,b/...",)),
        (["//depot/a/..."], ("//depot/a/...",)),
    ],
)
def test_allow_list_formats(raw, expected):
    assert parse_allow_list(raw) == expected


@pytest.mark.spec("SEC-2")
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "is empty"),
        ("   \n", "is empty"),
        ("[]", "is empty"),
        ([], "is empty"),
        (",", "entry #1 is empty"),
        ("//depot/a/...,,//depot/b/...", "entry #2 is empty"),
        ('["//depot/a/...", ""]', "entry #2 is empty"),
        ('["//depot/a/...", 5]', "entry #2 is not a string"),
        ("[//depot/a/...]", "not a valid JSON array"),
        ('["//depot/a/..."', "not a valid JSON array"),
    ],
)
def test_bad_lists_are_config_errors(raw, problem):
    with pytest.raises(ConfigError) as caught:
        parse_allow_list(raw)
    assert problem in caught.value.message


def test_unset_list_defaults_only_in_explicit_local_and_test():
    assert resolve_allow_list(None, "local") == resolve_allow_list(None, "test") == DEFAULT_ALLOW_LIST
    assert DEFAULT_ALLOW_LIST == ("//depot/...",)
    assert resolve_allow_list(("//depot/a/...",), "prod") == ("//depot/a/...",)
    for environment in ("prod", "dev", "staging", None, ""):
        with pytest.raises(ConfigError):
            resolve_allow_list(None, environment)


# --- settings ---------------------------------------------------------------------------------------
P4_FUNCTION = {"P4REVIEW_P4_EXECUTABLE": "/opt/bin/p4"}


def test_settings_parse_the_list_and_the_case_setting():
    settings = P4Block.model_validate(
        {
            **P4_FUNCTION,
            "P4REVIEW_ENV": "prod",
            "P4REVIEW_DEPOT_ALLOW_LIST": '["//depot/a/...", "//depot/b/..."]',
            "P4REVIEW_P4_CASE_INSENSITIVE": "true",
        }
    )
    assert settings.depot_prefixes() == ("//depot/a/...", "//depot/b/...") and settings.p4_case_insensitive
    assert P4Block.model_validate({**P4_FUNCTION, "P4REVIEW_ENV": "local"}).p4_case_insensitive is False


def test_settings_refuse_a_bad_list_naming_the_entry():
    with pytest.raises(ConfigError) as caught:
        P4Block.model_validate(
            {**P4_FUNCTION, "P4REVIEW_ENV": "prod", "P4REVIEW_DEPOT_ALLOW_LIST": "//depot/a/...,//depot/*/..."}
        )
    assert 'entry #2 "//depot/*/..."' in caught.value.message


@pytest.mark.spec("SEC-2")
def test_a_p4_function_outside_local_and_test_needs_a_list():
    with pytest.raises(ConfigError) as caught:
        P4Block.model_validate({**P4_FUNCTION, "P4REVIEW_ENV": "prod"})
    assert "P4REVIEW_DEPOT_ALLOW_LIST is not set" in caught.value.message
    with pytest.raises(ConfigError):  # P4REVIEW_ENV unset is not "local" for this purpose
        P4Block.model_validate(P4_FUNCTION)
    assert P4Block.model_validate({**P4_FUNCTION, "P4REVIEW_ENV": "local"}).depot_prefixes() == ("//depot/...",)


@pytest.mark.spec("SEC-2")
def test_cold_start_fails_on_a_bad_list(monkeypatch):
    from p4review.fetch.settings import FetchSettings

    monkeypatch.setenv("P4REVIEW_ENV", "test")
    monkeypatch.setenv("P4REVIEW_DEPOT_ALLOW_LIST", "//...")
    with pytest.raises(ConfigError) as caught:
        FetchSettings.from_env()
    assert '"//..."' in caught.value.message


# --- normalization ------------------------------------------------------------------------------------
@pytest.mark.spec("SEC-4")
@pytest.mark.parametrize(
    ("path", "normalized"),
    [
        ("//depot/ok/a.c", "//depot/ok/a.c"),
        ("//depot/ok/./a.c", "//depot/ok/a.c"),
        ("//depot/ok//a.c", "//depot/ok/a.c"),
        ("//depot/ok/x/../a.c", "//depot/ok/a.c"),
        ("//depot/ok/%2E%2E/a.c", "//depot/a.c"),
        ("//depot/ok/icon%402x.png", "//depot/ok/icon@2x.png"),
        ("//depot/ok/100%25.txt", "//depot/ok/100%.txt"),
        ("//depot/ok/%2540", "//depot/ok/%40"),  # decoded once, like p4
        ("//depot/ok/cafe\u0301", "//depot/ok/caf\u00e9"),
    ],
)
def test_normalize(path, normalized):
    assert normalize_depot_path(path) == normalized


@pytest.mark.spec("SEC-4")
@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", DenialReason.NOT_DEPOT_SYNTAX),
        ("depot/a.c", DenialReason.NOT_DEPOT_SYNTAX),
        ("-p evil:1666", DenialReason.NOT_DEPOT_SYNTAX),
        ("//", DenialReason.NOT_DEPOT_SYNTAX),
        ("//depot/..", DenialReason.CLIMBS_ABOVE_ROOT),
        ("//depot/ok/../../etc/passwd", DenialReason.CLIMBS_ABOVE_ROOT),
        ("//depot/ok/%2e%2e/%2E%2E/x", DenialReason.CLIMBS_ABOVE_ROOT),
        ("//depot/a.c#1", DenialReason.REVISION_SPECIFIER),
        ("//depot/a.c@=48240", DenialReason.REVISION_SPECIFIER),
        ("//depot/*.c", DenialReason.WILDCARD),
        ("//depot/ok/...", DenialReason.WILDCARD),
        ("//depot/%%1/a.c", DenialReason.WILDCARD),
        ("//depot/100%.txt", DenialReason.BAD_ESCAPE),
        ("//depot/a%4", DenialReason.BAD_ESCAPE),
        ("//depot/a\nb", DenialReason.CONTROL_CHARACTER),
        ("//depot/a\x00b", DenialReason.CONTROL_CHARACTER),
        ("//depot/a\x85b", DenialReason.CONTROL_CHARACTER),
        ("//depot/a\u2028b", DenialReason.CONTROL_CHARACTER),
        ("//depot/a%0Ab", DenialReason.CONTROL_CHARACTER),
        ("//depot/ok\uff0f..\uff0fsecret", DenialReason.LOOKALIKE_CHARACTER),  # fullwidth solidus
        ("//depot/ok\u2215..\u2215secret", DenialReason.LOOKALIKE_CHARACTER),  # division slash
        ("//depot/ok\u2044secret", DenialReason.LOOKALIKE_CHARACTER),  # fraction slash
        ("//depot/ok/\u2025/x", DenialReason.LOOKALIKE_CHARACTER),  # two dot leader
        ("//depot/ok/\uff0e\uff0e/x", DenialReason.LOOKALIKE_CHARACTER),  # fullwidth full stops
        ("//depot/ok/a\uff20b", DenialReason.LOOKALIKE_CHARACTER),  # fullwidth commercial at
        ("//depot/ok/a\u200bb", DenialReason.INVISIBLE_CHARACTER),  # zero-width space
        ("//depot/ok/a\u200db", DenialReason.INVISIBLE_CHARACTER),  # zero-width joiner
        ("//depot/ok/\u202egnp.exe", DenialReason.INVISIBLE_CHARACTER),  # right-to-left override
        ("//depot/ok/\u2066x\u2069", DenialReason.INVISIBLE_CHARACTER),  # bidi isolates
        ("//depot/ok/\ufeffx", DenialReason.INVISIBLE_CHARACTER),
        ("//depot/ok/\u3164x", DenialReason.INVISIBLE_CHARACTER),  # Hangul filler
    ],
)
def test_normalize_rejects(path, reason):
    with pytest.raises(PathRejected) as caught:
        normalize_depot_path(path)
    assert caught.value.reason is reason
    assert ALLOW.check(path) == PathDecision(path=path, allowed=False, reason=reason, normalized=None)


# --- decisions ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    [
        "//depot/ok/a.c",
        "//depot/ok/deep/er/a.c",
        "//depot/libs/security/x.h",
        "//depot/ok/icon%402x.png",
        "//depot/ok/a b;c|d$(e)`f`.c",
        "//depot/ok/caf\u00e9.txt",
        "//depot/ok/cafe\u0301.txt",
        "//depot/ok/-x",
    ],
)
def test_allowed(path):
    decision = ALLOW.check(path)
    assert decision.allowed and decision.reason is None and ALLOW.allows(path)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("//depot/other/a.c", DenialReason.OUTSIDE_ALLOW_LIST),
        ("//depot/okay/a.c", DenialReason.OUTSIDE_ALLOW_LIST),  # a prefix of the name is not a prefix of the path
        ("//depot/ok", DenialReason.OUTSIDE_ALLOW_LIST),
        ("//depot/OK/a.c", DenialReason.OUTSIDE_ALLOW_LIST),  # case-sensitive by default
        ("//Depot/ok/a.c", DenialReason.OUTSIDE_ALLOW_LIST),
        ("//other/ok/a.c", DenialReason.OUTSIDE_ALLOW_LIST),
        ("//depot/ok/../secret/a.c", DenialReason.OUTSIDE_ALLOW_LIST),
        ("//depot/libs/../secret/a.c", DenialReason.OUTSIDE_ALLOW_LIST),
        # Inside once normalized, but p4 reads the raw spelling as another file: refused.
        ("//depot/secret/../ok/a.c", DenialReason.NON_CANONICAL),
        ("//depot/secret/%2E%2E/ok/a.c", DenialReason.NON_CANONICAL),
        ("//depot/ok/x/../a.c", DenialReason.NON_CANONICAL),
        ("//depot/ok//a.c", DenialReason.NON_CANONICAL),
        ("//depot/ok/./a.c", DenialReason.NON_CANONICAL),
        ("//depot/o%6B/a.c", DenialReason.NON_CANONICAL),  # %6B is "k" to us, literal text to p4
        ("//depot/ok%2Fa.c", DenialReason.NON_CANONICAL),
    ],
)
def test_denied(path, reason):
    decision = ALLOW.check(path)
    assert not decision.allowed and decision.reason is reason


@pytest.mark.spec("SEC-4")
def test_a_non_nfc_spelling_of_an_allowed_prefix_is_refused():
    # NFC says "café", but p4 compares the decomposed bytes: another directory.
    nfc = DepotAllowList(["//depot/caf\u00e9/..."])
    assert nfc.allows("//depot/caf\u00e9/a.c")
    assert nfc.check("//depot/cafe\u0301/a.c").reason is DenialReason.NON_CANONICAL
    # NFC maps KELVIN SIGN to "K" (a singleton): p4 still sees another name.
    assert DepotAllowList(["//depot/oK/..."]).check("//depot/o\u212a/a.c").reason is DenialReason.NON_CANONICAL


@pytest.mark.spec("SEC-4")
def test_case_insensitive_folds_ascii_only():
    insensitive = DepotAllowList(["//Depot/Proj/..."], case_insensitive=True)
    assert insensitive.allows("//depot/proj/a.c") and insensitive.allows("//DEPOT/PROJ/A.C")
    assert not insensitive.allows("//depot/other/a.c")
    # str.casefold() would map KELVIN SIGN to "k" and LONG S to "s"; p4 may not.
    kelvin = DepotAllowList(["//depot/key/..."], case_insensitive=True)
    assert not kelvin.allows("//depot/\u212aey/a.c")
    assert not DepotAllowList(["//depot/ss/..."], case_insensitive=True).allows("//depot/\u017f\u017f/a.c")
    assert not DepotAllowList(["//Depot/Proj/..."]).allows("//depot/proj/a.c")


def test_allow_list_constructor_validates():
    with pytest.raises(ConfigError):
        DepotAllowList(["//depot/*/..."])
    assert DepotAllowList("//depot/a/...,//depot/b/...").entries == ("//depot/a/...", "//depot/b/...")


# --- sanitizing -------------------------------------------------------------------------------------------
def test_sanitize_for_log_escapes_what_a_terminal_would_interpret():
    assert sanitize_for_log("//depot/a\x1b[2J\nb\u202ec\\d") == "//depot/a\\x1b[2J\\x0ab\\u202ec\\\\d"
    assert sanitize_for_log("//depot/\u2215x") == "//depot/\\u2215x"
    assert sanitize_for_log("x" * 600).endswith("x...") and len(sanitize_for_log("x" * 600)) == 515


@given(st.text())
def test_sanitized_text_has_no_control_or_invisible_characters(text):
    shown = sanitize_for_log(text)
    assert all(unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") for char in shown)


@given(st.text(alphabet=st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=20))
def test_plain_file_names_under_an_entry_are_allowed(name):
    assert ALLOW.allows(f"//depot/ok/{name}") and ALLOW.allows(f"//depot/libs/security/sub/{name}.h")
