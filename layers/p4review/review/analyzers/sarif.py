"""SARIF 2.1.0 logs read into one flat shape (pure): the one reader of every analyzer report we
take as SARIF (`p4review.review.analyzers.analysis` says which analyzers those are, and why the others are
read from their own JSON or text).

What is read of a log: each run's `tool.driver` (its name and its `rules`) and its `results`; of a
result its `ruleId` (else the rule its `ruleIndex` points at), `level` (else the rule's
`defaultConfiguration.level`, else "warning": SARIF 2.1.0 §3.27.10), `message.text`, `rank`,
`properties`, and the first location's `physicalLocation`: `artifactLocation.uri` and
`region.startLine`/`startColumn`/`endLine`; of the rule its `name` and `properties` (where tools
put severity, precision and CWE tags). Everything else in the log is ignored.

The shape is small pydantic models of just those fields, not a SARIF library. Of the ones on
PyPI, sarif-om (Microsoft, last released 2019) is attrs classes for writing a log with no
parser; pydantic-sarif is one 2023 release of generated code; sarif-pydantic is a 0.x by one
author with no known users; sarif-tools is a reporting CLI, not a typed model. None is kept well
enough to join the Lambda layer for the dozen fields read here. The models check only what is
read, not the whole schema, and a result or rule that does not fit is skipped alone rather than
failing the whole log, as the per-analyzer JSON readers skip one bad item."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SARIF_VERSION = "2.1.0"
# SARIF 2.1.0 §3.27.10: a result with no level of its own, and none from its rule, is a warning.
DEFAULT_LEVEL = "warning"


class _Sarif(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class _Message(_Sarif):
    text: str = ""


class _Region(_Sarif):
    start_line: int | None = Field(default=None, alias="startLine")
    start_column: int | None = Field(default=None, alias="startColumn")
    end_line: int | None = Field(default=None, alias="endLine")


class _ArtifactLocation(_Sarif):
    uri: str = ""


class _PhysicalLocation(_Sarif):
    artifact_location: _ArtifactLocation | None = Field(default=None, alias="artifactLocation")
    region: _Region | None = None


class _Location(_Sarif):
    physical_location: _PhysicalLocation | None = Field(default=None, alias="physicalLocation")


class _Configuration(_Sarif):
    level: str | None = None


class _Rule(_Sarif):
    id: str = ""
    name: str | None = None
    default_configuration: _Configuration | None = Field(default=None, alias="defaultConfiguration")
    properties: dict[str, Any] = Field(default_factory=dict)


class _Result(_Sarif):
    rule_id: str | None = Field(default=None, alias="ruleId")
    rule_index: int | None = Field(default=None, alias="ruleIndex")
    level: str | None = None
    message: _Message = _Message()
    locations: list[_Location] = Field(default_factory=list)
    rank: float | None = None
    properties: dict[str, Any] = Field(default_factory=dict)


class SarifResult(BaseModel):
    """One result of a run, with what its rule says, flattened."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str  # the run's tool.driver.name
    rule_id: str | None
    rule_name: str | None = None
    level: str = DEFAULT_LEVEL  # error, warning, note or none
    message: str = ""
    uri: str = ""  # the first location's artifactLocation.uri, as the tool wrote it
    start_line: int | None = None
    start_column: int | None = None
    end_line: int | None = None
    rank: float | None = None  # 0.0 to 100.0 in the spec; flawfinder writes its level / 5
    properties: dict[str, Any] = Field(default_factory=dict)  # the result's
    rule_properties: dict[str, Any] = Field(default_factory=dict)  # its rule's

    def path_in(self, paths: Mapping[str, str]) -> str | None:
        """The depot path of this result's file: `paths` maps each name the analyzer was given
        (relative, `./`-prefixed or absolute, as `p4review.review.analyzers.runner` lists them) to it.
        A file URI (ruff writes `file:///tmp/.../f0001/x.py`) is read as its path; a relative
        reference (flawfinder's, against its `SRCROOT`, which is the directory the analyzer ran in)
        as the relative name; both percent-decoded. Anything else, a file we did not give the
        analyzer, is None."""
        return paths.get(artifact_path(self.uri))


def artifact_path(uri: str) -> str:
    """The file-system path an artifact URI names: a `file:` URI's path, else the URI itself
    (a relative reference), percent-decoded."""
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return unquote(parts.path)
    return unquote(uri) if not parts.scheme else uri


def _objects(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _rules(driver: Any) -> list[_Rule | None]:
    """The driver's rules by index (None where one does not fit), so `ruleIndex` still points right."""
    rules: list[_Rule | None] = []
    for item in driver.get("rules", []) if isinstance(driver, dict) and isinstance(driver.get("rules"), list) else []:
        try:
            rules.append(_Rule.model_validate(item))
        except ValidationError:
            rules.append(None)
    return rules


def _rule_of(result: _Result, rules: list[_Rule | None], by_id: Mapping[str, _Rule]) -> _Rule | None:
    index = result.rule_index
    if index is not None and 0 <= index < len(rules) and rules[index] is not None:
        return rules[index]
    return by_id.get(result.rule_id) if result.rule_id is not None else None


def read(output: str) -> Iterator[SarifResult]:
    """Every result of every run of a SARIF 2.1.0 log. Not JSON, not a 2.1.0 log: nothing."""
    try:
        document = json.loads(output or "{}")
    except ValueError:
        return
    if not isinstance(document, dict) or document.get("version") != SARIF_VERSION:
        return
    for run in _objects(document.get("runs")):
        tool = run.get("tool")
        driver = tool.get("driver") if isinstance(tool, dict) else None
        name = driver.get("name") if isinstance(driver, dict) else None
        rules = _rules(driver)
        by_id = {rule.id: rule for rule in rules if rule is not None and rule.id}
        for item in _objects(run.get("results")):
            try:
                result = _Result.model_validate(item)
            except ValidationError:
                continue
            rule = _rule_of(result, rules, by_id)
            physical = result.locations[0].physical_location if result.locations else None
            region = physical.region if physical is not None and physical.region is not None else _Region()
            artifact = physical.artifact_location if physical is not None else None
            default = rule.default_configuration if rule is not None else None
            yield SarifResult(
                tool=name if isinstance(name, str) else "",
                rule_id=result.rule_id if result.rule_id is not None else (rule.id or None) if rule else None,
                rule_name=rule.name if rule is not None else None,
                level=result.level or (default.level if default is not None else None) or DEFAULT_LEVEL,
                message=result.message.text,
                uri=artifact.uri if artifact is not None else "",
                start_line=region.start_line,
                start_column=region.start_column,
                end_line=region.end_line,
                rank=result.rank,
                properties=result.properties,
                rule_properties=rule.properties if rule is not None else {},
            )
