"""A deterministic, offline stand-in for the LLM reviewer.

`review_change` answers exactly as a model would: JSON text following the ReviewResult
contract, which the caller then parses with `result_parser.parse_review_result` like any
model answer. The rules are simple, honest line heuristics over the ADDED lines of each
fetched diff, plus one family over the REMOVED lines: a safeguard the change deletes and does not
put back (`p4review.review.offline.removed_safeguards`).

No finding quotes source code. For the credential rules this is a hard guarantee: the
matched value never appears in the output (so it can never reach an email); the other
rules describe the problem instead of quoting the line.

No rule repeats an analyzer the review stage runs by default on the same files
(`review/analyzers/analysis.py`; the evidence is docs/review.md "Rules the analyzers carry"): eval/exec,
bare excepts, pickle/marshal/yaml.load, shell commands built in Python and scanf("%s"), and,
in the files eslint reads, DOM HTML sinks and empty catch blocks are theirs. The unbounded C
string calls stay: flawfinder rates some of them below the level the review keeps.

Why the rules are regular expressions and not tree-sitter or ast-grep queries: the input is diff
hunks, fragments that seldom parse, and each rule is lexical on one added line (a
literal assigned to a credential-like name, a setting spelled the same in code, YAML, JSON,
shell and Dockerfiles, a call or command on its line) or reads the few lines the diff shows
after it. Where a rule needs the syntax of the whole file, an analyzer has it, parsed from the
whole new file; a parser here would add its grammars to a layer near Lambda's size limit and to
every cold start, to parse error-filled fragments.

Above 500 lines on purpose: most of it is the rules' data (pattern, severity, why), kept beside the
few functions that apply them."""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from p4review.change.analyzer_files import C_EXTENSIONS, PY_EXTENSIONS, is_test_path, language_path
from p4review.change.redaction.policy_rules import POLICY_CLASSES
from p4review.change.snapshot_redaction import ReviewFile, ReviewInput
from p4review.change.unified_diff import iter_added_lines, iter_new_side_lines
from p4review.models.finding_labels import SEVERITY_ORDER
from p4review.models.review_result import SCHEMA_VERSION
from p4review.review.offline import OFFLINE_PROMPT_VERSION, removed_safeguards

MAX_FINDINGS = 50

_JS_EXTENSIONS = frozenset({".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"})
# The files eslint reads (`analysis.analyzers_for`; not imported: analysis imports this module).
# TypeScript is not among them, so the JavaScript rules eslint carries still run on it here.
_ESLINT_EXTENSIONS = frozenset({".js", ".jsx", ".mjs", ".cjs"})


def _extension(depot_path: str) -> str:
    return posixpath.splitext(depot_path)[1].lower()


def _is_c(path: str) -> bool:
    return _extension(path) in C_EXTENSIONS


def _is_python(path: str) -> bool:
    return _extension(path) in PY_EXTENSIONS


def _is_js(path: str) -> bool:
    return _extension(path) in _JS_EXTENSIONS


def _read_by_eslint(path: str) -> bool:
    return _extension(path) in _ESLINT_EXTENSIONS


def _is_shell(path: str) -> bool:
    return removed_safeguards.language_of(path) in (removed_safeguards.SHELL, removed_safeguards.DOCKERFILE)


def _any_file(path: str) -> bool:
    return True


def _is_comment(path: str, text: str) -> bool:
    """Whole-line comments, so code rules don't fire on commented-out code or prose."""
    stripped = text.lstrip()
    if _is_python(path) or _is_shell(path):
        return stripped.startswith("#")
    if _is_c(path) or _is_js(path):
        # "* " continues a block comment; "*p = ..." is a dereference, not a comment.
        return stripped.startswith(("//", "/*")) or re.match(r"\*(?:\s|/|$)", stripped) is not None
    return False


@dataclass(frozen=True)
class Rule:
    rule_id: str
    severity: str
    category: str
    confidence: str
    title: str
    message: str
    suggestion: str
    # The pattern to search an added line of this file with, or None: rule not applicable.
    pattern_for: Callable[[str], re.Pattern[str] | None]
    # Code rules skip whole-line comments; marker and credential rules look everywhere.
    skip_comments: bool = True


