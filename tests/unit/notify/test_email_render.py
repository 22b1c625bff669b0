"""The review email: deterministic bytes, subject format, escaping, coverage footer."""

from __future__ import annotations

from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from typing import Any

import pytest

from p4review.models.change import ChangeDescription, DiffStatus, FileDiff
from p4review.models.job import ChangeKind, ReviewJob
from p4review.models.review_result import Finding, ResolvedFinding, ReviewResult, VersionHistory
from p4review.notify.email.render import render_review_email, subject_for

MESSAGE_ID = "<cl12345.v2.bob@p4review.example.com>"


def job(**overrides: Any) -> ReviewJob:
    values: dict[str, Any] = {
        "job_id": "6f1f7c3e-0000-4e55-9a8e-000000000001",
        "idempotency_key": "key-1",
        "request_fingerprint": "fp",
        "changelist_id": 12345,
        "review_version": 2,
        "kind": ChangeKind.SHELVED,
        "created_at": "2024-05-01T10:20:30.123456Z",
        "updated_at": "2024-05-01T10:25:00.000000Z",
    }
    values.update(overrides)
    return ReviewJob(**values)


def make_finding(**overrides: Any) -> Finding:
    values: dict[str, Any] = {
        "id": "F1",
        "severity": "high",
        "category": "security",
        "title": "Unbounded copy",
        "file": "//depot/main/src/net/buffer.c",
        "line": 12,
        "message": "strcpy into a fixed buffer can overflow.",
        "suggestion": "Use snprintf and check for truncation.",
    }
    values.update(overrides)
    return Finding(**values)


def result(findings: list[Finding] | None = None) -> ReviewResult:
    if findings is None:
        findings = [
            make_finding(),
            make_finding(
                id="F2",
                severity="info",
                category="style",
                title="Debug output",
                line=40,
                message="printf left in.",
                suggestion=None,
            ),
            make_finding(
                id="F3",
                severity="medium",
                category="reliability",
                title="Unchecked return",
                file="//depot/main/tools/deploy.py",
                line=3,
                end_line=5,
                message="<script>alert('x')</script> & friends",
            ),
        ]
    return ReviewResult(schema_version="1.0", prompt_version="1.0.0", summary="Three issues.", findings=findings)


def description() -> ChangeDescription:
    return ChangeDescription(
        changelist_id=12345,
        kind="shelved",
        owner="bob",
        client="bob-ws",
        status="pending",
        description="Harden buffer handling <b>now</b>\x07\n\nLonger explanation that is not in the excerpt.",
    )


COVERAGE = [
    FileDiff(depot_path="//depot/main/src/net/buffer.c", action="edit", status=DiffStatus.FETCHED, unified_diff="@@"),
    FileDiff(depot_path="//depot/main/tools/deploy.py", action="edit", status=DiffStatus.FETCHED, unified_diff="@@"),
    FileDiff(depot_path="//depot/main/assets/logo.png", action="add", status=DiffStatus.SKIPPED, skip_reason="binary"),
    FileDiff(depot_path="//depot/main/old/legacy.c", action="delete", status=DiffStatus.SKIPPED, skip_reason="deleted"),
    FileDiff(
        depot_path="//depot/main/data/huge.sql", action="edit", status=DiffStatus.SKIPPED, skip_reason="too_large"
    ),
]


def render(**overrides: Any) -> bytes:
    values: dict[str, Any] = {
        "job": job(),
        "result": result(),
        "coverage": COVERAGE,
        "description": description(),
        "recipient": "bob@example.com",
        "from_address": "p4review <p4review@example.com>",
        "message_id": MESSAGE_ID,
        "swarm_url": "https://swarm.example.com/",
    }
    values.update(overrides)
    return render_review_email(**values)


def parsed(raw: bytes) -> EmailMessage:
    message = message_from_bytes(raw, policy=default_policy)
    assert isinstance(message, EmailMessage)
    return message


def bodies(raw: bytes) -> tuple[str, str]:
    message = parsed(raw)
    text = message.get_body(preferencelist=("plain",))
    html_part = message.get_body(preferencelist=("html",))
    assert text is not None and html_part is not None
    return text.get_content(), html_part.get_content()


@pytest.mark.spec("NOT-10", "IDEM-7")
def test_two_renders_are_byte_identical() -> None:
    first = render()
    second = render(job=job(), result=result(), description=description())
    assert first == second
    # The boundary is derived from the Message-ID, not random.
    assert render(message_id="<other@p4review.example.com>") != first


