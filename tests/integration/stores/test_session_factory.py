"""The data-access factory's boto3 Sessions (stores/factory.py): every new Session of a process,
including one made after reset_data_access(), reuses the one data loader, so the service models
are parsed once per process; each Session keeps its own options."""

from __future__ import annotations

from p4review.stores import factory


def _loader(session):
    return session._session.get_component("data_loader")  # botocore's component of the Session


def test_new_sessions_share_the_processes_data_loader_and_keep_their_own_options():
    first = factory.new_session(region_name="us-east-1")
    second = factory.new_session(region_name="eu-west-1")
    assert _loader(first) is _loader(second)
    assert (first.region_name, second.region_name) == ("us-east-1", "eu-west-1")


def test_a_reset_factory_makes_a_new_session_on_the_same_loader(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    factory.reset_data_access()
    factory.aws_client("sqs")
    before = factory._session
    factory.reset_data_access()
    factory.aws_client("sqs")
    assert factory._session is not before
    assert _loader(factory._session) is _loader(before)
    factory.reset_data_access()
