"""`p4review redact`: redact secrets from a unified diff (or any text) on stdin to stdout.

    p4 describe -du 48234 | p4review redact --stats --confidential-host-suffix .corp.example

The policy is the service's default: secrets, e-mail addresses, internal host names (.internal,
.corp, .local...) and private addresses (RFC 1918/6598, link-local, ULA), plus the suffixes and
ranges given; `--secrets-only` redacts secrets (and what the options name) only.

Bytes are read and written as they are: line endings (CRLF included) are kept, and bytes that
are not UTF-8 pass through unchanged (surrogateescape). Nothing is written to stdout unless
the whole input was redacted and passed the guard; on failure the exit status is 1 and stderr
names the classes involved, never the secret text. `--stats` prints, on stderr, one JSON
object: the counts per class, the ruleset version and the document's content hash (SHA-256
of the redacted text, as the pipeline records it).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import BinaryIO

from p4review.change.redaction import RedactionError, RedactionPolicy, Redactor
from p4review.change.redaction.policy import service_policy
from p4review.cli.display import say
from p4review.errors import ConfigError


def policy_from_args(args: argparse.Namespace) -> RedactionPolicy:
    """The service's policy: secure by default (e-mail addresses, internal names and private
    addresses too); `--secrets-only` is the opt-out, `--deidentify-emails` then adds e-mail back."""
    suffixes, cidrs = tuple(args.confidential_host_suffix or ()), tuple(args.confidential_cidr or ())
    if not args.secrets_only:
        return service_policy(host_suffixes=suffixes, cidrs=cidrs)
    return RedactionPolicy(
        deidentify_emails=args.deidentify_emails, confidential_host_suffixes=suffixes, confidential_cidrs=cidrs
    )


def cmd_redact(args: argparse.Namespace, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    try:
        policy = policy_from_args(args)
    except ConfigError as exc:
        say(f"error: {exc.message}")
        return 2
    text = stdin.read().decode("utf-8", "surrogateescape")
    try:
        document = Redactor(policy).redact(text)
    except RedactionError as exc:
        say(f"error: {exc.message}")
        return 1
    stdout.write(document.text.encode("utf-8", "surrogateescape"))
    stdout.flush()
    if args.stats:
        print(
            json.dumps(
                {
                    "counts": dict(document.counts),
                    "ruleset_version": document.ruleset_version,
                    "sha256": document.sha256,
                },
                sort_keys=True,
            ),
            file=sys.stderr,
        )
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `redact` to a `p4review` sub-command parser set."""
    parser = subparsers.add_parser(
        "redact", help="redact secrets from a diff on stdin (to stdout)", description=__doc__.split("\n\n", 1)[0]
    )
    parser.add_argument(
        "--secrets-only",
        action="store_true",
        help="redact secrets only: not e-mail addresses, internal host names and private "
        "addresses (the service's default redacts them; P4REVIEW_REDACT_PRIVATE_BY_DEFAULT=false)",
    )
    parser.add_argument(
        "--deidentify-emails", action="store_true", help="with --secrets-only: also redact e-mail addresses"
    )
    parser.add_argument(
        "--confidential-host-suffix",
        action="append",
        metavar="SUFFIX",
        help="redact host names under SUFFIX, e.g. .corp.example (repeatable)",
    )
    parser.add_argument(
        "--confidential-cidr",
        action="append",
        metavar="CIDR",
        help="redact IP addresses in CIDR, e.g. 10.0.0.0/8 (repeatable)",
    )
    parser.add_argument(
        "--stats", action="store_true", help="print counts per class, ruleset version and output hash as JSON on stderr"
    )
    parser.set_defaults(func=cmd_redact)
    return parser
