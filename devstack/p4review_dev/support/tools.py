"""The repository's `tools/` scripts are files, not a package: tests load them by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def load_tool(name: str) -> ModuleType:
    """`tools/<name>.py` as a module, registered under its name (a dataclass in it looks its
    module up in sys.modules); loaded once a process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
