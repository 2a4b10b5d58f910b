"""The webhook endpoints, driven through the real ASGI application."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import override_settings
from prometheus_client import REGISTRY

from inbox.conversations import ingest
from inbox.conversations.models import Channel
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import contact, envelope, sign, text_message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

T = TypeVar("T")
SECRET = "test-app-secret"
VERIFY = "test-verify-token"


@pytest.fixture(autouse=True)
def _webhook_settings(settings: Any) -> None:
    settings.WHATSAPP_APP_SECRET = SECRET
    settings.WHATSAPP_VERIFY_TOKEN = VERIFY
    routes.clear()


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url="http://testserver"
    )


def _queued() -> list[dict[str, Any]]:
    return [json.loads(fields[b"e"]) for _id, fields in get_redis().xrange(ingest.STREAM)]


async def _post(body: bytes, signature: str | None = None, path: str = "/webhooks/whatsapp/",
                headers: dict[str, str] | None = None) -> httpx.Response:  # fmt: skip
    headers = dict(headers or {})
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    async with _client() as client:
        return await client.post(
            path, content=body, headers={"Content-Type": "application/json", **headers}
        )


@pytest.fixture
def cloud_channel() -> Channel:
    return factories.channel(kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922")


def _body(wamid: str = "wamid.A1", text: str = "How much is the oak table?") -> bytes:
    return json.dumps(
        envelope("106540352242922", messages=[text_message("77011234567", text, wamid=wamid)],
                 contacts=[contact("77011234567")])
    ).encode()  # fmt: skip


async def test_verification_handshake_echoes_the_challenge() -> None:
    async with _client() as client:
        ok = await client.get(
            "/webhooks/whatsapp/",
            params={
                "hub.mode": "subscribe",
                "hub.verify_token": VERIFY,
                "hub.challenge": "1158201444",
            },
        )
        wrong = await client.get(
            "/webhooks/whatsapp/",
            params={"hub.mode": "subscribe", "hub.verify_token": "nope", "hub.challenge": "1"},
        )
    assert (ok.status_code, ok.text) == (200, "1158201444")
    assert wrong.status_code == 403


async def test_signed_message_is_queued_once_however_often_it_is_delivered(
    cloud_channel: Channel,
) -> None:
    body = _body()

    answers = [await _post(body, sign(SECRET, body)) for _ in range(5)]

    assert [a.status_code for a in answers] == [200] * 5
    queued = _queued()
    assert len(queued) == 1
    assert queued[0]["provider_message_id"] == "wamid.A1"
    assert queued[0]["channel_id"] == cloud_channel.pk
    assert queued[0]["text"] == "How much is the oak table?"


@pytest.mark.parametrize(
    "signature", [None, "sha256=00", "sha1=abc", sign("other-secret", _body())]
)
async def test_missing_or_wrong_signature_is_refused_and_nothing_stored(
    cloud_channel: Channel, signature: str | None
) -> None:
    answer = await _post(_body(), signature)

    assert answer.status_code == 403
    assert _queued() == []


async def test_signature_must_cover_the_exact_bytes(cloud_channel: Channel) -> None:
    body = _body()

    answer = await _post(body.replace(b"oak", b"pine"), sign(SECRET, body))

    assert answer.status_code == 403
    assert _queued() == []


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "invalid JSON"),
        (b"\xff\xfe\x00garbage", "invalid JSON"),
        (b'{"object": "whatsapp_business_account", "entry": {"id": 1}}', "entry must be a list"),
        (b'{"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages", "value": {"metadata": {"phone_number_id": "106540352242922"}, "messages": "x"}}]}]}', "messages must be a list"),
    ],
)  # fmt: skip
async def test_malformed_bodies_get_a_400_with_the_reason(
    cloud_channel: Channel, raw: bytes, reason: str
) -> None:
    answer = await _post(raw, sign(SECRET, raw))

    assert answer.status_code == 400
    assert reason in answer.text
    assert _queued() == []


def _wrong_types() -> list[tuple[str, bytes]]:
    def variant(change: Any) -> bytes:
        body = json.loads(_body())
        change(body)
        # 950 levels of nesting, written as text: encoding it would hit the recursion limit here
        return json.dumps(body).replace('"DEEP"', '{"x":' * 950 + "{}" + "}" * 950).encode()

    def order(body: dict[str, Any]) -> None:
        message = body["entry"][0]["changes"][0]["value"]["messages"][0]
        message.update(type="order", order={"product_items": 5})

    return [
        ("entry", variant(lambda b: b.update(entry=5))),
        ("changes", variant(lambda b: b["entry"][0].update(changes=7))),
        ("order", variant(order)),
        ("deep", variant(lambda b: b["entry"][0]["changes"][0]["value"].update(deep="DEEP"))),
        ("deep_message", variant(
            lambda b: b["entry"][0]["changes"][0]["value"]["messages"][0].update(context="DEEP")
        )),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("what", "body"), _wrong_types(), ids=lambda v: v if isinstance(v, str) else ""
)
async def test_signed_bodies_with_wrong_types_are_4xx_or_acknowledged_never_500(
    cloud_channel: Channel, what: str, body: bytes
) -> None:
    answer = await _post(body, sign(SECRET, body))

    assert answer.status_code in (200, 400, 404), (what, answer.status_code, answer.text[:200])


async def test_a_lone_surrogate_in_a_signed_message_is_replaced_not_a_500(
    cloud_channel: Channel,
) -> None:
    body = _body(text="Сколько стоит? \ud83d")
    assert b"\\ud83d" in body

    answer = await _post(body, sign(SECRET, body))

    assert answer.status_code == 200
    assert [q["text"] for q in _queued()] == ["Сколько стоит? \ufffd"]


async def test_huge_body_is_refused_before_it_is_parsed(cloud_channel: Channel) -> None:
    with override_settings(WEBHOOK_MAX_BODY_BYTES=1024):
        raw = b'{"x": "' + b"a" * 5000 + b'"}'
        answer = await _post(raw, sign(SECRET, raw))

    assert answer.status_code == 413
    assert _queued() == []


async def test_body_for_a_number_with_no_channel_is_a_404() -> None:
    raw = _body()

    answer = await _post(raw, sign(SECRET, raw))

    assert answer.status_code == 404
    assert "phone_number_id" in answer.text


async def test_events_we_do_not_use_are_acknowledged(cloud_channel: Channel) -> None:
    raw = json.dumps({"object": "whatsapp_business_account",
                      "entry": [{"id": "1", "changes": [{"field": "account_update", "value": {"event": "X"}}]}]}).encode()  # fmt: skip

    answer = await _post(raw, sign(SECRET, raw))

    assert answer.status_code == 200
    assert _queued() == []


async def test_queue_unreachable_answers_503_so_the_provider_retries(
    cloud_channel: Channel,
) -> None:
    raw = _body()
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        answer = await _post(raw, sign(SECRET, raw))

    assert answer.status_code == 503
    # Nothing was marked as seen: the retry gets in once the queue is back.
    retry = await _post(raw, sign(SECRET, raw))
    assert retry.status_code == 200
    assert len(_queued()) == 1


async def test_missing_app_secret_refuses_everything(cloud_channel: Channel) -> None:
    raw = _body()
    with override_settings(WHATSAPP_APP_SECRET=""):
        answer = await _post(raw, sign("", raw))

    assert answer.status_code == 503
    assert _queued() == []


class TestBridge:
    @pytest.fixture
    def bridge_channel(self) -> Channel:
        return factories.channel(kind=Channel.Kind.BRIDGE, bridge_token="bridge-secret-1")

    def _event(self, **overrides: Any) -> bytes:
        event = {"id": "3EB0C767D26A1D3F1C2B", "chat_id": "77011234567@s.whatsapp.net", "from_me": False,
                 "kind": "text", "text": "Salem! Is delivery free?", "timestamp": 1749416383, "sender_name": "Aigerim"}  # fmt: skip
        event.update(overrides)
        return json.dumps({"events": [event]}).encode()

    async def test_event_with_the_channel_token_is_queued(self, bridge_channel: Channel) -> None:
        answer = await _post(
            self._event(), path=f"/webhooks/bridge/{bridge_channel.pk}/",
            headers={"Authorization": "Bearer bridge-secret-1"},
        )  # fmt: skip

        assert answer.status_code == 200
        (queued,) = _queued()
        assert (queued["chat_key"], queued["customer_phone"]) == (
            "77011234567@s.whatsapp.net",
            "77011234567",
        )
        assert queued["channel_id"] == bridge_channel.pk

    @pytest.mark.parametrize(
        "auth",
        [None, "Bearer wrong", "bridge-secret-1x", "Basic YWJj",
         # The right token, but not as a bearer token: refused (it used to be accepted bare).
         "bridge-secret-1", "Token bridge-secret-1", "Bearerbridge-secret-1", "Bearer "],
    )  # fmt: skip
    async def test_wrong_or_missing_token_is_refused(
        self, bridge_channel: Channel, auth: str | None
    ) -> None:
        headers = {"Authorization": auth} if auth else {}

        answer = await _post(
            self._event(), path=f"/webhooks/bridge/{bridge_channel.pk}/", headers=headers
        )

        assert answer.status_code == 403
        assert _queued() == []

    async def test_an_unknown_channel_id_and_a_wrong_token_get_the_same_answer(
        self, bridge_channel: Channel
    ) -> None:
        """A 404 for unknown ids and a 403 for known ones let anyone list the channel ids."""
        unknown = await _post(
            self._event(), path=f"/webhooks/bridge/{bridge_channel.pk + 1000}/",
            headers={"Authorization": "Bearer bridge-secret-1"},
        )  # fmt: skip
        wrong = await _post(
            self._event(), path=f"/webhooks/bridge/{bridge_channel.pk}/",
            headers={"Authorization": "Bearer guessed"},
        )  # fmt: skip

        assert (unknown.status_code, unknown.content) == (wrong.status_code, wrong.content)
        assert unknown.status_code == 403
        assert _queued() == []

    async def test_the_bearer_scheme_is_case_insensitive(self, bridge_channel: Channel) -> None:
        answer = await _post(
            self._event(), path=f"/webhooks/bridge/{bridge_channel.pk}/",
            headers={"Authorization": "bearer bridge-secret-1"},
        )  # fmt: skip

        assert answer.status_code == 200

    async def test_a_cut_emoji_loses_nothing_of_the_request(self, bridge_channel: Channel) -> None:
        """A JS bridge that cuts an emoji in half sends a lone surrogate ("\\ud83d"): it was a
        500, and the good event of the same request was lost with it."""
        good = json.loads(self._event(id="GOOD1"))["events"][0]
        cut = json.loads(self._event(id="CUT\ud83d", text="Price? \ud83d", sender_name="Ai\udc00"))
        body = json.dumps({"events": [good, cut["events"][0]]}).encode()

        answer = await _post(
            body, path=f"/webhooks/bridge/{bridge_channel.pk}/",
            headers={"Authorization": "Bearer bridge-secret-1"},
        )  # fmt: skip

        assert answer.status_code == 200
        first, second = _queued()
        assert first["provider_message_id"] == "GOOD1"
        assert (second["provider_message_id"], second["text"], second["customer_name"]) == (
            "CUT\ufffd", "Price? \ufffd", "Ai\ufffd",
        )  # fmt: skip

    async def test_group_chats_are_ignored(self, bridge_channel: Channel) -> None:
        answer = await _post(
            self._event(chat_id="120363@g.us"), path=f"/webhooks/bridge/{bridge_channel.pk}/",
            headers={"Authorization": "Bearer bridge-secret-1"},
        )  # fmt: skip

        assert answer.status_code == 200
        assert _queued() == []


class TestRouteCache:
    """Which channel a webhook is for, looked up in the database only when it must be."""

    @pytest.fixture(autouse=True)
    def _short_ttl(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(routes, "ttl", 0.05)

    @staticmethod
    def _lookups() -> float:
        return REGISTRY.get_sample_value("inbox_webhook_route_lookups_total") or 0.0

    @staticmethod
    async def _in_db(change: Callable[[], T]) -> T:
        """A change to the database from this async test, its connection closed after (none
        left open in asgiref's thread when the test database is dropped)."""

        def run() -> T:
            try:
                return change()
            finally:
                connection.close()

        return await sync_to_async(run)()

    @staticmethod
    async def _expire() -> None:
        await asyncio.sleep(0.1)  # the route's TTL (0.05 s) passing, not work being awaited

    async def test_a_burst_after_the_route_expired_looks_the_channel_up_once(
        self, cloud_channel: Channel, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every request of a burst found the entry expired at once, and each opened its own
        database connection for the same row: the burst was stored ~200 ms late."""
        monkeypatch.setattr(routes, "stale", 0.0)
        assert (await _post(_body("wamid.B0"), sign(SECRET, _body("wamid.B0")))).status_code == 200
        await self._expire()
        before = self._lookups()

        bodies = [_body(f"wamid.B{n}") for n in range(1, 21)]
        answers = await asyncio.gather(*(_post(b, sign(SECRET, b)) for b in bodies))

        assert [a.status_code for a in answers] == [200] * 20
        assert self._lookups() - before == 1
        assert len(_queued()) == 21

    async def test_a_known_number_is_served_while_its_route_refreshes(
        self, cloud_channel: Channel, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The expired route of a known number answers at once; the refresh behind it sees the
        channel was deactivated, and the number's webhooks are refused from then on."""
        monkeypatch.setattr(routes, "stale", 60.0)
        assert (await _post(_body("wamid.S0"), sign(SECRET, _body("wamid.S0")))).status_code == 200
        await self._in_db(
            partial(Channel.objects.filter(pk=cloud_channel.pk).update, is_active=False)
        )
        await self._expire()

        served = await _post(_body("wamid.S1"), sign(SECRET, _body("wamid.S1")))
        assert served.status_code == 200
        deadline = time.monotonic() + 5
        while True:
            answer = await _post(_body("wamid.S2"), sign(SECRET, _body("wamid.S2")))
            if answer.status_code != 200 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        assert answer.status_code == 404

    async def test_a_number_of_a_new_channel_is_not_served_from_its_unknown_entry(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(routes, "stale", 60.0)
        assert (await _post(_body("wamid.N0"), sign(SECRET, _body("wamid.N0")))).status_code == 404
        await self._in_db(
            partial(
                factories.channel, kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922"
            )
        )
        await self._expire()

        answer = await _post(_body("wamid.N1"), sign(SECRET, _body("wamid.N1")))

        assert answer.status_code == 200
        (queued,) = _queued()
        assert queued["provider_message_id"] == "wamid.N1"

    async def test_a_rotated_bridge_token_stops_working_within_the_ttl(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(routes, "stale", 60.0)
        channel = await self._in_db(
            partial(factories.channel, kind=Channel.Kind.BRIDGE, bridge_token="bridge-old")
        )
        event = {"id": "3EB0ROTATE", "chat_id": "77011234567@s.whatsapp.net", "from_me": False,
                 "kind": "text", "text": "Hello, are you open today?", "timestamp": 1749416383}  # fmt: skip
        body = json.dumps({"events": [event]}).encode()
        path = f"/webhooks/bridge/{channel.pk}/"
        old = {"Authorization": "Bearer bridge-old"}
        assert (await _post(body, path=path, headers=old)).status_code == 200
        channel.bridge_token = "bridge-new"
        await self._in_db(partial(channel.save, update_fields=["bridge_token"]))
        await self._expire()

        refused = await _post(body, path=path, headers=old)
        accepted = await _post(body, path=path, headers={"Authorization": "Bearer bridge-new"})

        assert (refused.status_code, accepted.status_code) == (403, 200)
