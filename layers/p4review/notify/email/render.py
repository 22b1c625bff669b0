"""Render a review as a complete RFC 5322 email (multipart/alternative: text + HTML).

Pure and deterministic: the same inputs give byte-identical bytes. The Date header comes
from the job's `created_at` (never the current time), the MIME boundary is derived from
the Message-ID, and both parts use quoted-printable, which encodes every `=` -- so the
boundary (which starts with `=_`) can never occur inside a part's encoded body. The parts are
laid out by the Jinja2 templates in templates/ (see _templates), which add nothing that
varies: no clock, no randomness.

Above 500 lines on purpose: the email's view (what the templates lay out) and its RFC 5322
assembly are one byte-exact contract, pinned by the sample emails in docs/emails/."""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from p4review.change.depot_paths import escaped_character, sanitize_for_log
from p4review.change.excerpts import code_excerpt
from p4review.models.change import ChangeDescription, DiffStatus, FileDiff
from p4review.models.finding_labels import SEVERITY_ORDER, Severity
from p4review.models.job import ReviewJob
from p4review.models.policy import REVIEWER_NOT_ALLOWED, ChangePolicy
from p4review.models.review_result import (
    Coverage,
    Finding,
    FindingsCut,
    ModelAnswer,
    ModelAnswerStatus,
    ReviewResult,
    VersionHistory,
)
from p4review.notify.model_text import without_links

if TYPE_CHECKING:
    import jinja2
    from jinja2.nodes import EvalContext

DESCRIPTION_EXCERPT_CHARS = 120
_PATH_LIMIT = 1024  # a depot path is far shorter; the cap only bounds hostile input
_CODE_LINE_LIMIT = 160
_SUBJECT_COUNTED = (Severity.CRITICAL, Severity.HIGH)
_SUGGESTED_LINES = 24


# ---------------------------------------------------------------------------------------
# Helpers


def _clean(text: str) -> str:
    """Text safe to put in a body: valid Unicode, no control characters except newline/tab."""
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> "?"
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn"))


def _one_line(text: str, limit: int) -> str:
    collapsed = re.sub(r"\s+", " ", _clean(text)).strip()
    if len(collapsed) > limit:
        return collapsed[: limit - 3].rstrip() + "..."
    return collapsed


def _shown_path(path: str) -> str:
    """A file path as it is, control, invisible and look-alike characters escaped visibly
    (`\\x0d\\x0a`): a path is an identifier, so it is neither cleaned nor folded onto one line
    (a path holding CR LF must not become a body line of its own, e.g. a fake `Subject:`)."""
    return sanitize_for_log(path, limit=_PATH_LIMIT)


def _code_line(text: str, limit: int = _CODE_LINE_LIMIT) -> str:
    """One line of code as it is, except: tabs expanded, and control and invisible (format)
    characters escaped visibly, so a bidi override cannot reorder what the reader sees (Trojan
    Source); a long line is cut."""
    shown = []
    for char in text.expandtabs(4):
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            shown.append(escaped_character(char))
        else:
            shown.append(char)
    line = "".join(shown).rstrip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def description_excerpt(description: str, limit: int = DESCRIPTION_EXCERPT_CHARS) -> str:
    """The first non-empty line of a changelist description, cleaned and truncated."""
    for line in _clean(description).split("\n"):
        if line.strip():
            return _one_line(line, limit)
    return "(no description)"


def _date_header(created_at: str) -> str:
    moment: datetime | None = None
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            moment = datetime.strptime(created_at, fmt).replace(tzinfo=UTC)
            break
        except ValueError:
            continue
    if moment is None:
        try:
            moment = datetime.fromisoformat(created_at)
        except ValueError:
            raise ValueError("job.created_at is not an ISO-8601 timestamp") from None
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return format_datetime(moment.replace(microsecond=0))


def _boundary(message_id: str) -> str:
    return "=_p4review_" + hashlib.sha256(message_id.encode("utf-8", "replace")).hexdigest()[:32]


def _message_id_header(message_id: str) -> str:
    value = message_id.strip()
    return value if value.startswith("<") and value.endswith(">") else f"<{value}>"


def _severity_counts(result: ReviewResult) -> dict[Severity, int]:
    counts = {severity: 0 for severity in SEVERITY_ORDER}
    for finding in result.findings:
        counts[Severity(finding.severity)] += 1
    return counts


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _location(finding: Finding) -> str:
    if finding.end_line is not None and finding.end_line != finding.line:
        return f"{_shown_path(finding.file)}:{finding.line}-{finding.end_line}"
    return f"{_shown_path(finding.file)}:{finding.line}"


