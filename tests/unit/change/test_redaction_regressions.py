"""Every case of tests/unit/data/redaction_regressions.txt (format in the file's header):
the expected classes are counted, no listed leak survives, line structure is kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from p4review.change.redaction import RedactionPolicy, redact
from p4review.change.redaction.policy import service_policy

CASES_FILE = Path(__file__).parents[1] / "data" / "redaction_regressions.txt"


@dataclass
class Case:
    name: str
    expect: set[str] = field(default_factory=set)
    leaks: list[str] = field(default_factory=list)
    policy: RedactionPolicy | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        lines = list(self.lines)
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines) + "\n"


def _policy(value: str) -> RedactionPolicy:
    emails, service, hosts, cidrs = False, False, [], []
    for item in (part.strip() for part in value.split(",")):
        if item == "emails":
            emails = True
        elif item == "service":  # the service's secure default (Settings().redaction_policy())
            service = True
        elif item.startswith("host="):
            hosts.append(item[len("host=") :])
        elif item.startswith("cidr="):
            cidrs.append(item[len("cidr=") :])
        else:
            raise ValueError(f"unknown policy item {item!r}")
    if service:
        return service_policy(host_suffixes=tuple(hosts), cidrs=tuple(cidrs))
    return RedactionPolicy(
        deidentify_emails=emails, confidential_host_suffixes=tuple(hosts), confidential_cidrs=tuple(cidrs)
    )


def load_cases(path: Path = CASES_FILE) -> list[Case]:
    cases: list[Case] = []
    current: Case | None = None
    in_directives = False
    # newline="": a case may hold a raw "\r" inside a line (a token split by it), kept as is.
    with path.open(encoding="utf-8", newline="") as cases_file:
        content = cases_file.read()
    for line in content.split("\n"):
        if line.startswith("## case:"):
            current = Case(line[len("## case:") :].strip())
            cases.append(current)
            in_directives = True
            continue
        if current is None:
            continue  # the file header
        if in_directives and line.startswith("## "):
            directive, _, value = line[3:].partition(":")
            value = value.strip()
            if directive == "expect":
                current.expect |= {name.strip() for name in value.split(",")} - {"none"}
            elif directive == "leak":
                current.leaks.append(value)
            elif directive == "policy":
                current.policy = _policy(value)
            elif directive != "note":
                raise ValueError(f"case {current.name!r}: unknown directive {directive!r}")
            continue
        in_directives = False
        current.lines.append(line)
    return cases


CASES = load_cases()


def test_the_file_has_cases_with_unique_names():
    names = [case.name for case in CASES]
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert all(case.lines for case in CASES)


@pytest.mark.spec("SEC-43")
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_regression_case(case: Case):
    document = redact(case.text, case.policy)
    if not case.expect:
        assert document.text == case.text
        assert dict(document.counts) == {}
        return
    assert case.expect <= set(document.counts), dict(document.counts)
    for leak in case.leaks:
        assert leak not in document.text
    before, after = case.text.split("\n"), document.text.split("\n")
    assert len(before) == len(after)
    assert [line[:1] for line in before] == [line[:1] for line in after]
