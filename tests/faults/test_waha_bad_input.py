"""Fault 6 for WAHA's webhook: fuzzed, correctly signed bodies (hypothesis) against the real
ASGI application and the real ingest consumer. Whatever WAHA's fields hold, the answer is 200
or 400, never a 500; everything queued is stored without a dead letter; and no log line holds
the key or the customer's number."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from inbox.conversations import ingest
from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import Channel
from inbox.platform.logs import JsonLines, PrivacyFilter
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.waha import WahaEmulator, sign

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

KEY = "fuzz-waha-key"
CUSTOMER_PHONE = "77011234567"
FUZZ = hypothesis_settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                 st.text(max_size=30), st.sampled_from(["true_x_y", "@g.us", "@lid", "ptt"]))  # fmt: skip
value = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip
FIELDS = ["id", "timestamp", "from", "to", "fromMe", "source", "body", "hasMedia", "media",
          "replyTo", "_data", "ack", "ackName", "status", "editedMessageId", "revokedMessageId",
          "after"]  # fmt: skip
EVENTS = ["message", "message.any", "message.ack", "message.edited", "message.revoked",
          "session.status", "presence.update", ""]  # fmt: skip


@pytest.fixture(autouse=True)
def _logs_keep_no_key_and_no_phone() -> Iterator[None]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    handler.addFilter(PrivacyFilter())
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
    leaked = [
        line for line in stream.getvalue().splitlines() if KEY in line or CUSTOMER_PHONE in line
    ]
    assert leaked == [], leaked[:3]


@pytest.fixture
def channel() -> Channel:
    routes.clear()
    return factories.channel(kind=Channel.Kind.WAHA, bridge_url="http://127.0.0.1:9/",
                             bridge_token=KEY, gateway_instance="default")  # fmt: skip


def _post(channel_id: int, raw: bytes) -> int:
    async def go() -> int:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            headers = {"X-Webhook-Hmac": sign(KEY, raw), "X-Webhook-Hmac-Algorithm": "sha512"}
            response = await client.post(
                f"/webhooks/waha/{channel_id}/", content=raw, headers=headers
            )
            return response.status_code

    return asyncio.run(go())


def _consume_everything() -> None:
    worker = IngestWorker(name="fuzz-waha", block_ms=1, max_attempts=1)
    while worker.step():
        pass
    dead = get_redis().xrange(ingest.DEAD_LETTER_STREAM)
    assert dead == [], [fields[b"why"] for _id, fields in dead]


@FUZZ
@given(event=st.sampled_from(EVENTS), changes=st.dictionaries(st.sampled_from(FIELDS), value, max_size=4),
       text=st.text(max_size=200))  # fmt: skip
def test_fuzzed_signed_bodies_are_200_or_400_and_stored_cleanly(
    channel: Channel, event: str, changes: dict[str, Any], text: str
) -> None:
    waha = WahaEmulator(api_key=KEY)
    waha.base_url = "http://127.0.0.1:9"
    payload: dict[str, Any] = {**waha.message(f"{CUSTOMER_PHONE}@c.us", text), **changes}

    status = _post(channel.pk, json.dumps(waha.body(event, payload)).encode())

    assert status in (200, 400), status
    _consume_everything()


@FUZZ
@given(body=value)
def test_any_signed_json_is_200_or_400(channel: Channel, body: Any) -> None:
    assert _post(channel.pk, json.dumps(body).encode()) in (200, 400)
    _consume_everything()
