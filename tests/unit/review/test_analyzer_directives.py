"""The analyzers' copy of a changed file (p4review.review.analyzers.directives): what it makes
inert, what it keeps, and that every line keeps its number (the analyzers' reports are matched to
the change's added lines by number). The real tools' view is tests/integration/review/
test_analyzer_directives.py."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4review.review.analyzers.directives import analyzer_copy, c_source, dockerfile, shell_script

_LINE_BREAK = re.compile(r"\r\n|\n|\r")


def _line_count(text: str) -> int:
    return len(_LINE_BREAK.findall(text))


@pytest.mark.spec("RV-7")
def test_shellcheck_directives_become_ordinary_comments_in_place():
    script = "#!/bin/sh\n# shellcheck disable=SC2086\necho $1 # shellcheck disable=SC2086\n#\tshellcheck source=/etc/passwd\n"
    assert shell_script(script) == (
        "#!/bin/sh\n# p4review-ignored shellcheck disable=SC2086\n"
        "echo $1 # p4review-ignored shellcheck disable=SC2086\n#\tp4review-ignored shellcheck source=/etc/passwd\n"
    )


def test_only_a_plain_dialect_directive_and_non_comments_are_kept():
    kept = '# shellcheck shell=bash\n#shellcheck shell=ksh # why\necho "${#shellcheck}" $# "a#shellcheck"\n'
    assert shell_script(kept) == kept
    assert shell_script("# shellcheck shell=bash disable=SC2086\n").startswith("# p4review-ignored shellcheck")


@pytest.mark.spec("RV-7")
def test_hadolint_pragmas_become_ordinary_comments_but_a_posix_shell():
    text = (
        "FROM debian:12\n# hadolint shell=pwsh\n\t#hadolint shell = cmd # Windows\n"
        "# hadolint global ignore=DL3002\n# hadolint shell=bash -o pipefail -c\n#  hadolint shell=/bin/sh\n"
        'RUN echo "# hadolint shell=pwsh"\n'
    )
    assert dockerfile(text) == (
        "FROM debian:12\n# p4review-ignored hadolint shell=pwsh\n\t#p4review-ignored hadolint shell = cmd # Windows\n"
        "# p4review-ignored hadolint global ignore=DL3002\n# hadolint shell=bash -o pipefail -c\n"
        '#  hadolint shell=/bin/sh\nRUN echo "# hadolint shell=pwsh"\n'
    )
    assert (
        analyzer_copy(("hadolint",), "# hadolint shell=cmd\r\nRUN x\r\n")
        == "# p4review-ignored hadolint shell=cmd\r\nRUN x\r\n"
    )


@pytest.mark.spec("RV-7")
@pytest.mark.parametrize(
    ("source", "copy"),
    [
        ("#include <stdio.h>\nint x;\n", "\nint x;\n"),
        ('  #  include_next "a.h"\n', "  \n"),
        ('#inc\\\nlude "/etc/passwd"\nint x;\n', "\n\nint x;\n"),
        ('/* a */ # /* b */ include "/etc/passwd"\n', "/* a */ \n"),
        ('/*\n*/ #include "/etc/passwd"\n', "/*\n*/ \n"),
        ('# /*\n*/ include "/etc/passwd"\nint x;\n', "\n\nint x;\n"),
        ('#include \\\n"/etc/passwd"\n', "\n\n"),
        ("int a;\r#import </etc/passwd>\rint x;\r\n", "int a;\r\rint x;\r\n"),
        ("%:include </etc/passwd>\n??=include </etc/passwd>\n", "\n\n"),
        ("\ufeff#embed </dev/zero>\n", "\ufeff\n"),
        ('#line 1000\n# 12 "x.c"\n#line 3 "other.c"\n#file "x.c"\n#endfile\n', "\n\n\n\n\n"),
        ('#if defined(__has_include) && __has_include("/dev/zero")\n#endif\n', "#if 1 && 0\n#endif\n"),
        ("#elif __has_include(<a.h>) /* c\n */ || 1\n", "#elif 0   || 1\n\n"),
        ('#define PROBE __has_include("/dev/zero")\n', "\n"),
    ],
)
def test_directives_that_read_a_file_or_move_the_reports_are_blanked(source, copy):
    assert c_source(source) == copy


def test_other_directives_and_code_are_kept():
    kept = (
        '#define HAVE_EMBEDDED_IMPORT 1\n#define GLOB "/*" \\\n  include\n#ifdef __has_include\n#endif\n'
        '#pragma once\nprintf("#include <x>"); strcpy(a, b);\n#if A /* include */\n#endif\n'
    )
    assert c_source(kept) == kept


def test_each_analyzer_gets_the_rewriting_it_needs():
    text = "# shellcheck disable=SC2086\n#include </etc/passwd>\n"
    assert analyzer_copy(("shellcheck",), text) == shell_script(text)
    assert analyzer_copy(("flawfinder", "cppcheck"), text) == c_source(text)
    assert analyzer_copy(("ruff", "bandit"), text) == text


_PIECES = ["#", "include", "line", "/*", "*/", "\\", "\n", "\r", " ", "x", '"', "??=", "shellcheck disable=1"]


@given(st.lists(st.sampled_from(_PIECES)).map("".join))
def test_every_line_keeps_its_number(text):
    assert _line_count(c_source(text)) == _line_count(text)
    assert shell_script(text).count("\n") == text.count("\n")
