"""Parse, validate and reconcile a reviewer's answer into a ReviewResult (spec "Output contract").

`parse_review_result` never raises for any input string. Validation runs in the spec's order:

1. parse JSON: only a bare JSON object is accepted (no prose, no code fences) -> `invalid_json`;
   valid JSON that is not an object (array, string, null...) -> `schema_mismatch`;
2. top-level schema (jsonschema, Draft 2020-12) -> `missing_required_field` / `schema_mismatch`;
3. version compatibility, before any finding is read -> `incompatible_version`;
4. each finding: safe coercions (logged as `coercion_applied`, even when the finding is then
   dropped) or a `finding_dropped`;
5. reconciliation of `file` with the change's files, then (beyond the spec, when the caller
   gives each file's changed lines) `line_outside_diff`, then duplicate ids.

Diagnostics never carry raw values that look like secrets, and long values are truncated.

Above 500 lines on purpose: the model's answer is read against one strict contract, and each
coercion it allows is next to the rule it relaxes."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from p4review.change.diff_lines import ChangedLines
from p4review.models.finding_labels import Category, Confidence, Severity
from p4review.models.review_result import (
    MAX_SUGGESTED_CODE_CHARS,
    REVIEW_RESULT_SCHEMA,
    SCHEMA_VERSION,
    Diagnostic,
    Finding,
    ParseOutcome,
    ReviewResult,
    finding_fields_in,
)

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

# Diagnostic kinds.
COERCION_APPLIED = "coercion_applied"
FINDING_DROPPED = "finding_dropped"
RESPONSE_REJECTED = "response_rejected"
WARNING = "warning"

# Reason codes.
INVALID_JSON = "invalid_json"
SCHEMA_MISMATCH = "schema_mismatch"
MISSING_REQUIRED_FIELD = "missing_required_field"
INVALID_ENUM_VALUE = "invalid_enum_value"
INVALID_LINE_RANGE = "invalid_line_range"
FILE_NOT_IN_CHANGED_FILES = "file_not_in_changed_files"
INCOMPATIBLE_VERSION = "incompatible_version"
DUPLICATE_FINDING_ID = "duplicate_finding_id"
LINE_OUTSIDE_DIFF = "line_outside_diff"
ALL_FINDINGS_DROPPED = "all_findings_dropped"

LINE_POLICIES = ("drop", "flag")

MAX_DIAGNOSTIC_VALUE_CHARS = 80
REDACTED = "[REDACTED]"

FINDING_SCHEMA: dict[str, Any] = REVIEW_RESULT_SCHEMA["properties"]["findings"]["items"]
_FINDING_FIELDS: frozenset[str] = frozenset(FINDING_SCHEMA["properties"])
_REQUIRED_FINDING_FIELDS: tuple[str, ...] = tuple(FINDING_SCHEMA["required"])
_STRING_FIELDS: tuple[str, ...] = (
    "id",
    "severity",
    "category",
    "title",
    "file",
    "message",
    "suggestion",
    "confidence",
    "rule_id",
)
_REQUIRED_STRING_FIELDS = tuple(f for f in _STRING_FIELDS if f in _REQUIRED_FINDING_FIELDS)
_ENUMS: dict[str, frozenset[str]] = {
    "severity": frozenset(s.value for s in Severity),
    "category": frozenset(c.value for c in Category),
    "confidence": frozenset(c.value for c in Confidence),
}


def _top_level_schema() -> dict[str, Any]:
    """REVIEW_RESULT_SCHEMA with findings checked only as "an array": items are validated
    one by one later, so that one bad finding drops itself instead of rejecting the response."""
    schema = copy.deepcopy(REVIEW_RESULT_SCHEMA)
    schema["properties"]["findings"] = {"type": "array"}
    return schema


@cache
def top_level_validator() -> Draft202012Validator:
    """Built on the first answer parsed, not at import: jsonschema costs about 50 ms of the review
    function's cold start (docs/benchmarks.md), and a run that parses no answer (opted out,
    every file's answer reused) never needs it."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_top_level_schema())


