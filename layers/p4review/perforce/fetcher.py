"""The changelist fetcher: the only code that asks Perforce for anything, and the enforcement
point of the depot allow-list (spec "Depot path allow-list policy"; docs/security.md)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from p4review.change.depot_paths import DepotAllowList, PathDecision
from p4review.change.depot_policy import (
    MAX_POLICY_BYTES,
    candidate_policy_paths,
    is_ignored,
    is_policy_file,
    parse_policy_file,
)
from p4review.change.generated import declares_generated, diff_declares_generated
from p4review.change.redacted_paths import path_for_log
from p4review.metric_names import MetricName
from p4review.models.change import (
    ChangeDescription,
    ChangedFile,
    ChangeSnapshot,
    DiffStatus,
    FileDiff,
    P4User,
    SkipReason,
)
from p4review.models.job import ChangeKind
from p4review.models.policy import ChangePolicy, PolicyDiagnostic
from p4review.observability import logger, metrics
from p4review.perforce.diff_text import added_file_diff, edit_diff
from p4review.perforce.errors import P4ArgumentError, P4CommandError, P4NotFoundError
from p4review.perforce.runner import P4Runner
from p4review.perforce.values import (
    decode_field,
    decode_text,
    depot_path_operand,
    int_field,
    is_binary_type,
    untrusted,
)

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
_ADD_ACTIONS = frozenset({"add", "branch", "move/add", "import"})
_EDIT_ACTIONS = frozenset({"edit", "integrate"})
_DELETE_ACTIONS = frozenset({"delete", "move/delete", "purge"})
# The `code` of `-G print`'s content records (git-p4 appends any record's `data` after a file's stat).
_CONTENT_CODES = frozenset({b"text", b"binary", b"unicode", b"utf16", b"utf8"})


class ChangeFetcher:
    """Fetches a change's metadata and per-file unified diffs in a constant number of p4
    commands (describe, the policy lookup's files and print, one print of every file's sides),
    and enforces the depot allow-list.

    The list is checked three times: on the paths `describe -s` reports (metadata, no content);
    again for each file before its operands are written to the print's argument file; and on
    each answer of that print, which must name the file asked for, before its content is kept.
    A refused file is never fetched in any form (there is no whole-change diff: `describe`
    always carries -s, and every command that reads content names each file it reads); it stays
    in the coverage as skipped, and its denial is a security event.
    """

    def __init__(
        self,
        runner: P4Runner,
        *,
        allow_list: DepotAllowList,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        keep_content: Callable[[str], bool] | None = None,
        skip_generated: bool = False,
    ):
        self._runner = runner
        # The service skips generated files (P4REVIEW_REVIEW_GENERATED, perforce/access.py).
        self._skip_generated = skip_generated
        self._allow_list = allow_list
        self._max_bytes = max_file_bytes
        # Which files' whole new content to keep (for the analyzers); the others get a diff only.
        self._keep_content = keep_content or (lambda _path: False)
        # fileSize from describe, keyed by (change, kind, path, rev): ChangedFile has no size field.
        self._sizes: dict[tuple[int, str, str, int], int] = {}

    def describe(self, changelist_id: int, kind: ChangeKind) -> ChangeDescription:
        """`p4 -G describe -s [-S] N`: metadata only (no content), every file the server lists."""
        if isinstance(changelist_id, bool) or not isinstance(changelist_id, int) or changelist_id <= 0:
            raise P4ArgumentError("changelist id must be a positive integer")
        kind = ChangeKind(kind)
        args = ["describe", "-s", *(["-S"] if kind is ChangeKind.SHELVED else []), str(changelist_id)]
        records = self._runner.run_marshal(args, changelist_id=changelist_id)
        if len(records) != 1:
            raise P4CommandError(f"p4 describe: expected one record, got {len(records)}")
        record = records[0]
        status = decode_field(record.get(b"status"))
        # p4 follows a renumbered (submitted) change, so trust the number it answers with.
        number = int_field(record.get(b"change")) or changelist_id
        # `describe -S` of a submitted change answers with no shelf; a pending change is not
        # (yet) a submitted one. Either way the change the caller asked for does not exist.
        if (kind is ChangeKind.SHELVED) != (status in ("pending", "shelved")):
            raise P4NotFoundError(f"change {changelist_id} is not a {kind.value} change")
        files = []
        index = 0
        while b"depotFile%d" % index in record:
            suffix = str(index).encode()
            changed = ChangedFile(
                depot_path=decode_field(record[b"depotFile" + suffix], "depot path"),
                action=decode_field(record.get(b"action" + suffix)),
                file_type=decode_field(record.get(b"type" + suffix)),
                revision=int_field(record.get(b"rev" + suffix)) or 0,  # a shelved add may say "none"
            )
            size = int_field(record.get(b"fileSize" + suffix))
            if size is not None:
                self._sizes[(number, kind.value, changed.depot_path, changed.revision)] = size
            files.append(changed)
            index += 1
        return ChangeDescription(
            changelist_id=number,
            kind=kind,
            owner=decode_field(record.get(b"user"), "change owner"),
            client=decode_field(record.get(b"client")),
            status=status,
            description=decode_field(record.get(b"desc"), "change description"),
            time=int_field(record.get(b"time")),
            files=files,
        )

    def user(self, name: str) -> P4User:
        records = self._runner.run_marshal(["user", "-o", untrusted(name, "user name")])
        if len(records) != 1:
            raise P4CommandError(f"p4 user: expected one record, got {len(records)}")
        record = records[0]
        return P4User(
            user=decode_field(record.get(b"User")) or name,
            email=decode_field(record.get(b"Email"), "user email") or None,
            full_name=decode_field(record.get(b"FullName"), "user full name") or None,
        )

    def server_property(self, name: str) -> str | None:
        """A server property's value (`p4 property -l -n NAME`), None when it is not set; Swarm
        publishes its URL as P4.Swarm.URL."""
        records = self._runner.run_marshal(["property", "-l", "-n", untrusted(name, "property name")])
        values = [decode_field(r.get(b"value"), "property value") for r in records if r.get(b"name") == name.encode()]
        return (values[0] or None) if values else None

    def read_policy(self, description: ChangeDescription) -> ChangePolicy:
        """The depot's `.p4review.toml` files above the changed files (docs/policy.md), as they
        were before this change: every candidate directory the allow-list allows, in `p4 files`
        commands of up to POLICY_OPERANDS_PER_COMMAND operands each, then the files found in as
        few `p4 -G print` commands. A bad file is a diagnostic, never a failed fetch.

        A change never governs itself, whatever it does to a policy file (as a pull request's
        CODEOWNERS are read from its base): a submitted change N reads `@N-1`. The server renumbers
        a change on submit "to keep the numeric order of submitted changelists identical to the
        chronological order" (Perforce command reference, `p4 change`), so every change submitted
        before N is numbered below it and every later one above: `@N-1` is the depot just before
        N. A shelf reads the head, not the shelf. The policy files the change touches are listed
        (`modified`): they are reviewed like any file and take effect for later changes."""
        number = description.changelist_id
        found = ChangePolicy(
            modified=[
                c.depot_path
                for c in description.files
                if is_policy_file(c.depot_path) and self._allow_list.check(c.depot_path).allowed
            ]
        )
        if description.kind is ChangeKind.SHELVED:
            revision = "#head"
        elif number > 1:
            revision = f"@{number - 1}"
        else:
            return found  # change 1: nothing was submitted before it
        # Only the directories of files the allow-list allows: a refused (hostile) path names nothing.
        allowed = [c.depot_path for c in description.files if self._allow_list.check(c.depot_path).allowed]
        candidates = [path for path in candidate_policy_paths(allowed) if self._allow_list.check(path).allowed]
        by_operand = {depot_path_operand(path): path for path in candidates}
        revisions: dict[str, int] = {}  # operand -> the revision in force
        try:
            lookup = [operand + revision for operand in by_operand]
            for record in self._stream("files", lookup, number):
                operand = decode_field(record.get(b"depotFile"))
                rev = int_field(record.get(b"rev"))
                if operand not in by_operand or rev is None:
                    continue  # a missing file's warning, or not a file we asked for
                if decode_field(record.get(b"action")) in _DELETE_ACTIONS:  # deleted: no policy there
                    continue
                if is_binary_type(decode_field(record.get(b"type"))):
                    # A binary file is never reviewed, so the change that made this policy was
                    # not either: it is not used.
                    detail = "stored as a binary file type, so never reviewed: not used"
                    found.diagnostics.append(
                        PolicyDiagnostic(source=by_operand[operand], reason="invalid_policy", detail=detail)
                    )
                    continue
                revisions[operand] = rev
        except P4CommandError:
            found.diagnostics.append(PolicyDiagnostic(source="(lookup)", reason="unreadable", detail="p4 files failed"))
            return found
        contents: dict[str, bytes] = {}
        specs = [f"{operand}#{rev}" for operand, rev in revisions.items()]
        try:
            for printed in _printed_files(self._stream("print", specs, number)):
                if printed.depot_path in revisions:  # a policy file too large is refused for its size
                    contents[printed.depot_path] = bytes(printed.content)
        except (P4NotFoundError, P4CommandError):
            pass  # each file not read is reported unreadable below
        for operand in revisions:
            source = by_operand[operand]
            data = contents.get(operand)
            if data is None:
                found.diagnostics.append(PolicyDiagnostic(source=source, reason="unreadable", detail="p4 print failed"))
                continue
            parsed = parse_policy_file(source, revision, data)
            if isinstance(parsed, PolicyDiagnostic):
                logger.warning(
                    "depot review policy not used",
                    extra={"changelist_id": number, "policy": path_for_log(source), "reason": parsed.reason},
                )
                found.diagnostics.append(parsed)
            else:
                found.policies.append(parsed)
        order = {path: index for index, path in enumerate(candidates)}
        found.policies.sort(key=lambda policy: order[policy.source])  # deepest first
        return found

    def _stream(self, command: str, operands: list[str], number: int) -> Iterator[dict[bytes, Any]]:
        """`p4 -G -x ARGFILE COMMAND`, its operands in the argument file; no command for none."""
        if not operands:
            return iter(())
        return self._runner.stream_marshal([command], operands, changelist_id=number)

    def denied_files(self, description: ChangeDescription, *, job_id: str | None = None) -> set[str]:
        """First check, on the metadata: the listed paths the allow-list refuses (each reported)."""
        denied = set()
        for changed in description.files:
            decision = self._allow_list.check(changed.depot_path)
            if not decision.allowed:
                report_path_denied(decision, check="describe", description=description, job_id=job_id)
                denied.add(changed.depot_path)
        return denied

    def _plan(self, description: ChangeDescription, changed: ChangedFile, job_id: str | None) -> _Plan:
        """What to print for one file, or why it is skipped without a p4 command."""
        path, action, number = changed.depot_path, changed.action, description.changelist_id

        def skipped(reason: SkipReason) -> _Plan:
            return _Plan(changed, skip=reason)

        # Second check: nothing below names this file to p4 unless the list allows it here.
        decision = self._allow_list.check(path)
        if not decision.allowed:
            report_path_denied(decision, check="fetch", description=description, job_id=job_id)
            return skipped(SkipReason.OUTSIDE_ALLOW_LIST)
        if action in _DELETE_ACTIONS:
            return skipped(SkipReason.DELETED)
        if action == "archive":
            return skipped(SkipReason.ARCHIVED)
        if is_binary_type(changed.file_type):
            return skipped(SkipReason.BINARY)
        size = self._sizes.get((number, description.kind.value, path, changed.revision))
        if size is not None and size > self._max_bytes:
            return skipped(SkipReason.TOO_LARGE)
        # The server's own spelling (escaped), never the normalized form: that is what was allowed.
        operand = depot_path_operand(path)
        shelved = description.kind is ChangeKind.SHELVED
        new = f"{operand}@={number}" if shelved else f"{operand}#{changed.revision}"
        if action in _ADD_ACTIONS or (action in _EDIT_ACTIONS and not shelved and changed.revision <= 1):
            return _Plan(changed, new_spec=new)
        if action in _EDIT_ACTIONS:
            # A shelf against the depot head it would replace; a submitted edit against the revision before.
            return _Plan(changed, old_spec=operand if shelved else f"{operand}#{changed.revision - 1}", new_spec=new)
        return skipped(SkipReason.UNSUPPORTED_ACTION)

    def _file_diff(self, plan: _Plan, old: _Printed | None, new: _Printed) -> FileDiff:
        """One file's diff from its printed sides."""
        changed = plan.changed
        path, action = changed.depot_path, changed.action

        def skipped(reason: SkipReason) -> FileDiff:
            return FileDiff(depot_path=path, action=action, status=DiffStatus.SKIPPED, skip_reason=reason)

        if new.missing:  # obliterated or re-shelved between describe and print: this file only
            return skipped(SkipReason.NOT_FOUND)
        if new.binary or (old is not None and old.binary):
            return skipped(SkipReason.BINARY)
        if new.too_large or (old is not None and old.too_large):
            return skipped(SkipReason.TOO_LARGE)
        # A policy file is always reviewed: its author writes the header that would say "generated".
        skip_generated = self._skip_generated and not is_policy_file(path)
        new_text = decode_text(bytes(new.content), "file content").removeprefix("\ufeff")
        if skip_generated and declares_generated(new_text[:4096]):
            return skipped(SkipReason.GENERATED)
        if old is None or old.missing:
            # An add, or an edit whose previous revision is gone (obliterated): all of it is new.
            diff = added_file_diff(path, bytes(new.content))
        else:
            edited = edit_diff(path, bytes(old.content), bytes(new.content))
            if edited is None:
                return skipped(SkipReason.IDENTICAL)
            if skip_generated and diff_declares_generated(edited):
                return skipped(SkipReason.GENERATED)
            diff = edited
        return FileDiff(
            depot_path=path,
            action=action,
            status=DiffStatus.FETCHED,
            unified_diff=diff,
            new_content=new_text if self._keep_content(path) else None,
        )

    def fetch(self, changelist_id: int, kind: ChangeKind, *, job_id: str | None = None) -> ChangeSnapshot:
        """The whole change in memory (tests, benchmarks); the fetch stage streams instead."""
        description = self.describe(changelist_id, kind)
        policy = self.read_policy(description)
        diffs = list(self.iter_file_diffs(description, job_id=job_id, policy=policy))
        return ChangeSnapshot(description=description, diffs=diffs, policy=policy)

    def iter_file_diffs(
        self, description: ChangeDescription, *, job_id: str | None = None, policy: ChangePolicy | None = None
    ) -> Iterator[FileDiff]:
        """Check the paths, then print every allowed file's sides in ONE `p4 -x ARGFILE print`
        (each edit's old side just before its new one) and diff them here, yielding the diffs in
        describe order as the content streams in: one file's two sides are held at a time,
        whatever the change's size. p4 answers in operand order, so each answer is matched to
        its file by position, and checked to name that file before its content is read."""
        denied = self.denied_files(description, job_id=job_id)
        plans: list[_Plan] = []
        for changed in description.files:
            if changed.depot_path in denied:  # already reported by the first check
                plans.append(_Plan(changed, skip=SkipReason.OUTSIDE_ALLOW_LIST))
            elif policy is not None and is_ignored(policy.policies, changed.depot_path):
                plans.append(_Plan(changed, skip=SkipReason.IGNORED_BY_POLICY))
            else:
                plans.append(self._plan(description, changed, job_id))
        operands = [spec for plan in plans for spec in (plan.old_spec, plan.new_spec) if spec is not None]
        answers = _printed_files(self._stream("print", operands, description.changelist_id), limit=self._max_bytes)
        try:
            for plan in plans:
                if plan.skip is not None:
                    yield FileDiff(
                        depot_path=plan.changed.depot_path,
                        action=plan.changed.action,
                        status=DiffStatus.SKIPPED,
                        skip_reason=plan.skip,
                    )
                    continue
                old = self._answer(answers, plan.old_spec) if plan.old_spec else None
                new = self._answer(answers, plan.new_spec)
                yield self._file_diff(plan, old, new)
            if next(answers, None) is not None:
                raise P4CommandError("p4 print: more answers than files")
        finally:
            answers.close()  # a consumer that stops early leaves no p4 running

    def _answer(self, answers: Iterator[_Printed], spec: str | None) -> _Printed:
        """The next answer, which must be this spec's file, and a file the allow-list allows."""
        assert spec is not None
        answer = next(answers, None)
        if answer is None:
            raise P4CommandError("p4 print: fewer answers than files")
        if answer.missing:
            return answer
        # The path without its revision (a depot path's own @ and # are escaped, as %40 and %23).
        expected = spec.split("@=", 1)[0].split("#", 1)[0]
        answered = answer.depot_path.split("@=", 1)[0].split("#", 1)[0]
        if answered != expected or not self._allow_list.check(answered).allowed:
            raise P4CommandError("p4 print: an answer names another file than asked")
        return answer


