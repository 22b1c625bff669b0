"""Split a change into chunks of whole files within a token budget (pure).

Each chunk is reviewed by its own request. Files keep the change's order; a file that alone
exceeds the chunk budget is skipped as `too_large`, and once the job's budget is spent the
remaining files are skipped as `budget_exhausted` (both are listed in the review's coverage).
A chunk's id hashes everything its answer depends on, so a stored chunk result is reused by a
retry only when the request would be the same."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p4review.review.context import Callee

SKIP_TOO_LARGE = "too_large"
SKIP_BUDGET_EXHAUSTED = "budget_exhausted"
SKIP_ANSWER_REJECTED = "answer_rejected"


@dataclass(frozen=True)
class ChunkFile:
    depot_path: str
    section: str  # the file's rendered, numbered diff section
    tokens: int  # estimated tokens of `section`
    diff: str = ""  # the file's redacted unified diff (offline reviewer, line checks)
    # Functions its added lines call that other files of the change define (review/context/):
    # shown under the section by a request whose chunk does not hold the defining file.
    callees: tuple[Callee, ...] = ()


@dataclass(frozen=True)
class Chunk:
    files: tuple[ChunkFile, ...]

    @property
    def tokens(self) -> int:
        return sum(f.tokens for f in self.files)

    @property
    def paths(self) -> list[str]:
        return [f.depot_path for f in self.files]

    def chunk_id(self, fingerprint: str) -> str:
        """Stable id: the reviewer fingerprint (prompt version, provider, model) + the content."""
        digest = hashlib.sha256(fingerprint.encode())
        for f in self.files:
            digest.update(b"\x00" + f.depot_path.encode() + b"\x00" + f.section.encode())
        return digest.hexdigest()[:24]

    def halves(self) -> tuple[Chunk, Chunk]:
        """Two smaller chunks (the request was too long for the model). Needs >= 2 files."""
        middle = max(1, len(self.files) // 2)
        return Chunk(self.files[:middle]), Chunk(self.files[middle:])


@dataclass
class ChunkPlan:
    chunks: list[Chunk] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (depot_path, reason)


def plan_chunks(files: Sequence[ChunkFile], *, chunk_tokens: int, job_tokens: int) -> ChunkPlan:
    plan = ChunkPlan()
    current: list[ChunkFile] = []
    current_tokens = 0
    spent = 0
    for f in files:
        if f.tokens > chunk_tokens:
            plan.skipped.append((f.depot_path, SKIP_TOO_LARGE))
            continue
        if spent + f.tokens > job_tokens:
            plan.skipped.append((f.depot_path, SKIP_BUDGET_EXHAUSTED))
            continue
        if current and current_tokens + f.tokens > chunk_tokens:
            plan.chunks.append(Chunk(tuple(current)))
            current, current_tokens = [], 0
        current.append(f)
        current_tokens += f.tokens
        spent += f.tokens
    if current:
        plan.chunks.append(Chunk(tuple(current)))
    return plan
