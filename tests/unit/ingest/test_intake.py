import pytest

from p4review.ingest.http_answers import INTAKE_STATUS, intake_headers
from p4review.ingest.intake import IntakeOutcome, Replay, decide, new_job
from p4review.models.api import CreateReviewRequest
from p4review.models.job import JobStatus, job_id_for
from p4review.ports import CreateConflict, CreateOutcome

NOW = "2026-11-21T10:00:00.000000Z"
LATER = "2026-11-21T10:05:00.000000Z"


def _request(**overrides):
    fields = {"idempotency_key": "p4-submitted-100-v1", "changelist_id": 100, "review_version": 1, "kind": "submitted"}
    fields.update(overrides)
    return CreateReviewRequest.model_validate(fields)


def test_new_job_is_201_and_enqueues_fetch():
    request = _request()
    job = new_job(request, NOW, "ingest")
    answer = decide(request, CreateOutcome(created=True, job=job), NOW)
    assert answer.outcome is IntakeOutcome.CREATED
    assert answer.enqueue_fetch
    assert answer.error_code is None
    assert job.status == JobStatus.QUEUED
    assert job.audit[0].event == "job_created"


@pytest.mark.spec("NOT-2")
def test_job_id_is_derived_from_the_idempotency_key():
    assert job_id_for("a") == job_id_for("a") != job_id_for("b")


@pytest.mark.spec("IDEM-2")
def test_repeated_key_with_same_body_is_a_replay():
    request = _request()
    existing = new_job(request, NOW, "ingest")
    answer = decide(
        request, CreateOutcome(created=False, conflict=CreateConflict.IDEMPOTENCY_KEY, existing_job=existing), NOW
    )
    assert answer.outcome is IntakeOutcome.REPLAYED
    assert answer.job.job_id == existing.job_id
    assert answer.replay is Replay.IDEMPOTENCY_KEY
    assert not answer.enqueue_fetch  # fresh job: its fetch message is in flight


def test_replay_of_a_stranded_job_re_enqueues_fetch():
    request = _request()
    existing = new_job(request, NOW, "ingest")
    answer = decide(
        request, CreateOutcome(created=False, conflict=CreateConflict.IDEMPOTENCY_KEY, existing_job=existing), LATER
    )
    assert answer.enqueue_fetch


def test_repeated_key_with_different_body_is_422_naming_the_fields():
    existing = new_job(_request(), NOW, "ingest")
    answer = decide(
        _request(changelist_id=101),
        CreateOutcome(created=False, conflict=CreateConflict.IDEMPOTENCY_KEY, existing_job=existing),
        NOW,
    )
    assert answer.outcome is IntakeOutcome.KEY_REUSED
    assert answer.error_code == "idempotency_key_reused"
    assert answer.details["differing_fields"] == ["changelist_id"]


@pytest.mark.spec("NOT-4")
def test_same_version_after_success_returns_prior_result():
    existing = new_job(_request(), NOW, "ingest").model_copy(update={"status": JobStatus.SUCCEEDED})
    answer = decide(
        _request(idempotency_key="other-key"),
        CreateOutcome(created=False, conflict=CreateConflict.CHANGELIST_VERSION, existing_job=existing),
        NOW,
    )
    assert answer.outcome is IntakeOutcome.REPLAYED
    assert answer.job.status == JobStatus.SUCCEEDED
    assert answer.replay is Replay.SAME_VERSION
    assert not answer.enqueue_fetch


@pytest.mark.spec("NOT-5")
def test_higher_version_without_rerun_is_409():
    answer = decide(
        _request(review_version=2),
        CreateOutcome(created=False, conflict=CreateConflict.CHANGELIST_HEAD, head_latest_version=1),
        NOW,
    )
    assert answer.error_code == "rerun_not_requested"
    assert answer.details["latest_version"] == 1


@pytest.mark.spec("NOT-5")
def test_lower_version_rerun_is_stale_409():
    answer = decide(
        _request(review_version=2, rerun=True),
        CreateOutcome(created=False, conflict=CreateConflict.CHANGELIST_HEAD, head_latest_version=3),
        NOW,
    )
    assert answer.error_code == "stale_review_version"


def test_a_fingerprint_without_follows_shelf_is_what_it_always_was():
    """Jobs stored before follows_shelf existed must still recognise their replays."""
    import hashlib

    from p4review.ingest.intake import fingerprint_of

    assert fingerprint_of(_request()) == hashlib.sha256(b"100|1|submitted|0").hexdigest()
    follows = _request(review_version=3, rerun=True, follows_shelf={"changelist_id": 90, "review_version": 2})
    assert fingerprint_of(follows) != fingerprint_of(_request(review_version=3, rerun=True))
    job = new_job(follows, NOW, "ingest")
    assert (job.follows_shelf.changelist_id, job.follows_shelf.review_version) == (90, 2)
    assert job.audit[0].detail == "versioned rerun; follows shelf v2 of CL 90"


@pytest.mark.spec("CH-3")
def test_api_maps_every_intake_outcome_to_one_status_and_its_headers():
    """HTTP lives in ingest/http_answers.py only: logic answers with domain outcomes."""
    assert set(INTAKE_STATUS) == set(IntakeOutcome)
    request = _request()
    job = new_job(request, NOW, "ingest")
    created = decide(request, CreateOutcome(created=True, job=job), NOW)
    assert (INTAKE_STATUS[created.outcome], intake_headers(created)) == (201, {"Location": f"/v1/reviews/{job.job_id}"})
    replayed = decide(
        request, CreateOutcome(created=False, conflict=CreateConflict.IDEMPOTENCY_KEY, existing_job=job), NOW
    )
    assert (INTAKE_STATUS[replayed.outcome], intake_headers(replayed)) == (
        200,
        {"X-P4Review-Replay": "idempotency-key"},
    )
    stale = decide(
        _request(review_version=2, rerun=True),
        CreateOutcome(created=False, conflict=CreateConflict.CHANGELIST_HEAD, head_latest_version=3),
        NOW,
    )
    assert (INTAKE_STATUS[stale.outcome], intake_headers(stale)) == (409, {})
    assert INTAKE_STATUS[IntakeOutcome.KEY_REUSED] == 422
    assert INTAKE_STATUS[IntakeOutcome.STORAGE_INCONSISTENT] == 503


@pytest.mark.spec("SEC-23")
def test_the_latest_version_whose_records_expired_is_409_review_records_expired():
    """SEC-23: the head outlives the job and its claim, so their absence means they expired."""
    request = _request(review_version=3, rerun=True)
    for outcome in (
        CreateOutcome(created=False, conflict=CreateConflict.CHANGELIST_HEAD, head_latest_version=3),
        CreateOutcome(created=False, conflict=CreateConflict.RECORDS_EXPIRED, head_latest_version=3),
    ):
        answer = decide(request, outcome, NOW)
        assert answer.outcome is IntakeOutcome.RECORDS_EXPIRED
        assert answer.error_code == "review_records_expired"
        assert answer.details == {"changelist_id": 100, "requested_version": 3, "latest_version": 3}
        assert not answer.enqueue_fetch
        assert INTAKE_STATUS[answer.outcome] == 409
    # Below the latest: still the stale answer (a newer version was accepted).
    below = CreateOutcome(created=False, conflict=CreateConflict.CHANGELIST_HEAD, head_latest_version=4)
    assert decide(request, below, NOW).outcome is IntakeOutcome.STALE_VERSION