_C_UNSAFE = re.compile(r"(?<![\w.>])(?:strcpy|strcat|v?sprintf|gets)\s*\(")
_PY_PRINT = re.compile(r"(?<![\w.])print\s*\(")
_JS_CONSOLE = re.compile(r"(?<![\w.])console\.(?:log|debug)\s*\(")
# Credential patterns: a quoted literal of at least one non-space character assigned with
# `=` or `:` (code, JSON, YAML). References such as os.environ[...] don't match.
_PASSWORD = re.compile(
    r"""(?i)(?<![a-z0-9])\w*(?:password|passwd|pwd)\w*["']?\s*(?:=|:)\s*(?:[rbuf]{0,2})(["'])[^"'\s]+\1"""
)
_API_KEY = re.compile(
    r"""(?i)(?<![a-z0-9])\w*(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)\w*["']?"""
    r"""\s*(?:=|:)\s*(?:[rbuf]{0,2})(["'])[^"'\s]{4,}\1"""
)
# A placeholder the redaction pipeline left: a secret was in the change (reviewers only ever see
# redacted text, so keys, tokens and PEM blocks show up as these). The deployment's policy
# classes (an e-mail address, an internal host or address) are not secrets: on ordinary commits
# they made "Secret in the change" of `postmaster@domain.com` and of a version `10.17.1.0`.
_REDACTED_SECRET = re.compile(rf"\[REDACTED:(?!(?:{'|'.join(sorted(POLICY_CLASSES))})\])[a-z0-9_]+\]")
# A setting that switches a security check off: certificate verification, prototype-key
# filtering in query parsing, a shell for a subprocess, errexit, package signature checks,
# world-writable permissions. Quoted or not, in code, config or scripts.
_INSECURE_SETTING = re.compile(
    r"""\ballowPrototypes["']?\s*[:=]\s*true\b"""
    r"""|\b(?:rejectUnauthorized|strictSSL|verify_?ssl|verifySSL|ssl_?verify|sslVerify)["']?\s*[:=]\s*(?:false|False|0)\b"""
    r"""|\bverify\s*=\s*False\b|\bcheck_hostname\s*=\s*False\b|\bCERT_NONE\b|\bshell\s*=\s*True\b"""
    r"""|\bNODE_TLS_REJECT_UNAUTHORIZED\b["']?\s*[:=]\s*["']?0|--no-check-certificate|--allow-unauthenticated"""
    r"""|\bcurl\b.*\s(?:-k|--insecure)\b|\bapt-key\s+add\b|\bchmod\s+(?:-R\s+)?0?777\b|^\s*set\s+\+e\b"""
    r"""|\bGIT_SSL_NO_VERIFY\b|\bPYTHONHTTPSVERIFY\b["']?\s*[:=]\s*["']?0"""
)
# Query or shell text built from values by formatting or concatenation: injection.
_SQL_BUILT = re.compile(
    r"""\.(?:execute|executemany|executescript|raw|query)\s*\(\s*(?:f["']|["'][^"']*["']\s*(?:%|\+|\.format\b)|`[^`]*\$\{)"""
)
_SHELL_BUILT = re.compile(
    r"""(?<![\w.])(?:os\.system|os\.popen|subprocess\.getoutput|subprocess\.getstatusoutput)\s*\(\s*(?:f["']|["'][^"']*["']\s*(?:%|\+|\.format\b)|\w)"""
    r"""|\b(?:child_process\.)?exec(?:Sync)?\s*\(\s*(?:`[^`]*\$\{|["'][^"']*["']\s*\+)"""
)
_HTML_SINK = re.compile(
    r"\.(?:innerHTML|outerHTML)\s*\+?=(?!=)|\bdocument\.write(?:ln)?\s*\(|\bdangerouslySetInnerHTML\b|\.insertAdjacentHTML\s*\("
)
# React's sink, which eslint-plugin-no-unsanitized does not check (it has the DOM's).
_REACT_HTML_SINK = re.compile(r"\bdangerouslySetInnerHTML\b")
# bandit has pickle, marshal, dill, shelve (B301, B302) and yaml.load (B506), not unsafe_load.
_PY_UNSAFE_LOAD = re.compile(r"\byaml\.unsafe_load(?:_all)?\s*\(")
# rm -r of a path built from an unquoted or possibly empty variable: `rm -rf $DIR/` or `"$DIR/"`.
_SHELL_RM_VARIABLE = re.compile(r"""\brm\s+(?:-\w+\s+)*-\w*[rR]\w*\s+(?:-\S+\s+)*(?:\$\{?\w+|["']\$\{?\w+\}?/)""")
# Rules that already name the secret on their line: "redacted-secret" is not added to them.
_ASSIGNMENT_RULES = frozenset({"hardcoded-password", "hardcoded-api-key"})


