"""Render a review as a complete RFC 5322 email (multipart/alternative: text + HTML).

Pure and deterministic: the same inputs give byte-identical bytes. The Date header comes
from the job's `created_at` (never the current time), the MIME boundary is derived from
the Message-ID, and both parts use quoted-printable, which encodes every `=` -- so the
boundary (which starts with `=_`) can never occur inside a part's encoded body."""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime

from p4review.logic.depot_paths import escaped_character, sanitize_for_log
from p4review.logic.excerpts import code_excerpt
from p4review.models.change import ChangeDescription, DiffStatus, FileDiff
from p4review.models.job import ReviewJob
from p4review.models.review_result import SEVERITY_ORDER, Coverage, Finding, ReviewResult, Severity

DESCRIPTION_EXCERPT_CHARS = 120
_PATH_LIMIT = 1024  # a depot path is far shorter; the cap only bounds hostile input
_CODE_LINE_LIMIT = 160
_SUBJECT_COUNTED = (Severity.CRITICAL, Severity.HIGH)


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


def _grouped(result: ReviewResult) -> list[tuple[Severity, list[Finding]]]:
    groups: list[tuple[Severity, list[Finding]]] = []
    for severity in SEVERITY_ORDER:
        members = [f for f in result.findings if Severity(f.severity) == severity]
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


def subject_for(job: ReviewJob, result: ReviewResult) -> str:
    """`[p4review] CL 12345 v2: 3 findings (1 high)` or `[p4review] CL 12345 v2: no findings`."""
    prefix = f"[p4review] CL {job.changelist_id} v{job.review_version}"
    if not result.findings:
        return f"{prefix}: no findings"
    counts = _severity_counts(result)
    severe = ", ".join(f"{counts[s]} {s.value}" for s in _SUBJECT_COUNTED if counts[s])
    text = f"{prefix}: {_plural(len(result.findings), 'finding')}"
    return f"{text} ({severe})" if severe else text


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


@dataclass(frozen=True)
class EmailView:
    """Everything the email shows, cleaned, escaped for control characters and truncated once;
    the text and HTML renderers only lay it out (HTML-escaping is the HTML renderer's)."""

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
    groups: tuple[tuple[str, tuple[FindingView, ...]], ...]  # (SEVERITY, findings), most severe first
    reviewed: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (path, reason)
    job_id: str
    prompt_version: str
    schema_version: str


def _code_view(diff_text: str | None, finding: Finding) -> tuple[CodeLineView, ...]:
    if not diff_text:
        return ()
    return tuple(
        CodeLineView(number=entry.line, text=_code_line(entry.text), added=entry.added, flagged=entry.flagged)
        for entry in code_excerpt(diff_text, finding.line, finding.end_line)
    )


def email_view(
    *,
    job: ReviewJob,
    result: ReviewResult,
    coverage: Coverage | Sequence[FileDiff],
    description: ChangeDescription,
    swarm_url: str | None = None,
    diffs: Sequence[FileDiff] = (),
) -> EmailView:
    """`diffs` are the redacted change's file diffs: each finding shows its lines from them."""
    reviewed, skipped = _coverage(coverage)
    diff_of = {diff.depot_path: diff.unified_diff for diff in diffs if diff.unified_diff}
    summary = _one_line(result.summary, 500) if result.summary and result.summary.strip() else None
    return EmailView(
        subject=subject_for(job, result),
        changelist_id=job.changelist_id,
        owner=_one_line(description.owner, 80),
        kind=job.kind.value,
        review_version=job.review_version,
        follows=_follows(job) if job.follows_shelf else None,
        description=description_excerpt(description.description),
        swarm_link=_swarm_link(swarm_url, job.changelist_id),
        summary=summary,
        headline=_findings_headline(result),
        groups=tuple(
            (
                severity.value.upper(),
                tuple(
                    FindingView(
                        location=_location(finding),
                        title=_one_line(finding.title, 200),
                        category=_one_line(str(finding.category), 40),
                        message_lines=tuple(line.rstrip() for line in _clean(finding.message).split("\n")),
                        suggestion=_one_line(finding.suggestion, 1000)
                        if finding.suggestion and finding.suggestion.strip()
                        else None,
                        code=_code_view(diff_of.get(finding.file), finding),
                    )
                    for finding in members
                ),
            )
            for severity, members in _grouped(result)
        ),
        reviewed=tuple(reviewed),
        skipped=tuple(skipped),
        job_id=job.job_id,
        prompt_version=_one_line(result.prompt_version, 80),
        schema_version=_one_line(result.schema_version, 80),
    )


