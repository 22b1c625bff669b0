"""The baseline of `make bench fetch`: the fetch path p4review had before issue 29, one p4 command
per file (`print -q` of an added file, `diff2 -du` of an edited one and `print -q` of its new side
for the analyzers), 8 at once. Kept here, outside the shipped package, only to be measured against
the batched path (p4review.perforce.fetcher) in the same run; the allow-list and skip rules are the
fetcher's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from p4review.models.change import ChangeDescription, ChangedFile, DiffStatus, FileDiff, SkipReason
from p4review.perforce import ChangeFetcher, P4NotFoundError, P4Runner, added_file_diff, decode_text


class PerFileRunner(P4Runner):
    """The runner as it was: it also ran `diff2 -du LEFT RIGHT`, which the service no longer asks
    for (the shipped runner refuses it)."""

    @staticmethod
    def _check(args: Sequence[str]) -> str:
        if len(args) == 4 and list(args[:2]) == ["diff2", "-du"]:
            return "diff2"
        return P4Runner._check(args)


def normalize_diff2(path: str, output: bytes) -> str | None:
    """`p4 diff2 -du` output -> standard unified diff (`--- a/...`, `+++ b/...`, hunks): p4's
    `==== ... ====` header and its own ---/+++ lines dropped; None when there is no textual
    difference (`==== identical`, type-only change, binary)."""
    lines = decode_text(output, "diff2 output").split("\n")
    body = [line for line in lines if not line.startswith("==== ")]
    while body and (body[0].startswith("--- ") or body[0].startswith("+++ ")):
        body.pop(0)
    if not any(line.startswith("@@") for line in body):
        return None
    text = "\n".join(body)
    name = path[2:] if path.startswith("//") else path
    return f"--- a/{name}\n+++ b/{name}\n{text if text.endswith(chr(10)) else text + chr(10)}"


def per_file_diffs(
    fetcher: ChangeFetcher,
    runner: P4Runner,
    description: ChangeDescription,
    *,
    keep_content: Callable[[str], bool],
    parallelism: int = 8,
) -> Iterator[FileDiff]:
    """Each file's diff by commands of its own, `parallelism` files at once, in describe order."""
    number = description.changelist_id

    def one(changed: ChangedFile) -> FileDiff:
        plan = fetcher._plan(description, changed, None)  # the same allow-list and skip rules
        if plan.skip is not None or plan.new_spec is None:
            return FileDiff(
                depot_path=changed.depot_path, action=changed.action, status=DiffStatus.SKIPPED, skip_reason=plan.skip
            )
        try:
            if plan.old_spec is None:
                content = runner.run_text(["print", "-q", plan.new_spec], changelist_id=number)
                diff = added_file_diff(changed.depot_path, content)
                new_content = decode_text(content)
            else:
                output = runner.run_text(["diff2", "-du", plan.old_spec, plan.new_spec], changelist_id=number)
                diff = normalize_diff2(changed.depot_path, output) or ""
                new_content = None
                if keep_content(changed.depot_path):  # the analyzers' copy: one more command
                    new_content = decode_text(runner.run_text(["print", "-q", plan.new_spec], changelist_id=number))
        except P4NotFoundError:
            return FileDiff(
                depot_path=changed.depot_path,
                action=changed.action,
                status=DiffStatus.SKIPPED,
                skip_reason=SkipReason.NOT_FOUND,
            )
        return FileDiff(
            depot_path=changed.depot_path,
            action=changed.action,
            status=DiffStatus.FETCHED,
            unified_diff=diff,
            new_content=new_content,
        )

    with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="p4-file") as pool:
        yield from pool.map(one, description.files)
