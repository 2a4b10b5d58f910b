"""Evolution API's webhook and transport, driven through the real ASGI application and the
Evolution emulator's HTTP API (the end-to-end flows with real workers: test_evolution_pipeline.py).
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.utils import timezone

from inbox.conversations import ingest
from inbox.conversations.models import Alert, Channel, Message
from inbox.conversations.transports import (
    OutgoingMedia,
    PermanentSendError,
    TransientSendError,
)
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from inbox.upkeep import alerts
from integrations.whatsapp.gateways import evolution
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.evolution import EvolutionEmulator

TOKEN = "B6D711FCDE4D4FD5936544120E713976"
JID = "77011234567@s.whatsapp.net"

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _fresh_routes() -> None:
    routes.clear()


@pytest.fixture
def emulator() -> Iterator[EvolutionEmulator]:
    with EvolutionEmulator(token=TOKEN) as emu:
        yield emu


@pytest.fixture
def channel(emulator: EvolutionEmulator) -> Channel:
    return factories.channel(kind=Channel.Kind.EVOLUTION, bridge_url=emulator.base_url,
                             bridge_token=TOKEN, gateway_instance=emulator.instance)  # fmt: skip


def _queued() -> list[dict[str, Any]]:
    return [json.loads(fields[b"e"]) for _id, fields in get_redis().xrange(ingest.STREAM)]


async def _apost(path: str, body: bytes) -> httpx.Response:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url="http://testserver"
    ) as client:
        return await client.post(path, content=body, headers={"Content-Type": "application/json"})


def _post(channel_id: int, body: Any) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return asyncio.run(_apost(f"/webhooks/evolution/{channel_id}/", raw))


# --- the webhook -------------------------------------------------------------------------------


@pytest.mark.parametrize("apikey", [None, "", "wrong", TOKEN + "x", TOKEN.lower()])
def test_a_body_without_the_instance_token_is_refused_and_nothing_stored(
    channel: Channel, emulator: EvolutionEmulator, apikey: str | None
) -> None:
    body = emulator.envelope("messages.upsert", emulator.message(JID, "hi"), apikey=apikey or "")
    if apikey is None:
        body["apikey"] = None  # Evolution without AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES

    answer = _post(channel.pk, body)

    assert answer.status_code == 403
    assert _queued() == []
    assert not Message.objects.exists()


def test_an_unknown_channel_and_a_wrong_token_get_the_same_answer(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    body = emulator.envelope("messages.upsert", emulator.message(JID, "hi"))
    bridge = factories.channel(kind=Channel.Kind.BRIDGE, bridge_token=TOKEN)

    unknown = _post(channel.pk + 1000, body)
    other_kind = _post(bridge.pk, body)  # a bridge channel's token is no Evolution token
    wrong = _post(channel.pk, {**body, "apikey": "guessed"})
    not_json = _post(channel.pk, b"{not json")

    answers = {(a.status_code, a.content) for a in (unknown, other_kind, wrong, not_json)}
    assert answers == {(403, b"invalid channel or apikey")}
    assert _queued() == []


def test_a_customer_text_with_a_quote_is_queued_as_the_bridge_would(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    data = emulator.message(JID, "And in walnut?", quoted="3EB0AAAAAAAAAAAAAAAAAA")
    data["message"] = {"extendedTextMessage": {"text": "And in walnut?"}}
    data["messageType"] = "extendedTextMessage"

    assert _post(channel.pk, emulator.envelope("messages.upsert", data)).status_code == 200

    (queued,) = _queued()
    assert queued["provider_message_id"] == data["key"]["id"]
    assert (queued["chat_key"], queued["customer_phone"]) == (JID, "77011234567")
    assert (queued["kind"], queued["text"], queued["from_me"]) == ("text", "And in walnut?", False)
    assert queued["extra"] == {"reply_to": "3EB0AAAAAAAAAAAAAAAAAA"}
    assert queued["customer_name"] == "Aigerim"


def test_duplicate_deliveries_are_queued_once(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    body = emulator.envelope("messages.upsert", emulator.message(JID, "hi"))

    assert [_post(channel.pk, body).status_code for _ in range(3)] == [200] * 3

    assert len(_queued()) == 1


def test_voice_note_is_a_voice_event_fetched_by_its_key_and_its_base64_is_not_queued(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    data = emulator.voice(JID, b"OggS-voice", webhook_base64=True)

    assert _post(channel.pk, emulator.envelope("messages.upsert", data)).status_code == 200

    (queued,) = _queued()
    assert queued["kind"] == "voice"
    assert queued["media"]["ref"] == data["key"]["id"]
    assert queued["media"]["mime_type"] == "audio/ogg"
    assert "T2dnUy" not in json.dumps(queued)  # base64 of "OggS"
    # The download uses the body's copy: the gateway is not asked again.
    emulator.media.clear()
    chat = factories.chat(channel, customer_key=JID)
    message = factories.customer_message(chat, "", kind="voice", media_ref=data["key"]["id"],
                                         media_mime="audio/ogg")  # fmt: skip
    blob = evolution.EvolutionTransport(channel).fetch_media(message)
    assert (blob.content, blob.mime_type) == (b"OggS-voice", "audio/ogg")


def test_groups_are_ignored_and_lid_chats_use_the_phone_jid_when_given(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    group = emulator.message("120363025246125486@g.us", "group chatter")
    lid = emulator.message("123456789012345@lid", "from a lid")
    lid["key"]["remoteJidAlt"] = JID
    lid_only = emulator.message("987654321098765@lid", "lid only")

    for data in (group, lid, lid_only):
        assert _post(channel.pk, emulator.envelope("messages.upsert", data)).status_code == 200

    keys = [(q["chat_key"], q["customer_phone"]) for q in _queued()]
    assert keys == [(JID, "77011234567"), ("987654321098765@lid", "")]


def test_our_own_send_report_is_skipped_and_a_phone_message_is_from_me(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    ours = emulator.message(JID, "Our reply", from_me=True)
    typed = emulator.message(JID, "I'll call you", from_me=True)

    assert _post(channel.pk, emulator.envelope("send.message", ours)).status_code == 200
    assert _post(channel.pk, emulator.envelope("messages.upsert", typed)).status_code == 200

    (queued,) = _queued()
    assert (queued["provider_message_id"], queued["from_me"]) == (typed["key"]["id"], True)


def test_statuses_are_mapped(channel: Channel, emulator: EvolutionEmulator) -> None:
    for status in ("SERVER_ACK", "DELIVERY_ACK", "READ", "ERROR", "PENDING"):
        assert emulator.inbox_url == ""
        body = emulator.envelope("messages.update", {"keyId": f"3EB0{status}", "remoteJid": JID,
                                                     "fromMe": True, "status": status})  # fmt: skip
        assert _post(channel.pk, body).status_code == 200

    assert [(q["provider_message_id"], q["status"]) for q in _queued()] == [
        ("3EB0SERVER_ACK", "sent"),
        ("3EB0DELIVERY_ACK", "delivered"),
        ("3EB0READ", "read"),
        ("3EB0ERROR", "failed"),
    ]


def test_history_is_marked_and_one_bad_message_keeps_its_neighbours(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    old = [emulator.message(JID, f"old {i}", timestamp=1_700_000_000 + i) for i in range(3)]
    body = emulator.envelope("messages.set", [old[0], "not a message", {"key": 5}, *old[1:]])

    assert _post(channel.pk, body).status_code == 200

    queued = _queued()
    assert [q["text"] for q in queued] == ["old 0", "old 1", "old 2"]
    assert all(q["extra"].get("history") is True for q in queued)


def test_connection_lost_raises_the_silent_number_alert_at_once_and_open_resolves_it(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    close = emulator.envelope("connection.update", {"instance": "shop", "state": "close",
                                                     "statusReason": 428})  # fmt: skip
    assert _post(channel.pk, close).status_code == 200

    alert = Alert.objects.get(kind=Alert.Kind.CHANNEL_SILENT, resolved_at__isnull=True)
    assert alert.subject == f"channel:{channel.pk}"
    # The minute check keeps it open (the channel had no quiet spell of its own).
    now = timezone.now()
    Channel.objects.filter(pk=channel.pk).update(last_event_at=now)
    alerts.check_silent_channels(now)
    assert Alert.objects.filter(pk=alert.pk, resolved_at__isnull=True).exists()

    opened = emulator.envelope("connection.update", {"instance": "shop", "state": "open"})
    assert _post(channel.pk, opened).status_code == 200
    assert not Alert.objects.filter(kind=Alert.Kind.CHANNEL_SILENT, resolved_at__isnull=True)


def _mutations(body: Any, rng: random.Random) -> Iterator[Any]:
    """Mutated copies of a real body: each leaf replaced by values of other types."""
    odd = [None, 0, -1, 2**70, 1.5, "", "x" * 300, [], {}, True, [None], {"low": "a"}]

    def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        yield prefix
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, (*prefix, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from paths(v, (*prefix, i))

    for path in paths(body):
        for value in rng.sample(odd, 4):
            mutated = copy.deepcopy(body)
            if not path:
                yield value
                continue
            node = mutated
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = value
            yield mutated


def test_no_mutated_body_is_a_500(channel: Channel, emulator: EvolutionEmulator) -> None:
    rng = random.Random(44)
    samples = [
        emulator.envelope("messages.upsert", emulator.voice(JID, b"ogg")),
        emulator.envelope("messages.set", [emulator.message(JID, "old", quoted="3EB0QQ")]),
        emulator.envelope("messages.update", {"keyId": "3EB0A", "fromMe": True, "status": "READ"}),
        emulator.envelope("connection.update", {"state": "close", "statusReason": 401}),
    ]
    statuses = set()
    for sample in samples:
        for body in _mutations(sample, rng):
            answer = _post(channel.pk, body)
            statuses.add(answer.status_code)
    assert statuses <= {200, 400, 403}
    assert 200 in statuses
    assert 403 in statuses


# --- the transport -----------------------------------------------------------------------------


def test_send_text_returns_the_gateways_key_id(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    chat = factories.chat(channel, customer_key=JID)

    sent_id = evolution.EvolutionTransport(channel).send_text(chat, "Salem!", client_message_id="")

    (sent,) = emulator.sent_to(JID)
    assert (sent.id, sent.text) == (sent_id, "Salem!")


def test_send_media_carries_the_file(channel: Channel, emulator: EvolutionEmulator) -> None:
    chat = factories.chat(channel, customer_key=JID)
    media = OutgoingMedia("document", b"%PDF-1.4 price list", "application/pdf", "prices.pdf", "")

    sent_id = evolution.EvolutionTransport(channel).send_media(chat, media, client_message_id="")

    (sent,) = emulator.sent_to(JID)
    assert (sent.id, sent.kind, sent.content, sent.filename) == (
        sent_id, "document", b"%PDF-1.4 price list", "prices.pdf",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("setup", "error", "code"),
    [
        ({"state": "close"}, TransientSendError, "link_down"),
        ({"fail_sends_with": 500}, TransientSendError, "500"),
        ({"fail_sends_with": 429}, TransientSendError, "429"),
        ({"token": "rotated"}, PermanentSendError, "401"),
        ({"instance": "other"}, PermanentSendError, "404"),
        ({"not_on_whatsapp": {JID}}, PermanentSendError, "not_on_whatsapp"),
    ],
)
def test_gateway_errors_are_transient_or_permanent_as_they_would_be_again(
    channel: Channel, emulator: EvolutionEmulator, setup: dict[str, Any],
    error: type[Exception], code: str,
) -> None:  # fmt: skip
    for name, value in setup.items():
        setattr(emulator, name, value)
    chat = factories.chat(channel, customer_key=JID)

    with pytest.raises(error) as raised:
        evolution.EvolutionTransport(channel).send_text(chat, "hi", client_message_id="")

    assert raised.value.code == code  # type: ignore[attr-defined]
    assert emulator.sent == []


def test_gateway_down_is_transient(channel: Channel) -> None:
    Channel.objects.filter(pk=channel.pk).update(bridge_url="http://127.0.0.1:9")
    channel.refresh_from_db()
    chat = factories.chat(channel, customer_key=JID)

    with pytest.raises(TransientSendError):
        evolution.EvolutionTransport(channel).send_text(chat, "hi", client_message_id="")


def test_media_is_fetched_through_get_base64(channel: Channel, emulator: EvolutionEmulator) -> None:
    data = emulator.voice(JID, b"OggS-real-voice")
    chat = factories.chat(channel, customer_key=JID)
    message = factories.customer_message(chat, "", kind="voice", media_ref=data["key"]["id"],
                                         media_mime="audio/ogg")  # fmt: skip

    blob = evolution.EvolutionTransport(channel).fetch_media(message)

    assert (blob.content, blob.mime_type) == (b"OggS-real-voice", "audio/ogg")


def test_connection_check_reads_the_instance_state(
    channel: Channel, emulator: EvolutionEmulator
) -> None:
    assert evolution.check_connection(channel) == (True, "linked (state open)")
    emulator.state = "connecting"
    assert evolution.check_connection(channel) == (False, "not linked (state connecting)")
    emulator.token = "rotated"
    assert evolution.check_connection(channel) == (
        False,
        "Evolution API refused the key (give the instance token)",
    )
