"""Benchmark output: figures and ratios on the terminal, everything the local stack logs elsewhere.

The functions the benchmarks run write Powertools JSON logs and CloudWatch EMF metrics to stdout,
one JSON object a line (hundreds per benchmark). While `figures_only(path)` is active, stdout
sends each line that is a JSON object to `path` and every other line (the benchmarks' own
prints) to the terminal."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from p4review_dev.stack import repo_root

DEFAULT_LOG = Path(".local") / "bench.log"


def default_log_path() -> Path:
    return repo_root() / DEFAULT_LOG


def is_log_line(line: str) -> bool:
    """A Powertools log record or an EMF metrics document: a JSON object on one line."""
    stripped = line.lstrip()
    return stripped.startswith("{") and stripped.rstrip().endswith("}")


class LineRouter(io.TextIOBase):
    """A text stream that writes whole lines to `log` (JSON objects) or `terminal` (the rest)."""

    def __init__(self, terminal: TextIO, log: TextIO):
        self.terminal = terminal
        self.log = log
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            (self.log if is_log_line(line) else self.terminal).write(line + "\n")
        return len(text)

    def flush(self) -> None:
        if self._partial:
            (self.log if is_log_line(self._partial) else self.terminal).write(self._partial)
            self._partial = ""
        self.terminal.flush()
        self.log.flush()


def _stdout_handlers(stream: TextIO) -> list[logging.StreamHandler[TextIO]]:
    """Handlers that hold `stream` itself (Powertools' Logger binds sys.stdout when it is made)."""
    loggers = [logging.getLogger(), *(item for item in logging.Logger.manager.loggerDict.values())]
    return [
        handler
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler) and handler.stream is stream
    ]


@contextmanager
def figures_only(log_path: Path | None = None) -> Iterator[Path]:
    """Route stdout as described above for the duration; yields the log file's path."""
    path = log_path or default_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stdout
    with path.open("w", encoding="utf-8") as log:
        router = LineRouter(terminal, log)
        handlers = _stdout_handlers(terminal)
        for handler in handlers:
            handler.setStream(router)  # type: ignore[arg-type]
        sys.stdout = router  # type: ignore[assignment]
        try:
            yield path
        finally:
            router.flush()
            sys.stdout = terminal
            # Also the handlers made meanwhile, which bound the router: the log file closes now.
            for handler in handlers + _stdout_handlers(router):  # type: ignore[arg-type]
                handler.setStream(terminal)
