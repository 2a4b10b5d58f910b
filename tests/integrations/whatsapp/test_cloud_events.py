"""The Cloud API normaliser: every documented message type, statuses, echoes, odd shapes."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox.conversations.events import InboundEvent, StatusEvent, event_from_json
from integrations.whatsapp.cloud_events import (
    MalformedWebhook,
    normalise,
    phone_number_ids,
    signature_is_valid,
)
from tests.emulators.graph_api import (
    contact,
    echo_message,
    envelope,
    sign,
    status_update,
    text_message,
)

PNID = "106540352242922"
ROUTES = {PNID: 7}


def _value(messages: list[dict[str, Any]], wa_id: str = "16505551234") -> dict[str, Any]:
    return envelope(PNID, messages=messages, contacts=[contact(wa_id, "Sheena Nelson")])


def _one(body: dict[str, Any]) -> InboundEvent:
    result = normalise(body, ROUTES)
    assert len(result.events) == 1, result
    event = result.events[0]
    assert isinstance(event, InboundEvent)
    return event


DOCUMENTED = {
    "text": ({"type": "text", "text": {"body": "Does it come in another color?"}}, "text", "Does it come in another color?"),
    "voice": ({"type": "audio", "audio": {"mime_type": "audio/ogg; codecs=opus", "sha256": "wvqX=", "id": "1908647269898587", "voice": True}}, "voice", ""),
    "audio file": ({"type": "audio", "audio": {"mime_type": "audio/mpeg", "sha256": "abc=", "id": "190", "voice": False}}, "audio", ""),
    "image": ({"type": "image", "image": {"caption": "Taj Mahal", "mime_type": "image/jpeg", "sha256": "SfIn=", "id": "1003383421387256"}}, "image", "Taj Mahal"),
    "document": ({"type": "document", "document": {"caption": "my receipt", "filename": "receipt.pdf", "mime_type": "application/pdf", "sha256": "V5OP=", "id": "622684793477189"}}, "document", "my receipt"),
    "video": ({"type": "video", "video": {"mime_type": "video/mp4", "sha256": "x=", "id": "55"}}, "video", ""),
    "sticker": ({"type": "sticker", "sticker": {"mime_type": "image/webp", "sha256": "x=", "id": "56", "animated": False}}, "sticker", ""),
    "location": ({"type": "location", "location": {"latitude": 43.238, "longitude": 76.945, "name": "Office", "address": "Abay 10, Almaty"}}, "location", "Office, Abay 10, Almaty"),
    "contacts": ({"type": "contacts", "contacts": [{"name": {"formatted_name": "Chandler Bing", "first_name": "Chandler"}, "phones": [{"phone": "+1 555-555-5555", "type": "CELL"}]}]}, "contacts", "Chandler Bing +1 555-555-5555"),
    "button reply": ({"type": "interactive", "interactive": {"type": "button_reply", "button_reply": {"id": "yes", "title": "Yes, order"}}}, "interactive", "Yes, order"),
    "list reply": ({"type": "interactive", "interactive": {"type": "list_reply", "list_reply": {"id": "oak", "title": "Oak table", "description": "180 cm"}}}, "interactive", "Oak table — 180 cm"),
    "template quick reply": ({"type": "button", "button": {"payload": "callback", "text": "Call me"}}, "interactive", "Call me"),
    "reaction": ({"type": "reaction", "reaction": {"message_id": "wamid.abc", "emoji": "👍"}}, "reaction", "👍"),
    "unreaction": ({"type": "reaction", "reaction": {"message_id": "wamid.abc", "emoji": ""}}, "reaction", ""),
    "unsupported": ({"type": "unsupported", "errors": [{"code": 131051, "title": "Message type unknown"}]}, "unsupported", ""),
    "order": ({"type": "order", "order": {"catalog_id": "1", "text": "", "product_items": [{"product_retailer_id": "CHAIR", "quantity": 2, "item_price": 30, "currency": "USD"}]}}, "interactive", "Order:\n2 × CHAIR @ 30 USD"),
    "system": ({"type": "system", "system": {"body": "User identity changed", "type": "customer_identity_changed"}}, "unsupported", "User identity changed"),
    "future type": ({"type": "hologram", "hologram": {"x": 1}}, "unsupported", ""),
}  # fmt: skip


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_documented_message_type_becomes_an_event(name: str) -> None:
    content, kind, text = DOCUMENTED[name]
    message = {"from": "16505551234", "id": f"wamid.{name}", "timestamp": "1749416383", **content}

    event = _one(_value([message]))

    assert (event.kind, event.text) == (kind, text)
    assert event.channel_id == 7
    assert event.chat_key == "16505551234"
    assert event.customer_name == "Sheena Nelson"
    assert event.customer_phone == "16505551234"
    assert event.provider_ts == 1749416383
    assert event.from_me is False
    assert event_from_json(event.to_json()) == event  # survives the queue


def test_voice_note_keeps_its_media_reference_and_checksum() -> None:
    content, _, _ = DOCUMENTED["voice"]
    event = _one(_value([{"from": "16505551234", "id": "wamid.v", "timestamp": "1", **content}]))

    assert event.media is not None
    assert (event.media.ref, event.media.sha256, event.media.voice) == (
        "1908647269898587",
        "wvqX=",
        True,
    )
    assert event.media.mime_type == "audio/ogg; codecs=opus"


def test_customer_without_wa_id_is_keyed_on_the_business_scoped_user_id() -> None:
    body = envelope(
        PNID,
        contacts=[{"profile": {"name": "Nurlan"}, "wa_id": "", "user_id": "KZ.8812"}],
        messages=[
            {"from": "", "id": "wamid.u", "timestamp": "1", "type": "text", "text": {"body": "hi"}}
        ],
    )

    event = _one(body)

    assert event.chat_key == "KZ.8812"
    assert event.customer_phone == ""
    assert event.customer_bsuid == "KZ.8812"


def test_the_bsuid_and_username_come_with_the_phone_and_without_it() -> None:
    # pywa's fixture shape (`callback_button.json`): phone, `from_user_id`, contacts' user_id.
    with_phone = _one(envelope(
        PNID, contacts=[contact("972987654321", "Test Name", "US.13491208655302741918")],
        messages=[{**text_message("972987654321", "hi"), "from_user_id": "US.13491208655302741918"}],
    ))  # fmt: skip
    assert (with_phone.chat_key, with_phone.customer_phone, with_phone.customer_bsuid) == (
        "972987654321", "972987654321", "US.13491208655302741918",
    )  # fmt: skip
    # A username customer: no `from`, no `wa_id`, only the BSUID, and `profile.username`.
    without = _one(envelope(
        PNID, contacts=[contact("", "Test Name", "US.1349", username="test.name")],
        messages=[text_message("", "hi", user_id="US.1349")],
    ))  # fmt: skip
    assert (without.chat_key, without.customer_phone, without.customer_bsuid) == (
        "US.1349", "", "US.1349",
    )  # fmt: skip
    assert without.customer_username == "test.name"
    assert event_from_json(without.to_json()) == without


def test_an_echo_to_a_customer_without_a_phone_is_keyed_on_their_bsuid() -> None:
    echo = {**echo_message("15550783881", "", "On its way"), "to_user_id": "US.77"}
    del echo["to"]
    event = _one(envelope(PNID, echoes=[echo], contacts=[contact("", "Aigerim", "US.77")]))
    assert (event.from_me, event.chat_key, event.customer_bsuid) == (True, "US.77", "US.77")


def test_a_status_with_only_the_bsuid_names_it_as_its_recipient() -> None:
    update = status_update("wamid.9", "read", "", user_id="US.13491208655302741918")
    (event,) = normalise(envelope(PNID, statuses=[update]), ROUTES).events
    assert isinstance(event, StatusEvent)
    assert (event.provider_message_id, event.recipient) == ("wamid.9", "US.13491208655302741918")


def test_several_entries_changes_and_messages_are_all_kept() -> None:
    first = _value([text_message("1", "a"), text_message("1", "b")], wa_id="1")
    second = _value([text_message("2", "c")], wa_id="2")
    body = {"object": "whatsapp_business_account", "entry": first["entry"] + second["entry"]}
    body["entry"][0]["changes"].append(
        envelope(PNID, statuses=[status_update("wamid.s", "read", "1")])["entry"][0]["changes"][0]
    )

    result = normalise(body, ROUTES)

    assert [getattr(e, "text", None) for e in result.events] == ["a", "b", None, "c"]


def test_statuses_including_failures_with_their_error_code() -> None:
    body = envelope(PNID, statuses=[
        status_update("wamid.1", "sent", "16505551234"),
        status_update("wamid.1", "read", "16505551234"),
        status_update("wamid.2", "played", "16505551234"),
        status_update("wamid.3", "failed", "16505551234", error_code=131047),
    ])  # fmt: skip

    events = normalise(body, ROUTES).events

    assert all(isinstance(e, StatusEvent) for e in events)
    assert [(e.provider_message_id, e.status) for e in events] == [  # type: ignore[union-attr]
        ("wamid.1", "sent"), ("wamid.1", "read"), ("wamid.2", "played"), ("wamid.3", "failed"),
    ]  # fmt: skip
    # Meta's title with its details (`error_data.details`), kept for support.
    assert (events[3].error_code, events[3].error_title) == (  # type: ignore[union-attr]
        "131047",
        "Re-engagement message: Message failed to send because more than 24 hours have passed "
        "since the customer last replied to this number.",
    )


def test_business_app_echo_is_a_from_me_event_keyed_on_the_customer() -> None:
    body = envelope(PNID, echoes=[echo_message("15550783881", "16505551234", "Here's the info!")])

    event = _one(body)

    assert event.from_me is True
    assert event.chat_key == "16505551234"
    assert event.text == "Here's the info!"


def test_edits_and_revokes_point_at_the_original_message() -> None:
    edit = {"from": "1", "id": "wamid.e", "timestamp": "1", "type": "edit",
            "edit": {"original_message_id": "wamid.orig", "message": {"type": "text", "text": {"body": "fixed"}}}}  # fmt: skip
    revoke = {
        "from": "1",
        "id": "wamid.r",
        "timestamp": "1",
        "type": "revoke",
        "revoke": {"original_message_id": "wamid.orig"},
    }

    edited, revoked = normalise(_value([edit, revoke], wa_id="1"), ROUTES).events

    assert (edited.text, edited.extra["edit_of"]) == ("fixed", "wamid.orig")  # type: ignore[union-attr]
    assert revoked.extra["revoke_of"] == "wamid.orig"  # type: ignore[union-attr]


def test_fields_we_do_not_use_are_acknowledged_not_rejected() -> None:
    body = {"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [
        {"field": "account_update", "value": {"event": "ACCOUNT_DELETED"}},
        {"field": "message_template_status_update", "value": {"event": "APPROVED"}},
    ]}]}  # fmt: skip

    result = normalise(body, ROUTES)

    assert result.events == []
    assert len(result.skipped) == 2


def test_numbers_of_no_channel_are_reported() -> None:
    body = envelope("999", messages=[text_message("1", "hi")], contacts=[contact("1")])

    result = normalise(body, ROUTES)

    assert result.events == []
    assert result.unknown_numbers == {"999"}
    assert phone_number_ids(body) == {"999"}


@pytest.mark.parametrize(
    "body",
    [[], "text", {"object": "whatsapp_business_account", "entry": {"id": 1}},
     {"object": "whatsapp_business_account", "entry": [{"changes": "x"}]},
     {"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages", "value": {"metadata": {"phone_number_id": PNID}, "messages": {"id": 1}}}]}]}],
)  # fmt: skip
def test_wrong_types_in_the_envelope_are_malformed(body: Any) -> None:
    with pytest.raises(MalformedWebhook):
        normalise(body, ROUTES)


def test_signature_is_hmac_sha256_of_the_raw_body() -> None:
    body = b'{"object":"whatsapp_business_account"}'

    assert signature_is_valid("secret", body, sign("secret", body))
    assert not signature_is_valid("secret", body, sign("other", body))
    assert not signature_is_valid("secret", body + b" ", sign("secret", body))
    assert not signature_is_valid("secret", body, None)
    assert not signature_is_valid("", body, sign("", body))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=30,
)
message_like = st.fixed_dictionaries(
    {"from": st.one_of(st.text(max_size=15), st.integers()), "id": st.one_of(st.text(max_size=30), st.none()),
     "timestamp": json_values, "type": st.sampled_from(["text", "audio", "image", "interactive", "reaction", "edit", "x"])},
    optional={"text": json_values, "audio": json_values, "image": json_values, "interactive": json_values,
              "reaction": json_values, "edit": json_values, "context": json_values},
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(message_like, max_size=5), contacts=json_values)
def test_normaliser_never_crashes_and_every_event_is_complete(
    messages: list[Any], contacts: Any
) -> None:
    body = {"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [
        {"field": "messages", "value": {"metadata": {"phone_number_id": PNID}, "messages": messages,
                                         "contacts": contacts if isinstance(contacts, list) else []}}]}]}  # fmt: skip
    try:
        result = normalise(body, ROUTES)
    except MalformedWebhook:
        return
    for event in result.events:
        assert isinstance(event, InboundEvent)
        assert event.provider_message_id
        assert event.chat_key
        assert isinstance(event.text, str)
        assert event_from_json(event.to_json()) == event
        json.dumps(event.extra)


@settings(max_examples=300, deadline=None)
@given(body=json_values)
def test_any_json_is_either_normalised_or_rejected_as_malformed(body: Any) -> None:
    with contextlib.suppress(MalformedWebhook):
        normalise(body, ROUTES)


@pytest.mark.parametrize("timestamp", ["1e999", float("inf"), "Infinity", "NaN", "abc"])
def test_impossible_timestamps_are_unknown_not_a_crash(timestamp: Any) -> None:
    """JSON parsers accept Infinity and 1e999; int(inf) raised OverflowError → HTTP 500."""
    message = text_message("77011234567", "hi")
    message["timestamp"] = timestamp
    body = json.loads(json.dumps(envelope(PNID, messages=[message])))

    (event,) = normalise(body, ROUTES).events

    assert event.provider_ts == 0


@pytest.mark.parametrize("timestamp", [float("inf"), float("-inf"), float("nan")])
def test_bridge_impossible_timestamps_are_unknown_not_a_crash(timestamp: float) -> None:
    from integrations.whatsapp import bridge

    raw = {"id": "B1", "chat_id": "77011234567@s.whatsapp.net", "kind": "text", "text": "hi",
           "timestamp": timestamp}  # fmt: skip

    (event,), _skipped = bridge.normalise(raw, 7)

    assert event.provider_ts == 0
