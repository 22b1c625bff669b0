import pytest

from p4review.notify.delivery import delivery_token, message_id_for, normalize_recipient


@pytest.mark.spec("NOT-10", "IDEM-7")
def test_token_is_deterministic_per_tuple():
    assert delivery_token(1, "a@x.test", 1) == delivery_token(1, "a@x.test", 1)
    assert (
        len(
            {
                delivery_token(1, "a@x.test", 1),
                delivery_token(1, "a@x.test", 2),
                delivery_token(2, "a@x.test", 1),
                delivery_token(1, "b@x.test", 1),
            }
        )
        == 4
    )


def test_message_id_header_is_not_folded():
    message_id = message_id_for(
        delivery_token(2_147_483_647, "someone@example.test", 999_999),
        "p4review-notifications@mail.p4review.example.com",
    )
    assert len("Message-ID: " + message_id) <= 78
    assert message_id.startswith("<") and message_id.endswith("@mail.p4review.example.com>")


def test_recipients_are_normalized():
    assert normalize_recipient("Dev@Example.test ") == "dev@example.test"
    assert normalize_recipient("not an address") is None and normalize_recipient(None) is None
    # Syntactically an address; notify/recipients.py flags Perforce's `user@client` default as unverified.
    assert normalize_recipient("user@client") == "user@client"
    assert normalize_recipient("a@b\n.test") is None
