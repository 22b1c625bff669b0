"""`#review-skip` in a change's description opts the change out of review."""

from __future__ import annotations

import pytest

from p4review.fetch.opt_out import OPT_OUT_KEYWORD, opted_out


@pytest.mark.spec("RV-4")
@pytest.mark.parametrize(
    "description",
    [
        "#review-skip",
        "Fix the build #review-skip",
        "Fix the build\n\nGenerated code only. #REVIEW-SKIP",
        "(#review-skip) vendored drop",
        "#review-skip, vendored drop",
    ],
)
def test_the_keyword_anywhere_opts_out(description):
    assert opted_out(description) == OPT_OUT_KEYWORD


@pytest.mark.spec("RV-4")
@pytest.mark.parametrize(
    "description",
    [
        "",
        "Fix the build",
        "review-skip without the hash",
        "#review-skipped is another word",
        "#review-skip-me is another word",
        "x#review-skip is inside a word",
        "##review-skip is another tag",
        "-#review-skip is an option-like word",
        "#review skip",
    ],
)
def test_anything_else_does_not(description):
    assert opted_out(description) is None
