"""Export, from Titus' rules, the ones that would add something to the adopted Betterleaks
ruleset: the prototype behind the measurement in docs/redaction.md ("A second ruleset beside
Betterleaks"), which found too little gain to adopt them. Kept to re-measure when Titus or the
held-out data grows; nothing in the layer reads its output.

Source: the YAML rule files of Titus (praetorian-inc/titus, Apache-2.0; Nosey Parker's
successor, which also carries Kingfisher's own rules), read from a git clone at a pinned
commit. Output: a JSON file in the shape of `betterleaks-rules.json` (one entry per rule: id,
Python regex, keywords, secret group, filters), so `ruleset.AdoptedRule` can run it unchanged.

A rule is kept only when it adds something: it is not generic or an identifier (the pipeline's
assignment rules do that job), its regex translates to Python's and matches one of its own
examples, every match of it contains a literal the prefilter can look for (the needle
invariant) and that literal is not common in ordinary code, and at least one of its own
examples is not redacted whole by the pipeline as it stands (Betterleaks' rules and ours) but
is once the rule runs, line by line. Every dropped rule is listed with its reason.

    python tools/export_titus_rules.py GIT_DIR_OF_TITUS --out titus-rules.json

Needles: Titus' rules have no keywords (Hyperscan scans for the whole pattern), so they are
derived from the parsed regex: a set of literals of which every match must contain one
(`ghp_`; `mailgun`|`mg` ... `key-`), lowercased (the prefilter folds ASCII case, a superset).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import itertools
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
PINNED_COMMIT = "369d8dc"
RULES_DIR = "pkg/rule/rules"
_MIN_NEEDLE = 3  # shorter literals are everywhere: a rule needing only `-` is a rule on every line
_MAX_ALTERNATIVES = 24
_GENERIC_CATEGORIES = {"generic", "identifier", "hashed", "test"}
# Needles on more than 1 line in 10,000 of the Python standard library (/usr/lib/python3.11,
# 304,670 lines, measured 2026-11-27): a rule keyed on one runs its regex on ordinary code all
# day (throughput) and judges ordinary values (over-redaction). Its rule is left out.
_COMMON_NEEDLES = frozenset(
    {"api", "key", "encoding", "token", "ion_", "access", "client", "key_", "bootstrap", "password"}
    | {"cio", "sk_", "track", "kling", "private", "pwd", "secret"}
)

sys.path.insert(0, str(ROOT / "layers"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_ruleset import go_to_python  # noqa: E402


def rule_files(git_dir: str, commit: str = PINNED_COMMIT) -> tuple[dict[str, str], str]:
    """{file name: YAML text} of the rules directory at `commit`, and the full commit id."""
    full = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", commit], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "--git-dir", git_dir, "archive", full, RULES_DIR], capture_output=True, check=True
    ).stdout
    files = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".yml"):
                extracted = tar.extractfile(member)
                assert extracted is not None
                files[Path(member.name).name] = extracted.read().decode("utf-8")
    return dict(sorted(files.items())), full


def to_python(pattern: str) -> str:
    """Titus' syntax (Rust/PCRE-style: `(?x)` verbose, flags mid-pattern, `\\x{..}`) -> Python `re`."""
    pattern = re.sub(r"\\x\{([0-9A-Fa-f]{1,2})\}", r"\\x\1", pattern)
    return go_to_python(pattern)


# --- needles -----------------------------------------------------------------------------------

_Exact = frozenset[str] | None  # every string a piece can match, when few and short


def _exact(items: list[tuple[Any, Any]]) -> _Exact:
    """The finite set of strings `items` (a parsed sequence) can match, if small, else None."""
    result: frozenset[str] = frozenset({""})
    for item in items:
        piece = _exact_item(item)
        if piece is None:
            return None
        result = frozenset(a + b for a, b in itertools.product(result, piece))
        if len(result) > _MAX_ALTERNATIVES:
            return None
    return result


def _exact_item(item: tuple[Any, Any]) -> _Exact:
    op, av = item
    name = str(op)
    if name == "LITERAL":
        char = chr(av)
        return frozenset({char.lower()}) if char.isascii() else None
    if name == "AT":
        return frozenset({""})  # `\b`, `^`: match no text
    if name == "IN":
        chars: set[str] = set()
        for kind, value in av:
            if str(kind) == "LITERAL" and chr(value).isascii():
                chars.add(chr(value).lower())
            elif str(kind) == "RANGE" and value[1] - value[0] < 4 and value[1] < 128:
                chars |= {chr(code).lower() for code in range(value[0], value[1] + 1)}
            else:
                return None
        return frozenset(chars) if len(chars) <= 4 else None
    if name == "SUBPATTERN":
        return _exact(list(av[-1]))
    if name == "BRANCH":
        branches = [_exact(list(branch)) for branch in av[1]]
        if any(branch is None for branch in branches):
            return None
        union = frozenset().union(*branches)  # type: ignore[arg-type]
        return union if len(union) <= _MAX_ALTERNATIVES else None
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, high, body = av
        inner = _exact(list(body))
        if inner is None or low != high or low > 4:
            return None
        return _exact([("SUBPATTERN", (None, 0, 0, body))] * low) if low else frozenset({""})
    return None


