#!/usr/bin/env python3
"""`make package`: build what `cdk deploy` uploads, measure it, and run it.

1. Synthesizes the dev stack with bundling on into build/package/cdk.out: the deps layer is pip's
   install for the Lambda platform (infra/p4review_infra/layer.py), the core layer the staged package.
2. Prints each function's unzipped size (code + layers) and fails over Lambda's 250 MB.
3. Runs every handler from those directories on Python 3.12, isolated, against the local stack
   (infra/p4review_infra/smoke.py), and asks every analyzer in the layer for its version.

Writes build/package/report.json; the handlers' logs are in build/package/smoke.log.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

_INFRA = Path(__file__).resolve().parent
for path in (_INFRA, _INFRA.parent / "layers"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from p4review_infra.packaging import UNZIPPED_LIMIT_BYTES, function_bundles  # noqa: E402
from p4review_infra.smoke import SmokeFailed, run_smoke  # noqa: E402

MB = 1_000_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=_INFRA.parent / "build" / "package")
    parser.add_argument("--environment", default="dev")
    parser.add_argument("--no-smoke", action="store_true", help="build and measure only")
    args = parser.parse_args()

    from p4review_infra.app import create_app, stack_name

    outdir = args.work / "cdk.out"
    args.work.mkdir(parents=True, exist_ok=True)
    # Asset metadata (the CLI turns it on) names the directory of each function's and layer's code.
    context = {"environment": args.environment, "aws:cdk:enable-asset-metadata": True}
    app, _stack = create_app(context=context, outdir=str(outdir))
    app.synth()
    name = stack_name(args.environment)
    bundles = function_bundles(outdir, name)

    print(f"{'function':<34} {'runtime':<11} {'unzipped':>10}  limit {UNZIPPED_LIMIT_BYTES / MB:.0f} MB")
    over = []
    sizes = {}
    for bundle in bundles:
        size = bundle.unzipped_bytes
        sizes[bundle.name] = size
        note = " (+ layers by ARN, not measured)" if bundle.external_layers else ""
        flag = "  OVER THE LIMIT" if size > UNZIPPED_LIMIT_BYTES else ""
        print(f"{bundle.name:<34} {bundle.runtime:<11} {size / MB:>7.1f} MB{flag}{note}")
        if size > UNZIPPED_LIMIT_BYTES:
            over.append(bundle.name)
    report: dict[str, object] = {"unzipped_bytes": sizes, "limit_bytes": UNZIPPED_LIMIT_BYTES}
    if over:
        print(f"package: {', '.join(over)} over Lambda's unzipped limit", file=sys.stderr)
        return 1
    if not args.no_smoke:
        try:
            report["smoke"] = run_smoke(bundles, name, args.work)
        except SmokeFailed as exc:
            print(f"package: smoke test failed: {exc} (logs: {args.work / 'smoke.log'})", file=sys.stderr)
            return 1
        smoke = report["smoke"]
        assert isinstance(smoke, dict)
        print(
            f"smoke: Python {smoke['python']}: {smoke['invocations']} invocations, jobs succeeded, "
            f"{smoke['emails']} emails, rotation {'/'.join(smoke['rotation'])}"
        )
        for analyzer, version in smoke["analyzers"].items():
            print(f"smoke: {analyzer}: {version}")
        print(f"smoke: redaction's one-pass scan: {smoke['redaction_scan']}")
        print(f"smoke: the model's context: {smoke['context_grammars']}")
    (args.work / "report.json").write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
