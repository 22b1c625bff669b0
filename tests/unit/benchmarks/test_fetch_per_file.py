"""The fetch benchmark's baseline (benchmarks/fetch_per_file.py): the per-file path before issue 29."""

from __future__ import annotations

import pytest

from benchmarks.fetch_per_file import PerFileRunner, normalize_diff2
from p4review.perforce import P4ArgumentError, P4Runner


def test_normalize_diff2_with_and_without_p4_file_headers():
    hunk = "@@ -1,1 +1,1 @@\n-old\n+new\n"
    plain = f"==== //depot/a.c#1 (text) - //depot/a.c#2 (text) ==== content\n{hunk}".encode()
    expected = f"--- a/depot/a.c\n+++ b/depot/a.c\n{hunk}"
    assert normalize_diff2("//depot/a.c", plain) == expected
    with_headers = plain.replace(b"@@", b"--- //depot/a.c#1\n+++ //depot/a.c#2\n@@", 1)
    assert normalize_diff2("//depot/a.c", with_headers) == expected
    assert normalize_diff2("//depot/a.c", b"==== //depot/a.c#1 (text) - //depot/a.c#2 (text) ==== identical\n") is None


def test_only_the_baseline_runner_runs_diff2():
    args = ["diff2", "-du", "//depot/a.c#1", "//depot/a.c#2"]
    assert PerFileRunner._check(args) == "diff2"
    with pytest.raises(P4ArgumentError):  # the service's runner no longer runs it
        P4Runner._check(args)
