"""The live push: the websocket consumer over the real Redis pub/sub channel layer, the sequence
numbers, the replay a reconnecting page asks for, and tenant isolation of all of it."""

from __future__ import annotations

import time
import weakref
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from inbox.conversations import ingest, online, ownership
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Membership
from inbox.site.asgi import application
from inbox.web.live import realtime
from tests import factories
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


def _cookie(user: Any) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def connect(user: Any, path: str = "/ws/inbox/") -> WebsocketCommunicator:
    cookie = await sync_to_async(_cookie)(user)
    communicator = WebsocketCommunicator(application, path, headers=[cookie, ORIGIN])
    connected, _ = await communicator.connect(timeout=5)
    assert connected, f"socket to {path} refused"
    hello = await communicator.receive_json_from(timeout=5)
    assert hello["type"] == "hello"
    return communicator


@pytest_asyncio.fixture
async def sockets() -> AsyncIterator[list[WebsocketCommunicator]]:
    opened: list[WebsocketCommunicator] = []
    yield opened
    for communicator in opened:
        await communicator.disconnect()
    # The consumers' and the tests' database work ran on asgiref's shared thread: close its
    # connection, or the test database cannot be dropped at the end of the session.
    await sync_to_async(connections.close_all)()


def customer_event(t: Tenant, text: str, key: str | None = None) -> InboundEvent:
    return InboundEvent(
        channel_id=t.channel.pk,
        provider_message_id=f"wamid.{time.monotonic_ns()}",
        chat_key=key or t.chat.customer_key,
        from_me=False,
        kind="text",
        text=text,
        media=None,
        provider_ts=int(time.time()),
        customer_name="Aigerim",
    )