def _grouped(findings: Sequence[Finding]) -> list[tuple[Severity, list[Finding]]]:
    groups: list[tuple[Severity, list[Finding]]] = []
    for severity in SEVERITY_ORDER:
        members = [f for f in findings if Severity(f.severity) == severity]
        if members:
            groups.append((severity, members))
    return groups


def _coverage(coverage: Coverage | Sequence[FileDiff]) -> tuple[list[str], list[tuple[str, str]]]:
    """Files reviewed, and files skipped with the reason: the review's coverage section when it
    has one (it knows chunking's skips: too_large, budget_exhausted...), else the fetch's diffs."""
    if isinstance(coverage, Coverage):
        return [_shown_path(path) for path in coverage.files_reviewed], [
            (_shown_path(s.file), _one_line(s.reason, 200)) for s in coverage.files_skipped
        ]
    reviewed = [_shown_path(d.depot_path) for d in coverage if d.status == DiffStatus.FETCHED]
    skipped = [
        (_shown_path(d.depot_path), d.skip_reason or "not reviewed") for d in coverage if d.status != DiffStatus.FETCHED
    ]
    return reviewed, skipped


def _swarm_link(swarm_url: str | None, changelist_id: int) -> str | None:
    if not swarm_url:
        return None
    base = swarm_url.strip().rstrip("/")
    if not re.match(r"(?i)https?://", base):
        return None
    return f"{base}/changes/{changelist_id}"


def _findings_headline(result: ReviewResult) -> str:
    if not result.findings:
        return "No findings."
    counts = _severity_counts(result)
    parts = ", ".join(f"{counts[s]} {s.value}" for s in SEVERITY_ORDER if counts[s])
    return f"{_plural(len(result.findings), 'finding')} ({parts})."


# ---------------------------------------------------------------------------------------
# Public API


def _follows(job: ReviewJob) -> str:
    """A submit of a shelved change: which shelf version (and pending number) it follows."""
    shelf = job.follows_shelf
    return f"shelf v{shelf.review_version} of CL {shelf.changelist_id}" if shelf else ""


def subject_for(
    job: ReviewJob, result: ReviewResult, history: VersionHistory | None = None, model_answer: ModelAnswer | None = None
) -> str:
    """`[p4review] CL 12345 v2: 3 findings (1 high)` or `[p4review] CL 12345 v2: no findings`;
    a versioned rerun adds what changed since the previous version: `; 1 new, 2 resolved` (short:
    a subject past 78 characters is folded, and some clients show the fold)."""
    prefix = f"[p4review] CL {job.changelist_id} v{job.review_version}"
    if not result.findings:
        text = f"{prefix}: no findings"
    else:
        counts = _severity_counts(result)
        severe = ", ".join(f"{counts[s]} {s.value}" for s in _SUBJECT_COUNTED if counts[s])
        text = f"{prefix}: {_plural(len(result.findings), 'finding')}"
        text = f"{text} ({severe})" if severe else text
    if history is not None:
        text += f"; {len(history.new)} new, {len(history.resolved)} resolved"
    if model_answer is not None and model_answer.status is ModelAnswerStatus.REJECTED:
        text += "; model answer rejected"
    return text


@dataclass(frozen=True)
class CodeLineView:
    number: int
    text: str
    added: bool
    flagged: bool


@dataclass(frozen=True)
class FindingView:
    location: str
    title: str
    category: str
    message_lines: tuple[str, ...]
    suggestion: str | None
    code: tuple[CodeLineView, ...] = ()  # the flagged lines and two of context, from the redacted diff
    link: str | None = None  # the file in Swarm's view of the change, when a Swarm URL is configured
    rule: str | None = None  # an analyzer's rule (`ruff/S602`)
    suggested_code: tuple[str, ...] = ()  # schema 1.1: the replacement lines, as the model gave them


FindingGroups = tuple[tuple[str, tuple[FindingView, ...]], ...]  # (SEVERITY, findings), most severe first


@dataclass(frozen=True)
class ResolvedView:
    severity: str
    location: str  # where it was in the previous version
    title: str


@dataclass(frozen=True)
class ChangesView:
    """A versioned rerun: what changed since the previous version, shown first."""

    previous_version: int
    headline: str  # "Since v1: 1 new, 2 still open, 1 resolved."
    new: FindingGroups
    still_open: FindingGroups
    resolved: tuple[ResolvedView, ...]
    note: str | None  # files carried over, findings not re-checked


