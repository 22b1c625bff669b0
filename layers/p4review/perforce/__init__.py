"""The Perforce boundary, one job per module:

- `runner`: the hardened `p4` subprocess runner (argument lists, never a shell; a validated
  absolute executable; a timeout; credentials only in the child's minimal environment);
- `marshal`: the `p4 -G` record decoder (strict, hand-written: `marshal.loads` is unsafe);
- `values`: text decoding and the checks on untrusted values before they become arguments;
- `diff_text`: unified diffs of an edit's two sides and of a new file's content;
- `fetcher`: `ChangeFetcher`, the only code that asks Perforce for anything, and the
  enforcement point of the depot allow-list (docs/security.md);
- `errors`: what a p4 failure means, classified from p4's own message.
"""

from p4review.perforce.diff_text import added_file_diff, edit_diff
from p4review.perforce.errors import (
    P4ArgumentError,
    P4AuthError,
    P4CommandError,
    P4ConnectionError,
    P4NotFoundError,
    P4ServerBusyError,
    P4TimeoutError,
)
from p4review.perforce.fetcher import DEFAULT_MAX_FILE_BYTES, ChangeFetcher, report_path_denied
from p4review.perforce.marshal import decode_marshal_stream
from p4review.perforce.runner import P4Runner
from p4review.perforce.values import decode_text, is_binary_type

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "ChangeFetcher",
    "P4ArgumentError",
    "P4AuthError",
    "P4CommandError",
    "P4ConnectionError",
    "P4NotFoundError",
    "P4Runner",
    "P4ServerBusyError",
    "P4TimeoutError",
    "added_file_diff",
    "decode_marshal_stream",
    "decode_text",
    "edit_diff",
    "is_binary_type",
    "report_path_denied",
]
