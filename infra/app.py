#!/usr/bin/env python3
"""CDK entry point (cdk.json: `python3 infra/app.py`).

cdk synth -c environment=prod      # default environment: dev
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_INFRA = Path(__file__).resolve().parent
# p4review_infra lives next to this file; p4review (layers/) is installed editable, but the app
# must not depend on that: both are put on the path explicitly.
for path in (_INFRA, _INFRA.parent / "layers"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from p4review_infra.app import create_app  # noqa: E402


def main() -> None:
    # The CDK CLI sets CDK_OUTDIR; a plain `python3 infra/app.py` writes to <repo>/cdk.out.
    app, _stack = create_app(outdir=os.environ.get("CDK_OUTDIR") or str(_INFRA.parent / "cdk.out"))
    app.synth()


if __name__ == "__main__":
    main()
