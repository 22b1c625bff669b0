"""What the operator commands share: loading the service's environment, the data-access layer
built from it, and the operator's identity for audit entries (what a command prints, and how it
fails: cli/display.py)."""

from __future__ import annotations

import argparse
import getpass
import os
from pathlib import Path


def load_env_file(path: str | Path) -> dict[str, str]:
    """Read KEY=VALUE lines (blank lines, `#` comments and a leading `export ` are allowed;
    surrounding quotes are stripped) into os.environ. Returns what was set."""
    loaded: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.replace("_", "").isalnum():
            raise SystemExit(f"{path}:{number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        loaded[key] = value
    os.environ.update(loaded)
    return loaded


def data_access(args: argparse.Namespace):
    """The data-access layer for `--env-file` (or `<state-dir>/stack.env` when present and
    `P4REVIEW_JOBS_TABLE` is not already set)."""
    from p4review.stores.factory import get_data_access, reset_data_access

    env_file = getattr(args, "env_file", None)
    if env_file:
        if not Path(env_file).exists():
            raise SystemExit(f"env file {env_file} not found")
        load_env_file(env_file)
    else:
        default = Path(getattr(args, "state_dir", ".local")) / "stack.env"
        if default.exists() and not os.environ.get("P4REVIEW_JOBS_TABLE"):
            load_env_file(default)
    reset_data_access()
    return get_data_access()


def default_actor() -> str:
    """`operator:<user>` for audit entries."""
    try:
        user = os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"operator:{user}"