@dataclass(frozen=True)
class EmailView:
    """Everything the email shows, cleaned, escaped for control characters and truncated once;
    the text and HTML templates (templates/) only lay it out (HTML-escaping is the HTML
    template's autoescaping)."""

    subject: str
    changelist_id: int
    owner: str
    kind: str
    review_version: int
    follows: str | None
    description: str
    swarm_link: str | None
    summary: str | None
    headline: str
    groups: FindingGroups  # every finding; a rerun shows `changes` instead
    reviewed: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (path, reason)
    job_id: str
    prompt_version: str
    schema_version: str
    changes: ChangesView | None = None
    policy_notes: tuple[str, ...] = ()  # the depot policies used, and why any was not (footer)
    policy_changes: tuple[str, ...] = ()  # the change modifies the review policy (called out at the top)
    answer_note: str | None = None  # the model's answer was rejected: whose findings these are
    cut_note: str | None = None  # what the caps left out (review/bounds.py)


def _code_view(diff_text: str | None, finding: Finding) -> tuple[CodeLineView, ...]:
    if not diff_text:
        return ()
    return tuple(
        CodeLineView(number=entry.line, text=_code_line(entry.text), added=entry.added, flagged=entry.flagged)
        for entry in code_excerpt(diff_text, finding.line, finding.end_line)
    )


def _finding_link(change_link: str | None, path: str) -> str | None:
    """Swarm's change page names each file's diff by the MD5 of its depot path."""
    if not change_link:
        return None
    return f"{change_link}#{hashlib.md5(path.encode('utf-8', 'surrogatepass'), usedforsecurity=False).hexdigest()}"


def _finding_view(finding: Finding, diff_of: dict[str, str], change_link: str | None) -> FindingView:
    """The model's text (title, message, suggestion, rule, suggested code) without links a mail
    client would make clickable (notify/model_text.py); the location and link are the service's."""
    suggestion = finding.suggestion
    return FindingView(
        location=_location(finding),
        title=without_links(_one_line(finding.title, 200)),
        category=_one_line(str(finding.category), 40),
        message_lines=tuple(without_links(line.rstrip()) for line in _clean(finding.message).split("\n")),
        suggestion=without_links(_one_line(suggestion, 1000)) if suggestion and suggestion.strip() else None,
        code=_code_view(diff_of.get(finding.file), finding),
        link=_finding_link(change_link, finding.file),
        rule=without_links(_one_line(finding.rule_id, 80)) if finding.rule_id and "/" in finding.rule_id else None,
        suggested_code=_suggested_lines(finding.suggested_code),
    )


def _suggested_lines(code: str | None) -> tuple[str, ...]:
    """The model's replacement code, each line shown as code is (control characters escaped),
    at most MAX_EXCERPT_LINES * 2 lines."""
    if not code or not code.strip():
        return ()
    lines = _clean(code).split("\n")
    shown = tuple(without_links(_code_line(line)) for line in lines[:_SUGGESTED_LINES])
    return shown + (("...",) if len(lines) > _SUGGESTED_LINES else ())


def _groups(findings: Sequence[Finding], diff_of: dict[str, str], change_link: str | None) -> FindingGroups:
    return tuple(
        (severity.value.upper(), tuple(_finding_view(f, diff_of, change_link) for f in members))
        for severity, members in _grouped(findings)
    )


def _changes_view(
    history: VersionHistory, findings: Sequence[Finding], diff_of: dict[str, str], change_link: str | None
) -> ChangesView:
    new_ids, open_ids = set(history.new), set(history.still_open)
    since = f"v{history.previous_version}"
    headline = (
        f"Since {since}: {len(history.new)} new, {len(history.still_open)} still open, "
        f"{len(history.resolved)} resolved."
    )
    notes = []
    if history.files_reused:
        notes.append(f"{_plural(len(history.files_reused), 'file')} unchanged since {since} (review carried over).")
    if history.not_rechecked:
        notes.append(f"{_plural(history.not_rechecked, 'finding')} of {since} on files not reviewed this time.")
    return ChangesView(
        previous_version=history.previous_version,
        headline=headline,
        new=_groups([f for f in findings if f.id in new_ids], diff_of, change_link),
        still_open=_groups([f for f in findings if f.id in open_ids], diff_of, change_link),
        resolved=tuple(
            ResolvedView(
                severity=resolved.severity.value.upper(),
                location=f"{_shown_path(resolved.file)}:{resolved.line}",
                title=without_links(_one_line(resolved.title, 200)),
            )
            for resolved in sorted(history.resolved, key=lambda r: (SEVERITY_ORDER.index(r.severity), r.file, r.line))
        ),
        note=" ".join(notes) or None,
    )


