"""What of a remote system's error message may be logged or shown (an LLM provider's, Swarm's):
a short single-line excerpt, scrubbed of keys, quoted input and anything echoing the request."""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_EXCERPT_CHARS = 120
_ECHO_WINDOW = 24  # an excerpt sharing this many characters with the prompt is dropped
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]+")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_TOKEN_LIKE = re.compile(r"\b(?:sk|pk|key)[-_][\w*.-]{6,}|[\w+/*.=-]{32,}", re.IGNORECASE)


def safe_excerpt(message: str, *, secrets: Iterable[str] = (), request_texts: Iterable[str] = ()) -> str:
    """A short, single-line excerpt of a provider's error message, or "" if it echoes the prompt.
    Quoted spans are dropped (providers quote the offending input), so are key-like strings."""
    text = _one_line(message)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[key]")
    text = _TOKEN_LIKE.sub("[redacted]", _QUOTED.sub("'...'", text))[:MAX_EXCERPT_CHARS]
    sources = [_one_line(source) for source in request_texts]
    windows = (text[start : start + _ECHO_WINDOW] for start in range(0, len(text) - _ECHO_WINDOW + 1, 4))
    if any(window in source for window in windows for source in sources):
        return ""
    return text


def _one_line(text: str) -> str:
    return " ".join(_UNPRINTABLE.sub(" ", text).split())