@dataclass(frozen=True)
class _Plan:
    """One changed file: skipped without a p4 command, or its sides to print."""

    changed: ChangedFile
    skip: SkipReason | None = None
    old_spec: str | None = None
    new_spec: str | None = None


@dataclass
class _Printed:
    """One operand's answer from `p4 -G print`: a file, or the warning that it is missing.
    `content` holds at most the first `limit` + 1 bytes: more means `too_large`."""

    depot_path: str = ""
    missing: bool = False
    binary: bool = False
    content: bytearray = field(default_factory=bytearray)
    limit: int = MAX_POLICY_BYTES

    @property
    def too_large(self) -> bool:
        return len(self.content) > self.limit


def _printed_files(records: Iterable[dict[bytes, Any]], *, limit: int = MAX_POLICY_BYTES) -> Generator[_Printed]:
    """`p4 -G print SPEC...` answers, one per operand in order. p4 answers a stat record
    (depotFile, rev, type, fileSize...) per file, then its content in records of their own (`code`
    text or binary, `data` a chunk), as git-p4 reads them (git.git, git-p4.py,
    P4Sync.streamP4FilesCb): a record naming a depotFile starts the next file. A missing file is
    a warning record in its place. The framing is marshal's, so no file's content can pass for a
    header. Content past `limit` + 1 bytes is dropped as it arrives: memory stays bounded."""
    current: _Printed | None = None
    for record in records:
        if record.get(b"code") == b"error":  # the runner lets only "no such file" warnings through
            if current is not None:
                yield current
            current = None
            yield _Printed(missing=True, limit=limit)
        elif b"depotFile" in record:
            if current is not None:
                yield current
            current = _Printed(
                depot_path=decode_field(record.get(b"depotFile")),
                binary=is_binary_type(decode_field(record.get(b"type"))),
                limit=limit,
            )
        elif record.get(b"code") in _CONTENT_CODES and isinstance(record.get(b"data"), bytes):
            if current is None:
                raise P4CommandError("p4 print: content before any file")
            if len(current.content) <= limit:
                current.content += record[b"data"][: limit + 1 - len(current.content)]
        elif record.get(b"code") != b"info":  # an informational message is no file's content
            raise P4CommandError("p4 print: an answer of an unknown kind")
    if current is not None:
        yield current


def report_path_denied(
    decision: PathDecision, *, check: str, description: ChangeDescription, job_id: str | None
) -> None:
    """The security event of one denial: what was refused, why and where; never file content."""
    logger.warning(
        "depot path denied",
        extra={
            "security_event": "depot_path_denied",
            "check": check,  # "describe" (metadata) or "fetch" (before a per-file command)
            "reason": decision.reason.value if decision.reason else None,
            # A secret in the path is masked: logs keep what the redacted bucket would.
            "depot_path": path_for_log(decision.path),
            "normalized_path": path_for_log(decision.normalized) if decision.normalized else None,
            "job_id": job_id,
            "changelist_id": description.changelist_id,
            "change_kind": description.kind.value,
        },
    )
    metrics.add_metric(name=MetricName.SECURITY_PATH_DENIED, unit="Count", value=1)
