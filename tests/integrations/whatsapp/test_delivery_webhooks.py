"""A failed status per WhatsApp error code, through the real webhook view and the ingest
consumer: the message turns failed and the manager reads why in plain words."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import Client

from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import Channel, Chat, Message
from inbox.site.asgi import application
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import envelope, sign, status_update

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SECRET = "test-app-secret"
PNID = "106540352242922"
CUSTOMER = "77011234567"

# code → words of its explanation under the message.
CODES = {
    131026: "not on WhatsApp or cannot receive messages",
    131047: "only lets a template message through",
    131049: "limits how many marketing messages",
    131050: "stop marketing messages",
    131051: "does not support this kind of message",
    131052: "could not fetch the attached file",
    131053: "did not accept the attached file",
    130429: "from this number in a short time",
    131056: "to this customer in a short time",
    131000: "WhatsApp could not deliver this message. WhatsApp says: Something went wrong",
}


@pytest.fixture(autouse=True)
def _webhook_settings(settings: Any) -> None:
    settings.WHATSAPP_APP_SECRET = SECRET
    routes.clear()


def _sent_message() -> Message:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id=PNID, access_token="tok-1"
    )
    chat = factories.chat(channel, customer_key=CUSTOMER, customer_phone=CUSTOMER)
    manager = factories.manager(channel.business)
    return Message.objects.create(
        chat=chat, channel=channel, direction="out", author="manager", sent_by=manager,
        from_me=True, text="Your table ships today.", provider_message_id="wamid.out-1",
        status="sent",
    )  # fmt: skip


def _explanation_shown(message: Message) -> str:
    client = Client()
    client.force_login(message.sent_by)  # type: ignore[arg-type]
    return client.get(f"/inbox/chat/{message.chat_id}/").content.decode()


async def _post(body: dict[str, Any]) -> httpx.Response:
    raw = json.dumps(body).encode()
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.post(
            "/webhooks/whatsapp/", content=raw,
            headers={"Content-Type": "application/json", "X-Hub-Signature-256": sign(SECRET, raw)},
        )  # fmt: skip


@pytest.mark.parametrize("code", list(CODES))
async def test_a_failed_status_of_each_code_is_explained_under_the_message(code: int) -> None:
    message = await sync_to_async(_sent_message)()
    update = status_update("wamid.out-1", "failed", CUSTOMER, error_code=code)
    try:
        response = await _post(envelope(PNID, statuses=[update]))
        assert response.status_code == 200
        handled = await sync_to_async(IngestWorker(name="statuses", block_ms=10).step)()
        assert handled == 1

        await sync_to_async(message.refresh_from_db)()
        assert (message.status, message.error_code) == ("failed", str(code))
        # Meta's title and details are kept, for support; the manager reads our sentence.
        assert update["errors"][0]["title"] in message.error_title
        page = await sync_to_async(_explanation_shown)(message)
        assert CODES[code] in page
        undeliverable = await sync_to_async(
            lambda: Chat.objects.get(pk=message.chat_id).undeliverable_at
        )()
        assert (undeliverable is not None) == (code == 131026)
    finally:
        await sync_to_async(connections.close_all)()
