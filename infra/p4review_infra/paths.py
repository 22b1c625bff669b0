"""Repository paths the infra code reads from (absolute, so synth works from any cwd)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYERS_DIR = REPO_ROOT / "layers"
FUNCTIONS_DIR = REPO_ROOT / "functions"
# Synth-time staging area (gitignored); the core layer is copied here before it is zipped.
BUILD_DIR = REPO_ROOT / "build"
CDK_JSON = REPO_ROOT / "cdk.json"
