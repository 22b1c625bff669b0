"""Render the sample review emails in docs/emails/ with the real renderer, from fixed inputs.

    python -m p4review.cli.sample_emails docs/emails [--screenshots]    (or: make emails)

The inputs are changelist 48213 of the events/depot fixture (a submitted change, review v2) and
its diffs, made from the fixture's archive: one email with a finding of every severity, each
with the lines it flags, and one all-clear. The HTML and text parts are taken
out of the rendered message bytes, exactly as a mail client would see them. Everything is
fixed (no clock, no randomness), so tests/unit/cli/test_sample_emails.py can insist that the
checked-in files equal what this produces now."""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from email import message_from_bytes
from email.policy import default as default_policy
from pathlib import Path

from p4review.models.change import ChangeDescription, ChangedFile, DiffStatus, FileDiff
from p4review.models.job import ChangeKind, ReviewJob, job_id_for, request_fingerprint
from p4review.models.review_result import (
    Coverage,
    Finding,
    ResolvedFinding,
    ReviewResult,
    SkippedFile,
    StoredReview,
    VersionHistory,
)
from p4review.notify.delivery import delivery_token, message_id_for
from p4review.notify.email.render import render_review_email

SWARM_URL = "https://swarm.example.com"
SCREENSHOT_WIDTH = 1000
# Tall enough for each sample's whole message at that width (look again when a sample grows).
SCREENSHOT_HEIGHTS = {"review-with-findings": 2040, "rerun-v2": 2340, "all-clear": 600}
# Also shot with the browser in dark mode (prefers-color-scheme: dark), as a phone at night shows it.
DARK_SCREENSHOTS = ("review-with-findings",)
FROM_ADDRESS = "p4review <p4review@example.com>"
RECIPIENT = "dkowalski@example.com"
# Not in the fixture: a hostile file name, to show (and test) that the HTML part escapes it.
HOSTILE_PATH = "//depot/<script>alert(1)</script>.c"

_ROOT = "//depot/engine/main"
_DESCRIPTION = ChangeDescription(
    changelist_id=48213,
    kind=ChangeKind.SUBMITTED,
    owner="dkowalski",
    client="dkowalski-engine-main",
    status="submitted",
    description=(
        "net: harden packet header parsing, add per-connection stats\n\n"
        "- PacketReader::readHeader rejects lengths > kMaxPacketSize (NET-1207)\n"
        "- new ConnStats counters for the network debug overlay\n"
        "- remove LegacyCodec (unused since 2.2, NET-1184)\n"
        "- overlay icons: new colour for the dropped-packets state\n"
    ),
    time=1715594551,
    files=[
        ChangedFile(
            depot_path=f"{_ROOT}/assets/ui/net_overlay_icons.png", action="edit", file_type="binary+F", revision=2
        ),
        ChangedFile(depot_path=f"{_ROOT}/src/net/conn_stats.cpp", action="add", file_type="text", revision=1),
        ChangedFile(depot_path=f"{_ROOT}/src/net/conn_stats.h", action="add", file_type="text", revision=1),
        ChangedFile(depot_path=f"{_ROOT}/src/net/legacy_codec.cpp", action="delete", file_type="text", revision=3),
        ChangedFile(depot_path=f"{_ROOT}/src/net/packet.cpp", action="edit", file_type="text", revision=7),
        ChangedFile(depot_path=f"{_ROOT}/src/net/packet.h", action="edit", file_type="text", revision=4),
    ],
)


# The fixture's revisions of the reviewed files: (path under src/net, previous rev or None, rev).
_REVISIONS = (("packet.cpp", 6, 7), ("packet.h", 3, 4), ("conn_stats.h", None, 1))