@pytest.mark.spec("NOT-10")
def test_headers() -> None:
    raw = render()
    message = parsed(raw)
    assert message["From"] == "p4review <p4review@example.com>"
    assert message["To"] == "bob@example.com"
    assert message["Subject"] == "[p4review] CL 12345 v2: 3 findings (1 high)"
    assert message["Date"] == "Wed, 01 May 2024 10:20:30 +0000"
    assert message["Message-ID"] == MESSAGE_ID
    assert message["X-P4Review-Job"] == "6f1f7c3e-0000-4e55-9a8e-000000000001"
    assert message["X-P4Review-Version"] == "2"
    assert message["Auto-Submitted"] == "auto-generated"
    assert message.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in message.iter_parts()] == ["text/plain", "text/html"]
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")


def test_date_comes_from_the_job_not_the_clock() -> None:
    message = parsed(render(job=job(created_at="2020-01-02T03:04:05.000000Z")))
    assert message["Date"] == "Thu, 02 Jan 2020 03:04:05 +0000"


def test_subject_format() -> None:
    assert subject_for(job(), result([])) == "[p4review] CL 12345 v2: no findings"
    assert subject_for(job(), result([make_finding(severity="low")])) == "[p4review] CL 12345 v2: 1 finding"
    many = [
        make_finding(id="a", severity="critical"),
        make_finding(id="b", severity="high"),
        make_finding(id="c", severity="high"),
        make_finding(id="d", severity="info"),
    ]
    assert subject_for(job(review_version=1), result(many)) == "[p4review] CL 12345 v1: 4 findings (1 critical, 2 high)"


def test_html_part_escapes_finding_text() -> None:
    text, html = bodies(render())
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; friends" in html
    assert "<b>now</b>" not in html and "&lt;b&gt;now&lt;/b&gt;" in html
    # The plain-text part shows the text as written.
    assert "<script>alert('x')</script> & friends" in text


def test_body_content_grouped_by_severity() -> None:
    text, html = bodies(render())
    assert "Changelist:  12345" in text
    assert "Owner:       bob" in text
    assert "Kind:        shelved" in text
    assert "Description: Harden buffer handling <b>now</b>" in text
    assert "Longer explanation" not in text
    assert "\x07" not in text
    order = [text.index(marker) for marker in ("== HIGH (1) ==", "== MEDIUM (1) ==", "== INFO (1) ==")]
    assert order == sorted(order)
    assert "//depot/main/src/net/buffer.c:12" in text
    assert "//depot/main/tools/deploy.py:3-5" in text
    assert "Suggestion: Use snprintf and check for truncation." in text
    assert "https://swarm.example.com/changes/12345" in text
    assert 'href="https://swarm.example.com/changes/12345"' in html


def test_coverage_footer_lists_reviewed_and_skipped_files() -> None:
    text, html = bodies(render())
    footer = text[text.index("-- Coverage --") :]
    assert "Files reviewed (2):" in footer
    assert "//depot/main/tools/deploy.py" in footer
    assert "Files skipped (3):" in footer
    for line in (
        "//depot/main/assets/logo.png (binary)",
        "//depot/main/old/legacy.c (deleted)",
        "//depot/main/data/huge.sql (too_large)",
    ):
        assert line in footer
    assert "<code>//depot/main/assets/logo.png</code> (binary)" in html


def test_no_findings_email() -> None:
    raw = render(result=result([]), swarm_url=None)
    message = parsed(raw)
    assert message["Subject"] == "[p4review] CL 12345 v2: no findings"
    text, html = bodies(raw)
    assert "No findings." in text and "No findings." in html
    assert "==" not in text.replace("-- Coverage --", "")
    assert "/changes/12345" not in text
    assert "Files reviewed (2):" in text


def test_header_injection_is_refused() -> None:
    with pytest.raises(ValueError):
        render(recipient="bob@example.com\r\nBcc: everyone@example.com")


def test_a_submit_that_follows_a_shelf_says_which_version() -> None:
    from p4review.models.job import ShelfRef

    submit = job(
        changelist_id=48277,
        review_version=3,
        kind=ChangeKind.SUBMITTED,
        rerun=True,
        follows_shelf=ShelfRef(changelist_id=48240, review_version=2),
    )
    text, html_body = bodies(render(job=submit))
    assert "Review:      v3\r\nFollows:     shelf v2 of CL 48240\r\n" in text
    assert ">Follows</th><td>shelf v2 of CL 48240</td></tr>" in html_body
    plain_text, plain_html = bodies(render())
    assert "Follows" not in plain_text and "Follows" not in plain_html


