"""Every copy of a masked value: once a rule masks a value, its other occurrences (on the same
line, on other lines, in other files, in removed lines, in headers and file names) are masked
too, with the same class's placeholder, although no rule would find them there (a token's rule
needs its keyword on the line, a password's rule its name).

`MaskedValues` holds the values in memory, for one `Redactor.redact` call or, shared, for the
texts of one change (snapshot_redaction.py). It is never serialised, logged or shown: its
`repr` gives a count, it cannot be pickled, and nothing here raises with a value in the message.

A value qualifies only when masking it everywhere cannot wreck ordinary text (`qualifies`):
at least 8 characters, no blank, at least two character classes, not a placeholder, not the
name of a secret, not mostly words (`name_like`), no UUID, no `example`; and a value shaped
like an identifier (`\\w+`, which a variable could be) must also look random. Private keys
and public PEM blocks are not collected (the PEM walk catches a block's lines wherever they
are), nor the policy classes (e-mail addresses, internal hosts and addresses) and the token
formats a rule matches by the token alone (`AKIA...`, `ghp_...`, JWTs): their rule already
finds every occurrence."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, NoReturn

from p4review.change.redaction.policy_rules import POLICY_CLASSES
from p4review.change.redaction.values import (
    REDACTED_MARK,
    UUID,
    is_template_or_masked,
    looks_random,
    names_a_secret,
    placeholder,
)

MIN_LENGTH = 8
# Class names as rules write them ([REDACTED:aws_access_key], [REDACTED:1password_secret_key]).
PLACEHOLDER = re.compile(r"\[REDACTED:([\w.-]+)\]")
# Classes whose rule already finds every copy: PEM blocks (the PEM walk), the policy classes,
# and the token formats a rule matches by the token alone, wherever it is (tokens.py).
_NOT_COLLECTED = frozenset(
    {"private_key", "pem_block", *POLICY_CLASSES}
    | {"aws_access_key", "github_token", "gitlab_token", "tailscale_key", "shopify_token", "slack_token"}
    | {"stripe_key", "google_api_key", "anthropic_key", "openai_key", "pypi_token", "jwt"}
)
_LOWER, _UPPER, _DIGIT, _OTHER = (re.compile(c) for c in ("[a-z]", "[A-Z]", "[0-9]", "[^A-Za-z0-9]"))
_BLANK = re.compile(r"\s")
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
# Words inside a value: a capitalised hump (`Bundle`, `Key`), a lower-case segment that no
# digit or lower-case letter touches (`certificates` in `ca_certificates_`, `artifact` in
# `artifactS3`), an upper-case word standing alone (`RETRY` in `MAX_RETRY_V2`). The letter runs
# of a random token are cut by digits and case changes: measured on random tokens, fewer than
# 1% of 36-character base62 or 40-character lower-case-and-digit ones read as mostly words.
_WORDS = re.compile(r"[A-Z][a-z]{2,}|(?<![a-z0-9])[a-z]{3,}(?![a-z0-9])|(?<![A-Za-z0-9])[A-Z]{4,}(?![A-Za-z0-9])")
# Identifiers, not credentials, wherever they are repeated; an example says so itself.


# A word of four letters or more has a vowel and no four consonants in a row: the letter runs of a random password
# (`Jjck`, `Kclvi` in `TpG6Jjck-jcwKclvi`) mostly do not, and counted as words they made 6% of
# random 16-character base62 passwords (27% of letters-only ones) "names" whose copies stayed.
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_CONSONANTS = re.compile(r"[^aeiouyAEIOUY]{4}")


def _pronounceable(word: str) -> bool:
    """(Three letters are taken as they are: `txt`, `cfg`, `src` are words of names.)"""
    return len(word) <= 3 or (_VOWEL.search(word) is not None and _CONSONANTS.search(word) is None)


def name_like(value: str) -> bool:
    """Mostly words (`caCertificatesBundleS3Key`, `_aws_secretsmanager_64b8a1c5.ISecret`,
    `folder/file1.txt`): a name or a path, which a rule may have taken for a secret in one place
    but which ordinary text repeats. A generated token is not (`Qv7tLm2xRk9p`, `AKIA...`)."""
    letters = sum(ch.isalnum() for ch in value)
    wordy = sum(len(word) for word in _WORDS.findall(value) if _pronounceable(word))
    return letters > 0 and wordy / letters > 0.6


def qualifies(value: str) -> bool:
    """Can every occurrence of `value` be masked without wrecking ordinary text?"""
    if len(value) < MIN_LENGTH or _BLANK.search(value) or REDACTED_MARK in value:
        return False
    if sum(1 for kind in (_LOWER, _UPPER, _DIGIT, _OTHER) if kind.search(value)) < 2:
        return False
    if is_template_or_masked(value) or names_a_secret(value) or name_like(value):
        return False
    if UUID.search(value) or "example" in value.lower():
        return False
    if _WORD.fullmatch(value):
        # `db_password1`, `MySecretValue`: a word a variable could be; only a random one is masked.
        return looks_random(value, MIN_LENGTH)
    # A value ending in part of a placeholder could overlap one it meets (`abcdefgh[REDAC`).
    return not _ends_in_placeholder_prefix(value)


def _ends_in_placeholder_prefix(value: str) -> bool:
    bracket = value.rfind("[")
    return bracket >= 0 and (
        REDACTED_MARK.startswith(value[bracket:]) or re.fullmatch(r"\[REDACTED:[\w.-]*", value[bracket:]) is not None
    )


def masked_spans(original: str, redacted: str) -> list[tuple[str, str]]:
    """The (value, class) pairs a rule replaced in `original` to give `redacted`: the text
    between placeholders is `original`'s, in order, so the values are what lies between those
    pieces. Lines that do not align (two placeholders side by side) give what aligned."""
    parts = PLACEHOLDER.split(redacted)
    if len(parts) == 1:
        return []
    pieces, classes = parts[0::2], parts[1::2]
    head, tail = pieces[0], pieces[-1]
    if len(head) + len(tail) > len(original) or not original.startswith(head) or not original.endswith(tail):
        return []
    found: list[tuple[str, str]] = []
    position, limit = len(head), len(original) - len(tail)
    for index, name in enumerate(classes):
        if index == len(classes) - 1:
            end, after = limit, 0
        else:
            following = pieces[index + 1]
            if not following:
                break  # two placeholders side by side: where one value ends is unknown
            end = original.find(following, position + 1, limit)
            if end < 0:
                break
            after = len(following)
        found.append((original[position:end], name))
        position = end + after
    return found


# A run of token characters: what a copy is found by. Each value is keyed by its longest run
# (8 or more characters); the keys are searched for all at once by one RE2 automaton over the
# text's bytes, whose cost does not grow with the number of values (`re` would try every key at
# every position); past `_MAX_AUTOMATON_KEYS`, the text's runs are looked up in a dict instead.
_RUN = re.compile(r"[A-Za-z0-9_\-]{8,}")
# Up to this many keys the automaton's DFA fits in `_AUTOMATON_MEMORY` (measured: 2,000 keys of
# 20-40 characters need about 40 MB); beyond, the runs are looked up one `re` pass at a time.
_MAX_AUTOMATON_KEYS = 1_000
_AUTOMATON_MEMORY = 64 << 20


class MaskedValues:
    """Values masked so far (value -> class), to mask wherever else they occur."""

    __slots__ = ("_classes", "_keyed", "_keys", "_unkeyed")

    def __init__(self) -> None:
        self._classes: dict[str, str] = {}
        self._keyed: dict[str, list[str]] = {}  # a value's longest run -> the values it keys
        self._keys: Any = None  # the RE2 pattern finding any key, built when first needed
        self._unkeyed: list[str] = []  # values without a run of 8: looked for one by one

    def __repr__(self) -> str:  # never the values
        return f"MaskedValues({len(self._classes)} values)"

    def __reduce__(self) -> NoReturn:
        raise TypeError("MaskedValues are never serialised")

    def __len__(self) -> int:
        return len(self._classes)

    def collect(self, original: str, redacted: str) -> None:
        """Add the qualifying values a rule replaced in the line `original` (-> `redacted`)."""
        for value, name in masked_spans(original, redacted):
            if name not in _NOT_COLLECTED and value not in self._classes and qualifies(value):
                self._classes[value] = name
                runs = _RUN.findall(value)
                if runs:
                    self._keyed.setdefault(max(runs, key=len), []).append(value)
                    self._keys = None
                else:
                    self._unkeyed.append(value)

    def present(self, text: str) -> list[str]:
        """The values that may occur in `text` (a superset of those that do, rarely larger)."""
        if not self._classes:
            return []
        found = [value for value in self._unkeyed if value in text]
        if len(self._keyed) > _MAX_AUTOMATON_KEYS:
            # So many values (a repository scanned as one text) that the automaton would not fit
            # its memory: look each of the text's runs up instead, one `re` pass.
            for run in set(filter(self._keyed.__contains__, _RUN.findall(text))):
                found += self._keyed[run]
        elif self._keyed:
            # A key inside a longer run counts too (a superset): the masking pass looks for whole values.
            data = text.encode("utf-8", "surrogatepass")
            for run in {match.group().decode() for match in self._automaton().finditer(data)}:
                found += self._keyed[run]
        return found

    def _automaton(self) -> Any:
        if self._keys is None:
            import re2  # google-re2 (a dependency of the package): only texts holding a secret need it

            options = re2.Options()
            options.max_mem = _AUTOMATON_MEMORY
            options.log_errors = False  # never a pattern (the values) on stderr
            keys = sorted(self._keyed, key=len, reverse=True)
            self._keys = re2.compile("|".join(map(re.escape, keys)).encode(), options)
        return self._keys

    def lines_holding(self, text: str) -> list[int]:
        """The start offsets of the lines of `text` that may hold a value (a superset), in
        order. Each line is then masked with a finder of its own values: one finder of every
        value present, run over the whole text, tries each value at each position (thousands
        of values in a long change: quadratic)."""
        if not self._classes:
            return []
        positions: list[int] = []
        for value in self._unkeyed:
            at = text.find(value)
            while at >= 0:
                positions.append(at)
                at = text.find(value, at + 1)
        if len(self._keyed) > _MAX_AUTOMATON_KEYS:
            positions += [run.start() for run in _RUN.finditer(text) if run.group() in self._keyed]
        elif self._keyed:
            data = text.encode("utf-8", "surrogatepass")
            found = [match.start() for match in self._automaton().finditer(data)]
            if len(data) != len(text):  # byte offsets -> character offsets, a gap at a time
                at = offset = 0
                for index, byte_offset in enumerate(found):
                    offset += len(data[at:byte_offset].decode("utf-8", "surrogatepass"))
                    at, found[index] = byte_offset, offset
            positions += found
        starts: list[int] = []
        line_start = line_end = -1
        for position in sorted(positions):
            if position > line_end:
                line_start = text.rfind("\n", 0, position) + 1
                line_end = text.find("\n", position)
                line_end = len(text) if line_end < 0 else line_end
                starts.append(line_start)
        return starts

    def present_in(self, text: str) -> bool:
        return bool(self.present(text))

    def finder(self, text: str) -> re.Pattern[str] | None:
        """One pattern for the values that may occur in `text` (None: none does): a
        placeholder, matched first so that a value never starts inside one, else any of the
        values, longest first."""
        present = self.present(text)
        if not present:
            return None
        present.sort(key=len, reverse=True)
        return re.compile(PLACEHOLDER.pattern + "|" + "|".join(map(re.escape, present)))

    def mask(self, line: str, finder: re.Pattern[str], counts: Counter[str]) -> str:
        """`line` with every value `finder` finds replaced by its class's placeholder (counted)."""

        def replace(match: re.Match[str]) -> str:
            if match.group(1) is not None:
                return match.group(0)  # a placeholder stays as it is
            name = self._classes[match.group(0)]
            counts[name] += 1
            return placeholder(name)

        return finder.sub(replace, line)
