"""WAHA's webhook (`/webhooks/waha/<channel id>/`) through the real ASGI application: the
signature, what each engine's bodies become on the queue, the session's state, and no 500 on
any body."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async

from inbox.conversations import ingest
from inbox.conversations.models import Alert, Channel
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from inbox.upkeep import alerts
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.waha import WahaEmulator, sign

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

KEY = "waha-key-1"
CUSTOMER = "77011234567@c.us"


@pytest.fixture(autouse=True)
def _clear_routes() -> None:
    routes.clear()


@pytest.fixture
def channel() -> Channel:
    return factories.channel(kind=Channel.Kind.WAHA, bridge_url="http://127.0.0.1:9/",
                             bridge_token=KEY, gateway_instance="default")  # fmt: skip


def _waha(engine: str = "GOWS") -> WahaEmulator:
    return WahaEmulator(api_key=KEY, engine=engine)  # never started: it only shapes bodies


def _queued() -> list[dict[str, Any]]:
    return [json.loads(fields[b"e"]) for _id, fields in get_redis().xrange(ingest.STREAM)]


async def _post(channel_id: int, body: dict[str, Any] | bytes, *, key: str = KEY,
                headers: dict[str, str] | None = None) -> httpx.Response:  # fmt: skip
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    given = {"Content-Type": "application/json", "X-Webhook-Hmac": sign(key, raw),
             "X-Webhook-Hmac-Algorithm": "sha512", **(headers or {})}  # fmt: skip
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application),
                                 base_url="http://testserver") as client:  # fmt: skip
        return await client.post(f"/webhooks/waha/{channel_id}/", content=raw, headers=given)


async def test_customer_text_is_queued_once_for_message_and_message_any(channel: Channel) -> None:
    waha = _waha()
    payload = waha.message(CUSTOMER, "Is the oak table in stock?", replyTo={"id": "3EB0PREV"})

    first = await _post(channel.pk, waha.body("message", payload))
    second = await _post(channel.pk, waha.body("message.any", payload))

    assert (first.status_code, second.status_code) == (200, 200)
    (queued,) = _queued()
    assert queued["chat_key"] == CUSTOMER
    assert queued["customer_phone"] == "77011234567"
    assert queued["customer_name"] == "Dana"
    assert queued["text"] == "Is the oak table in stock?"
    assert queued["from_me"] is False
    assert queued["provider_message_id"] == payload["id"].split("_")[2]
    assert queued["extra"]["reply_to"] == "3EB0PREV"


@pytest.mark.parametrize(
    "headers",
    [{"X-Webhook-Hmac": ""}, {"X-Webhook-Hmac": "00" * 64}, {"X-Webhook-Hmac-Algorithm": "sha256"}],
)
async def test_a_forged_body_is_refused_and_nothing_is_queued(
    channel: Channel, headers: dict[str, str]
) -> None:
    body = _waha().body("message", _waha().message(CUSTOMER, "hi"))

    answer = await _post(channel.pk, body, headers=headers)

    assert answer.status_code == 403
    assert _queued() == []


async def test_unknown_channel_other_kind_and_wrong_key_get_the_same_403(channel: Channel) -> None:
    bridge = await sync_to_async(factories.channel)(kind=Channel.Kind.BRIDGE, bridge_token=KEY)
    body = _waha().body("message", _waha().message(CUSTOMER, "hi"))

    answers = [await _post(channel.pk + 1000, body), await _post(bridge.pk, body),
               await _post(channel.pk, body, key="guessed")]  # fmt: skip

    assert {(a.status_code, a.content) for a in answers} == {(403, answers[0].content)}
    assert _queued() == []


@pytest.mark.parametrize(("engine", "with_me"), [("GOWS", True), ("WEBJS", True), ("WEBJS", False)])
async def test_a_message_typed_on_the_phone_is_from_me_on_the_customers_chat(
    channel: Channel, engine: str, with_me: bool
) -> None:
    """GOWS: from = the chat and to = null; WEBJS: from = the business, to = the chat (also
    when the body does not say who `me` is)."""
    waha = _waha(engine)
    payload = waha.message(CUSTOMER, "I'll call you", from_me=True, source="app")
    body = waha.body("message.any", payload)
    if not with_me:
        del body["me"]

    assert (await _post(channel.pk, body)).status_code == 200

    (queued,) = _queued()
    assert (queued["chat_key"], queued["from_me"], queued["customer_name"]) == (CUSTOMER, True, "")


async def test_an_api_send_marked_by_the_engine_is_not_queued(channel: Channel) -> None:
    waha = _waha("WEBJS")
    payload = waha.message(CUSTOMER, "our reply", from_me=True, source="api")

    assert (await _post(channel.pk, waha.body("message.any", payload))).status_code == 200

    assert _queued() == []


async def test_groups_are_ignored_and_lid_chats_are_kept(channel: Channel) -> None:
    waha = _waha()
    group = waha.message("120363040000000000@g.us", "hello group", participant=CUSTOMER)
    lid = waha.message("214000000000000@lid", "hello from a lid")

    await _post(channel.pk, waha.body("message", group))
    await _post(channel.pk, waha.body("message", lid))

    (queued,) = _queued()
    assert (queued["chat_key"], queued["customer_phone"]) == ("214000000000000@lid", "")


async def test_voice_note_is_queued_with_its_media_url(channel: Channel) -> None:
    waha = _waha()
    waha.base_url = "http://127.0.0.1:9"
    payload = waha.media_message(CUSTOMER, "true_x_3EB0.oga", b"OggS", "audio/ogg; codecs=opus")

    await _post(channel.pk, waha.body("message", payload))

    (queued,) = _queued()
    assert queued["kind"] == "voice"
    assert queued["media"]["ref"] == "http://127.0.0.1:9/api/files/default/true_x_3EB0.oga"
    assert queued["media"]["voice"] is True


async def test_edits_and_deletions_name_the_original(channel: Channel) -> None:
    waha = _waha()
    edited = waha.message(CUSTOMER, "two chairs, not one", editedMessageId="3EB0ORIG")
    revoked = {"revokedMessageId": "3EB0GONE", "before": None,
               "after": waha.message(CUSTOMER, "", id="3EB0PROTO")}  # fmt: skip

    await _post(channel.pk, waha.body("message.edited", edited))
    await _post(channel.pk, waha.body("message.revoked", revoked))

    edit, revoke = _queued()
    assert (edit["extra"]["edit_of"], edit["text"]) == ("3EB0ORIG", "two chairs, not one")
    assert (revoke["extra"]["revoke_of"], revoke["chat_key"]) == ("3EB0GONE", CUSTOMER)


@pytest.mark.parametrize(
    ("ack", "status"), [(-1, "failed"), (1, "sent"), (2, "delivered"), (3, "read")]
)
async def test_acks_are_queued_as_statuses_of_the_short_id(
    channel: Channel, ack: int, status: str
) -> None:
    waha = _waha()

    await _post(channel.pk, waha.body("message.ack", waha.ack("3EB0AAA", CUSTOMER, ack)))

    (queued,) = _queued()
    assert (queued["type"], queued["provider_message_id"], queued["status"]) == (
        "status", "3EB0AAA", status,
    )  # fmt: skip


async def test_a_lost_session_raises_the_silent_number_alert_at_once(channel: Channel) -> None:
    waha = _waha()
    status = {"name": "default", "status": "SCAN_QR_CODE"}

    assert (await _post(channel.pk, waha.body("session.status", status))).status_code == 200

    alert = await sync_to_async(Alert.objects.get)(kind=Alert.Kind.CHANNEL_SILENT, resolved_at=None)
    assert alert.subject == f"channel:{channel.pk}"
    assert "SCAN_QR_CODE" in alert.message
    # The minute check keeps it open (the number has had events: it is not "silent" by time).
    await sync_to_async(alerts.check_all)()
    assert await sync_to_async(Alert.objects.filter(resolved_at=None).count)() == 1

    status["status"] = "WORKING"
    await _post(channel.pk, waha.body("session.status", status))
    assert await sync_to_async(Alert.objects.filter(resolved_at=None).count)() == 0


def _mutations(body: dict[str, Any], rng: random.Random) -> list[Any]:
    """The body with one field replaced by junk, at every level, and a few wholesale swaps."""
    junk: list[Any] = [None, 0, -1, 1e308, True, "", "x" * 300, [], {}, [1, "a"], {"a": None},
                       "true_", "false__", "@g.us", 2**70]  # fmt: skip
    out: list[Any] = [[], "text", 5, None]

    def walk(node: Any, path: list[Any]) -> None:
        if isinstance(node, dict):
            for key in list(node):
                for value in rng.sample(junk, 4):
                    copy = json.loads(json.dumps(body))
                    target = copy
                    for step in path:
                        target = target[step]
                    target[key] = value
                    out.append(copy)
                walk(node[key], [*path, key])

    walk(body, [])
    return out


async def test_no_mutated_body_gets_a_500(channel: Channel) -> None:
    waha = _waha("WEBJS")
    waha.base_url = "http://127.0.0.1:9"
    rng = random.Random(44)
    bodies = [
        waha.body("message", waha.message(CUSTOMER, "hi", replyTo={"id": "3EB0P"})),
        waha.body("message.any", waha.media_message(CUSTOMER, "a.oga", b"", "audio/ogg", data_type="ptt")),
        waha.body("message.ack", waha.ack("3EB0AAA", CUSTOMER, 3)),
        waha.body("message.revoked", {"revokedMessageId": "3EB0G", "after": waha.message(CUSTOMER)}),
        waha.body("session.status", {"name": "default", "status": "STARTING"}),
    ]  # fmt: skip
    statuses = set()
    for body in bodies:
        for mutated in _mutations(body, rng):
            statuses.add(
                (await _post(channel.pk, json.dumps(mutated, allow_nan=True).encode())).status_code
            )

    assert statuses <= {200, 400}
    assert 200 in statuses