@pytest.mark.spec("CH-4")
def test_control_characters_in_paths_are_shown_escaped_never_as_body_lines() -> None:
    """Found by a hostile-input probe: a skipped path holding CR LF printed as its own body line
    (a fake `Subject:` line) in the plain-text part."""
    hostile = "//depot/main/a.c\r\nSubject: urgent, reply with your password\x1b[2J\u202e"
    coverage = [
        FileDiff(depot_path=hostile, action="add", status=DiffStatus.SKIPPED, skip_reason="binary"),
        FileDiff(depot_path=hostile + "2", action="edit", status=DiffStatus.FETCHED, unified_diff="@@"),
    ]
    text, html = bodies(render(coverage=coverage))
    assert not any(line.startswith("Subject:") for line in text.splitlines())
    assert "//depot/main/a.c\\x0d\\x0aSubject: urgent, reply with your password\\x1b[2J\\u202e (binary)" in text
    for part in (text, html):
        assert not any(char in part for char in "\x1b\u202e")  # (the parts themselves end lines with CR LF)
    assert "<code>//depot/main/a.c\\x0d\\x0aSubject:" in html


@pytest.mark.spec("CH-3", "RV-13")
def test_text_and_html_show_the_same_view() -> None:
    """Both parts are laid out from one EmailView: a field is cleaned and truncated once, so the
    two parts can never disagree about it."""
    from p4review.notify.email.render import email_view

    long = result()
    long = long.model_copy(update={"summary": "word " * 400})
    view = email_view(job=job(), result=long, coverage=COVERAGE, description=description())
    assert view.summary is not None and len(view.summary) == 500 and view.summary.endswith("...")
    text, html = bodies(render(result=long))
    assert view.summary in text and view.summary in html
    assert [path for path in view.reviewed] == ["//depot/main/src/net/buffer.c", "//depot/main/tools/deploy.py"]


BUFFER_DIFF = """--- a/depot/main/src/net/buffer.c
+++ b/depot/main/src/net/buffer.c
@@ -9,5 +9,6 @@
 void copy(char *dst, const char *src) {
 \tchar tmp[16];
-\tstrncpy(tmp, src, sizeof tmp);
+\tstrcpy(tmp, src);  /* <fast> & "simple" */
+\tputs("\u202eevil\x1b[2J");
 \tmemcpy(dst, tmp, 16);
 }
"""


@pytest.mark.spec("RV-1")
def test_each_finding_shows_its_lines_in_both_parts() -> None:
    diffs = [
        FileDiff(
            depot_path="//depot/main/src/net/buffer.c",
            action="edit",
            status=DiffStatus.FETCHED,
            unified_diff=BUFFER_DIFF,
        )
    ]
    finding = make_finding(line=11)
    text, html = bodies(render(result=result([finding]), diffs=diffs))
    assert "\n       9  | void copy(char *dst, const char *src) {" in text.replace("\r\n", "\n")
    assert '  >   11 +|     strcpy(tmp, src);  /* <fast> & "simple" */' in text
    assert '      12 +|     puts("\\u202eevil\\x1b[2J");' in text  # a bidi override is shown, not obeyed
    assert "      13  |     memcpy(dst, tmp, 16);" in text
    assert "strcpy(tmp, src);  /* &lt;fast&gt; &amp; &quot;simple&quot; */" in html
    for part in (text, html):
        assert not any(char in part for char in "\x1b\u202e\t")


def test_a_finding_without_its_file_diff_shows_no_code() -> None:
    text, _ = bodies(render(result=result([make_finding(line=11)])))
    assert "+|" not in text and " | " not in text


@pytest.mark.spec("RV-2")
def test_each_finding_in_the_html_part_carries_its_severity_badge() -> None:
    _, html = bodies(render())
    for severity in ("HIGH", "MEDIUM", "INFO"):
        assert html.count(f'letter-spacing: 0.5px;">{severity}</span> <a href="https://swarm.example.com/changes/') == 1


@pytest.mark.spec("RV-2")
def test_badge_text_is_readable_on_every_badge_colour() -> None:
    """White on each badge colour meets WCAG AA (4.5:1), whatever the mail client's theme."""
    from p4review.notify.email.render import _BADGE_COLOURS

    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    assert all((1.0 + 0.05) / (luminance(colour) + 0.05) >= 4.5 for colour in _BADGE_COLOURS.values())


@pytest.mark.spec("RV-13")
def test_each_finding_links_to_its_file_in_swarm_when_a_swarm_url_is_set() -> None:
    """Swarm names a file's diff on the change page by the MD5 of its depot path."""
    import hashlib

    anchor = hashlib.md5(b"//depot/main/src/net/buffer.c").hexdigest()
    link = f"https://swarm.example.com/changes/12345#{anchor}"
    text, html = bodies(render())
    assert f"  In Swarm: {link}" in text
    assert f'<a href="{link}"' in html
    plain_text, plain_html = bodies(render(swarm_url=None))
    assert "In Swarm" not in plain_text and "swarm.example.com" not in plain_html


@pytest.mark.spec("RV-13")
def test_the_html_part_is_a_table_layout_with_inline_styles_and_a_dark_palette() -> None:
    _, html = bodies(render())
    assert '<meta name="color-scheme" content="light dark">' in html
    assert "@media (prefers-color-scheme: dark)" in html
    assert html.count('role="presentation"') >= 3
    for tag in ("<div", "<ul", "<li"):
        assert tag not in html  # block layout is what mail clients break; tables they keep
    # Every card and code block carries its own colours (a client's dark mode inverts them together).
    assert 'class="p4r-card"' in html and "background-color: #ffffff; color: #1f2328" in html


