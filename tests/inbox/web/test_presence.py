"""Two managers on one chat, over the real websocket and Redis: who is viewing, who is typing,
only for the chat's own business and channel; the take-over race has one winner, named to the
loser; a reply to a chat another manager has asks first."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test import Client

from inbox.conversations.models import Chat, Membership, Message, Owner
from inbox.web import actions
from tests import factories
from tests.inbox.tenants import Tenant
from tests.inbox.web.test_live import connect

pytestmark = pytest.mark.django_db(transaction=True)


async def next_frame(page: WebsocketCommunicator, kind: str) -> dict[str, Any]:
    while True:
        frame = await page.receive_json_from(timeout=5)
        if frame["type"] == kind:
            return frame  # type: ignore[no-any-return]


async def viewers_seen(page: WebsocketCommunicator, names: set[str]) -> None:
    """Presence frames until the viewers are exactly `names`."""
    while True:
        frame = await next_frame(page, "presence")
        if {v["name"] for v in frame["viewers"]} == names:
            return


@pytest.mark.asyncio
async def test_viewers_and_typing_reach_the_other_manager_of_the_chat(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    colleague = await sync_to_async(factories.manager)(a.business, username="colleague")
    first = await connect(a.manager, f"/ws/inbox/?chat={a.chat.pk}")
    sockets.append(first)
    await viewers_seen(first, {"manager-a"})
    second = await connect(colleague, f"/ws/inbox/?chat={a.chat.pk}")
    sockets.append(second)

    await viewers_seen(first, {"manager-a", "colleague"})
    await second.send_json_to({"action": "typing"})
    typing = await next_frame(first, "typing")
    assert typing == {"type": "typing", "chat": a.chat.pk,
                      "user": {"id": colleague.pk, "name": "colleague"}}  # fmt: skip

    await second.disconnect()
    sockets.remove(second)
    await viewers_seen(first, {"manager-a"})


@pytest.mark.asyncio
async def test_presence_never_crosses_businesses_or_restricted_channels(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    wholesale = await sync_to_async(factories.channel)(a.business, name="Wholesale")
    restricted = await sync_to_async(factories.manager)(a.business, username="restricted")
    await sync_to_async(lambda: Membership.objects.get(user=restricted).channels.add(wholesale))()
    outsider = await connect(b.manager)
    kept_off = await connect(restricted)
    sockets.extend([outsider, kept_off])

    viewer = await connect(a.manager, f"/ws/inbox/?chat={a.chat.pk}")
    sockets.append(viewer)
    await viewers_seen(viewer, {"manager-a"})
    await viewer.send_json_to({"action": "typing"})
    # Neither may subscribe to the chat, so neither ever hears of its viewers or typists.
    for page in (outsider, kept_off):
        await page.send_json_to({"action": "subscribe", "chat": a.chat.pk})
        assert await page.receive_json_from(timeout=5) == {"type": "error", "error": "not_found"}
        await page.send_json_to({"action": "typing"})
        assert await page.receive_nothing(timeout=0.5)
    await outsider.send_json_to({"action": "subscribe", "chat": b.chat.pk})
    frames = [await outsider.receive_json_from(timeout=5) for _ in range(2)]
    assert "manager-a" not in str(frames)


def named(user: Any, first_name: str) -> Any:
    user.first_name = first_name
    user.save(update_fields=["first_name"])
    return user


def _htmx(user: Any, url: str, data: dict[str, str] | None = None) -> Any:
    client = Client()
    client.force_login(user)
    return client.post(url, data or {}, HTTP_HX_REQUEST="true")


def test_two_managers_take_over_at_once_the_loser_is_told_who_won(a: Tenant) -> None:
    colleague = named(factories.manager(a.business, username="colleague"), "Boris")
    named(a.manager, "Anna")
    barrier = threading.Barrier(2)
    bodies: dict[str, str] = {}

    def press(user: Any) -> None:
        barrier.wait()
        try:
            body = _htmx(user, f"/inbox/chat/{a.chat.pk}/take-over/").content.decode()
            bodies[user.username] = body
        finally:
            connection.close()

    threads = [threading.Thread(target=press, args=(u,)) for u in (a.manager, colleague)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    chat = Chat.objects.get(pk=a.chat.pk)
    assert chat.owner == Owner.HUMAN
    winner = "Anna" if chat.assigned_to_id == a.manager.pk else "Boris"
    loser = "colleague" if winner == "Anna" else "manager-a"
    assert f"Too late: {winner} took this chat first." in bodies[loser]
    assert f"{winner} took this chat" in bodies["manager-a" if winner == "Anna" else "colleague"]
    assert chat.transitions.filter(to_owner=Owner.HUMAN).count() == 1


def test_reply_to_a_chat_another_manager_has_asks_first(a: Tenant) -> None:
    colleague = named(factories.manager(a.business, username="colleague"), "Boris")
    named(a.manager, "Anna")
    actions.take_over(a.manager, a.chat.pk)
    url = f"/inbox/chat/{a.chat.pk}/reply/"

    asked = _htmx(colleague, url, {"text": "Hello from Boris", "key": "k1"}).content.decode()
    assert "Take over from Anna?" in asked
    assert "Hello from Boris" in asked  # the text stays in the box
    assert not Message.objects.filter(chat=a.chat, text="Hello from Boris").exists()

    _htmx(colleague, url, {"text": "Hello from Boris", "key": "k2", "take_from": str(a.manager.pk)})
    assert Message.objects.filter(chat=a.chat, text="Hello from Boris").exists()
    assert Chat.objects.get(pk=a.chat.pk).assigned_to_id == colleague.pk
    # The holder herself is never asked.
    _htmx(colleague, url, {"text": "Second line", "key": "k3"})
    assert Message.objects.filter(chat=a.chat, text="Second line").exists()