def _fixture_diffs() -> list[FileDiff]:
    """The reviewed files' diffs, made from the fixture depot's archive as the fake p4 makes them."""
    archive = Path(__file__).resolve().parents[3] / "events" / "depot" / "archive" / _ROOT[2:] / "src" / "net"
    diffs = []
    for name, old, new in _REVISIONS:
        before = (archive / f"{name},d" / str(old)).read_text("utf-8").splitlines(True) if old else []
        after = (archive / f"{name},d" / str(new)).read_text("utf-8").splitlines(True)
        path = f"{_ROOT}/src/net/{name}"
        text = "".join(difflib.unified_diff(before, after, f"a/{path[2:]}", f"b/{path[2:]}", n=3))
        diffs.append(
            FileDiff(depot_path=path, action="edit" if old else "add", status=DiffStatus.FETCHED, unified_diff=text)
        )
    return diffs


def _job() -> ReviewJob:
    key = "sample-48213-v2"
    return ReviewJob(
        job_id=job_id_for(key),
        idempotency_key=key,
        request_fingerprint=request_fingerprint(48213, 2, "submitted", False),
        changelist_id=48213,
        review_version=2,
        kind=ChangeKind.SUBMITTED,
        created_at="2024-05-13T10:04:12.000000Z",
        updated_at="2024-05-13T10:06:40.000000Z",
    )


def _coverage(*extra_skipped: SkippedFile) -> Coverage:
    return Coverage(
        files_reviewed=[f"{_ROOT}/src/net/conn_stats.h", f"{_ROOT}/src/net/packet.cpp", f"{_ROOT}/src/net/packet.h"],
        files_skipped=[
            SkippedFile(file=f"{_ROOT}/assets/ui/net_overlay_icons.png", reason="binary"),
            SkippedFile(file=f"{_ROOT}/src/net/legacy_codec.cpp", reason="deleted"),
            SkippedFile(file=f"{_ROOT}/src/net/conn_stats.cpp", reason="too_large"),
            *extra_skipped,
        ],
    )


def _with_findings() -> StoredReview:
    packet_cpp, packet_h, stats_h = (f"{_ROOT}/src/net/{name}" for name in ("packet.cpp", "packet.h", "conn_stats.h"))
    findings = [
        Finding(
            id="F1",
            severity="critical",
            category="security",
            title="Unbounded strcpy into a 64-byte buffer",
            file=packet_cpp,
            line=64,
            confidence="high",
            message="setPeerName() copies the peer's name into peerName_[64] with strcpy(): a name of 64 "
            "bytes or more overflows the buffer and the PacketReader after it.",
            suggestion='Copy with std::snprintf(peerName_, sizeof peerName_, "%s", name), or keep a std::string.',
        ),
        Finding(
            id="F2",
            severity="high",
            category="security",
            title="describe() ignores the caller's buffer size",
            file=packet_cpp,
            line=68,
            end_line=69,
            confidence="high",
            message="The change drops std::snprintf(buf, bufSize, ...) for sprintf() and discards bufSize, "
            "so a long peer name now overflows the caller's buffer.",
            suggestion="Keep std::snprintf(buf, bufSize, ...).",
            suggested_code='    std::snprintf(buf, bufSize, "PacketReader{peer=%s, offset=%zu, size=%zu}", '
            "peerName_, offset_, size_);",
        ),
        Finding(
            id="F3",
            severity="medium",
            category="reliability",
            title="Oversize packets are dropped without a count",
            file=packet_cpp,
            line=42,
            end_line=45,
            message="readHeader() returns false for a header longer than kMaxPacketSize, but nothing records "
            "the drop: the overlay's dropped counter stays at zero (the TODO says as much).",
            suggestion="Call ConnStats::onDrop() before returning.",
        ),
        Finding(
            id="F4",
            severity="low",
            category="test",
            title="No test at the size boundary",
            file=packet_h,
            line=12,
            message="Nothing exercises a header of exactly kMaxPacketSize or kMaxPacketSize + 1 bytes.",
        ),
        Finding(
            id="F5",
            severity="info",
            category="performance",
            title="Counters need only relaxed ordering",
            file=stats_h,
            line=28,
            end_line=32,
            message="The counters use the default sequentially consistent ordering on every increment; "
            "statistics read by the overlay need only std::memory_order_relaxed.",
        ),
    ]
    result = ReviewResult(
        schema_version="1.1",
        prompt_version="1.4.0",
        findings=findings,
        summary="Header lengths are now bounded, but the peer-name code added beside it can overflow two buffers.",
    )
    return StoredReview(result=result, coverage=_coverage(SkippedFile(file=HOSTILE_PATH, reason="outside_allow_list")))


