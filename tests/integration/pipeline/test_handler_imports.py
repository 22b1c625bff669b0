"""What each function's cold start imports and builds (issue 29: cold start <= 2x `import boto3`,
measured by benchmarks/cold_start.py). These pin the modules and models, not the time: each
handler is imported in a fresh interpreter, as Lambda does, with the benchmark's environment."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest

from benchmarks.cold_start import HANDLERS, handler_environment

# Loaded on first use only: the model answer's validator, the offline reviewer's rules (review's
# fallback), the IaC checks (a compose or Terraform file), the TOML parser (a depot policy file),
# the console-redrive parser, the model's context and tree-sitter (a prompt version that shows the
# enclosing functions). Never: Powertools' batch module and its pydantic event models
# (pipeline/sqs_batch.py builds the partial batch response itself).
LAZY = (
    "jsonschema",
    "p4review.review.context",
    "tree_sitter",
    "p4review.review.offline.reviewer",
    "p4review.review.analyzers.iac_checks",
    "tomllib",
    "p4review.pipeline.replay",
    "aws_lambda_powertools.utilities.parser",
    "aws_lambda_powertools.utilities.batch",
)
# What only Powertools' batch module brought into the SQS stages (ingest's event handler still
# imports them: Powertools' resolvers, asyncio for AppSync's).
SQS_STAGES = ("fetch", "review", "notify")
NOT_IN_SQS_STAGES = ("asyncio", "aws_lambda_powertools.utilities.data_classes")
# Models only the functions that read them import: the output contract's, the outbox's.
ONLY_IN = {"p4review.models.review_result": ("review", "notify"), "p4review.models.outbox": ("notify",)}

_PROBE = """
import gc, json, sys
import handler
import pydantic
from p4review.change.redaction.base import CompiledOnFirstUse
from p4review.settings.blocks import SettingsBlock

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

ours = {c for c in subclasses(pydantic.BaseModel) if c.__module__.startswith("p4review.")}
blocks = {c for c in ours if issubclass(c, SettingsBlock)}
print(json.dumps({
    "modules": sorted(sys.modules),
    "settings_model": type(handler.SETTINGS).__qualname__,
    "blocks_built": sorted(c.__qualname__ for c in blocks if c.__pydantic_complete__),
    "models_incomplete": sorted(c.__qualname__ for c in ours - blocks if not c.__pydantic_complete__),
    "rules_compiled": sum(1 for o in gc.get_objects() if isinstance(o, CompiledOnFirstUse) and "pattern" in vars(o)),
}))
"""


@pytest.fixture(scope="module")
def cold_starts() -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as pycache:
        answers = {}
        for handler in HANDLERS:
            answer = subprocess.run(
                [sys.executable, "-c", _PROBE],
                capture_output=True,
                text=True,
                check=True,
                env=handler_environment(pycache, handler),
                cwd=tempfile.gettempdir(),
            )
            answers[handler] = json.loads(answer.stdout)
    return answers


def test_every_deployed_function_is_measured():
    assert set(HANDLERS) == {"ingest", "fetch", "review", "notify", "sweeper", "rotate-signing", "credential-age"}


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_cold_start_leaves_what_one_path_needs_to_that_path(handler, cold_starts):
    modules = cold_starts[handler]["modules"]
    assert [name for name in modules if name.startswith(LAZY)] == []
    assert [name for name, readers in ONLY_IN.items() if name in modules and handler not in readers] == []
    # The redaction rules (fetch, review) compile their patterns on the first line they run on.
    assert cold_starts[handler]["rules_compiled"] == 0


@pytest.mark.parametrize("handler", SQS_STAGES)
def test_an_sqs_stage_imports_neither_asyncio_nor_powertools_event_classes(handler, cold_starts):
    assert [name for name in cold_starts[handler]["modules"] if name.startswith(NOT_IN_SQS_STAGES)] == []


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_cold_start_builds_its_own_settings_model_and_no_other_block(handler, cold_starts):
    """The function's settings are still validated at import; the blocks it does not parse
    are not built (defer_build)."""
    assert cold_starts[handler]["blocks_built"] == [cold_starts[handler]["settings_model"]]


@pytest.mark.parametrize("handler", HANDLERS)
def test_no_model_is_left_to_rebuild_on_first_use(handler, cold_starts):
    """A model left incomplete at import (an unresolved forward reference) would be rebuilt on
    its first validation: every model a handler imports is built once, at import."""
    assert cold_starts[handler]["models_incomplete"] == []