# Full-string versions of the schema's patterns (a JSON Schema `$` would accept "1.0\n").
_SCHEMA_VERSION_RE = re.compile(r"([0-9]+)\.([0-9]+)")
_PROMPT_VERSION_RE = re.compile(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")
_INTEGRAL_STRING_RE = re.compile(r"-?[0-9]+")

# "Looks like a secret" for diagnostics: known key formats, PEM, credential assignments,
# bearer tokens, URIs with embedded auth, and long mixed-case-and-digit tokens.
_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}"),
    re.compile(r"-----BEGIN [A-Z0-9 ]*(?:PRIVATE KEY|CERTIFICATE)"),
    re.compile(
        r"(?i)(?:password|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|"
        r"client[_-]?secret|private[_-]?key)\w*[\"']?\s*[:=]"
    ),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"),
    re.compile(r"\b(?:ghp|gho|ghs|github_pat|xox[abpr]|sk|sk_live|rk_live)_[A-Za-z0-9_]{16,}"),
    re.compile(r"(?=[A-Za-z0-9+/=_-]*[0-9])(?=[A-Za-z0-9+/=_-]*[a-z])(?=[A-Za-z0-9+/=_-]*[A-Z])[A-Za-z0-9+/=_-]{32,}"),
)


def looks_like_secret(value: str) -> bool:
    return any(pattern.search(value) for pattern in _SECRET_PATTERNS)


def _safe_value(value: Any) -> str:
    """A value fit for a diagnostic: secrets redacted, long values truncated and marked."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)
        except (TypeError, ValueError, RecursionError):
            text = f"<{type(value).__name__}>"
    if looks_like_secret(text):
        return REDACTED
    if len(text) > MAX_DIAGNOSTIC_VALUE_CHARS:
        return f"{text[:MAX_DIAGNOSTIC_VALUE_CHARS]}...[truncated {len(text)} chars]"
    return text


def _safe_name(value: Any) -> str | None:
    """A finding id or file path for a diagnostic (None unless it is a non-empty string)."""
    if not isinstance(value, str) or not value.strip():
        return None
    return _safe_value(value.strip())


def _reject(reason: str, detail: str) -> ParseOutcome:
    return ParseOutcome(
        result=None,
        rejected=True,
        diagnostics=[Diagnostic(kind=RESPONSE_REJECTED, reason=reason, detail=detail)],
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


# ---------------------------------------------------------------------------------------
# Step 1: JSON


def _load_object(text: Any) -> dict[str, Any] | tuple[str, str]:
    """The answer's JSON object, or (reason, detail) when there is none. Text that is not JSON
    is `invalid_json`; JSON that is not an object (array, string, null...) is valid JSON of the
    wrong shape, so `schema_mismatch`."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            return INVALID_JSON, "response is not valid UTF-8"
    if not isinstance(text, str):
        return INVALID_JSON, f"response is a {type(text).__name__}, not text"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError, TypeError):
        return INVALID_JSON, "response is not a bare JSON document (prose, code fences or malformed JSON)"
    if not isinstance(value, dict):
        return SCHEMA_MISMATCH, f"response is JSON but not an object (a {_json_type(value)})"
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# ---------------------------------------------------------------------------------------
# Step 2: top-level schema