def _rerun() -> StoredReview:
    """The same review as a versioned rerun: v1 had the first finding, v2 added two and fixed one."""
    review = _with_findings()
    review.history = VersionHistory(
        previous_version=1,
        previous_job_id=job_id_for("sample-48213-v1"),
        new=["F2", "F5"],
        still_open=["F1", "F3", "F4"],
        resolved=[
            ResolvedFinding(
                severity="high",
                category="correctness",
                title="Length read before the header is complete",
                file=f"{_ROOT}/src/net/packet.cpp",
                line=38,
            )
        ],
        files_reused=[f"{_ROOT}/src/net/packet.h"],
    )
    return review


def _all_clear() -> StoredReview:
    result = ReviewResult(
        schema_version="1.0", prompt_version="1.0.0", findings=[], summary="No issues found in the reviewed files."
    )
    return StoredReview(result=result, coverage=_coverage())


def _parts(review: StoredReview) -> tuple[str, str]:
    """(html, text) of the message the notify stage would send for `review`."""
    job = _job()
    raw = render_review_email(
        job=job,
        result=review.result,
        coverage=review.coverage or Coverage(),
        description=_DESCRIPTION,
        recipient=RECIPIENT,
        from_address=FROM_ADDRESS,
        swarm_url=SWARM_URL,
        diffs=_fixture_diffs(),
        history=review.history,
        message_id=message_id_for(delivery_token(job.changelist_id, RECIPIENT, job.review_version), FROM_ADDRESS),
    )
    message = message_from_bytes(raw, policy=default_policy)
    html_part, text_part = message.get_body(("html",)), message.get_body(("plain",))
    assert html_part is not None and text_part is not None
    return html_part.get_content(), text_part.get_content()


def write_samples(directory: Path) -> list[Path]:
    """Write the sample files (HTML and text of each) into `directory` (created if missing); returns
    their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    samples = (("review-with-findings", _with_findings()), ("rerun-v2", _rerun()), ("all-clear", _all_clear()))
    for name, review in samples:
        for suffix, content in zip((".html", ".txt"), _parts(review), strict=True):
            path = directory / f"{name}{suffix}"
            # Files in the repository use LF line endings, whatever the wire format uses.
            path.write_bytes(content.replace("\r\n", "\n").encode("utf-8"))
            written.append(path)
    return written


def write_screenshots(directory: Path, browser: str | None = None) -> list[Path]:
    """PNG screenshots of the HTML samples in `directory`, taken with headless Chromium (Debian's
    `chromium`). Not byte-stable across Chromium versions, so no test compares them: look at each
    one before committing it."""
    browser = browser or shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("screenshots need Chromium: apt-get install chromium")
    shots = [(name, height, False) for name, height in SCREENSHOT_HEIGHTS.items()]
    shots += [(name, SCREENSHOT_HEIGHTS[name], True) for name in DARK_SCREENSHOTS]
    written = []
    for name, height, dark in shots:
        png = (directory / f"{name}{'-dark' if dark else ''}.png").resolve()
        command = [
            browser,
            "--headless",
            "--no-sandbox",  # a container's root user has no user namespace to sandbox in
            "--disable-gpu",
            "--hide-scrollbars",
            *(["--force-dark-mode", "--blink-settings=preferredColorScheme=0"] if dark else []),
            f"--window-size={SCREENSHOT_WIDTH},{height}",
            f"--screenshot={png}",
            (directory / f"{name}.html").resolve().as_uri(),
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=120)
        written.append(png)
    return written


if __name__ == "__main__":
    arguments = [argument for argument in sys.argv[1:] if argument != "--screenshots"]
    if len(arguments) != 1:
        sys.exit("usage: python -m p4review.cli.sample_emails DIRECTORY [--screenshots]")
    for written_path in write_samples(Path(arguments[0])):
        print(written_path)
    if "--screenshots" in sys.argv[1:]:
        for written_path in write_screenshots(Path(arguments[0])):
            print(written_path)
