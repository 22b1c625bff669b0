"""The Lambda runtime's Python version on the build host: the smoke test runs the handlers on it,
and the deps layer's build warms grammar caches with it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

LAMBDA_PYTHON_VERSION = "3.12"
LAMBDA_PYTHON_ENV = "P4REVIEW_LAMBDA_PYTHON"


def lambda_python() -> str | None:
    """$P4REVIEW_LAMBDA_PYTHON, pyenv's, or python3.12 on PATH (a pyenv shim is skipped: it needs
    the shell environment a child process is not given); None when there is none."""
    configured = os.environ.get(LAMBDA_PYTHON_ENV)
    candidates = [configured] if configured else []
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += [
        str(p) for p in sorted(pyenv.glob(f"versions/{LAMBDA_PYTHON_VERSION}.*/bin/python{LAMBDA_PYTHON_VERSION}"))
    ]
    candidates.append(shutil.which(f"python{LAMBDA_PYTHON_VERSION}"))
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and "shims" not in Path(candidate).parts:
            return candidate
    return None