def _check_top_level(document: dict[str, Any]) -> tuple[str, str] | None:
    try:
        errors = sorted(
            top_level_validator().iter_errors(document),
            key=lambda e: (e.validator != "required", [str(p) for p in e.absolute_path], str(e.validator)),
        )
    except Exception:  # noqa: BLE001 - a validator failure must not escape the parser
        return SCHEMA_MISMATCH, "top-level schema validation failed"
    if errors:
        first = errors[0]
        if first.validator == "required":
            missing = [name for name in REVIEW_RESULT_SCHEMA["required"] if name not in document]
            return MISSING_REQUIRED_FIELD, f"missing required top-level field(s): {', '.join(missing)}"
        if first.validator == "additionalProperties":
            unknown = sorted(_safe_value(k) for k in document if k not in REVIEW_RESULT_SCHEMA["properties"])
            return SCHEMA_MISMATCH, f"unknown top-level field(s): {', '.join(unknown)}"
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        # Never echo the instance: jsonschema's own message quotes the offending value.
        return SCHEMA_MISMATCH, f"top-level field {where} fails '{first.validator}'"
    # Full-match the version patterns (see _SCHEMA_VERSION_RE).
    if not _SCHEMA_VERSION_RE.fullmatch(document["schema_version"]):
        return SCHEMA_MISMATCH, "top-level field schema_version fails 'pattern'"
    if not _PROMPT_VERSION_RE.fullmatch(document["prompt_version"]):
        return SCHEMA_MISMATCH, "top-level field prompt_version fails 'pattern'"
    return None


# ---------------------------------------------------------------------------------------
# Step 3: versions


def _schema_version_ok(actual: str, expected: str) -> bool:
    if actual == expected:
        return True
    got, want = _SCHEMA_VERSION_RE.fullmatch(actual), _SCHEMA_VERSION_RE.fullmatch(expected)
    if got is None or want is None:
        return False
    return int(got[1]) == int(want[1]) and int(got[2]) >= int(want[2])


def _prompt_version_ok(actual: str, expected: str, allow_patch_drift: bool) -> bool:
    if actual == expected:
        return True
    got, want = _PROMPT_VERSION_RE.fullmatch(actual), _PROMPT_VERSION_RE.fullmatch(expected)
    if got is None or want is None:
        return False
    got_t = (int(got[1]), int(got[2]), int(got[3] or 0))
    want_t = (int(want[1]), int(want[2]), int(want[3] or 0))
    if got_t == want_t:  # "1.2" is "1.2.0"
        return True
    return allow_patch_drift and got_t[:2] == want_t[:2]


# ---------------------------------------------------------------------------------------
# Steps 4-5: findings


