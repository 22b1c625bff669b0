"""docs/emails/ holds what the renderer produces now, and the samples show escaping at work."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4review.cli.sample_emails import HOSTILE_PATH, write_samples

DOCS = Path(__file__).resolve().parents[3] / "docs" / "emails"
REGENERATE = "stale sample; run: .venv/bin/python -m p4review.cli.sample_emails docs/emails"


@pytest.mark.spec("RV-13")
def test_checked_in_samples_are_current(tmp_path: Path) -> None:
    written = write_samples(tmp_path)

    assert sorted(p.name for p in written) == [
        "all-clear.html",
        "all-clear.txt",
        "rerun-v2.html",
        "rerun-v2.txt",
        "review-with-findings.html",
        "review-with-findings.txt",
    ]
    for path in written:
        assert (DOCS / path.name).read_bytes() == path.read_bytes(), f"{path.name}: {REGENERATE}"


def test_generation_is_deterministic(tmp_path: Path) -> None:
    first = {p.name: p.read_bytes() for p in write_samples(tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in write_samples(tmp_path / "b")}
    assert first == second


def test_html_sample_escapes_a_hostile_depot_path() -> None:
    html = (DOCS / "review-with-findings.html").read_text(encoding="utf-8")
    text = (DOCS / "review-with-findings.txt").read_text(encoding="utf-8")

    assert "<script>" not in html
    assert "<code>//depot/&lt;script&gt;alert(1)&lt;/script&gt;.c</code>" in html
    assert HOSTILE_PATH in text  # the plain-text part shows the name as written


def test_samples_cover_every_severity_and_the_all_clear() -> None:
    text = (DOCS / "review-with-findings.txt").read_text(encoding="utf-8")
    for marker in ("== CRITICAL (1) ==", "== HIGH (1) ==", "== MEDIUM (1) ==", "== LOW (1) ==", "== INFO (1) =="):
        assert marker in text
    for reason in ("(binary)", "(deleted)", "(too_large)"):
        assert reason in text
    assert "https://swarm.example.com/changes/48213" in text
    assert "No findings." in (DOCS / "all-clear.txt").read_text(encoding="utf-8")


@pytest.mark.spec("RV-3")
def test_each_html_sample_has_its_screenshot() -> None:
    """`make emails` takes them (headless Chromium); they are looked at, not compared."""
    for html_sample in DOCS.glob("*.html"):
        png = html_sample.with_suffix(".png")
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png.name
