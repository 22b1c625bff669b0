"""One boto3 Session per test process for the clients tests make against the moto server: a new
Session loads every service model again (~0.1 s a client); clients from one Session share them
(~8 ms). A Session is not thread-safe, its clients are: clients are made under a lock."""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

import boto3

from p4review.stores.factory import new_session

REGION = "us-east-1"
FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

_lock = threading.Lock()


@cache
def shared_session() -> boto3.Session:
    return new_session(region_name=REGION, **FAKE_CREDENTIALS)


def moto_client(service: str, endpoint_url: str) -> Any:
    with _lock:
        return shared_session().client(service, endpoint_url=endpoint_url)
