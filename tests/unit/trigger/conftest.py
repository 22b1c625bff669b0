"""Fixtures of the trigger's unit tests: a fixed clock, a config in tmp_path, its log, and the
in-memory p4 and API (p4review_dev.support.trigger)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4review_dev.support.trigger import FakeApi, FakeP4, load_trigger, write_config

trigger = load_trigger()


class Clock:
    def __init__(self, now: float = 1_790_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return write_config(tmp_path)


@pytest.fixture
def config(config_file: Path):
    return trigger.load_config(str(config_file))


@pytest.fixture
def log(config, clock):
    return trigger.Log(config.log_file, clock=clock)


@pytest.fixture
def p4() -> FakeP4:
    return FakeP4(trigger)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi(trigger)


@pytest.fixture
def sender(config, log, clock, p4, api):
    return trigger.Sender(config, log, clock, p4=p4, api=api)
