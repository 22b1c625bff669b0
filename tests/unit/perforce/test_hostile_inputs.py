"""Hostile changelist ids, user names, operands and depot paths against the p4 boundary, without
starting p4: refusals happen before any process exists, and the allow-list's properties hold for
any spelling (Hypothesis). The fake-p4 half (a hostile depot served by a child process) is
tests/integration/fetch/test_hostile_depot.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4review.change.depot_paths import DepotAllowList, PathRejected, normalize_depot_path
from p4review.models.change import ChangeDescription, ChangedFile
from p4review.models.job import ChangeKind
from p4review.perforce import ChangeFetcher, P4ArgumentError, P4Runner
from p4review.perforce.values import depot_path_operand as _depot_path

ROOT = Path(__file__).resolve().parents[3]
FAKE_P4 = str(ROOT / "events" / "bin" / "p4")


def unstarted_runner() -> P4Runner:
    """A runner whose process would fail the unit suite's guard: a refusal must come first."""
    return P4Runner(FAKE_P4, timeout_seconds=30, env={})


# --- ids, names and operands from requests ---------------------------------------------------------------
@pytest.mark.parametrize(
    "changelist_id",
    [
        "-x",
        "-p evil:1666",
        "48213",
        "1; rm -rf /",
        "$(id)",
        "`id`",
        "1|cat",
        "1\n2",
        "1\x00",
        "../1",
        0,
        -1,
        True,
        1.5,
        None,
    ],
)
def test_hostile_changelist_ids_never_start_p4(changelist_id):
    with pytest.raises(P4ArgumentError):
        ChangeFetcher(unstarted_runner(), allow_list=DepotAllowList(["//depot/ok/..."])).describe(
            changelist_id, ChangeKind.SUBMITTED
        )


@pytest.mark.parametrize("name", ["-p evil:1666", "-x", "--help", "a\nb", "a\x00b", "\x1b[2J"])
def test_hostile_user_names_never_start_p4(name):
    with pytest.raises(P4ArgumentError):
        ChangeFetcher(unstarted_runner(), allow_list=DepotAllowList(["//depot/ok/..."])).user(name)


@pytest.mark.parametrize(
    "args",
    [
        ["print", "-q", "-p evil:1666"],
        ["print", "-p", "evil:1666", "//depot/ok/a.c"],
        ["diff2", "-du", "-x", "//a"],
        ["describe", "-s", "-x"],
        ["describe", "-s", "-G", "1"],
        ["print", "-q", "//depot/ok/a\nb"],
        ["print", "-q", "//depot/ok/a\x00b"],
        ["print", "-q", "//depot/ok/a\x9bb"],
        ["-G", "describe", "-s", "1"],
    ],
)
def test_runner_refuses_option_injection_and_control_characters(args):
    runner = unstarted_runner()
    with pytest.raises(P4ArgumentError):
        runner.run_text(args)


