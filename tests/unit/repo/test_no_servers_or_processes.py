"""The unit suite's guard (tests/unit/conftest.py) refuses what would make `make test-fast` start
a server or a process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.unit.conftest import StartsAServerOrProcess


@pytest.mark.spec("CH-7")
def test_a_process_is_refused():
    with pytest.raises(StartsAServerOrProcess):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(StartsAServerOrProcess):
        os.system("true")  # noqa: S605 - proves the guard refuses it


@pytest.mark.spec("CH-7")
def test_a_server_and_a_connection_are_refused():
    with socket.socket() as sock:
        with pytest.raises(StartsAServerOrProcess):
            sock.bind(("127.0.0.1", 0))
        with pytest.raises(StartsAServerOrProcess):
            sock.connect(("127.0.0.1", 9))