def _only(predicate: Callable[[str], bool], pattern: re.Pattern[str]) -> Callable[[str], re.Pattern[str] | None]:
    return lambda path: pattern if predicate(path) else None


_INJECTION_PY = _SQL_BUILT  # the shell half is bandit's B605 (any non-literal command)
_INJECTION_JS = re.compile(f"{_SQL_BUILT.pattern}|{_SHELL_BUILT.pattern}")


def _injection_pattern(path: str) -> re.Pattern[str] | None:
    if _is_python(path):
        return _INJECTION_PY
    return _INJECTION_JS if _is_js(path) else None


def _html_sink_pattern(path: str) -> re.Pattern[str] | None:
    if _read_by_eslint(path):
        return _REACT_HTML_SINK  # the DOM sinks are no-unsanitized's (property, method)
    return _HTML_SINK if _is_js(path) else None


def _debug_output_pattern(path: str) -> re.Pattern[str] | None:
    # Not C's printf: C programs print on purpose (command-line tools, examples), and on ordinary
    # commits it fired on 1% of C hunks with no hit on a dev reversed-fix defect
    # (tools/ordinary_commits_noise.py).
    if _is_python(path):
        return None if is_test_path(path) else _PY_PRINT
    if _is_js(path):
        return _JS_CONSOLE
    return None


RULES: tuple[Rule, ...] = (
    # Kept although flawfinder reports most of these: it rates strcpy from a literal and sprintf
    # without %s at levels 1-2, below the minimum the review keeps (analysis.FLAWFINDER_MIN_LEVEL),
    # so for those this rule is the only report; where both report, the two findings merge.
    Rule(
        rule_id="c-unsafe-string-function",
        severity="high",
        category="security",
        confidence="high",
        title="Unbounded C string function",
        message=(
            "This added line calls one of strcpy, strcat, sprintf, vsprintf or gets, which write "
            "into a buffer without checking its size and can overflow it."
        ),
        suggestion=(
            "Use a bounded alternative (snprintf, strlcpy/strlcat or strncpy with explicit "
            "termination, fgets) and check the result for truncation."
        ),
        pattern_for=_only(_is_c, _C_UNSAFE),
    ),
    Rule(
        rule_id="debug-output",
        severity="info",
        category="style",
        confidence="low",
        title="Possible leftover debug output",
        message=(
            "This added line writes to standard output or the console (print or console.log), "
            "which often is leftover debugging."
        ),
        suggestion="Remove it, or route the output through the project's logging facility.",
        pattern_for=_debug_output_pattern,
    ),
    Rule(
        rule_id="insecure-setting",
        severity="high",
        category="security",
        confidence="medium",
        title="A security check switched off",
        message=(
            "This added line turns a protection off: TLS certificate or host verification, "
            "prototype-key filtering, a shell around a subprocess, errexit, package signature "
            "checks, or permissions (world-writable)."
        ),
        suggestion="Keep the protection on; if an exception is needed, scope it narrowly and say why.",
        pattern_for=_only(_any_file, _INSECURE_SETTING),
    ),
    Rule(
        rule_id="injection-built-string",
        severity="high",
        category="security",
        confidence="medium",
        title="Query or command built from values",
        message=(
            "This added line builds an SQL query or a shell command by formatting or concatenating "
            "values into it; a value that carries quotes or metacharacters changes what runs."
        ),
        suggestion="Pass values as query parameters, or run the program with an argument list and no shell.",
        pattern_for=_injection_pattern,
    ),
    Rule(
        rule_id="html-injection-sink",
        severity="medium",
        category="security",
        confidence="medium",
        title="HTML written from a string",
        message=(
            "This added line writes a string into the page as HTML (innerHTML, document.write, "
            "insertAdjacentHTML, dangerouslySetInnerHTML); unescaped input in it is cross-site scripting."
        ),
        suggestion="Set textContent, or build elements with the DOM API; escape anything that must stay HTML.",
        pattern_for=_html_sink_pattern,
    ),
    Rule(
        rule_id="py-unsafe-deserialization",
        severity="high",
        category="security",
        confidence="medium",
        title="Deserialization that can run code",
        message=(
            "This added line loads YAML with yaml.unsafe_load, which constructs arbitrary Python "
            "objects: data from outside can make it run code."
        ),
        suggestion="Use json, or yaml.safe_load, for data that is not fully trusted.",
        pattern_for=_only(_is_python, _PY_UNSAFE_LOAD),
    ),
    Rule(
        rule_id="shell-rm-variable-path",
        severity="high",
        category="security",
        confidence="medium",
        title="Recursive delete of a path built from a variable",
        message=(
            "This added line removes recursively a path made from a variable that is unquoted or "
            "followed by a slash: if it is empty or holds spaces, the command deletes something else."
        ),
        suggestion='Quote the expansion and fail when it is empty: rm -rf -- "${DIR:?}/sub".',
        pattern_for=_only(_is_shell, _SHELL_RM_VARIABLE),
    ),
    Rule(
        rule_id="hardcoded-password",
        severity="high",
        category="security",
        confidence="medium",
        title="Hard-coded password",
        message=(
            "A literal value is assigned to a password-like name on this line. The value is not "
            "repeated here; treat it as exposed."
        ),
        suggestion=(
            "Load the password from a secret store or the environment at run time, and rotate "
            "it if it was ever a real credential."
        ),
        pattern_for=_only(_any_file, _PASSWORD),
        skip_comments=False,
    ),
    Rule(
        rule_id="hardcoded-api-key",
        severity="high",
        category="security",
        confidence="medium",
        title="Hard-coded API key or token",
        message=(
            "A literal value is assigned to an API-key or token-like name on this line. The value "
            "is not repeated here; treat it as exposed."
        ),
        suggestion=(
            "Load the key from a secret store or the environment at run time, and revoke and "
            "rotate it if it was ever a real key."
        ),
        pattern_for=_only(_any_file, _API_KEY),
        skip_comments=False,
    ),
    Rule(
        rule_id="redacted-secret",
        severity="critical",
        category="security",
        confidence="high",
        title="Secret in the change",
        message=(
            "This added line held a secret (a key, token, private key or credential in a URI) that "
            "was redacted before the review. Treat it as exposed: it is in the depot's history."
        ),
        suggestion="Revoke and reissue the secret, remove it from the change, and load it from a secret store.",
        pattern_for=_only(_any_file, _REDACTED_SECRET),
        skip_comments=False,
    ),
)


