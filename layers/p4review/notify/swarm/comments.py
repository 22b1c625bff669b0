"""Helix Swarm comments (pure): each finding as one comment anchored at its file and right-side
line, one summary comment per review version, and the marker that makes posting exactly-once.
A finding on a file whose depot path held a secret (redacted_paths.py) cannot be anchored, as
Swarm anchors by the real path: it becomes a comment on the review that names the redacted path.

Swarm has no idempotency key. Every comment body therefore ends with a marker line,
`p4review:<24 hex>`, a SHA-256 prefix of (changelist, review_version, key) where the key is the
finding's fingerprint (docs/review.md; stable across line shifts) or `summary`. Before posting
again after an attempt whose outcome is unknown, the notify stage looks the marker up among the
review's comments (docs/swarm.md).

Bodies are Markdown that also reads as plain text. Everything that comes from the model or the
depot (titles, messages, paths, code) is cleaned of control and invisible characters, and the
Markdown that could make a link, an image or HTML out of it is escaped; what the model wrote also
loses its URLs and its @mentions (notify/model_text.py: a mention in a comment notifies a user or
makes them a required reviewer); bodies are capped at `MAX_BODY_CHARS` with the marker always
kept. The summary says what the caps left out and whether the model's answer was used."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from p4review.change.depot_paths import sanitize_for_log
from p4review.change.fingerprints import finding_fingerprint
from p4review.change.redacted_paths import path_is_redacted
from p4review.change.unified_diff import iter_hunk_lines
from p4review.models.finding_labels import SEVERITY_ORDER, Severity
from p4review.models.review_result import Finding, ResolvedFinding, StoredReview
from p4review.models.swarm import PlannedSwarmComment, SwarmCommentContext
from p4review.notify.email.render import _clean, _code_line, _one_line, answer_note, cut_note
from p4review.notify.model_text import inert_for_swarm

MARKER_PREFIX = "p4review:"
MARKER_HEX_CHARS = 24
MARKER_VERSION = "1"  # part of the hashed material: a new scheme never matches an old marker
SUMMARY_KEY = "summary"
MAX_BODY_CHARS = 4000
CONTEXT_LINES = 5  # Swarm's context[content]: the commented line and the four diff lines above it
_CONTEXT_LINE_LIMIT = 256  # Swarm cuts each context line at 256 characters
_PATH_LIMIT = 1024
_SUGGESTED_LINES = 24
_LISTED_RESOLVED = 20
_LISTED_SKIPPED = 10
_TRUNCATED = "... (truncated; the full finding is in the email)"
UNANCHORED_NOTE = "(on the review, not on the file: the file's path held a secret and was redacted)"

_MARKER_LINE = re.compile(rf"^p4review:([0-9a-f]{{{MARKER_HEX_CHARS}}})$")
# What could turn text into a link, an image, HTML, emphasis or code in Markdown.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>!|~#])")


# --- the marker --------------------------------------------------------------------------------------
def comment_marker(changelist_id: int, review_version: int, fingerprint: str) -> str:
    """`p4review:<24 hex>` for (changelist, review version, fingerprint or `summary`).
    Deterministic: the same key gives the same marker in every attempt and every process."""
    material = "\x00".join(("p4review-swarm", MARKER_VERSION, str(changelist_id), str(review_version), fingerprint))
    digest = hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()
    return MARKER_PREFIX + digest[:MARKER_HEX_CHARS]


def find_marker(body: str) -> str | None:
    """The marker a comment body ends with, or None. Only the last non-empty line counts: a
    finding's own text cannot plant a marker (it is never the last line)."""
    if not isinstance(body, str):
        return None
    for line in reversed(body.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
        stripped = line.strip()
        if stripped:
            match = _MARKER_LINE.match(stripped)
            return MARKER_PREFIX + match.group(1) if match else None
    return None


def comment_keys(findings: Sequence[Finding], fingerprints: Mapping[str, str]) -> list[tuple[Finding, str]]:
    """(finding, key) in the findings' order. The key is the finding's fingerprint; two findings
    with the same fingerprint (the same problem on two identical lines) get `fp` and `fp#2`, so
    neither is taken for the other. A finding without a stored fingerprint (a document written
    before fingerprints) is keyed by its fingerprint without line content."""
    seen: Counter[str] = Counter()
    keyed = []
    for finding in findings:
        fingerprint = fingerprints.get(finding.id) or finding_fingerprint(finding, None)
        seen[fingerprint] += 1
        count = seen[fingerprint]
        keyed.append((finding, fingerprint if count == 1 else f"{fingerprint}#{count}"))
    return keyed


# --- tasks and anchors -------------------------------------------------------------------------------
def opens_task(severity: Severity | str, threshold: Severity | str | None) -> bool:
    """Whether a finding of `severity` opens a Swarm task (`taskState=open`): at or above the
    threshold; None never opens one."""
    if threshold is None:
        return False
    return SEVERITY_ORDER.index(Severity(severity)) <= SEVERITY_ORDER.index(Severity(threshold))


def anchor_context(finding: Finding, diff_text: str | None, swarm_version: int | None = None) -> SwarmCommentContext:
    """Where the comment sits: the file, the right-side line, its left-side line when the diff
    shows it as an unchanged line, and as `content` what Swarm itself would store: the diff's lines
    of the flagged line's hunk up to and including it, at most five, each with its `+`, `-` or
    space prefix and cut at 256 characters (Swarm 2022.1 `module/Api/src/Controller/CommentsController.php`,
    `fetchDiffSnippet`). Read from the (redacted) diff; none when the diff does not show the line."""
    found = _diff_snippet(diff_text, finding.line) if diff_text else None
    content, left_line = found if found is not None else ((), None)
    return SwarmCommentContext(
        file=finding.file, left_line=left_line, right_line=finding.line, content=content, version=swarm_version
    )


def _diff_snippet(diff_text: str, right_line: int) -> tuple[tuple[str, ...], int | None] | None:
    """(the lines up to `right_line`, its left-side number or None) or None when the diff does not
    show `right_line`. A hunk header starts the window afresh, as Swarm's does."""
    window: list[str] = []
    hunk = None
    for shown in iter_hunk_lines(diff_text):
        if shown.hunk != hunk:
            window, hunk = [], shown.hunk
        line = (shown.marker + shown.text).replace("\x00", "")[:_CONTEXT_LINE_LIMIT]
        window = [*window, line][-CONTEXT_LINES:]
        if shown.new_line == right_line:
            return tuple(window), (shown.old_line if shown.marker == " " else None)
    return None


# --- rendering ---------------------------------------------------------------------------------------
def _md(text: str) -> str:
    """Text shown as text: Markdown's link, image, HTML, emphasis and code syntax escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _model_md(text: str) -> str:
    """The model's text shown as text: no URL, no mention (notify/model_text.py), no Markdown."""
    return _md(inert_for_swarm(text))


def _path(path: str) -> str:
    return _md(sanitize_for_log(path, limit=_PATH_LIMIT))


def _location(file: str, line: int, end_line: int | None = None) -> str:
    span = f"{line}-{end_line}" if end_line is not None and end_line != line else str(line)
    return f"{_path(file)}:{span}"


def _fence(lines: Sequence[str]) -> str:
    """A fence longer than any backtick run in the code, so the code cannot close it."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


def _code_block(lines: Sequence[str]) -> list[str]:
    fence = _fence(lines)
    return [fence, *lines, fence]


def _suggested(code: str | None) -> list[str]:
    if not code or not code.strip():
        return []
    lines = _clean(code).split("\n")
    # Swarm reads mentions from the raw body, code blocks included; and a link is a link anywhere.
    shown = [inert_for_swarm(_code_line(line)) for line in lines[:_SUGGESTED_LINES]]
    return shown + (["..."] if len(lines) > _SUGGESTED_LINES else [])


def _with_marker(text: str, marker: str) -> str:
    return f"{text.rstrip()}\n\n{marker}"


def _finding_text(finding: Finding, message: str, *, with_code: bool) -> str:
    severity = Severity(finding.severity).value.upper()
    title = _model_md(_one_line(finding.title, 200))
    out = [
        f"**[{severity}] {title}** ({_md(str(finding.category))})",
        _location(finding.file, finding.line, finding.end_line),
    ]
    if path_is_redacted(finding.file):
        out.append(UNANCHORED_NOTE)
    out += ["", *(_model_md(line.rstrip()) for line in message.split("\n"))]
    if finding.suggestion and finding.suggestion.strip():
        out += ["", f"Suggestion: {_model_md(_one_line(finding.suggestion, 1000))}"]
    code = _suggested(finding.suggested_code) if with_code else []
    if code:
        out += ["", "Suggested change:", *_code_block(code)]
    facts = []
    if finding.rule_id:
        facts.append(f"rule {_model_md(_one_line(finding.rule_id, 80))}")
    if finding.confidence:
        facts.append(f"confidence {finding.confidence.value}")
    if facts:
        out += ["", " · ".join(facts)]
    return "\n".join(out)


def render_finding_comment(finding: Finding, marker: str) -> str:
    """One finding as a Swarm comment body: severity and title, location, message, suggestion,
    suggested code, rule and confidence, then the marker line. At most MAX_BODY_CHARS: the
    suggested code goes first, then the message is cut."""
    message = _clean(finding.message).strip()
    budget = MAX_BODY_CHARS - len(marker) - 2
    text = _finding_text(finding, message, with_code=True)
    if len(text) > budget:
        text = _finding_text(finding, message, with_code=False)
    keep = len(message)
    while len(text) > budget and keep > 0:
        keep = max(0, keep - (len(text) - budget) - len(_TRUNCATED) - 1)
        cut = (message[:keep].rstrip() + "\n" + _TRUNCATED) if keep else _TRUNCATED
        text = _finding_text(finding, cut, with_code=False)
    return _with_marker(text[:budget], marker)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _headline(findings: Sequence[Finding]) -> str:
    if not findings:
        return "no findings"
    counts = Counter(Severity(f.severity) for f in findings)
    parts = ", ".join(f"{counts[s]} {s.value}" for s in SEVERITY_ORDER if counts[s])
    return f"{_plural(len(findings), 'finding')} ({parts})"


def _resolved_line(resolved: ResolvedFinding) -> str:
    severity = Severity(resolved.severity).value.upper()
    return f"- [{severity}] {_location(resolved.file, resolved.line)}: {_model_md(_one_line(resolved.title, 200))}"


def render_summary_comment(
    *, changelist_id: int, review_version: int, stored: StoredReview, marker: str | None = None
) -> str:
    """The one summary comment of a review version: counts by severity, what changed since the
    previous version (new, still open, resolved), files reviewed and skipped, the reviewer's own
    summary; the marker of (changelist, version, `summary`) last."""
    marker = marker or comment_marker(changelist_id, review_version, SUMMARY_KEY)
    findings = stored.result.findings
    out = [f"**p4review** - changelist {changelist_id}, review v{review_version}: {_headline(findings)}."]
    out += [_md(note) for note in (answer_note(stored.model_answer), cut_note(stored.cut)) if note]
    history = stored.history
    if history is not None:
        since = f"v{history.previous_version}"
        out.append(
            f"Since {since}: {len(history.new)} new, {len(history.still_open)} still open, "
            f"{len(history.resolved)} resolved."
        )
        if history.resolved:
            ordered = sorted(history.resolved, key=lambda r: (SEVERITY_ORDER.index(r.severity), r.file, r.line))
            out += ["", f"Resolved since {since}:", *(_resolved_line(r) for r in ordered[:_LISTED_RESOLVED])]
            if len(ordered) > _LISTED_RESOLVED:
                out.append(f"- ... and {len(ordered) - _LISTED_RESOLVED} more")
        if history.not_rechecked:
            out.append(f"{_plural(history.not_rechecked, 'finding')} of {since} on files not reviewed this time.")
    coverage = stored.coverage
    if coverage is not None:
        out += ["", f"Files reviewed: {len(coverage.files_reviewed)}; skipped: {len(coverage.files_skipped)}."]
        for skipped in coverage.files_skipped[:_LISTED_SKIPPED]:
            out.append(f"- skipped {_path(skipped.file)} ({_md(_one_line(skipped.reason, 80))})")
        if len(coverage.files_skipped) > _LISTED_SKIPPED:
            out.append(f"- ... and {len(coverage.files_skipped) - _LISTED_SKIPPED} more")
    summary = stored.result.summary
    if summary and summary.strip():
        out += ["", _model_md(_one_line(summary, 1000))]
    text = "\n".join(out)
    budget = MAX_BODY_CHARS - len(marker) - 2
    if len(text) > budget:
        text = text[: budget - len(_TRUNCATED) - 1].rstrip() + "\n" + _TRUNCATED
    return _with_marker(text, marker)


# --- the plan ----------------------------------------------------------------------------------------
def plan_comments(
    *,
    changelist_id: int,
    review_version: int,
    stored: StoredReview,
    diffs: Mapping[str, str] | None = None,
    task_threshold: Severity | str | None = None,
    swarm_version: int | None = None,
) -> list[PlannedSwarmComment]:
    """Every comment of one review version, in posting order: one per finding (anchored, a task
    at or above `task_threshold`), then the summary. `diffs` ({depot path: redacted unified diff})
    give each anchor its `content`; `swarm_version` is Swarm's version of the review (None: the
    latest)."""
    diffs = diffs or {}
    planned = []
    for finding, key in comment_keys(stored.result.findings, stored.fingerprints):
        marker = comment_marker(changelist_id, review_version, key)
        planned.append(
            PlannedSwarmComment(
                key=key,
                marker=marker,
                body=render_finding_comment(finding, marker),
                # A file whose path held a secret: Swarm anchors by the real path, which nothing
                # after fetch knows; the comment goes on the review, naming the redacted path.
                context=None
                if path_is_redacted(finding.file)
                else anchor_context(finding, diffs.get(finding.file), swarm_version),
                task_open=opens_task(finding.severity, task_threshold),
                finding_id=finding.id,
            )
        )
    summary_marker = comment_marker(changelist_id, review_version, SUMMARY_KEY)
    planned.append(
        PlannedSwarmComment(
            key=SUMMARY_KEY,
            marker=summary_marker,
            body=render_summary_comment(
                changelist_id=changelist_id, review_version=review_version, stored=stored, marker=summary_marker
            ),
        )
    )
    return planned