def email_view(
    *,
    job: ReviewJob,
    result: ReviewResult,
    coverage: Coverage | Sequence[FileDiff],
    description: ChangeDescription,
    swarm_url: str | None = None,
    diffs: Sequence[FileDiff] = (),
    history: VersionHistory | None = None,
    policy: ChangePolicy | None = None,
    model_answer: ModelAnswer | None = None,
    cut: FindingsCut | None = None,
) -> EmailView:
    """`diffs` are the redacted change's file diffs: each finding shows its lines from them.
    `history` (a versioned rerun) puts what changed since the previous version first.
    `model_answer` and `cut` (the stored review's) say whether the model's answer was used and
    what the caps left out."""
    reviewed, skipped = _coverage(coverage)
    diff_of = {diff.depot_path: diff.unified_diff for diff in diffs if diff.unified_diff}
    summary = without_links(_one_line(result.summary, 500)) if result.summary and result.summary.strip() else None
    change_link = _swarm_link(swarm_url, job.changelist_id)
    return EmailView(
        subject=subject_for(job, result, history, model_answer),
        changelist_id=job.changelist_id,
        owner=_one_line(description.owner, 80),
        kind=job.kind.value,
        review_version=job.review_version,
        follows=_follows(job) if job.follows_shelf else None,
        description=description_excerpt(description.description),
        swarm_link=change_link,
        summary=summary,
        headline=_findings_headline(result),
        groups=_groups(result.findings, diff_of, change_link),
        reviewed=tuple(reviewed),
        skipped=tuple(skipped),
        job_id=job.job_id,
        prompt_version=_one_line(result.prompt_version, 80),
        schema_version=_one_line(result.schema_version, 80),
        changes=_changes_view(history, result.findings, diff_of, change_link) if history else None,
        policy_notes=_policy_notes(policy),
        policy_changes=_policy_changes(policy),
        answer_note=answer_note(model_answer),
        cut_note=cut_note(cut, job.job_id),
    )


def answer_note(model_answer: ModelAnswer | None) -> str | None:
    """What the reader must know when the model's answer was not used (reason codes only)."""
    if model_answer is None or model_answer.status is ModelAnswerStatus.ACCEPTED:
        return None
    reasons = ", ".join(model_answer.reasons) or "unknown"
    instead = "the analyzers and the heuristic rules" if model_answer.fallback else "the analyzers"
    if model_answer.status is ModelAnswerStatus.REJECTED:
        return f"The model's answer was rejected ({reasons}): these findings are from {instead} only."
    return (
        f"The model's answer for {model_answer.parts_rejected} of {model_answer.parts} parts of the change was "
        f"rejected ({reasons}): the files of those parts were reviewed by {instead} only."
    )


def cut_note(cut: FindingsCut | None, job_id: str | None = None) -> str | None:
    """`62 more findings not shown (12 medium, 50 low): ...`; and how many long fields were cut."""
    if cut is None:
        return None
    notes = []
    if cut.findings_not_shown:
        counts = ", ".join(
            f"{cut.by_severity[s.value]} {s.value}" for s in SEVERITY_ORDER if cut.by_severity.get(s.value)
        )
        where = f"; see job {job_id}" if job_id else ""
        notes.append(
            f"{_plural(cut.findings_not_shown, 'more finding')} not shown ({counts}): a review keeps "
            f"its {cut.limit} most severe{where}."
        )
    if cut.fields_truncated:
        notes.append(f'{_plural(cut.fields_truncated, "long text")} cut short (marked "[... truncated]").')
    return " ".join(notes) or None


def _policy_notes(policy: ChangePolicy | None) -> tuple[str, ...]:
    if policy is None:
        return ()
    notes = [f"Review policy: {_shown_path(found.source)}{found.revision}" for found in policy.policies]
    for d in policy.diagnostics:
        if d.reason == REVIEWER_NOT_ALLOWED:  # the file was used; an address it names was not
            notes.append(f"Review policy {_shown_path(d.source)}: {_one_line(d.detail, 300)}.")
        else:
            notes.append(
                f"Review policy {_shown_path(d.source)} was not used ({d.reason}: {_one_line(d.detail, 300)}); "
                "the service's defaults applied to its files."
            )
    return tuple(notes)


def _policy_changes(policy: ChangePolicy | None) -> tuple[str, ...]:
    """The change's edits to the review policy, said where the reader looks first: they govern
    later changes, and this review was made under the policy before them."""
    if policy is None:
        return ()
    return tuple(
        f"This change modifies the review policy at {_shown_path(path)}; it takes effect for later changes."
        for path in policy.modified
    )


