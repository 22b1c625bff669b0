import pytest

from p4review.ingest.signing import SignatureProblem, sign, signed_headers, verify

BODY = b'{"idempotency_key":"k"}'


def _verify(secrets, timestamp, signature, *, now=1_700_000_000, path="/v1/reviews", method="POST", body=BODY):
    return verify(
        secrets=secrets,
        timestamp=timestamp,
        signature=signature,
        method=method,
        path=path,
        body=body,
        now=now,
        max_age_seconds=300,
    )


def test_current_secret_verifies():
    headers = signed_headers("current", 1_700_000_000, "POST", "/v1/reviews", BODY)
    assert _verify(["current", "previous"], headers["X-P4Review-Timestamp"], headers["X-P4Review-Signature"]) == 0


@pytest.mark.spec("SEC-22")
def test_previous_secret_still_verifies_during_rotation():
    signature = sign("previous", "1700000000", "POST", "/v1/reviews", BODY)
    assert _verify(["current", "previous"], "1700000000", signature) == 1  # the caller can be told


def test_unknown_secret_is_refused():
    signature = sign("attacker", "1700000000", "POST", "/v1/reviews", BODY)
    with pytest.raises(SignatureProblem) as problem:
        _verify(["current", "previous"], "1700000000", signature)
    assert problem.value.code == "signature_invalid"


def test_old_signature_is_refused_as_replay():
    signature = sign("current", "1700000000", "POST", "/v1/reviews", BODY)
    with pytest.raises(SignatureProblem) as problem:
        _verify(["current"], "1700000000", signature, now=1_700_000_000 + 301)
    assert problem.value.code == "signature_expired"
    assert problem.value.details == {"server_time": 1_700_000_301, "max_signature_age_seconds": 300}


def test_far_future_timestamp_is_refused():
    signature = sign("current", "1700001000", "POST", "/v1/reviews", BODY)
    with pytest.raises(SignatureProblem) as problem:
        _verify(["current"], "1700001000", signature)
    assert problem.value.details == {"server_time": 1_700_000_000, "max_signature_age_seconds": 300}


def test_a_wrong_signature_reveals_nothing():
    with pytest.raises(SignatureProblem) as problem:
        _verify(["current"], "1700000000", sign("attacker", "1700000000", "POST", "/v1/reviews", BODY))
    assert problem.value.details is None


@pytest.mark.parametrize("change", ["body", "path", "method"])
def test_signature_binds_body_path_and_method(change):
    signature = sign("current", "1700000000", "POST", "/v1/reviews", BODY)
    kwargs = (
        {"body": BODY + b" "}
        if change == "body"
        else {"path": "/v1/reviews/x"}
        if change == "path"
        else {"method": "GET"}
    )
    with pytest.raises(SignatureProblem):
        _verify(["current"], "1700000000", signature, **kwargs)


@pytest.mark.parametrize(("timestamp", "signature"), [(None, "v1=00"), ("1700000000", None), ("", "")])
def test_missing_headers_are_refused(timestamp, signature):
    with pytest.raises(SignatureProblem) as problem:
        _verify(["current"], timestamp, signature)
    assert problem.value.code == "signature_missing"


@pytest.mark.spec("CH-4")
@pytest.mark.parametrize(
    "timestamp", ["17e8", "17\u00b2", "\u00b9\u00b2\u00b3", "\u0661\u0667\u0660\u0660", " 1700000000", "+1700000000"]
)
def test_a_timestamp_that_is_not_ascii_digits_is_signature_invalid(timestamp):
    """Superscripts and other Unicode digits pass str.isdigit() but not int(): they must be a
    401 signature_invalid, not a 500."""
    with pytest.raises(SignatureProblem) as problem:
        _verify(["current"], timestamp, "v1=00")
    assert problem.value.code == "signature_invalid"
