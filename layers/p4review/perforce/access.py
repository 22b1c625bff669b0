"""Builds the ChangeFetcher from configuration and the p4 secret (shared by fetch and notify)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from p4review.change.analyzer_files import reads_content
from p4review.change.depot_paths import DepotAllowList
from p4review.perforce import ChangeFetcher, P4Runner
from p4review.ports import SecretReader
from p4review.settings.blocks import AnalyzerSelectionBlock, P4Block

# The p4 variables of the secret that reach the child's environment (never its argv).
_P4_ENV_KEYS = ("P4PORT", "P4USER", "P4CLIENT", "P4CHARSET", "P4TRUST")


def p4_environment(credentials: Mapping[str, Any]) -> dict[str, str]:
    """The p4 secret ({P4PORT, P4USER, P4TICKET}) as p4's environment. p4 reads no P4TICKET
    variable: a ticket goes in P4PASSWD, which p4 accepts in place of a password."""
    env = {key: str(credentials[key]) for key in _P4_ENV_KEYS if credentials.get(key)}
    ticket = credentials.get("P4TICKET") or credentials.get("P4PASSWD")
    if ticket:
        env["P4PASSWD"] = str(ticket)
    return env


def build_change_fetcher(
    settings: P4Block, secrets: SecretReader, selection: AnalyzerSelectionBlock | None = None
) -> ChangeFetcher:
    """`selection`: the analyzers whose config files are kept (default: the blocks' defaults)."""
    allow_list = DepotAllowList(settings.depot_prefixes(), case_insensitive=settings.p4_case_insensitive)
    credentials = secrets.get_json(settings.p4_secret_id) if settings.p4_secret_id else {}
    runner = P4Runner(
        settings.p4_executable, timeout_seconds=settings.p4_timeout_seconds, env=p4_environment(credentials)
    )
    selection = selection if selection is not None else AnalyzerSelectionBlock()
    analyzers = selection.enabled_analyzers()
    return ChangeFetcher(
        runner,
        allow_list=allow_list,
        keep_content=lambda path: reads_content(path, analyzers),
        skip_generated=not selection.review_generated,
    )