def _score(literals: frozenset[str]) -> tuple[int, int]:
    return (min(len(literal) for literal in literals), -len(literals))


def required_literals(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    """A set of literals of which every match of `items` contains at least one (the best such
    set found: longest shortest literal, then fewest), or None."""
    candidates: list[frozenset[str]] = []
    run: list[tuple[Any, Any]] = []

    def close_run() -> None:
        if run:
            exact = _exact(run)
            if exact and "" not in exact:
                candidates.append(exact)
            run.clear()

    for item in items:
        op, av = item
        name = str(op)
        if _exact_item(item) is not None:
            run.append(item)
            continue
        close_run()
        inner: frozenset[str] | None = None
        if name == "SUBPATTERN":
            inner = required_literals(list(av[-1]))
        elif name == "BRANCH":
            branches = [required_literals(list(branch)) for branch in av[1]]
            if all(branch is not None for branch in branches):
                inner = frozenset().union(*branches)  # type: ignore[arg-type]
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
            inner = required_literals(list(av[2]))
        elif name == "ATOMIC_GROUP":
            inner = required_literals(list(av))
        if inner:
            candidates.append(inner)
    close_run()
    candidates = [c for c in candidates if len(c) <= _MAX_ALTERNATIVES]
    return max(candidates, key=_score) if candidates else None


def keywords_of(pattern: str) -> list[str] | None:
    literals = required_literals(list(sre_parse.parse(pattern, re.ASCII)))
    if not literals or min(len(literal) for literal in literals) < _MIN_NEEDLE:
        return None
    # A literal that contains another is implied by it: keep the shorter (fewer needles).
    kept = sorted(literal for literal in literals if not any(o != literal and o in literal for o in literals))
    return kept


# --- filters -----------------------------------------------------------------------------------


def filters_of(rule: dict[str, Any]) -> dict[str, Any]:
    """Titus' post-filters in the Betterleaks export's shape: `min_entropy` (a match at or below
    it is dropped), `pattern_requirements` as required patterns and exclusions."""
    requirements = rule.get("pattern_requirements") or {}
    require: list[list[str]] = []
    for key, char_class in (
        ("min_digits", "0-9"),
        ("min_uppercase", "A-Z"),
        ("min_lowercase", "a-z"),
    ):
        if requirements.get(key):
            require.append([f"(?:[^{char_class}]*[{char_class}]){{{int(requirements[key])}}}"])
    if requirements.get("min_special_chars"):
        special = re.escape(requirements.get("special_chars") or "!@#$%^&*()_+-=[]{}|;:'\",.<>?/\\`~")
        require.append([f"(?:[^{special}]*[{special}]){{{int(requirements['min_special_chars'])}}}"])
    exclude = ["(?i)" + re.escape(word) for word in requirements.get("ignore_if_contains") or []]
    minimum = rule.get("min_entropy")
    return {
        "min_entropy": {"value": float(minimum), "inclusive": True} if minimum else None,
        "exclude": exclude,
        "exclude_substrings": [],
        "require": require,
    }


def secret_group(compiled: re.Pattern[str]) -> int:
    """Titus' choice where it is one: a group named `token` (any case); else the named group
    whose name says secret (`password`, `secret`, `key`...; Titus takes any named group, in
    Go's random map order); else the last named group (ids come before secrets); else 1, else 0."""
    named = compiled.groupindex
    for name, index in named.items():
        if name.lower() == "token":
            return index
    secret_like = [
        index for name, index in named.items() if re.search(r"secret|pass|pw|key|token|auth|cred", name, re.I)
    ]
    if secret_like:
        return min(secret_like)
    if named:
        return max(named.values())
    return 1 if compiled.groups else 0


# --- export ------------------------------------------------------------------------------------


def _redacted(redactor: Any, text: str) -> str:
    """The redacted text, or `text` itself when the guard refuses (the rule must not need that)."""
    from p4review.change.redaction import RedactionError

    try:
        return str(redactor.redact(text).text)
    except RedactionError:
        return text


def _rule(spec: dict[str, Any]) -> Any:
    from p4review.change.redaction.ruleset import AdoptedRule, _GlobalFilter

    return AdoptedRule(spec, _GlobalFilter({"global_exclude": [], "global_exclude_substrings": []}))


def _secrets_in(spec: dict[str, Any], example: str) -> list[str]:
    """The secrets the translated rule finds in one of its examples (after its filters)."""
    rule = _rule(spec)
    found = []
    for match in re.compile(spec["regex"], re.ASCII).finditer(example):
        start, end = rule._span(match)
        secret = example[start:end]
        if start < end and rule.is_secret(secret):
            found.append(secret)
    return found


def export(files: dict[str, str], commit: str) -> dict[str, Any]:
    from p4review.change.redaction import RedactionPolicy, Redactor
    from p4review.change.redaction.rules import default_rules

    # The pipeline as it stands without this ruleset: what a rule must add to.
    baseline_rules = [rule for rule in default_rules(RedactionPolicy()) if not _is_titus(rule)]
    baseline = Redactor(RedactionPolicy(), rules=baseline_rules)
    adopted, dropped = [], []
    for file_name, text in files.items():
        for rule in yaml.safe_load(text)["rules"]:
            rule_id = rule["id"]
            reason, spec = _translate(rule)
            if spec is not None:
                examples = [e for e in rule.get("examples") or [] if isinstance(e, str)]
                pattern = re.compile(spec["regex"], re.ASCII)
                # Upstream, a few examples do not fit their own rule (`amplitude.init("...")`
                # for a rule that wants `amplitude ... key`); one that fits proves the translation.
                matching = [example for example in examples if pattern.search(example)]
                secrets = {example: _secrets_in(spec, example) for example in matching}
                if not matching:
                    reason = "its regex, translated, matches none of its own examples"
                elif not any(secrets.values()):
                    reason = "its examples all fail its own filters (made-up values): nothing to test it on"
                else:
                    missed = [
                        example
                        for example, found in secrets.items()
                        if any(secret in _redacted(baseline, example) for secret in found)
                    ]
                    with_rule = Redactor(RedactionPolicy(), rules=[*baseline_rules, _rule(spec)])
                    gained = [
                        example
                        for example in missed
                        if not any(secret in _redacted(with_rule, example) for secret in secrets[example])
                    ]
                    if not missed:
                        reason = "adds nothing: the pipeline already redacts all its examples"
                    elif not gained:
                        reason = "catches none of the examples the pipeline misses once run line by line"
                    else:
                        spec["examples"] = [example for example, found in secrets.items() if found]
                        spec["source_pattern"] = rule["pattern"]
                        spec["file"] = file_name
                        adopted.append(spec)
                        continue
            dropped.append({"id": rule_id, "reason": reason})
    return {
        "source": f"titus {commit[:12]} (praetorian-inc/titus, {RULES_DIR})",
        "licence": "Apache-2.0 (Titus, https://github.com/praetorian-inc/titus; from Nosey Parker and Kingfisher)",
        "config_sha256": hashlib.sha256("".join(files.values()).encode()).hexdigest(),
        "global_exclude": [],
        "global_exclude_substrings": [],
        "rules": adopted,
        "dropped": dropped,
    }


def _is_titus(rule: object) -> bool:
    return str(getattr(rule, "rule_id", "")).startswith(("np.", "kingfisher."))


def _translate(rule: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    categories = set(rule.get("categories") or [])
    if "generic" in rule["id"] or categories & _GENERIC_CATEGORIES:
        return "generic or an identifier: the pipeline's assignment rules cover it", None
    if rule.get("visible") is False:
        return "an identifier Titus reports only with its secret", None
    try:
        pattern = to_python(rule["pattern"])
        compiled = re.compile(pattern, re.ASCII)
    except (re.error, ValueError) as exc:
        return f"regex does not translate to Python: {exc}", None
    keywords = keywords_of(pattern)
    if keywords is None:
        return "no literal every match contains: it would run on every line", None
    if any("\n" in keyword or "\r" in keyword for keyword in keywords):
        return "spans lines: the pipeline runs rules line by line", None
    common = sorted(set(keywords) & _COMMON_NEEDLES)
    if common:
        return f"its needles include {common}, common in ordinary code", None
    return "", {
        "id": rule["id"],
        "regex": pattern,
        "keywords": keywords,
        "secret_group": secret_group(compiled),
        **filters_of(rule),
        "filter_complete": True,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("git_dir", help="a clone (or bare git directory) of praetorian-inc/titus")
    parser.add_argument("--commit", default=PINNED_COMMIT)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    exported = export(*rule_files(args.git_dir, args.commit))
    args.out.write_text(json.dumps(exported, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    reasons: dict[str, int] = {}
    for entry in exported["dropped"]:
        reasons[entry["reason"].split(":")[0]] = reasons.get(entry["reason"].split(":")[0], 0) + 1
    print(f"{args.out}: {len(exported['rules'])} rules adopted, {len(exported['dropped'])} dropped {reasons}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
