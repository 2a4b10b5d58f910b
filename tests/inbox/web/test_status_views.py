"""Status and per-manager unread in the inbox, the JSON API and the websocket: Resolve / Snooze
/ Reopen, the Mine / Unassigned / All views, each manager's own unread badge, the live notice
to an assignee, and none of it across businesses."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.utils import timezone

from inbox.conversations import assignment, status
from inbox.conversations.models import Chat, ChatStatus, ReadMarker
from tests import factories
from tests.inbox.tenants import Tenant, tenant
from tests.inbox.web.test_api import Api
from tests.inbox.web.test_dashboard_views import client_for, htmx
from tests.inbox.web.test_live import connect, next_event

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _badge(page: str, chat: Chat) -> str:
    """The unread badge of a chat's row as the page shows it: its number, '' when hidden."""
    row = page[page.index(f'id="chat-row-{chat.pk}"') :]
    match = re.search(r"data-unread( hidden)?>(\d+)<", row)
    assert match is not None
    return "" if match.group(1) else match.group(2)


def _rows(page: str) -> set[int]:
    return {int(i) for i in re.findall(r'id="chat-row-(\d+)"', page)}


def test_unread_is_counted_per_manager_and_cleared_only_for_who_opened_it(a: Tenant) -> None:
    colleague = factories.manager(a.business, username="colleague-a")
    factories.customer_message(a.chat, "second")
    factories.customer_message(a.chat, "third")

    assert _badge(client_for(a.manager).get("/inbox/").content.decode(), a.chat) == "3"
    client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/")

    assert _badge(client_for(a.manager).get("/inbox/").content.decode(), a.chat) == ""
    assert _badge(client_for(colleague).get("/inbox/").content.decode(), a.chat) == "3"
    marker = ReadMarker.objects.get(user=a.manager, chat=a.chat)
    assert (marker.read_count, marker.last_read_id) == (3, a.chat.messages.order_by("-pk")[0].pk)

    factories.customer_message(a.chat, "fourth")
    assert _badge(client_for(a.manager).get("/inbox/").content.decode(), a.chat) == "1"
    read = client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/read/").json()
    assert read == {"chat": a.chat.pk, "read": 3}


def test_mine_unassigned_and_all_views_and_the_open_list(a: Tenant) -> None:
    mine = factories.chat(a.channel, customer_name="Mine", last_message_at=timezone.now())
    theirs = factories.chat(a.channel, customer_name="Theirs", last_message_at=timezone.now())
    done = factories.chat(a.channel, customer_name="Done", last_message_at=timezone.now())
    assignment.assign(mine.pk, a.manager.pk)
    assignment.assign(theirs.pk, a.admin.pk)
    status.resolve(done.pk, manager=a.manager)
    client = client_for(a.manager)

    assert _rows(client.get("/inbox/").content.decode()) == {a.chat.pk, mine.pk, theirs.pk}
    assert _rows(client.get("/inbox/?view=mine").content.decode()) == {mine.pk}
    assert _rows(client.get("/inbox/?view=unassigned").content.decode()) == {a.chat.pk}
    assert _rows(client.get("/inbox/?status=resolved").content.decode()) == {done.pk}
    every = _rows(client.get("/inbox/?status=any").content.decode())
    assert every == {a.chat.pk, mine.pk, theirs.pk, done.pk}


def test_resolve_snooze_and_reopen_from_the_chat_header(a: Tenant) -> None:
    client = client_for(a.manager)

    header = htmx(client, f"/inbox/chat/{a.chat.pk}/resolve/").content.decode()
    assert 'data-action="reopen"' in header
    assert "Resolved" in header
    assert Chat.objects.get(pk=a.chat.pk).status == ChatStatus.RESOLVED

    before = timezone.now()
    header = htmx(client, f"/inbox/chat/{a.chat.pk}/snooze/", {"until": "1h"}).content.decode()
    chat = Chat.objects.get(pk=a.chat.pk)
    assert chat.status == ChatStatus.SNOOZED
    assert chat.snoozed_until is not None
    assert timedelta(minutes=59) < chat.snoozed_until - before < timedelta(minutes=61)
    assert "Snoozed until" in header

    header = htmx(client, f"/inbox/chat/{a.chat.pk}/snooze/", {"until": "never"}).content.decode()
    assert "Choose a time in the future" in header

    htmx(client, f"/inbox/chat/{a.chat.pk}/reopen/")
    assert Chat.objects.get(pk=a.chat.pk).status == ChatStatus.OPEN
    history = client.get(f"/inbox/chat/{a.chat.pk}/history/").content.decode()
    assert "Resolved" in history
    assert "Snoozed" in history
    assert "Reopened" in history