def render_text(view: EmailView) -> str:
    out: list[str] = [
        f"p4review: automated review of changelist {view.changelist_id}",
        "",
        f"Changelist:  {view.changelist_id}",
        f"Owner:       {view.owner}",
        f"Kind:        {view.kind}",
        f"Review:      v{view.review_version}",
        *([f"Follows:     {view.follows}"] if view.follows else []),
        f"Description: {view.description}",
    ]
    if view.swarm_link:
        out.append(f"Swarm:       {view.swarm_link}")
    out.append("")
    if view.summary:
        out += [f"Summary: {view.summary}", ""]
    out += [view.headline, ""]
    for severity, findings in view.groups:
        out.append(f"== {severity} ({len(findings)}) ==")
        out.append("")
        for finding in findings:
            out.append(f"* {finding.location}")
            out.append(f"  {finding.title}  [{finding.category}]")
            out += [f"  {line}".rstrip() for line in finding.message_lines]
            if finding.suggestion:
                out.append(f"  Suggestion: {finding.suggestion}")
            if finding.code:
                out.append("")
                out += [_text_code_line(line) for line in finding.code]
            out.append("")
    out.append("-- Coverage --")
    out.append(f"Files reviewed ({len(view.reviewed)}):")
    out += [f"  {path}" for path in view.reviewed] or ["  (none)"]
    out.append(f"Files skipped ({len(view.skipped)}):")
    out += [f"  {path} ({reason})" for path, reason in view.skipped] or ["  (none)"]
    out += [
        "",
        f"Job {view.job_id}; prompt {view.prompt_version}, schema {view.schema_version}.",
        "This message was generated automatically by p4review; replies are not read.",
    ]
    return "\n".join(_clean(line) for line in out) + "\n"


def _text_code_line(line: CodeLineView) -> str:
    """`  > 42 + | code`: `>` marks the flagged lines, `+` the lines the change added."""
    return f"  {'>' if line.flagged else ' '}{line.number:>5} {'+' if line.added else ' '}| {line.text}".rstrip()


_CODE_BLOCK_STYLE = (
    "margin: 6px 0; padding: 4px 0; border: 1px solid #d0d7de; border-radius: 4px; "
    "font-family: Consolas, Menlo, monospace; font-size: 12px; line-height: 1.4; white-space: pre; overflow-x: auto"
)


# White text on each colour has a contrast ratio of at least 4.5:1 (WCAG AA), on light and dark
# backgrounds alike: the badge carries its own background.
_BADGE_COLOURS = {"CRITICAL": "#82071e", "HIGH": "#cf222e", "MEDIUM": "#9a6700", "LOW": "#0969da", "INFO": "#57606a"}


def _html_badge(severity: str, e: Callable[[object], str]) -> str:
    colour = _BADGE_COLOURS.get(severity, "#57606a")
    return (
        f'<span style="background-color: {colour}; color: #ffffff; border-radius: 10px; padding: 1px 8px; '
        f'font-size: 11px; font-weight: bold; letter-spacing: 0.5px;">{e(severity)}</span>'
    )


def _html_code_line(line: CodeLineView, e: Callable[[object], str]) -> str:
    background = "background-color: #e6ffec; color: #1f2328;" if line.added else ""
    weight = " font-weight: bold;" if line.flagged else ""
    number = f'<span style="color: #6e7781; user-select: none;">{line.number:>5} {"+" if line.added else " "} </span>'
    return f'<div style="padding: 0 8px;{background}{weight}">{number}{e(line.text) or " "}</div>'