def _never(path: str) -> re.Pattern[str] | None:
    return None


# Rules on an added line and the lines shown after it (the diff's context included).
UNCHECKED_ALLOCATION = Rule(
    rule_id="c-unchecked-allocation",
    severity="medium",
    category="reliability",
    confidence="medium",
    title="Allocation not checked for failure",
    message=(
        "This added line allocates memory (malloc, calloc, realloc, strdup) and the lines that "
        "follow use the result without checking it for NULL."
    ),
    suggestion="Check the result for NULL before using it and handle the failure.",
    pattern_for=_never,
)
SWALLOWED_ERROR = Rule(
    rule_id="swallowed-error",
    severity="medium",
    category="reliability",
    confidence="medium",
    title="Error caught and ignored",
    message="This added handler catches an error and does nothing with it, so a failure goes unnoticed.",
    suggestion="Handle the error, log it, or let it propagate; catch only the exceptions expected here.",
    pattern_for=_never,
)
FOLLOWED_RULES = (UNCHECKED_ALLOCATION, SWALLOWED_ERROR)
_C_ALLOCATION = re.compile(
    r"^\s*(?:[\w\s*]+?\s\**)?\**\s*([\w.>\[\]-]+)\s*=\s*(?:\([^()]*\)\s*)?"
    r"(?:malloc|calloc|realloc|reallocarray|strdup|strndup|aligned_alloc)\s*\("
)
_LOOKAHEAD = 4
# A named except (a bare one is ruff's E722, and bandit's B110 with `pass`).
_PY_EXCEPT = re.compile(r"^\s*except\s*[\w(][^:]*:\s*(pass|\.\.\.)?\s*(?:#.*)?$")
_PY_NOTHING = re.compile(r"^\s*(?:pass|\.\.\.)\s*(?:#.*)?$")
_JS_EMPTY_CATCH = re.compile(
    r"\bcatch\s*(?:\([^()]*\))?\s*\{\s*(\})?\s*;?\s*$|\.catch\s*\(\s*(?:\(\s*\w*\s*\)|\w+)\s*=>\s*\{\s*\}\s*\)"
)
_JS_CLOSE = re.compile(r"^\s*\}")