HISTORY = VersionHistory(
    previous_version=1,
    previous_job_id="job-v1",
    new=["F3"],
    still_open=["F1", "F2"],
    resolved=[
        ResolvedFinding(
            severity="high", category="correctness", title="Bare except hides errors", file="//depot/a.py", line=7
        )
    ],
    files_reused=["//depot/main/src/net/buffer.c"],
)


@pytest.mark.spec("RV-11")
def test_a_versioned_rerun_leads_with_what_changed_since_the_previous_version() -> None:
    raw = render(history=HISTORY)
    assert parsed(raw)["Subject"] == "[p4review] CL 12345 v2: 3 findings (1 high); 1 new, 1 resolved"
    text, html = bodies(raw)
    headline = "Since v1: 1 new, 2 still open, 1 resolved."
    order = [
        text.index(marker)
        for marker in (headline, "#### New since v1 (1) ####", "#### Still open (2) ####", "#### Resolved since v1 (1)")
    ]
    assert order == sorted(order)
    new_section = text[text.index("#### New since v1") : text.index("#### Still open")]
    assert "deploy.py:3-5" in new_section and "buffer.c" not in new_section
    assert "* [HIGH] //depot/a.py:7  Bare except hides errors" in text
    assert "1 file unchanged since v1 (review carried over)." in text
    for marker in (headline, "New since v1 (1)", "Still open (2)", "Resolved since v1 (1)"):
        assert marker in html
    assert "<s>Bare except hides errors</s>" in html


def test_a_first_review_has_no_history_section() -> None:
    text, html = bodies(render())
    assert "Since v" not in text and "Resolved since" not in html


@pytest.mark.spec("RV-14")
def test_a_suggested_change_is_shown_as_code_in_both_parts() -> None:
    code = '    snprintf(buf, size, "%s", name);  /* <safe> */\n    return;'
    text, html = bodies(render(result=result([make_finding(suggested_code=code)])))
    assert (
        '  Suggested change:\n        |     snprintf(buf, size, "%s", name);  /* <safe> */\n        |     return;'
        in text.replace("\r\n", "\n")
    )
    assert "<em>Suggested change:</em>" in html
    assert "snprintf(buf, size, &quot;%s&quot;, name);  /* &lt;safe&gt; */" in html
    plain_text, _ = bodies(render())
    assert "Suggested change" not in plain_text


@pytest.mark.spec("RV-15")
def test_the_footer_names_the_depot_policies_used_and_why_one_was_not() -> None:
    from p4review.models.policy import ChangePolicy, DepotPolicy, PolicyDiagnostic, PolicyFile

    policy = ChangePolicy(
        policies=[
            DepotPolicy(
                source="//depot/main/.p4review.toml",
                revision="@12345",
                directory="//depot/main/",
                policy=PolicyFile(version=1),
            )
        ],
        diagnostics=[
            PolicyDiagnostic(
                source="//depot/main/src/.p4review.toml", reason="invalid_policy", detail="max_findings: int_parsing"
            )
        ],
    )
    text, html = bodies(render(policy=policy))
    assert "Review policy: //depot/main/.p4review.toml@12345" in text
    note = (
        "Review policy //depot/main/src/.p4review.toml was not used (invalid_policy: max_findings: int_parsing); "
        "the service's defaults applied to its files."
    )
    assert note in " ".join(text.split()) and "Review policy: //depot/main/.p4review.toml@12345" in html


@pytest.mark.spec("RV-15")
def test_a_change_to_the_review_policy_is_called_out_and_a_refused_reviewer_is_named_by_domain() -> None:
    from p4review.models.policy import ChangePolicy, PolicyDiagnostic

    policy = ChangePolicy(
        modified=["//depot/main/tools/.p4review.toml"],
        diagnostics=[
            PolicyDiagnostic(
                source="//depot/main/.p4review.toml",
                reason="reviewer_not_allowed",
                detail="reviewers at outside.example not emailed: not an allowed recipient domain",
            )
        ],
    )
    text, html = bodies(render(policy=policy))
    flat = " ".join(text.split())
    callout = "This change modifies the review policy at //depot/main/tools/.p4review.toml; it takes effect for later changes."
    assert callout in flat and callout in " ".join(html.split())
    assert flat.index(callout) < flat.index("-- Coverage --")  # at the top, not in the footer
    assert (
        "Review policy //depot/main/.p4review.toml: reviewers at outside.example not emailed: "
        "not an allowed recipient domain." in flat
    )
    assert "was not used" not in flat
