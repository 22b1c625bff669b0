"""The unit suite (`make test-fast`) starts no server and no process: every test here runs with
process creation and socket bind/connect refused. A test that needs either belongs in
tests/integration. Threads are allowed (they are how the pure lease and heartbeat logic is
driven)."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest


class StartsAServerOrProcess(AssertionError):
    """Raised when a unit test tries to start a process or open a network connection."""


def _refuse(what: str) -> Any:
    def refused(*_args: Any, **_kwargs: Any) -> NoReturn:
        raise StartsAServerOrProcess(f"a unit test may not {what}; move it to tests/integration")

    return refused


@pytest.fixture(autouse=True)
def _no_servers_or_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(subprocess, "Popen", _refuse("start a process (subprocess.Popen)"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"start a process (os.{name})"))
    monkeypatch.setattr(socket.socket, "bind", _refuse("bind a socket (start a server)"))
    monkeypatch.setattr(socket.socket, "connect", _refuse("connect a socket"))
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse("connect a socket"))
    yield