def render_html(view: EmailView) -> str:
    def e(value: object) -> str:
        return html.escape(_clean(str(value)), quote=True)

    out: list[str] = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{e(view.subject)}</title></head>",
        '<body style="font-family: sans-serif; font-size: 14px;">',
        f"<h2>p4review: changelist {e(view.changelist_id)}</h2>",
        "<table>",
        f'<tr><th align="left">Changelist</th><td>{e(view.changelist_id)}</td></tr>',
        f'<tr><th align="left">Owner</th><td>{e(view.owner)}</td></tr>',
        f'<tr><th align="left">Kind</th><td>{e(view.kind)}</td></tr>',
        f'<tr><th align="left">Review</th><td>v{e(view.review_version)}</td></tr>',
        *([f'<tr><th align="left">Follows</th><td>{e(view.follows)}</td></tr>'] if view.follows else []),
        f'<tr><th align="left">Description</th><td>{e(view.description)}</td></tr>',
        "</table>",
    ]
    if view.swarm_link:
        out.append(f'<p><a href="{e(view.swarm_link)}">View changelist {e(view.changelist_id)} in Swarm</a></p>')
    if view.summary:
        out.append(f"<p>{e(view.summary)}</p>")
    out.append(f"<p><strong>{e(view.headline)}</strong></p>")
    for severity, findings in view.groups:
        out.append(f"<h3>{e(severity)} ({len(findings)})</h3>")
        out.append("<ul>")
        for finding in findings:
            item = [
                f"<li>{_html_badge(severity, e)} <code>{e(finding.location)}</code><br>",
                f"<strong>{e(finding.title)}</strong> [{e(finding.category)}]<br>",
                "<br>\n".join(e(line) for line in finding.message_lines),
            ]
            if finding.suggestion:
                item.append(f"<br><em>Suggestion:</em> {e(finding.suggestion)}")
            if finding.code:
                lines = "".join(_html_code_line(line, e) for line in finding.code)
                item.append(f'<div style="{_CODE_BLOCK_STYLE}">{lines}</div>')
            item.append("</li>")
            out.append("".join(item))
        out.append("</ul>")
    out.append("<h3>Coverage</h3>")
    out.append(f"<p>Files reviewed ({len(view.reviewed)}):</p><ul>")
    out += [f"<li><code>{e(path)}</code></li>" for path in view.reviewed] or ["<li>(none)</li>"]
    out.append(f"</ul><p>Files skipped ({len(view.skipped)}):</p><ul>")
    out += [f"<li><code>{e(path)}</code> ({e(reason)})</li>" for path, reason in view.skipped] or ["<li>(none)</li>"]
    out.append("</ul>")
    out.append(
        f'<p style="color: #666; font-size: 12px;">Job {e(view.job_id)}; prompt {e(view.prompt_version)}, '
        f"schema {e(view.schema_version)}. This message was generated automatically by p4review; "
        "replies are not read.</p>"
    )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


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
    message["Subject"] = subject_for(job, result)
    message["Date"] = _date_header(job.created_at)
    message["Message-ID"] = _message_id_header(message_id)
    message["X-P4Review-Job"] = job.job_id
    message["X-P4Review-Version"] = str(job.review_version)
    message["Auto-Submitted"] = "auto-generated"
    view = email_view(
        job=job, result=result, coverage=coverage, description=description, swarm_url=swarm_url, diffs=diffs
    )
    text_body, html_body = render_text(view), render_html(view)
    message.set_content(text_body, subtype="plain", charset="utf-8", cte="quoted-printable")
    message.add_alternative(html_body, subtype="html", charset="utf-8", cte="quoted-printable")
    for part in message.iter_parts():
        del part["MIME-Version"]  # add_alternative builds the part as a top-level message
    message.set_boundary(_boundary(message_id))
    return message.as_bytes()