# ---------------------------------------------------------------------------------------
# Layout: Jinja2 templates in templates/ (review.txt.j2, review.html.j2 and their
# partials). A template reads as the HTML or text it produces, and the HTML part is autoescaped,
# so a field that reaches the markup is escaped unless a template marks it otherwise.
#
# Every {{ value }} goes through the environment's finalize: in the HTML part it is cleaned and
# escaped exactly as before the templates (html.escape, quotes included: markupsafe would spell
# ' and " differently and change the bytes), in the text part it is cleaned (_clean), which is the
# same as cleaning each line since _clean works character by character and no text line puts two
# values side by side. The environment is built on the first render, not at import (swarm_comments
# imports this module's helpers; jinja2 is imported only by what renders), and kept: each
# template is compiled once per process.

_TEMPLATES = Path(__file__).resolve().parent / "templates"

# White text on each colour has a contrast ratio of at least 4.5:1 (WCAG AA), on light and dark
# backgrounds alike: the badge carries its own background (templates/_macros.html.j2: badge).
_BADGE_COLOURS = {
    "CRITICAL": "#82071e",
    "HIGH": "#cf222e",
    "MEDIUM": "#9a6700",
    "LOW": "#0969da",
    "INFO": "#57606a",
    "NEW": "#8250df",
    "RESOLVED": "#1a7f37",
}


@cache
def _templates() -> jinja2.Environment:
    import jinja2
    from markupsafe import Markup

    @jinja2.pass_eval_context
    def finalize(eval_ctx: EvalContext, value: object) -> str:
        if not eval_ctx.autoescape:
            return _clean(str(value))
        if isinstance(value, Markup):  # a macro's or a call block's output: markup already
            return value
        return Markup(html.escape(_clean(str(value)), quote=True))  # noqa: S704 - escaped on this line

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html.j2",), disabled_extensions=("txt.j2",), default=True
        ),
        undefined=jinja2.StrictUndefined,
        finalize=finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    environment.filters["rstrip"] = str.rstrip
    environment.globals["badge_colours"] = _BADGE_COLOURS
    return environment


def render_text(view: EmailView) -> str:
    """The plain-text part (templates/review.txt.j2)."""
    return _templates().get_template("review.txt.j2").render(view=view)


def render_html(view: EmailView) -> str:
    """The HTML part (templates/review.html.j2)."""
    return _templates().get_template("review.html.j2").render(view=view)


def render_review_email(
    *,
    job: ReviewJob,
    result: ReviewResult,
    coverage: Coverage | Sequence[FileDiff],
    description: ChangeDescription,
    recipient: str,
    from_address: str,
    message_id: str,
    swarm_url: str | None = None,
    diffs: Sequence[FileDiff] = (),
    history: VersionHistory | None = None,
    policy: ChangePolicy | None = None,
    model_answer: ModelAnswer | None = None,
    cut: FindingsCut | None = None,
) -> bytes:
    """The complete message as bytes (CRLF line endings), byte-identical for equal inputs.

    Raises ValueError for header values that cannot be put in a header safely (e.g. a
    recipient containing a line break) or an unparseable `job.created_at`."""
    for name, value in (("recipient", recipient), ("from_address", from_address), ("message_id", message_id)):
        if not value or re.search(r"[\r\n\x00]", value):
            raise ValueError(f"{name} is empty or contains a line break")
    message = EmailMessage(policy=SMTP)
    message["From"] = from_address
    message["To"] = recipient
    message["Subject"] = subject_for(job, result, history, model_answer)
    message["Date"] = _date_header(job.created_at)
    message["Message-ID"] = _message_id_header(message_id)
    message["X-P4Review-Job"] = job.job_id
    message["X-P4Review-Version"] = str(job.review_version)
    message["Auto-Submitted"] = "auto-generated"
    view = email_view(
        job=job,
        result=result,
        coverage=coverage,
        description=description,
        swarm_url=swarm_url,
        diffs=diffs,
        history=history,
        policy=policy,
        model_answer=model_answer,
        cut=cut,
    )
    text_body, html_body = render_text(view), render_html(view)
    message.set_content(text_body, subtype="plain", charset="utf-8", cte="quoted-printable")
    message.add_alternative(html_body, subtype="html", charset="utf-8", cte="quoted-printable")
    for part in message.iter_parts():
        del part["MIME-Version"]  # add_alternative builds the part as a top-level message
    message.set_boundary(_boundary(message_id))
    return message.as_bytes()
