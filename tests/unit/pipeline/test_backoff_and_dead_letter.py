import random

import pytest

from p4review.errors import AuthError, ErrorClass
from p4review.models.job import StageName
from p4review.pipeline import dead_letter
from p4review.pipeline.backoff import backoff_delay


@pytest.mark.spec("ERR-11", "ERR-12")
def test_full_jitter_stays_under_the_exponential_ceiling():
    rng = random.Random(7)
    for attempt, ceiling in [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (20, 60)]:
        delays = [backoff_delay(attempt, rng=rng) for _ in range(200)]
        assert all(0 <= delay <= ceiling for delay in delays)
        assert max(delays) > ceiling * 0.5  # jitter spans the range, not a constant


@pytest.mark.spec("ERR-3", "ERR-13")
def test_retry_after_wins_when_larger_and_is_capped():
    assert backoff_delay(1, retry_after=30, rng=random.Random(1)) == 30
    assert backoff_delay(1, retry_after=10_000, rng=random.Random(1)) == 300


@pytest.mark.spec("SEC-18", "ERR-18", "ERR-19", "ERR-20")
def test_envelope_carries_ids_and_classes_but_no_secrets():
    try:
        raise AuthError("password=hunter2 refused for alice@example.com token: abc123")
    except AuthError as exc:
        caught = exc
    envelope = dead_letter.envelope(
        job=None,
        job_id="j-1",
        stage=StageName.FETCH,
        error_class=ErrorClass.AUTH_DENIED,
        exc=caught,
        request_id="r-1",
        message_id="m-1",
    )
    text = repr(envelope)
    assert envelope["error_class"] == "AUTH_DENIED"
    assert envelope["stage"] == "fetch"
    assert {"first_failure_at", "last_failure_at", "last_stack", "sanitized_context"} <= envelope.keys()
    assert "hunter2" not in text and "alice@example.com" not in text and "abc123" not in text
    assert "AuthError" in envelope["last_stack"]


def test_default_lease_outlives_each_stage_function_timeout():
    from p4review.pipeline.stage_runner import lease_for
    from p4review.resources import QUEUES

    for queue in QUEUES:
        assert lease_for(queue.stage) > queue.function_timeout_seconds
        assert lease_for(queue.stage) < queue.visibility_timeout_seconds
        assert lease_for(queue.stage, configured=15) == 15


def test_aws_setup_failures_become_domain_errors():
    import pytest
    from botocore.exceptions import NoCredentialsError, NoRegionError

    from p4review.errors import AuthError, ConfigError
    from p4review.stores.aws_errors import translate

    with pytest.raises(AuthError):
        translate(NoCredentialsError(), "read secret")
    with pytest.raises(ConfigError):
        translate(NoRegionError(), "create sqs client")


@pytest.mark.spec("ERR-3")
def test_aws_throttling_passes_on_retry_after():
    """Spec ERR-3: a throttled AWS call's Retry-After reaches the runtime's backoff (capped)."""
    import pytest
    from botocore.exceptions import ClientError

    from p4review.errors import MAX_RETRY_AFTER_SECONDS, ErrorClass, StorageError
    from p4review.stores.aws_errors import translate

    def throttled(retry_after: str | None) -> StorageError:
        headers = {} if retry_after is None else {"retry-after": retry_after}
        error = ClientError(
            {
                "Error": {"Code": "ThrottlingException", "Message": "slow down"},
                "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": headers},
            },
            "PutItem",
        )
        with pytest.raises(StorageError) as raised:
            translate(error, "write job")
        return raised.value

    assert throttled("7").retry_after == 7.0 and throttled("7").error_class == ErrorClass.RATE_LIMITED
    assert throttled("86400").retry_after == MAX_RETRY_AFTER_SECONDS
    assert throttled(None).retry_after is None
    assert throttled("Wed, 21 Oct 2015 07:28:00 GMT").retry_after is None  # dates are ignored
