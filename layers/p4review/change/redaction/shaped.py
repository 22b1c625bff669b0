"""A rule found by the shape of a whole line or string rather than by a name and an operator:
a regex whose named groups are the secrets, each with its class, and a judge that may veto a
value (a placeholder, a reference). Used by the connection-string and credential-file rules."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

from p4review.change.redaction.base import CompiledOnFirstUse, Match, Rule, splice
from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import Needle
from p4review.change.redaction.values import REDACTED_MARK, is_template_or_masked

Kind = Callable[[], FileKind]
Judge = Callable[[Match, str, str, Kind], bool]  # (match, group, value, kind) -> is a secret


def literal_secret(value: str) -> bool:
    """A value written out in a credential file or connection string: anything but empty,
    a placeholder or reference (`${PW}`, `<password>`, `changeme`, `****`), or punctuation."""
    return not is_template_or_masked(value) and any(ch.isalnum() for ch in value)


class ShapeRule(CompiledOnFirstUse, Rule):
    """`pattern`'s groups named in `classes` are secrets of that class (several per match
    allowed, in order); `literal(value)` (by default `literal_secret`) and then `judge` may
    veto one. `name` is the rule's main class."""

    def __init__(
        self,
        name: str,
        pattern: str,
        needles: tuple[Needle, ...],
        classes: Mapping[str, str],
        judge: Judge | None = None,
        flags: int = 0,
        literal: Callable[[str], bool] = literal_secret,
    ):
        super().__init__(name, needles)
        self._compile_later(pattern, flags)
        self.classes = dict(classes)
        self.judge = judge
        self.literal = literal

    def apply(self, body: str, kind: Kind, counts: Counter[str]) -> str:
        spans: list[tuple[int, int, str]] = []
        for match in self.pattern.finditer(body):
            for group, name in self.classes.items():
                start, end = match.span(group)
                if start < 0 or start == end:
                    continue
                value = body[start:end]
                if REDACTED_MARK in value or not self.literal(value):
                    continue
                if self.judge is not None and not self.judge(match, group, value, kind):
                    continue
                counts[name] += 1
                spans.append((start, end, name))
        return splice(body, spans)
