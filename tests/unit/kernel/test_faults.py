"""Fault injection: strict parsing, the production guard, determinism, zero effect when off."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4review import faults
from p4review.errors import ConfigError, ErrorClass, LeaseLostError, StorageError
from p4review.faults import FaultPoint, InjectedCrash
from p4review.perforce import P4Runner, P4TimeoutError

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _clean_plan():
    faults.load({})
    yield
    faults.reset()


def _env(spec: str, environment: str | None = "test") -> dict[str, str]:
    env = {"P4REVIEW_FAULTS": spec, "UNRELATED_SECRET": "hunter2"}
    if environment is not None:
        env["P4REVIEW_ENV"] = environment
    return env


def test_parses_points_probabilities_and_seed():
    plan = faults.parse("after_claim=0.1, before_handoff=0.05,provider_transient=0.2;seed=42")
    assert plan.probabilities == {
        FaultPoint.AFTER_CLAIM: 0.1,
        FaultPoint.BEFORE_HANDOFF: 0.05,
        FaultPoint.PROVIDER_TRANSIENT: 0.2,
    }
    assert plan.seed == 42
    assert faults.parse("p4_timeout=1").seed == 0
    assert faults.parse("   ") is None


@pytest.mark.parametrize(
    "spec, offending",
    [
        ("after_clam=0.1", "after_clam=0.1"),
        ("after_claim=0.1,boom=1", "boom=1"),
        ("after_claim=1.5", "after_claim=1.5"),
        ("after_claim=-0.1", "after_claim=-0.1"),
        ("after_claim=nan", "after_claim=nan"),
        ("after_claim=lots", "after_claim=lots"),
        ("after_claim", "after_claim"),
        ("after_claim=0.1,after_claim=0.2", "after_claim=0.2"),
        ("after_claim=0.1;seed=x", "seed=x"),
        ("after_claim=0.1;speed=3", "speed=3"),
    ],
)
def test_rejects_bad_tokens_naming_only_the_offending_token(spec, offending):
    with pytest.raises(ConfigError) as caught:
        faults.load(_env(spec))
    assert repr(offending) in caught.value.message
    assert "hunter2" not in caught.value.message


@pytest.mark.parametrize("environment", ["prod", "dev", "staging", "", None, "TEST", "local "])
def test_refuses_to_load_outside_local_and_test(environment):
    with pytest.raises(ConfigError) as caught:
        faults.load(_env("after_claim=0.5;seed=1", environment))
    assert "P4REVIEW_FAULTS" in caught.value.message
    assert "after_claim" not in caught.value.message and "hunter2" not in caught.value.message
    faults.fault(FaultPoint.AFTER_CLAIM)  # nothing installed: never fires


def test_the_cold_start_refusal_fails_loudly_in_production():
    try:
        with pytest.raises(ConfigError) as caught:
            faults.refuse_outside_test_environments(_env("after_claim=1", "prod"))
        assert "P4REVIEW_FAULTS" in caught.value.message and "after_claim" not in caught.value.message
        faults.refuse_outside_test_environments(_env("after_claim=1", "test"))
        with pytest.raises(InjectedCrash):
            faults.fault(FaultPoint.AFTER_CLAIM)
    finally:
        faults.reset()


def test_loading_settings_never_switches_on_fault_injection(monkeypatch):
    from p4review.fetch.settings import FetchSettings
    from p4review.settings.blocks import StoresBlock

    monkeypatch.setenv("P4REVIEW_ENV", "test")
    monkeypatch.setenv("P4REVIEW_FAULTS", "after_claim=1")
    faults.reset()
    try:
        StoresBlock.from_env()
        FetchSettings.from_env({"P4REVIEW_ENV": "test", "P4REVIEW_FAULTS": "after_claim=1", **FETCH_ENV})
        assert faults._plan is faults._UNLOADED  # nothing loaded, nothing installed
    finally:
        faults.reset()


FETCH_ENV = {
    name: "x"
    for name in (
        "P4REVIEW_JOBS_TABLE",
        "P4REVIEW_FETCH_QUEUE_URL",
        "P4REVIEW_FETCH_DLQ_URL",
        "P4REVIEW_REVIEW_QUEUE_URL",
        "P4REVIEW_RAW_BUCKET",
        "P4REVIEW_REDACTED_BUCKET",
        "P4REVIEW_P4_EXECUTABLE",
    )
}
FUNCTIONS = ("ingest", "fetch", "review", "notify", "sweeper", "credential-age", "rotate-signing")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_every_handler_refuses_faults_in_production_at_import(function, monkeypatch):
    """The refusal is each handler's explicit cold-start call, before its settings are parsed."""
    import importlib.util
    from pathlib import Path

    monkeypatch.setenv("P4REVIEW_ENV", "prod")
    monkeypatch.setenv("P4REVIEW_FAULTS", "after_claim=1")
    path = Path(__file__).resolve().parents[3] / "functions" / function / "handler.py"
    spec = importlib.util.spec_from_file_location(f"p4review_refusal_{function.replace('-', '_')}", path)
    assert spec is not None and spec.loader is not None
    try:
        with pytest.raises(ConfigError) as caught:
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        assert "P4REVIEW_FAULTS" in caught.value.message
    finally:
        faults.reset()