class _Drop(Exception):
    def __init__(self, reason: str, detail: str, location: tuple[str, int] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail
        self.location = location  # the validated (file, line), once known


def _location(raw: dict[str, Any]) -> tuple[str | None, int | None]:
    file = raw.get("file")
    file_out = _safe_name(file.replace("\\", "/")) if isinstance(file, str) else None
    line = _as_line(raw.get("line"))
    return file_out, line if line is not None and line >= 1 else None


def _as_line(value: Any) -> int | None:
    """An integer line from an int, an integral float, or an integral numeric string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str) and _INTEGRAL_STRING_RE.fullmatch(value.strip()):
        try:
            return int(value.strip())
        except ValueError:  # absurdly long digit strings (int max str digits)
            return None
    return None


class _Coercions:
    def __init__(self) -> None:
        self.items: list[tuple[str, Any, Any]] = []

    def add(self, field: str, old: Any, new: Any) -> None:
        self.items.append((field, old, new))

    def diagnostics(self, finding_id: Any) -> list[Diagnostic]:
        return [
            Diagnostic(
                kind=COERCION_APPLIED,
                finding_id=_safe_name(finding_id),
                field=field,
                old_value=_safe_value(old),
                new_value=_safe_value(new),
            )
            for field, old, new in self.items
        ]


def _validate_finding(raw: Any, coercions: _Coercions, fields: frozenset[str] = _FINDING_FIELDS) -> dict[str, Any]:
    """Step 4 for one finding: a clean dict, or _Drop. `fields`: what the answer's schema
    version allows (suggested_code from 1.1)."""
    if not isinstance(raw, dict):
        raise _Drop(SCHEMA_MISMATCH, f"finding is a {_json_type(raw)}, not an object")
    missing = [f for f in _REQUIRED_FINDING_FIELDS if raw.get(f) is None]
    if missing:
        raise _Drop(MISSING_REQUIRED_FIELD, f"missing required field(s): {', '.join(missing)}")
    unknown = sorted(str(k) for k in raw if k not in fields)
    if unknown:
        names = ", ".join(_safe_value(k) for k in unknown)
        raise _Drop(SCHEMA_MISMATCH, f"unknown field(s): {names}")

    clean: dict[str, Any] = {}
    for field in _STRING_FIELDS:
        if field not in raw:
            continue
        value = raw[field]
        if not isinstance(value, str):
            if field in _ENUMS:
                raise _Drop(INVALID_ENUM_VALUE, f"{field} is a {_json_type(value)}, not an allowed value")
            raise _Drop(SCHEMA_MISMATCH, f"{field} is a {_json_type(value)}, not a string")
        new = value.strip()
        if new != value:
            coercions.add(field, value, new)
        if field == "file" and "\\" in new:
            slashed = new.replace("\\", "/")
            coercions.add(field, new, slashed)
            new = slashed
        if field in _REQUIRED_STRING_FIELDS and not new:
            raise _Drop(MISSING_REQUIRED_FIELD, f"{field} is empty")
        clean[field] = new

    for field, allowed in _ENUMS.items():
        if field in clean and clean[field] not in allowed:
            raise _Drop(INVALID_ENUM_VALUE, f"{field} is not one of {', '.join(sorted(allowed))}")

    for field in ("line", "end_line"):
        if field not in raw:
            continue
        value = raw[field]
        number = _as_line(value)
        if number is None:
            raise _Drop(INVALID_LINE_RANGE, f"{field} is not an integer")
        if number < 1:
            raise _Drop(INVALID_LINE_RANGE, f"{field} is not positive")
        if not (isinstance(value, int) and not isinstance(value, bool)):
            coercions.add(field, value, number)
        clean[field] = number
    if "end_line" in clean and clean["end_line"] < clean["line"]:
        raise _Drop(INVALID_LINE_RANGE, "end_line is before line")
    if "suggested_code" in raw:  # code: indentation and blank lines matter, so it is not stripped
        code = raw["suggested_code"]
        if not isinstance(code, str):
            raise _Drop(SCHEMA_MISMATCH, f"suggested_code is a {_json_type(code)}, not a string")
        if len(code) > MAX_SUGGESTED_CODE_CHARS:
            # The finding stands without it; the coercion is logged like any other.
            coercions.add("suggested_code", f"{len(code)} characters", "(removed: too long)")
        elif code.strip():
            clean["suggested_code"] = code.rstrip()
    return clean


def _normalize_path(path: str) -> str:
    """Repository normalization: `/` separators, no `./` segments, no `#rev` suffix, and
    repeated slashes collapsed -- except the leading `//` that starts a depot path."""
    path = path.replace("\\", "/")
    path = re.sub(r"#(?:\d+|head|have|none)$", "", path)
    depot = path.startswith("//")
    body = path[2:] if depot else path
    segments = [s for s in body.split("/") if s not in ("", ".")]
    joined = "/".join(segments)
    if depot:
        return "//" + joined
    return ("/" + joined) if body.startswith("/") else joined


def _reconcile_file(path: str, changed: Sequence[str]) -> tuple[str | None, str]:
    """The canonical changed_files entry for `path`, or (None, why)."""
    if path in changed:
        return path, ""
    normalized = _normalize_path(path)
    exact = sorted({c for c in changed if _normalize_path(c) == normalized})
    if len(exact) == 1:
        return exact[0], ""
    if len(exact) > 1:
        return None, "file matches several changed files"
    # Unique suffix match on whole path segments (e.g. "src/a.c" for "//depot/main/src/a.c"),
    # for paths given relative to some root. A full depot path ("//...") must match exactly.
    wanted = [s for s in normalized.split("/") if s]
    if normalized.startswith("//") or not wanted or any(s == ".." for s in wanted):
        return None, "file is not one of the change's files"
    matches = sorted({c for c in changed if [s for s in _normalize_path(c).split("/") if s][-len(wanted) :] == wanted})
    if len(matches) == 1:
        return matches[0], ""
    if len(matches) > 1:
        return None, "file matches several changed files"
    return None, "file is not one of the change's files"


def reconcile_file(path: str, changed_files: Sequence[str]) -> str | None:
    """The changed_files entry `path` names (after repository normalization), or None."""
    return _reconcile_file(path, changed_files)[0]


def _dropped(raw: Any, reason: str, detail: str, location: tuple[str, int] | None = None) -> Diagnostic:
    finding_id = file = line = None
    if isinstance(raw, dict):
        finding_id = _safe_name(raw.get("id"))
        file, line = _location(raw)
    if location is not None:
        file, line = _safe_name(location[0]), location[1]
    return Diagnostic(kind=FINDING_DROPPED, reason=reason, finding_id=finding_id, file=file, line=line, detail=detail)


def _raw_id(raw: Any) -> Any:
    return raw.get("id") if isinstance(raw, dict) else None


def _line_range(clean: dict[str, Any]) -> str:
    end = clean.get("end_line", clean["line"])
    return f"line {clean['line']}" if end == clean["line"] else f"lines {clean['line']}-{end}"


def _with_flags(meta: dict[str, Any] | None, name: str, ids: list[str]) -> dict[str, Any]:
    """A copy of meta with meta["flagged"][name] = sorted ids (replacing what the model wrote there)."""
    meta = dict(meta or {})
    flagged = meta.get("flagged")
    meta["flagged"] = {**(flagged if isinstance(flagged, dict) else {}), name: sorted(ids)}
    return meta


# ---------------------------------------------------------------------------------------


def parse_review_result(
    text: str,
    changed_files: Sequence[str],
    *,
    expected_schema_version: str = SCHEMA_VERSION,
    expected_prompt_version: str,
    allowed_prompt_patch_drift: bool = False,
    changed_lines: Mapping[str, ChangedLines] | None = None,
    line_policy: str = "drop",
    line_tolerance: int = 3,
) -> ParseOutcome:
    """Validate a reviewer answer; never raises for any answer. See the module docstring for the order.

    `changed_lines` maps a changed_files entry to its diff's lines; a finding on such a file
    that is not within `line_tolerance` lines of a change is dropped (`line_policy="drop"`) or
    kept with a `warning` diagnostic and its id in `meta["flagged"]["line_outside_diff"]`
    (`"flag"`). Files without an entry, or whose diff has no hunks, are not line-checked.
    Raises ValueError only for an unknown `line_policy` (a caller bug)."""
    if line_policy not in LINE_POLICIES:
        raise ValueError(f"line_policy must be one of {', '.join(LINE_POLICIES)}, not {line_policy!r}")
    try:
        return _parse(
            text,
            changed_files,
            expected_schema_version=expected_schema_version,
            expected_prompt_version=expected_prompt_version,
            allowed_prompt_patch_drift=allowed_prompt_patch_drift,
            changed_lines=changed_lines or {},
            line_policy=line_policy,
            line_tolerance=line_tolerance,
        )
    except Exception as exc:  # noqa: BLE001 - last line of defence for the "never raises" contract
        return _reject(SCHEMA_MISMATCH, f"parser error: {type(exc).__name__}")


def _parse(
    text: str,
    changed_files: Sequence[str],
    *,
    expected_schema_version: str,
    expected_prompt_version: str,
    allowed_prompt_patch_drift: bool,
    changed_lines: Mapping[str, ChangedLines],
    line_policy: str,
    line_tolerance: int,
) -> ParseOutcome:
    # 1. JSON
    document = _load_object(text)
    if isinstance(document, tuple):
        return _reject(*document)

    # 2. top-level schema
    problem = _check_top_level(document)
    if problem is not None:
        return _reject(*problem)

    # 3. versions, before any finding is looked at
    schema_version = document["schema_version"]
    prompt_version = document["prompt_version"]
    if not _schema_version_ok(schema_version, expected_schema_version):
        return _reject(
            INCOMPATIBLE_VERSION,
            f"schema_version {_safe_value(schema_version)} is not compatible with {expected_schema_version}",
        )
    if not _prompt_version_ok(prompt_version, expected_prompt_version, allowed_prompt_patch_drift):
        drift = " (patch drift allowed)" if allowed_prompt_patch_drift else ""
        return _reject(
            INCOMPATIBLE_VERSION,
            f"prompt_version {_safe_value(prompt_version)} is not compatible with {expected_prompt_version}{drift}",
        )

    # 4-5. findings
    finding_fields = finding_fields_in(schema_version)
    changed = [c for c in changed_files if isinstance(c, str)]
    diagnostics: list[Diagnostic] = []
    kept: list[Finding] = []
    kept_ids: set[str] = set()
    flagged: list[str] = []
    raw_findings: list[Any] = document["findings"]
    for raw in raw_findings:
        coercions = _Coercions()
        outside_diff: Diagnostic | None = None
        try:
            clean = _validate_finding(raw, coercions, finding_fields)
            canonical, why = _reconcile_file(clean["file"], changed)
            if canonical is None:
                raise _Drop(FILE_NOT_IN_CHANGED_FILES, why)
            if canonical != clean["file"]:
                coercions.add("file", clean["file"], canonical)
                clean["file"] = canonical
            lines = changed_lines.get(canonical)
            if (
                lines is not None
                and lines.has_hunks
                and not lines.near(clean["line"], clean.get("end_line"), line_tolerance)
            ):
                detail = f"{_line_range(clean)}: not within {line_tolerance} line(s) of a change"
                if line_policy == "drop":
                    raise _Drop(LINE_OUTSIDE_DIFF, detail, (canonical, clean["line"]))
                outside_diff = Diagnostic(
                    kind=WARNING,
                    reason=LINE_OUTSIDE_DIFF,
                    finding_id=_safe_value(clean["id"]),
                    file=_safe_name(canonical),
                    line=clean["line"],
                    detail=detail,
                )
            if clean["id"] in kept_ids:
                raise _Drop(DUPLICATE_FINDING_ID, "an earlier kept finding has the same id")
            finding = Finding.model_validate(clean)
        except _Drop as drop:
            # Every coercion is logged (spec), including those made to a finding then dropped.
            diagnostics.extend(coercions.diagnostics(_raw_id(raw)))
            diagnostics.append(_dropped(raw, drop.reason, drop.detail, drop.location))
            continue
        except ValidationError as exc:
            diagnostics.extend(coercions.diagnostics(_raw_id(raw)))
            fields = sorted({".".join(str(p) for p in err["loc"]) for err in exc.errors()})
            diagnostics.append(_dropped(raw, SCHEMA_MISMATCH, f"invalid field(s): {', '.join(fields)}"))
            continue
        kept_ids.add(finding.id)
        kept.append(finding)
        diagnostics.extend(coercions.diagnostics(finding.id))
        if outside_diff is not None:  # only now: a flagged duplicate is dropped, not flagged
            diagnostics.append(outside_diff)
            flagged.append(finding.id)

    if raw_findings and not kept:
        diagnostics.append(
            Diagnostic(
                kind=WARNING,
                reason=ALL_FINDINGS_DROPPED,
                detail=f"all {len(raw_findings)} finding(s) were dropped",
            )
        )

    meta = document.get("meta")
    if flagged:
        meta = _with_flags(meta, LINE_OUTSIDE_DIFF, flagged)
    result = ReviewResult(
        schema_version=schema_version,
        prompt_version=prompt_version,
        summary=document.get("summary"),
        findings=kept,
        meta=meta,
    )
    return ParseOutcome(result=result, rejected=False, diagnostics=diagnostics)