def _followed_findings(path: str, text: str) -> list[tuple[int, Rule]]:
    """Added allocations left unchecked and added handlers that do nothing, judged on the lines
    the diff shows after them (no finding when too little is shown to tell)."""
    if not (_is_c(path) or _is_python(path) or _is_js(path)):
        return []
    shown = list(iter_new_side_lines(text))
    found: list[tuple[int, Rule]] = []
    for index, current in enumerate(shown):
        if not current.added or _is_comment(path, current.text):
            continue
        after: list[str] = []
        for following in shown[index + 1 : index + 1 + _LOOKAHEAD]:
            if following.line != current.line + 1 + len(after):
                break  # a gap: the rest of the file is not shown
            after.append(following.text)
        if _is_c(path) and (allocation := _C_ALLOCATION.match(current.text)):
            name = re.escape(allocation[1])
            checked = re.compile(
                rf"!\s*\(?\s*{name}\b|\b{name}\s*[!=]=\s*(?:NULL|nullptr|0)\b|(?:NULL|nullptr)\s*[!=]=\s*{name}\b"
                rf"|\bif\s*\(\s*{name}\s*\)|\b[A-Z_]{{3,}}\s*\([^)]*\b{name}\b|\bassert\s*\(.*\b{name}\b"
                rf"|\breturn\s+{name}\s*;"
            )
            if len(after) >= 2 and not any(checked.search(line) for line in after):
                found.append((current.line, UNCHECKED_ALLOCATION))
        elif _is_python(path) and (handler := _PY_EXCEPT.match(current.text)):
            if handler[1] or (after and _PY_NOTHING.match(after[0]) and (len(after) < 2 or not _same_block(after))):
                found.append((current.line, SWALLOWED_ERROR))
        elif _is_js(path) and (catch := _JS_EMPTY_CATCH.search(current.text)):
            if _read_by_eslint(path) and not catch[0].startswith("."):
                continue  # an empty catch block is eslint's no-empty; `.catch(() => {})` is not
            if catch[1] or catch[0].startswith(".") or (after and _JS_CLOSE.match(after[0])):
                found.append((current.line, SWALLOWED_ERROR))
    return found


def _same_block(after: list[str]) -> bool:
    """True when the line after `pass` is still inside the except block (more handling)."""
    indent = len(after[0]) - len(after[0].lstrip())
    second = after[1]
    return bool(second.strip()) and len(second) - len(second.lstrip()) >= indent


RULE_IDS: tuple[str, ...] = tuple(
    sorted(
        (
            *(rule.rule_id for rule in RULES),
            *(rule.rule_id for rule in FOLLOWED_RULES),
            *removed_safeguards.RULE_IDS,
        )
    )
)


def _rule_matches(rule: Rule, path: str, text: str) -> bool:
    pattern = rule.pattern_for(path)
    if pattern is None:
        return False
    if rule.skip_comments and _is_comment(path, text):
        return False
    return pattern.search(text) is not None


def _finding_id(rule_id: str, path: str, line: int) -> str:
    digest = hashlib.sha256(f"{path}:{line}:{rule_id}".encode()).hexdigest()[:12]
    return f"OFF-{rule_id}-{digest}"


def _finding(rule: Rule, path: str, line: int) -> dict[str, Any]:
    return {
        "id": _finding_id(rule.rule_id, path, line),
        "severity": rule.severity,
        "category": rule.category,
        "title": rule.title,
        "file": path,
        "line": line,
        "message": rule.message,
        "suggestion": rule.suggestion,
        "confidence": rule.confidence,
        "rule_id": rule.rule_id,
    }


def _removed_safeguard_finding(path: str, removed: removed_safeguards.RemovedSafeguard) -> dict[str, Any]:
    safeguard = removed.safeguard
    rule_id = f"removed-{safeguard.kind}"
    span = {} if removed.end_line is None else {"end_line": removed.end_line}
    return {
        **span,
        "id": _finding_id(rule_id, path, removed.line),
        "severity": "medium",
        "category": safeguard.category,
        "title": f"The change removes {safeguard.name}",
        "file": path,
        "line": removed.line,
        "message": (
            f"A line removed here was {safeguard.name}, and this part of the change does not put one "
            "back. Deleting a check is a common way a defect is written: unless the condition can no "
            "longer occur, the code below now runs without it."
        ),
        "suggestion": "Keep the check, or say in the change description why it is no longer needed.",
        "confidence": "low",
        "rule_id": rule_id,
    }


