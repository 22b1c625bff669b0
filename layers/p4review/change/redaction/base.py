"""What a rule is. A rule handles one class of secret on one line: it sees the line's content
without its diff marker and returns it with the secret parts replaced by `[REDACTED:<class>]`;
the text around them (keys, quotes, schemes, hosts) stays, so the reviewer still sees the shape
of the code.

Each rule lists its `needles`: literals of which at least one occurs in every line the rule
could change (a needle may also require text just before or after it, e.g. `J` preceded by
`ey`). The scanner finds needles in the whole text at once and runs a rule only on the lines
where one of its own needles occurs. Keeping "a match implies a needle" true is the one
invariant every rule must keep: a rule whose pattern can match without a needle silently
misses secrets (and the guard, which uses the same needles, cannot see them either)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

from p4review.change.redaction.filekind import FileKind
from p4review.change.redaction.needles import Needle
from p4review.change.redaction.values import REDACTED_MARK, is_masked_token, is_template_or_masked, placeholder

Match = re.Match[str]


@dataclass(frozen=True)
class LinesBelow:
    """Secrets on the lines after a rule's line, which only that line identifies (a PuTTY key's
    `Private-Lines: 2`, an SMTP server's `334 UGFzc3dvcmQ6`): up to `lines` lines, each passed
    to `redact` (its body redacted; the body unchanged: part of the exchange, go on; None: not
    part of it, stop). `every`: every line is a secret (else the first one changed ends it).
    The scanner walks them and counts `name` once."""

    name: str
    lines: int
    redact: Callable[[str], str | None]
    every: bool


class Rule:
    """One class of secret on one line. Subclasses implement `apply`, and `below` when a line
    can say that the lines after it are secrets."""

    def __init__(self, name: str, needles: tuple[Needle, ...]):
        self.name = name
        self.needles = needles

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        """`body` with this rule's secrets replaced (each counted under the rule's class);
        `kind()` tells the file's kind, lazily, for the rules that need it."""
        raise NotImplementedError

    def below(self, body: str) -> LinesBelow | None:
        """What the lines after `body` (this rule's line, after the rules ran) hold, if anything."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class CompiledOnFirstUse:
    """A rule's `pattern`, compiled on the first line the rule runs on rather than at import: a
    function compiles only the rules whose needles its texts hold, and none at cold start
    (docs/benchmarks.md, "Cold start")."""

    def _compile_later(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(*self._source)


class PatternRule(CompiledOnFirstUse, Rule):
    """A regex; the first named group in `groups` that took part (else the whole match) is the
    secret. `validate(match, secret)` may veto a match (low entropy, a placeholder...)."""

    def __init__(
        self,
        name: str,
        pattern: str,
        needles: tuple[Needle, ...],
        *,
        groups: tuple[str, ...] = (),
        validate: Callable[[Match, str], bool] | None = None,
        flags: int = 0,
        whole_token: bool = False,
    ):
        super().__init__(name, needles)
        self._compile_later(pattern, flags)
        self.groups = groups
        self.validate = validate
        self.whole_token = whole_token

    def apply(self, body: str, kind: Callable[[], FileKind], counts: Counter[str]) -> str:
        found = counts[self.name]
        body = self.pattern.sub(lambda match: self._replace(match, counts), body)
        if self.whole_token and counts[self.name] != found:
            body = absorb_token_tails(body, self.name)
        return body

    def _span(self, match: Match) -> tuple[int, int]:
        for group in self.groups:
            if match.start(group) >= 0:
                return match.span(group)
        return match.span()

    def _replace(self, match: Match, counts: Counter[str]) -> str:
        start, end = self._span(match)
        secret = match.string[start:end]
        whole = match.group(0)
        if (
            REDACTED_MARK in secret
            or is_masked_token(secret)
            or (self.validate is not None and not self.validate(match, secret))
        ):
            return whole
        counts[self.name] += 1
        offset = match.start()
        return whole[: start - offset] + placeholder(self.name) + whole[end - offset :]


@lru_cache(maxsize=1024)
def _tail_after(name: str) -> re.Pattern[str]:
    # The rest of a token after a match that stopped inside it (a fixed-length rule, a routable
    # token's `.01.<checksum>`): word characters and `-`, and a `.` between them; but not a file
    # extension ending the run (`//depot/keys/AKIA....py`: the path keeps its `.py`).
    return re.compile(
        re.escape(placeholder(name)) + r"(?:[A-Za-z0-9_-]|\.(?=[A-Za-z0-9_-])(?![a-z]{1,5}(?![A-Za-z0-9_.-])))+"
    )


def absorb_token_tails(body: str, name: str) -> str:
    """`body` with whatever token characters follow a `name` placeholder folded into it: a
    mask goes to the token's real end (`[REDACTED:x]m4003z5xw7.6pm4` -> `[REDACTED:x]`)."""
    return _tail_after(name).sub(placeholder(name), body)


def match_length(pattern: re.Pattern[str], text: str, pos: int = 0) -> int:
    """The length of `pattern`'s match at `pos`, for patterns that also match the empty string
    (a run of payload characters, leading blanks): such a match always exists."""
    match = pattern.match(text, pos)
    return 0 if match is None else match.end() - pos


def splice(body: str, spans: list[tuple[int, int, str]]) -> str:
    """`body` with each (start, end, class) span, in order and not overlapping, replaced by its
    placeholder."""
    if not spans:
        return body
    pieces: list[str] = []
    copied = 0
    for start, end, name in spans:
        pieces += [body[copied:start], placeholder(name)]
        copied = end
    pieces.append(body[copied:])
    return "".join(pieces)


def not_template(_: Match, secret: str) -> bool:
    return not is_template_or_masked(secret)
