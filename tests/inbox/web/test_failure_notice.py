"""A message a manager or the bot sent that WhatsApp did not deliver: a notice on the chat
owner's own socket (the assigned manager; nobody assigned: the business's managers who see the
chat), with the reason in plain words; never to another business."""

from __future__ import annotations

import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections, transaction

from inbox.conversations import assignment, delivery_status
from inbox.conversations.events import StatusEvent
from inbox.conversations.models import Message
from tests.inbox.tenants import Tenant, tenant
from tests.inbox.web.test_live import connect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def _notices(
    socket: WebsocketCommunicator, seconds: float, *, wanted: int = 0
) -> list[dict[str, Any]]:
    """The `notify` frames the socket gets within `seconds`, or once `wanted` arrived (other
    frames are the live page's). `receive_nothing` waits without ending the socket, as a
    timed-out receive would."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (wanted and len(found) >= wanted):
        if await socket.receive_nothing(timeout=0.05):
            continue
        frame = await socket.receive_json_from(timeout=5)
        if frame.get("type") == "notify":
            found.append(frame)
    return found


def _sent_and_failed(t: Tenant, author: str, code: str) -> None:
    message = Message.objects.create(
        chat=t.chat, channel=t.channel, direction="out", author=author,
        sent_by=t.manager if author == "manager" else None, sent_by_bot=author == "bot",
        from_me=True, text="Oak table: 120 000 KZT.", provider_message_id=f"wamid.{author}",
        status="sent",
    )  # fmt: skip
    with transaction.atomic():  # as the ingest consumer applies it: notices after the commit
        delivery_status.apply(
            StatusEvent(
                channel_id=t.channel.pk, provider_message_id=message.provider_message_id,
                status="failed", provider_ts=int(time.time()), error_code=code,
                error_title="Message undeliverable",
            )
        )  # fmt: skip


async def test_the_assigned_manager_alone_is_told_in_plain_words() -> None:
    a = await sync_to_async(tenant)("A")
    await sync_to_async(assignment.assign)(a.chat.pk, a.manager.pk)
    owner, colleague = await connect(a.manager), await connect(a.admin)
    try:
        await sync_to_async(_sent_and_failed)(a, "manager", "131026")

        (notice,) = await _notices(owner, 5, wanted=1)
        assert (notice["kind"], notice["chat"]) == ("failed", a.chat.pk)
        assert "was not delivered: Customer A" in notice["title"]
        assert notice["body"].startswith("This number is not on WhatsApp")
        assert notice["body"].endswith("the customer cannot be reached here.")
        assert await _notices(colleague, 0.5) == []
    finally:
        await owner.disconnect()
        await colleague.disconnect()
        await sync_to_async(connections.close_all)()


async def test_nobody_assigned_the_business_is_told_and_no_other_business() -> None:
    a = await sync_to_async(tenant)("A")
    b = await sync_to_async(tenant)("B")
    manager, admin, stranger = (
        await connect(a.manager),
        await connect(a.admin),
        await connect(b.manager),
    )
    try:
        await sync_to_async(_sent_and_failed)(a, "bot", "131049")

        for socket in (manager, admin):
            (notice,) = await _notices(socket, 5, wanted=1)
            assert notice["title"].startswith("The assistant's message was not delivered")
            assert "marketing messages" in notice["body"]
        assert await _notices(stranger, 0.5) == []
    finally:
        for socket in (manager, admin, stranger):
            await socket.disconnect()
        await sync_to_async(connections.close_all)()
