#!/usr/bin/env python3
"""`make lock`: resolve layers/requirements.txt for Lambda's platform (layer.py PIP_PLATFORMS,
CPython 3.12) and write layers/requirements.lock, the exact wheels the deps layer installs.
Run it after editing requirements.txt, then `make package` to build and run what it pins."""

from __future__ import annotations

import sys
from pathlib import Path

_INFRA = Path(__file__).resolve().parent
for path in (_INFRA, _INFRA.parent / "layers"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from p4review_infra.layer import LOCK_FILE  # noqa: E402
from p4review_infra.packaging import write_lock  # noqa: E402


def main() -> int:
    resolved = write_lock()
    print(f"{LOCK_FILE}: {len(resolved)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