def test_another_business_cannot_resolve_snooze_reopen_or_read_markers(
    a: Tenant, b: Tenant
) -> None:
    ReadMarker.objects.create(user=a.manager, chat=a.chat, read_count=1)
    outsider = client_for(b.manager)
    for action, data in [("resolve", {}), ("snooze", {"until": "1h"}), ("reopen", {})]:
        assert htmx(outsider, f"/inbox/chat/{a.chat.pk}/{action}/", data).status_code == 404
    assert outsider.get(f"/inbox/chat/{a.chat.pk}/read/").status_code == 404
    api = Api(b.manager)
    assert api.post(f"/chats/{a.chat.pk}/resolve").status_code == 404
    assert api.post(f"/chats/{a.chat.pk}/reopen").status_code == 404
    until = (timezone.now() + timedelta(hours=1)).isoformat()
    assert api.post(f"/chats/{a.chat.pk}/snooze", {"until": until}).status_code == 404
    for query in ({}, {"view": "unassigned"}, {"status": "open"}):
        assert a.chat.pk not in {c["id"] for c in api.get("/chats", **query).json()}
    assert Chat.objects.get(pk=a.chat.pk).status == ChatStatus.OPEN
    assert not ReadMarker.objects.filter(user=b.manager).exists()
    assert "Customer A" not in outsider.get("/inbox/?status=any").content.decode()


def test_api_fields_filters_and_actions(a: Tenant) -> None:
    colleague = factories.manager(a.business, username="colleague-a")
    api, other = Api(a.manager), Api(colleague)
    client_for(a.manager).get(f"/inbox/chat/{a.chat.pk}/")  # a.manager has read it

    row = api.get(f"/chats/{a.chat.pk}").json()
    assert (row["status"], row["snoozed_until"], row["unread_count"]) == ("open", None, 0)
    assert other.get("/chats").json()[0]["unread_count"] == 1

    until = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    snoozed = api.post(f"/chats/{a.chat.pk}/snooze", {"until": until.isoformat()}).json()
    assert snoozed["changed"]
    assert snoozed["chat"]["status"] == "snoozed"
    assert snoozed["chat"]["snoozed_until"].startswith(until.strftime("%Y-%m-%dT%H:%M"))
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    assert api.post(f"/chats/{a.chat.pk}/snooze", {"until": past}).json()["error"]

    assert [c["id"] for c in api.get("/chats", status="snoozed").json()] == [a.chat.pk]
    assert api.get("/chats", status="open").json() == []
    assert api.post(f"/chats/{a.chat.pk}/resolve").json()["chat"]["status"] == "resolved"
    assert api.post(f"/chats/{a.chat.pk}/reopen").json()["chat"]["status"] == "open"
    assert [c["id"] for c in api.get("/chats", view="unassigned").json()] == [a.chat.pk]
    assert api.get("/chats", view="mine").json() == []
    api.post(f"/chats/{a.chat.pk}/assign", {"user_id": a.manager.pk})
    assert [c["id"] for c in api.get("/chats", view="mine").json()] == [a.chat.pk]
    assert api.get("/chats", status="bogus").status_code == 422


@pytest_asyncio.fixture
async def sockets() -> AsyncIterator[list[WebsocketCommunicator]]:
    opened: list[WebsocketCommunicator] = []
    yield opened
    for communicator in opened:
        await communicator.disconnect()
    await sync_to_async(connections.close_all)()


@pytest.mark.asyncio
async def test_the_open_chat_marks_read_over_the_socket_and_only_there(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    page = await connect(a.manager, f"/ws/inbox/?chat={a.chat.pk}")
    listing = await connect(a.manager)
    foreign = await connect(b.manager)
    sockets.extend([page, listing, foreign])

    await page.send_json_to({"action": "read", "chat": a.chat.pk})
    await listing.send_json_to({"action": "read", "chat": a.chat.pk})  # not open there
    await foreign.send_json_to({"action": "read", "chat": a.chat.pk})
    assert (await listing.receive_json_from(timeout=5))["error"] == "not_found"
    assert (await foreign.receive_json_from(timeout=5))["error"] == "not_found"

    marker = await sync_to_async(ReadMarker.objects.get)(user=a.manager, chat=a.chat)
    assert marker.read_count == 1
    assert not await sync_to_async(ReadMarker.objects.filter(user=b.manager).exists)()


@pytest.mark.asyncio
async def test_assignment_and_a_woken_snooze_reach_open_pages_live(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    page = await connect(a.manager)
    foreign = await connect(b.manager)
    sockets.extend([page, foreign])

    await sync_to_async(assignment.assign)(a.chat.pk, a.manager.pk)
    assigned = await next_event(page, "chat.assigned")
    assert assigned["data"]["assignee_id"] == a.manager.pk
    assert assigned["data"]["customer"] == "Customer A"
    row = await next_event(page, "chat.updated")
    assert f'data-assignee="{a.manager.pk}"' in row["fragments"][0]["html"]

    until = timezone.now() + timedelta(minutes=5)
    await sync_to_async(status.snooze)(a.chat.pk, until=until, manager=a.manager)
    assert (await next_event(page, "chat.status"))["data"]["woke"] is False
    await sync_to_async(Chat.objects.filter(pk=a.chat.pk).update)(
        snoozed_until=timezone.now() - timedelta(seconds=1)
    )
    await sync_to_async(status.wake)(a.chat.pk)
    woke = await next_event(page, "chat.status")
    assert (woke["data"]["woke"], woke["data"]["status"]) == (True, "open")
    assert 'data-status="open"' in woke["fragments"][0]["html"]

    assert await foreign.receive_nothing(timeout=0.5)