def _canonical_path(depot_path: str, changed: Sequence[str]) -> str | None:
    """The changed_files entry this diff belongs to (exact, or with a `#rev` suffix removed)."""
    if depot_path in changed:
        return depot_path
    base = re.sub(r"#\d+$", "", depot_path)
    return base if base in changed else None


def _first_line(review_file: ReviewFile) -> str:
    """The file's first line: from its new content when fetch kept it, else from the diff when a
    hunk shows line 1; else empty."""
    if review_file.content is not None:
        return review_file.content.text.split("\n", 1)[0]
    first = next(iter(iter_new_side_lines(review_file.document.text)), None)
    return first.text if first is not None and first.line == 1 else ""


def _severity_rank(severity: str) -> int:
    return [s.value for s in SEVERITY_ORDER].index(severity)


def review_change(review_input: ReviewInput) -> str:
    """Review the added lines of the change's fetched files; return ReviewResult JSON text.

    Takes a ReviewInput, like every reviewer: only redacted, re-checked text gets here.
    Deterministic: the same input gives byte-identical text (sorted keys, no clock)."""
    changed = review_input.snapshot.changed_files
    findings: dict[tuple[str, int, str], dict[str, Any]] = {}
    reviewed: set[str] = set()
    for review_file in review_input.files:
        path = _canonical_path(review_file.diff.depot_path, changed)
        if path is None:
            continue  # the contract only allows findings on files of the change
        reviewed.add(path)
        # The rules choose by language; a script without an extension has its shebang's.
        typed = language_path(path, _first_line(review_file))
        previous_secret_line = -1
        for added in iter_added_lines(review_file.document.text):
            matched = [rule for rule in RULES if _rule_matches(rule, typed, added.text)]
            if any(rule.rule_id in _ASSIGNMENT_RULES for rule in matched):
                matched = [rule for rule in matched if rule.rule_id != "redacted-secret"]
            for rule in matched:
                if rule.rule_id == "redacted-secret":
                    # A redacted block (a PEM key) is one finding, on its first line.
                    follows = added.line == previous_secret_line + 1
                    previous_secret_line = added.line
                    if follows:
                        continue
                findings.setdefault((path, added.line, rule.rule_id), _finding(rule, path, added.line))
        for line, rule in _followed_findings(typed, review_file.document.text):
            findings.setdefault((path, line, rule.rule_id), _finding(rule, path, line))
        for removed in removed_safeguards.removed_safeguards(typed, review_file.document.text):
            key = (path, removed.line, f"removed-{removed.safeguard.kind}")
            findings.setdefault(key, _removed_safeguard_finding(path, removed))

    total = len(findings)
    keys = list(findings)
    if total > MAX_FINDINGS:
        # Keep the most severe, then restore the (file, line, rule) order.
        keys.sort(key=lambda k: (_severity_rank(findings[k]["severity"]), k))
        keys = keys[:MAX_FINDINGS]
    keys.sort()
    kept = [findings[k] for k in keys]

    files = len(reviewed)
    file_word = "file" if files == 1 else "files"
    if total == 0:
        summary = f"Offline heuristic review of {files} {file_word} found no issues."
    elif total > MAX_FINDINGS:
        summary = (
            f"Offline heuristic review of {files} {file_word} found {total} findings; only the "
            f"{MAX_FINDINGS} most severe are reported (cap of {MAX_FINDINGS} per change)."
        )
    else:
        finding_word = "finding" if total == 1 else "findings"
        summary = f"Offline heuristic review of {files} {file_word} found {total} {finding_word}."

    document = {
        "schema_version": SCHEMA_VERSION,
        "prompt_version": OFFLINE_PROMPT_VERSION,
        "summary": summary,
        "findings": kept,
        "meta": {
            "reviewer": "offline",
            "files_reviewed": files,
            "rules": list(RULE_IDS),
            "findings_total": total,
            "findings_reported": len(kept),
            "max_findings": MAX_FINDINGS,
        },
    }
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=True) + "\n"
