"""The typed models of Cloud API and bridge bodies (`integrations.whatsapp.payloads`).

`cloud_api_bodies/` holds 61 real-shaped webhook bodies (from pywa's test data, MIT, see its
LICENSE): every one must parse and normalise without a skipped message. Wrong types in the
structure are a 400; a wrong-typed message inside a good batch is skipped, its neighbours kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from inbox.conversations import ingest
from inbox.conversations.events import InboundEvent, StatusEvent
from inbox.conversations.models import Channel
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from integrations.whatsapp import bridge, payloads
from integrations.whatsapp.cloud_events import (
    STATUSES,
    MalformedWebhook,
    normalise,
    phone_number_ids,
)
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import contact, envelope, sign, text_message

BODIES = Path(__file__).parent / "cloud_api_bodies"
PNID = "106540352242922"
SECRET = "test-app-secret"


def _cases() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{path.stem}/{name}", body)
        for path in sorted(BODIES.glob("*.json"))
        for name, body in json.loads(path.read_text()).items()
    ]


CASES = _cases()


def test_the_fixture_set_is_complete() -> None:
    assert len(CASES) == 61


@pytest.mark.parametrize(("name", "body"), CASES, ids=[name for name, _ in CASES])
def test_every_real_shaped_body_parses_and_each_item_becomes_one_event(
    name: str, body: dict[str, Any]
) -> None:
    items = 0
    for change in payloads.Envelope.model_validate(body).changes():
        if change.field not in ("messages", "smb_message_echoes"):
            continue
        value = payloads.Value.model_validate(change.value)
        assert value.metadata.phone_number_id
        for raw in [*value.messages, *value.message_echoes]:
            message = payloads.Message.model_validate(raw)
            assert message.id
            assert message.type
            assert message.timestamp > 0
        for raw in value.statuses:
            status = payloads.Status.model_validate(raw)
            assert status.id
            assert status.status in STATUSES
        items += len(value.messages) + len(value.message_echoes) + len(value.statuses)

    result = normalise(body, {number: 1 for number in phone_number_ids(body)})

    assert len(result.events) == items
    assert all(s.startswith("field ") for s in result.skipped), result.skipped
    assert not result.unknown_numbers


def test_a_wrong_typed_message_is_skipped_and_its_neighbours_kept() -> None:
    good = text_message("77011234567", "first", wamid="wamid.good1")
    also_good = text_message("77011234567", "second", wamid="wamid.good2")
    no_id = {**text_message("77011234567", "x", wamid="wamid.x"), "id": {"nested": 1}}
    body = envelope(PNID, messages=[good, "not an object", no_id, 42, also_good],
                    contacts=[contact("77011234567")])  # fmt: skip

    result = normalise(body, {PNID: 1})

    assert [e.provider_message_id for e in result.events] == ["wamid.good1", "wamid.good2"]
    assert [e.text for e in result.events if isinstance(e, InboundEvent)] == ["first", "second"]
    assert sorted(result.skipped) == [
        "message that is not an object",
        "message that is not an object",
        "message without id or sender",
    ]


def test_a_bad_status_is_skipped_and_the_good_one_kept() -> None:
    statuses = [
        {"id": "wamid.s1", "status": "delivered", "timestamp": "1749416400",
         "recipient_id": "77011234567"},
        {"id": "wamid.s2", "status": ["read"]},
        "delivered",
    ]  # fmt: skip
    body = envelope(PNID, statuses=statuses)

    result = normalise(body, {PNID: 1})

    (status,) = result.events
    assert isinstance(status, StatusEvent)
    assert (status.provider_message_id, status.status, status.provider_ts) == (
        "wamid.s1",
        "delivered",
        1749416400,
    )
    assert len(result.skipped) == 2


def test_scalars_of_the_wrong_type_read_as_missing_numbers_as_digits() -> None:
    message = payloads.Message.model_validate(
        {"id": 12345, "from": ["77011234567"], "timestamp": {"t": 1}, "type": None,
         "context": "reply", "referral": [1], "unknown_future_field": {"a": 1}}
    )  # fmt: skip

    assert (message.id, message.from_, message.timestamp, message.type) == ("12345", "", 0, "")
    assert message.context is None
    assert message.referral is None
    assert payloads.Message.model_validate({"timestamp": "1e999"}).timestamp == 0
    assert payloads.Contact.model_validate({"wa_id": 7, "profile": "x"}).profile.name == ""


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"object": "whatsapp_business_account", "entry": {"id": 1}}, "entry must be a list"),
        ({"object": "whatsapp_business_account", "entry": ["x"]}, "entry.0 must be an object"),
        ({"object": "whatsapp_business_account", "entry": [{"changes": [1]}]},
         "entry.0.changes.0 must be an object"),
        ({"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages",
          "value": {"metadata": {"phone_number_id": PNID}, "statuses": {"id": "s"}}}]}]},
         "statuses must be a list"),
    ],
)  # fmt: skip
def test_wrong_structure_is_malformed_with_a_reason_that_says_where(
    body: dict[str, Any], reason: str
) -> None:
    with pytest.raises(MalformedWebhook, match=reason):
        normalise(body, {PNID: 1})


def test_bridge_events_are_parsed_one_by_one() -> None:
    body = {"events": [
        {"id": "B1", "chat_id": "77011234567@s.whatsapp.net", "text": "hi", "timestamp": 17},
        {"id": ["B2"], "chat_id": "77011234567@s.whatsapp.net", "text": "lost"},
        "not an event",
        {"id": "B3", "chat_id": "77011234567@s.whatsapp.net", "text": {"x": 1}, "from_me": "yes"},
    ]}  # fmt: skip

    events, skipped = bridge.normalise(body, 7)

    assert [(e.provider_message_id, e.text, e.from_me, e.provider_ts) for e in events] == [
        ("B1", "hi", False, 17),
        ("B3", "", False, 0),
    ]
    assert skipped == ["event without id or chat_id", "event that is not an object"]
    with pytest.raises(MalformedWebhook, match="events must be a list"):
        bridge.normalise({"events": {"id": "B1"}}, 7)


@pytest.fixture
def cloud_channel(settings: Any) -> Channel:
    settings.WHATSAPP_APP_SECRET = SECRET
    routes.clear()
    return factories.channel(kind=Channel.Kind.CLOUD_API, phone_number_id=PNID)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_signed_batch_with_one_bad_message_is_200_and_queues_the_good_ones(
    cloud_channel: Channel,
) -> None:
    messages = [
        text_message("77011234567", "first", wamid="wamid.ok1"),
        {"id": None, "from": {"wa_id": 1}, "type": "text", "text": "bad"},
        text_message("77011234567", "second", wamid="wamid.ok2"),
    ]
    raw = json.dumps(envelope(PNID, messages=messages, contacts=[contact("77011234567")]))

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url="http://testserver"
    ) as client:
        answer = await client.post(
            "/webhooks/whatsapp/",
            content=raw.encode(),
            headers={"X-Hub-Signature-256": sign(SECRET, raw.encode())},
        )

    assert answer.status_code == 200
    queued = [json.loads(fields[b"e"]) for _id, fields in get_redis().xrange(ingest.STREAM)]
    assert [q["provider_message_id"] for q in queued] == ["wamid.ok1", "wamid.ok2"]


def test_a_contact_card_with_phones_of_the_wrong_type_is_kept_without_phones() -> None:
    """`"phones": 5` used to raise TypeError in the normaliser: HTTP 500 for the whole body."""
    card = {"name": {"formatted_name": "Klaus Weber"}, "phones": 5}
    other = {"name": {"formatted_name": "Aigerim"}, "phones": [{"phone": "+7 701 123 4567"}, "x"]}
    message = {"from": "77011234567", "id": "wamid.c", "timestamp": "1", "type": "contacts",
               "contacts": [card, other]}  # fmt: skip

    (event,) = normalise(envelope(PNID, messages=[message]), {PNID: 1}).events

    assert isinstance(event, InboundEvent)
    assert (event.kind, event.text) == ("contacts", "Klaus Weber\nAigerim +7 701 123 4567")
