"""A change whose description carries `#review-skip` is not reviewed, as Swarm's `#noswarm`
keeps a change out of Swarm. Pure rules, no I/O.

The keyword is matched case-insensitively as a whole token: `#review-skip` at a word's start
and end (`#review-skipped`, `x#review-skip` and `#review-skip-me` do not count), anywhere in the
description."""

from __future__ import annotations

import re

OPT_OUT_KEYWORD = "#review-skip"
_KEYWORD = re.compile(r"(?<![\w#-])" + re.escape(OPT_OUT_KEYWORD) + r"(?![\w-])", re.IGNORECASE)


def opted_out(description: str) -> str | None:
    """The keyword when `description` opts the change out of review, else None."""
    return OPT_OUT_KEYWORD if _KEYWORD.search(description) else None