def test_no_shell_mediated_execution_anywhere_in_the_package():
    banned = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(|getoutput\(|getstatusoutput\(|os\.exec\w*\(")
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "layers" / "p4review").rglob("*.py")
        if banned.search(path.read_text("utf-8"))
    ]
    assert offenders == []


# --- properties -------------------------------------------------------------------------------------------
PROPERTY_LIST = DepotAllowList(["//depot/ok/...", "//depot/libs/security/..."])
_PLAIN_PIECES = [
    "/",
    "ok",
    "ok/",
    "a.c",
    "e",
    "depot",
    "libs/security/",
    "secret/",
    ".",
    "..",
    "../",
    "./",
    "%2E%2E/",
    "-",
    " ",
    ";",
    "|",
    "$(",
    "`",
    "%40",
    "%23",
    "%25",
    "%2A",
    "%2E",
    "%2F",
    "%6B",
    "\u00e9",
    "e\u0301",
]
_HOSTILE_PIECES = [
    "//",
    "...",
    "%",
    "%2e",
    "%%1",
    "@",
    "#",
    "*",
    "\n",
    "\x00",
    "\x1b",
    "\x85",
    "\u2215",
    "\uff0f",
    "\u2044",
    "\u2025",
    "\u200b",
    "\u202e",
    "\u0301",
    "\u212a",
    "OK",
]
_plain_text = st.lists(st.sampled_from(_PLAIN_PIECES), max_size=10).map("".join)
# Mostly plausible paths, some with one hostile piece: a single bad piece must be enough to deny.
_path_text = st.one_of(
    _plain_text,
    st.builds(
        lambda before, bad, after: before + bad + after, _plain_text, st.sampled_from(_HOSTILE_PIECES), _plain_text
    ),
)
# Climbing out of one directory into another, spelled in the ways p4 and we might read differently.
_traversals = st.builds(
    lambda start, climb, target: start + climb + target,
    st.sampled_from(["//depot/secret/", "//depot/ok/", "//depot/ok/x/", "//depot/", "//other/"]),
    st.lists(
        st.sampled_from(["../", "%2E%2E/", "%2e%2e/", "./", "/", "x/", "..%2F", "%2E%2E%2F"]), min_size=1, max_size=4
    ).map("".join),
    st.sampled_from(["ok/a.c", "libs/security/a.c", "secret/a.c", "depot/ok/a.c", "a.c"]),
)
hostile_paths = st.one_of(
    st.text(max_size=40),
    _traversals,
    st.builds(
        lambda head, tail: head + tail,
        st.sampled_from(
            [
                "//depot/ok/",
                "//depot/ok",
                "//depot/",
                "//depot/libs/security/",
                "//Depot/OK/",
                "//depot/okay/",
                "//depot/secret/",
                "//depot/o",
                "-p ",
                "",
            ]
        ),
        st.one_of(_path_text, st.text(max_size=20)),
    ),
)


def _under(normalized: str, entries: list[str], fold=lambda text: text) -> bool:
    return any(fold(normalized).startswith(fold(entry[:-3])) and len(normalized) > len(entry) - 3 for entry in entries)


@pytest.mark.spec("SEC-4")
@settings(max_examples=1500, deadline=None)
@given(hostile_paths)
def test_matcher_never_allows_a_path_whose_normalized_form_is_outside(path):
    decision = PROPERTY_LIST.check(path)
    if not decision.allowed:
        return
    normalized = normalize_depot_path(path)  # an allowed path always normalizes
    assert normalized == decision.normalized and _under(normalized, list(PROPERTY_LIST.entries))
    assert _under(path, list(PROPERTY_LIST.entries))  # and so does the spelling p4 will be given
    assert _depot_path(path) == path  # and the fetcher's operand backstop agrees


# Case variants, and characters that str.casefold() (but not necessarily p4) folds to ASCII.
_letters = {"d": "dD", "e": "eE", "p": "pP", "o": "oO", "t": "tT", "k": "kK\u212a"}
_case_variants = st.builds(
    lambda depot, ok, tail: f"//{''.join(depot)}/{''.join(ok)}/{tail}",
    st.tuples(*(st.sampled_from(_letters[c]) for c in "depot")),
    st.tuples(st.sampled_from(_letters["o"] + "\u0130"), st.sampled_from(_letters["k"])),
    st.sampled_from(["a.c", "\u017f.c", "x/../a.c"]),
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(hostile_paths, _case_variants))
def test_case_insensitive_matcher_never_allows_outside_the_ascii_folded_prefixes(path):
    insensitive = DepotAllowList(["//Depot/OK/..."], case_insensitive=True)
    if insensitive.allows(path):
        lower = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
        # NFC turns KELVIN SIGN into "K", so the spelling p4 is given must be checked too.
        for spelling in (normalize_depot_path(path), path):
            assert _under(spelling, ["//depot/ok/..."], lambda text: text.translate(lower)), spelling


def test_normalization_failures_are_denials_not_errors():
    with pytest.raises(PathRejected):
        normalize_depot_path("//depot/ok/\u2215")
    assert not PROPERTY_LIST.allows("//depot/ok/\u2215")


class RecordingRunner:
    """Answers like p4 without starting anything; records every operand the fetcher names."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []

    def stream_marshal(self, args, operands, *, changelist_id=None):
        assert isinstance(args, list) and isinstance(operands, list)
        self.argvs.append([*args, *operands])
        for operand in operands:  # each missing: a warning record in its place, as p4 answers
            yield {b"code": b"error", b"data": f"{operand} - no such file(s).\n".encode(), b"severity": 2}

    def run_marshal(self, args, *, changelist_id=None):  # pragma: no cover - not reached here
        raise AssertionError("unexpected")


@pytest.mark.spec("SEC-3")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            hostile_paths,
            st.sampled_from(["add", "edit", "integrate", "branch", "delete"]),
            st.sampled_from([ChangeKind.SUBMITTED, ChangeKind.SHELVED]),
        ),
        max_size=8,
    )
)
def test_fetcher_names_only_allowed_paths_to_p4(files):
    runner = RecordingRunner()
    fetcher = ChangeFetcher(runner, allow_list=PROPERTY_LIST)  # type: ignore[arg-type]
    for kind in ChangeKind:  # every hostile path of a kind in one change: one batched print
        changed = [ChangedFile(depot_path=p, action=a, file_type="text", revision=3) for p, a, k in files if k == kind]
        description = ChangeDescription(
            changelist_id=7, kind=kind, owner="o", client="c", status="x", description="", files=changed
        )
        list(fetcher.iter_file_diffs(description))
    for argv in runner.argvs:
        for operand in argv[1:]:
            base = re.split(r"#|@=", operand, maxsplit=1)[0]
            assert PROPERTY_LIST.allows(base), operand
