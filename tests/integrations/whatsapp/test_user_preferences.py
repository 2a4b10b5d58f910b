"""WhatsApp's own marketing opt-out (the `user_preferences` webhook field), through the real
webhook endpoint: "stop" puts the customer on the business's opt-out register, "resume" takes
WhatsApp's opt-out off again but leaves one the customer asked for in the chat."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async

from inbox.conversations import opt_outs
from inbox.conversations.models import Channel, OptOut
from inbox.site.asgi import application
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import sign

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SECRET = "test-app-secret"
BODIES = json.loads(
    (Path(__file__).parent / "cloud_api_bodies" / "user_marketing_preferences.json").read_text()
)
PHONE = "16505551234"  # the preference's wa_id in the real-shaped body


@pytest.fixture(autouse=True)
def _webhook_settings(settings: Any) -> None:
    settings.WHATSAPP_APP_SECRET = SECRET
    routes.clear()


def _preference(value: str) -> dict[str, Any]:
    """The real-shaped "resume" body with its preference's value set to `value`."""
    body = copy.deepcopy(BODIES["resume"])
    pref = body["entry"][0]["changes"][0]["value"]["user_preferences"][0]
    pref["value"] = value
    if value == "stop":
        pref["detail"] = "User requested to stop marketing messages"
    return body


async def _post(body: dict[str, Any]) -> httpx.Response:
    raw = json.dumps(body).encode()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url="http://testserver"
    ) as client:
        return await client.post(
            "/webhooks/whatsapp/",
            content=raw,
            headers={"Content-Type": "application/json", "X-Hub-Signature-256": sign(SECRET, raw)},
        )


async def test_stop_records_the_opt_out_and_resume_ends_whatsapps_own() -> None:
    channel = await sync_to_async(factories.channel)(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922"
    )
    business_id = channel.business_id

    assert (await _post(_preference("stop"))).status_code == 200
    row = await OptOut.objects.aget(business_id=business_id, customer_key=PHONE)
    assert (row.source, row.cleared_at) == (OptOut.Source.PLATFORM, None)
    assert "stop" in row.detail
    assert await sync_to_async(opt_outs.opted_out)(business_id, PHONE)

    assert (await _post(_preference("stop"))).status_code == 200  # redelivered: still one row
    assert await OptOut.objects.filter(business_id=business_id).acount() == 1

    assert (await _post(_preference("resume"))).status_code == 200
    assert not await sync_to_async(opt_outs.opted_out)(business_id, PHONE)
    # A signup through a link says nothing about the register.
    assert (await _post(BODIES["signup"])).status_code == 200
    assert not await sync_to_async(opt_outs.opted_out)(business_id, PHONE)


async def test_resume_in_whatsapp_leaves_a_stop_the_customer_wrote_in_the_chat() -> None:
    channel = await sync_to_async(factories.channel)(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922"
    )
    await sync_to_async(opt_outs.record)(
        channel.business_id, PHONE, OptOut.Source.KEYWORD, detail="STOP"
    )

    assert (await _post(_preference("resume"))).status_code == 200

    assert await sync_to_async(opt_outs.opted_out)(channel.business_id, PHONE)


async def test_a_username_customer_is_found_by_their_bsuid() -> None:
    channel = await sync_to_async(factories.channel)(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922"
    )
    bsuid = "US.13491208655302741918"  # the body's contacts[].user_id
    await sync_to_async(factories.chat)(channel, customer_key=bsuid, customer_bsuid=bsuid)
    body = _preference("stop")
    value = body["entry"][0]["changes"][0]["value"]
    value["contacts"][0]["wa_id"] = ""
    value["user_preferences"][0]["wa_id"] = ""

    assert (await _post(body)).status_code == 200

    assert await sync_to_async(opt_outs.opted_out)(channel.business_id, bsuid)