def test_unset_or_blank_means_no_faults_even_in_production():
    assert faults.load({"P4REVIEW_ENV": "prod"}) is None
    assert faults.load(_env("  ", "prod")) is None
    for point in FaultPoint:
        if point not in faults.RESULT_POINTS:
            faults.fault(point)
        assert not faults.fires(point)
    assert faults.fired() == {}


def test_a_seed_makes_the_firing_sequence_reproducible():
    def sequence(seed: int) -> list[bool]:
        faults.load(_env(f"after_claim=0.3,p4_timeout=0.5;seed={seed}"))
        return [faults.fires(point) for _ in range(200) for point in (FaultPoint.AFTER_CLAIM, FaultPoint.P4_TIMEOUT)]

    first, again, other = sequence(42), sequence(42), sequence(43)
    assert first == again
    assert first != other
    faults.load(_env("after_claim=0.3,p4_timeout=0.5;seed=42"))
    for _ in range(200):
        faults.fires(FaultPoint.AFTER_CLAIM)
        faults.fires(FaultPoint.P4_TIMEOUT)
    counts = faults.fired()
    assert counts == {"after_claim": sum(first[0::2]), "p4_timeout": sum(first[1::2])}
    assert 30 < counts["after_claim"] < 90


def test_probability_zero_never_fires_and_one_always_fires():
    faults.load(_env("after_claim=0,before_handoff=1"))
    assert not any(faults.fires(FaultPoint.AFTER_CLAIM) for _ in range(100))
    assert all(faults.fires(FaultPoint.BEFORE_HANDOFF) for _ in range(100))
    assert faults.fired() == {"before_handoff": 100}


def test_effects():
    faults.load(_env(",".join(f"{point.value}=1" for point in FaultPoint)))
    for point in faults.CRASH_POINTS:
        with pytest.raises(InjectedCrash) as crash:
            faults.fault(point)
        assert crash.value.point == point
        assert not isinstance(crash.value, Exception)
    with pytest.raises(StorageError):
        faults.fault(FaultPoint.DB_WRITE_AFTER_PROVIDER)
    with pytest.raises(LeaseLostError):
        faults.fault(FaultPoint.HEARTBEAT_LOSS)
    for point in faults.RESULT_POINTS:
        with pytest.raises(ValueError):
            faults.fault(point)


def test_the_p4_runner_answers_an_injected_timeout_with_its_own_error():
    """faults is a leaf: the runner asks whether the point fires and raises P4TimeoutError
    before starting any process."""
    faults.load(_env("p4_timeout=1"))
    runner = P4Runner("/bin/false", timeout_seconds=5)  # would fail differently if it ran
    with pytest.raises(P4TimeoutError) as timeout:
        runner.run_text(["user", "-o", "alice"])
    assert timeout.value.error_class == ErrorClass.NETWORK_TIMEOUT and timeout.value.retryable


def test_injected_provider_answers_look_like_real_smtp_replies():
    from p4review.models.outbox import SendOutcome
    from p4review.notify.email.smtp import SmtpSender, SmtpSettings

    # Port 1 on loopback: a real connection would fail with connect_failed, so these never connect.
    sender = SmtpSender(SmtpSettings(host="127.0.0.1", port=1, tls_mode="none", from_address="a@example.test"))
    faults.load(_env("provider_transient=1"))
    transient = sender.send(sender="a@example.test", recipient="b@example.test", message=b"x")
    assert (transient.outcome, transient.error_code) == (SendOutcome.RETRYABLE, "data_refused_451")
    faults.load(_env("provider_permanent=1"))
    permanent = sender.send(sender="a@example.test", recipient="b@example.test", message=b"x")
    assert (permanent.outcome, permanent.error_code) == (SendOutcome.FAILED, "data_refused_550")


def test_infra_never_sets_p4review_faults():
    sources = [
        path
        for path in (REPO / "infra").rglob("*")
        if path.is_file()
        and "cdk.out" not in path.parts
        and path.suffix in {".py", ".json", ".yaml", ".yml", ".ts", ".txt", ".toml"}
    ]
    assert sources, "infra sources not found"
    offenders = [str(path) for path in sources if "P4REVIEW_FAULTS" in path.read_text(errors="replace")]
    assert offenders == []
    # Nor does the SAM/CloudFormation template kept at the repository root, if any.
    for template in list(REPO.glob("template*.y*ml")) + list(REPO.glob("*.template.json")):
        assert "P4REVIEW_FAULTS" not in template.read_text(errors="replace")
