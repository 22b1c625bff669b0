"""Which URLs p4review may call on Swarm (pure): a workflow test's callback URL must be on the
configured Swarm, checked when the test call arrives (ingest) and again before the call (notify)."""

from __future__ import annotations

from urllib.parse import SplitResult, unquote, urlsplit

_DEFAULT_PORTS = {"https": 443, "http": 80}


def callback_url_problem(url: str, swarm_url: str) -> str | None:
    """Why `url` may not be called back, or None: it must be on the configured Swarm (scheme, host,
    port, under its path) so that the route cannot be used to make p4review call anywhere else."""
    base = _split(swarm_url.strip())
    if base is None or base.scheme not in _DEFAULT_PORTS or not base.hostname:
        return "P4REVIEW_SWARM_URL is not an http(s) URL"
    if "\\" in url:
        return "must not contain a backslash"
    target = _split(url)
    if target is None or not target.netloc:
        return "is not an absolute URL"
    if target.scheme != base.scheme:
        return f"must use {base.scheme}"
    if target.username is not None or target.password is not None:
        return "must not carry user information"
    if (target.hostname or "") != base.hostname:
        return "must be on the Swarm host"
    if _port(target) != _port(base):
        return "must use the Swarm port"
    if target.fragment:
        return "must not have a fragment"
    if any(unquote(segment) in {".", ".."} for segment in target.path.split("/")):
        return "must not have dot segments"
    if not (target.path + "/").startswith(base.path.rstrip("/") + "/"):
        return "must be under the Swarm URL's path"
    return None


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        return None
    return parts._replace(scheme=parts.scheme.lower())


def _port(parts: SplitResult) -> int | None:
    return parts.port or _DEFAULT_PORTS.get(parts.scheme)
