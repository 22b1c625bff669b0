"""What `cdk deploy` uploads, read back from the synthesized cloud assembly: each function's code
and layers as the directories CDK zips, their unzipped size against Lambda's limit, and whether the
layers' requirements resolve for the Lambda platform at all.

`make package` (infra/package.py) synthesizes with bundling on, so the deps layer here is the one
pip built for the Lambda platform, not the editable install the rest of the suite imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4review_infra.layer import LOCK_FILE, PIP_PLATFORMS, PYTHON_VERSION, REQUIREMENTS_FILE, lambda_platform_args

# Lambda's quota "Deployment package (.zip file archive) size: 250 MB (unzipped)", the function's
# code and all its layers together; the API refuses more than this many bytes.
UNZIPPED_LIMIT_BYTES = 262_144_000
ASSET_PATH = "aws:asset:path"


@dataclass(frozen=True)
class FunctionBundle:
    """One Lambda function as deployed: its code directory and its layers' directories, in order."""

    logical_id: str
    name: str
    runtime: str
    handler: str
    code_dir: Path
    layer_dirs: tuple[Path, ...]
    # Layers referenced by ARN (the optional p4 CLI layer): not built here, so not measured.
    external_layers: tuple[str, ...]
    environment: dict[str, str]

    @property
    def unzipped_bytes(self) -> int:
        return sum(tree_size(path) for path in (self.code_dir, *self.layer_dirs))

    @property
    def is_ours(self) -> bool:
        """Our Python functions (functions/<name>/handler.py), as opposed to CDK's own helpers."""
        return self.runtime.startswith("python") and self.handler == "handler.lambda_handler"


def tree_size(path: Path) -> int:
    """Bytes of every regular file under `path` (what the zip holds once extracted)."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            file = Path(folder, name)
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def function_bundles(outdir: Path, stack_name: str) -> list[FunctionBundle]:
    template = json.loads((outdir / f"{stack_name}.template.json").read_text())
    resources: dict[str, Any] = template["Resources"]

    def asset_dir(logical_id: str) -> Path:
        path = resources[logical_id].get("Metadata", {}).get(ASSET_PATH)
        if not path:
            raise ValueError(f"{logical_id} has no {ASSET_PATH}: was it synthesized with bundling on?")
        return outdir / path

    bundles = []
    for logical_id, resource in sorted(resources.items()):
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        properties = resource["Properties"]
        layer_dirs, external = [], []
        for layer in properties.get("Layers", []):
            if isinstance(layer, dict) and "Ref" in layer:
                layer_dirs.append(asset_dir(layer["Ref"]))
            else:
                external.append(json.dumps(layer))
        variables = properties.get("Environment", {}).get("Variables", {})
        name = properties.get("FunctionName")
        bundles.append(
            FunctionBundle(
                logical_id=logical_id,
                name=name if isinstance(name, str) else logical_id,
                runtime=properties.get("Runtime", ""),
                handler=properties.get("Handler", ""),
                code_dir=asset_dir(logical_id),
                layer_dirs=tuple(layer_dirs),
                external_layers=tuple(external),
                # Values that are CloudFormation references resolve only in AWS: the smoke test
                # takes those from the local stack instead.
                environment={key: value for key, value in variables.items() if isinstance(value, str)},
            )
        )
    return bundles


@dataclass(frozen=True)
class ResolvedRequirement:
    name: str
    version: str
    wheel: str
    sha256: str


def resolve_for_lambda(requirements: Path = REQUIREMENTS_FILE) -> list[ResolvedRequirement]:
    """What pip would install into the deps layer for the Lambda platform, without installing it
    (`pip install --dry-run --report`): a requirement with no wheel for that platform fails here,
    in seconds, instead of at deploy time. Given the lock, pip also refuses a dependency the lock
    does not pin (--require-hashes). Raises RuntimeError with pip's reason."""
    with tempfile.TemporaryDirectory(prefix="p4review-resolve-") as scratch:
        report = Path(scratch, "report.json")
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            str(report),
            "--target",
            str(Path(scratch, "target")),
            "--requirement",
            str(requirements),
            *(["--require-hashes"] if requirements.suffix == ".lock" else []),
            *lambda_platform_args(),
        ]
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            errors = [line for line in completed.stderr.splitlines() if line.startswith("ERROR")]
            raise RuntimeError("; ".join(errors) or f"pip exited {completed.returncode}")
        installs = json.loads(report.read_text())["install"]
    return [
        ResolvedRequirement(
            name=item["metadata"]["name"],
            version=item["metadata"]["version"],
            wheel=item["download_info"]["url"].rsplit("/", 1)[-1],
            sha256=item["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256", ""),
        )
        for item in installs
    ]


LOCK_HEADER = (
    "# The deps layer's exact contents: every package pinned with the hash of its wheel for Lambda's\n"
    "# python{python} ({platforms}). Made from requirements.txt by `make lock`\n"
    "# (infra/lock_layer.py); do not edit by hand. layer.py installs it with --require-hashes --no-deps.\n"
)


def lock_text(resolved: list[ResolvedRequirement]) -> str:
    lines = [LOCK_HEADER.format(python=PYTHON_VERSION, platforms=", ".join(PIP_PLATFORMS))]
    for item in sorted(resolved, key=lambda r: r.name.lower()):
        if not item.sha256:
            raise RuntimeError(f"pip reported no sha256 for {item.wheel}")
        lines.append(f"{item.name}=={item.version} \\\n    --hash=sha256:{item.sha256}\n")
    return "".join(lines)


def write_lock(requirements: Path = REQUIREMENTS_FILE, lock: Path = LOCK_FILE) -> list[ResolvedRequirement]:
    resolved = resolve_for_lambda(requirements)
    lock.write_text(lock_text(resolved))
    return resolved