# Per socket: the rest of a `batch` frame, handed out one event at a time.
_unread: weakref.WeakKeyDictionary[WebsocketCommunicator, list[dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)


async def next_message(communicator: WebsocketCommunicator) -> dict[str, Any]:
    """The next frame, a `batch` frame's events one by one, in order, as live.js applies them
    (the events of one publisher batch arrive in one frame)."""
    unread = _unread.setdefault(communicator, [])
    if not unread:
        frame: dict[str, Any] = await communicator.receive_json_from(timeout=5)
        unread.extend(frame["events"] if frame.get("type") == "batch" else [frame])
    return unread.pop(0)


async def next_event(communicator: WebsocketCommunicator, name: str) -> dict[str, Any]:
    while True:
        message = await next_message(communicator)
        if message.get("event") == name:
            return message


@pytest.mark.asyncio
async def test_anonymous_and_foreign_origin_sockets_are_refused(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    anonymous = WebsocketCommunicator(application, "/ws/inbox/", headers=[ORIGIN])
    assert (await anonymous.connect(timeout=5))[0] is False

    cookie = await sync_to_async(_cookie)(a.manager)
    foreign = WebsocketCommunicator(
        application, "/ws/inbox/", headers=[cookie, (b"origin", b"https://evil.example")]
    )
    assert (await foreign.connect(timeout=5))[0] is False


def _ended_session_cookie(user: Any) -> tuple[bytes, bytes]:
    """The cookie of a session the manager then logged out of."""
    client = Client()
    client.force_login(user)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    client.logout()
    return cookie


@pytest.mark.asyncio
async def test_a_socket_with_the_cookie_of_an_ended_session_is_refused(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    cookie = await sync_to_async(_ended_session_cookie)(a.manager)
    stale = WebsocketCommunicator(application, "/ws/inbox/", headers=[cookie, ORIGIN])
    assert (await stale.connect(timeout=5))[0] is False

    # The session is read at connect, and the frames of an open socket still arrive.
    page = await connect(a.manager)
    sockets.append(page)
    await sync_to_async(ownership.take_over)(a.chat.pk, manager=a.manager)
    assert (await next_event(page, "chat.changed"))["chat"] == a.chat.pk


@pytest.mark.asyncio
async def test_accepted_message_reaches_open_pages_with_consecutive_numbers(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    page_a = await connect(a.manager)
    chat_a = await connect(a.manager, f"/ws/inbox/?chat={a.chat.pk}")
    page_b = await connect(b.manager)
    sockets.extend([page_a, chat_a, page_b])

    await sync_to_async(ingest.accept)(customer_event(a, "Do you deliver to Almaty?"))
    await sync_to_async(ingest.accept)(customer_event(a, "And to Astana?"))

    first = await next_event(page_a, "message.changed")
    second = await next_event(page_a, "message.changed")
    assert second["seq"] == first["seq"] + 1
    assert [f["scope"] for f in first["fragments"]] == ["list"]
    assert "Do you deliver to Almaty?" in first["fragments"][0]["html"]

    in_chat = await next_event(chat_a, "message.changed")
    assert in_chat["seq"] == first["seq"]
    ids = [f["id"] for f in in_chat["fragments"]]
    assert f"chat-row-{a.chat.pk}" in ids
    assert any(i.startswith("msg-") for i in ids)

    assert await page_b.receive_nothing(timeout=0.5)


@pytest.mark.asyncio
async def test_pushed_fragments_escape_customer_text(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    page = await connect(a.manager, f"/ws/inbox/?chat={a.chat.pk}")
    sockets.append(page)

    await sync_to_async(ingest.accept)(customer_event(a, "<script>alert(1)</script>"))

    event = await next_event(page, "message.changed")
    html = " ".join(f["html"] for f in event["fragments"])
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.asyncio
async def test_a_chat_of_another_business_cannot_be_subscribed(
    a: Tenant, b: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    cookie = await sync_to_async(_cookie)(a.manager)
    by_url = WebsocketCommunicator(
        application, f"/ws/inbox/?chat={b.chat.pk}", headers=[cookie, ORIGIN]
    )
    assert (await by_url.connect(timeout=5))[0] is False

    page = await connect(a.manager)
    sockets.append(page)
    await page.send_json_to({"action": "subscribe", "chat": b.chat.pk})
    assert await page.receive_json_from(timeout=5) == {"type": "error", "error": "not_found"}

    await sync_to_async(ownership.take_over)(b.chat.pk, manager=b.manager)
    assert await page.receive_nothing(timeout=0.5)


@pytest.mark.asyncio
async def test_frames_that_are_not_json_objects_are_refused_and_the_socket_stays_open(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    page = await connect(a.manager)
    sockets.append(page)
    for frame in ("not json", "[1, 2]", "[" * 100_000 + "]" * 100_000, '"text"'):
        await page.send_to(text_data=frame)
        assert await page.receive_json_from(timeout=5) == {"type": "error", "error": "bad_frame"}
    await page.send_to(bytes_data=b"\x00\x01")
    assert await page.receive_json_from(timeout=5) == {"type": "error", "error": "bad_frame"}

    # Still the same live socket: a subscription works and pushes arrive.
    await page.send_json_to({"action": "subscribe", "chat": a.chat.pk})
    assert await page.receive_json_from(timeout=5) == {"type": "subscribed", "chat": a.chat.pk}
    await sync_to_async(ownership.take_over)(a.chat.pk, manager=a.manager)
    assert (await next_event(page, "chat.changed"))["chat"] == a.chat.pk


@pytest.mark.asyncio
async def test_subscribing_switches_the_open_chat(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    other = await sync_to_async(factories.chat)(a.channel, customer_name="Second")
    page = await connect(a.manager, f"/ws/inbox/?chat={a.chat.pk}")
    sockets.append(page)

    await page.send_json_to({"action": "subscribe", "chat": other.pk})
    reply = await page.receive_json_from(timeout=5)
    while reply["type"] == "presence":  # who views the chat: tests/inbox/web/test_presence.py
        reply = await page.receive_json_from(timeout=5)
    assert reply == {"type": "subscribed", "chat": other.pk}
    await sync_to_async(ownership.take_over)(other.pk, manager=a.manager)

    event = await next_event(page, "chat.changed")
    assert event["chat"] == other.pk
    assert f"chat-header-{other.pk}" in [f["id"] for f in event["fragments"]]
    assert event["pending"] == 0


@pytest.mark.asyncio
async def test_restricted_manager_gets_only_the_number_of_other_channels_events(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    wholesale = await sync_to_async(factories.channel)(a.business, name="Wholesale")
    await sync_to_async(lambda: Membership.objects.get(user=a.manager).channels.add(wholesale))()
    page = await connect(a.manager)
    sockets.append(page)

    await sync_to_async(ingest.accept)(customer_event(a, "hidden from this manager"))

    message = await page.receive_json_from(timeout=5)
    while message.get("type") != "skip":
        assert "hidden from this manager" not in str(message)
        message = await page.receive_json_from(timeout=5)
    assert set(message) == {"type", "seq", "business"}


@pytest.mark.asyncio
async def test_new_waiting_chat_notifies_with_the_pending_count(
    a: Tenant, sockets: list[WebsocketCommunicator]
) -> None:
    page = await connect(a.manager)
    sockets.append(page)

    await sync_to_async(ownership.request_human)(a.chat.pk, reason="outside_knowledge_base")

    event = await next_event(page, "chat.changed")
    assert event["data"]["notify"] is True
    assert event["data"]["reason"] == "outside_knowledge_base"
    assert event["pending"] == 1


def test_reconnecting_page_replays_what_it_missed(a: Tenant, b: Tenant) -> None:
    client = Client()
    client.force_login(a.manager)
    # A colleague's inbox stays open while this laptop sleeps (what their socket records).
    online.socket_open([a.business.pk], a.admin.pk, "colleague-socket")
    start = realtime.current_sequence(a.business.pk)
    ingest.accept(customer_event(a, "while the laptop slept"))
    ownership.take_over(a.chat.pk, manager=a.manager)

    data = client.get(
        f"/inbox/events/?business={a.business.pk}&since={start}&chat={a.chat.pk}"
    ).json()

    assert data["reset"] is False
    assert [e["seq"] for e in data["events"]] == list(range(start + 1, data["seq"] + 1))
    assert "while the laptop slept" in str(data["events"])
    assert any(f["id"].startswith("chat-header-") for e in data["events"] for f in e["fragments"])
    # Another business's log is not readable, and a log that no longer reaches back says so.
    assert client.get(f"/inbox/events/?business={b.business.pk}&since=0").status_code == 404
    trimmed = realtime.LOG_LENGTH + 5
    for _ in range(trimmed):
        realtime.publish(a.business.pk, "noop", {}, channel_id=a.channel.pk)
    assert client.get(f"/inbox/events/?business={a.business.pk}&since={start}").json()["reset"]
