"""An open inbox page makes its manager online for auto-assignment; closing it ends that."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connections

from inbox.conversations import online
from inbox.site.asgi import application
from inbox.web.live import realtime
from tests.inbox.tenants import tenant
from tests.inbox.web.test_live import ORIGIN, _cookie, connect

pytestmark = pytest.mark.django_db(transaction=True)


async def _online(business_id: int) -> set[int]:
    return await sync_to_async(online.online_user_ids)(business_id)


@pytest.mark.asyncio
async def test_an_open_socket_is_online_in_its_own_business_only() -> None:
    a = await sync_to_async(tenant)("A")
    b = await sync_to_async(tenant)("B")
    try:
        socket = await connect(a.manager)  # returns once the server said hello
        assert await _online(a.business.pk) == {a.manager.pk}
        assert await _online(b.business.pk) == set()
        await socket.disconnect()
        assert await _online(a.business.pk) == set()
    finally:
        await sync_to_async(connections.close_all)()


async def _offline_within(business_id: int, seconds: float) -> bool:
    """Polls (yielding to the event loop, where a leaked heartbeat would run) until nobody of
    the business is online."""
    deadline = time.monotonic() + seconds
    while await _online(business_id):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@pytest.mark.asyncio
@pytest.mark.parametrize("action", ["subscribe", "read"])
async def test_a_unicode_digit_chat_id_is_an_error_frame_and_presence_ends_with_the_socket(
    action: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "²".isdigit() is true and int("²") fails: the frame once crashed the consumer and left
    its heartbeat running, so the manager stayed online (and got auto-assigned chats) forever.
    A short heartbeat and TTL make a leaked heartbeat visible within the test."""
    monkeypatch.setattr(online, "HEARTBEAT_SECONDS", 0.1)
    monkeypatch.setattr(online, "TTL_SECONDS", 0.5)
    a = await sync_to_async(tenant)("A")
    try:
        socket = await connect(a.manager)
        await socket.send_json_to({"action": action, "chat": "²"})
        answer: Any
        try:
            answer = await socket.receive_json_from(timeout=5)
        except Exception as exc:  # the consumer crashed
            answer = repr(exc)
        with contextlib.suppress(Exception):
            await socket.disconnect()
        assert await _offline_within(a.business.pk, online.TTL_SECONDS * 4), (
            "still online after the socket ended"
        )
        assert answer == {"type": "error", "error": "not_found"}
    finally:
        await sync_to_async(connections.close_all)()


@pytest.mark.asyncio
async def test_the_socket_survives_a_unicode_digit_frame() -> None:
    a = await sync_to_async(tenant)("A")
    try:
        socket = await connect(a.manager)
        for chat in ("²", "١", "１２", "9" * 5000, -1, 1.5, True):
            await socket.send_json_to({"action": "subscribe", "chat": chat})
            assert await socket.receive_json_from(timeout=5) == {
                "type": "error",
                "error": "not_found",
            }
        await socket.send_json_to({"action": "subscribe", "chat": a.chat.pk})
        assert await socket.receive_json_from(timeout=5) == {
            "type": "subscribed",
            "chat": a.chat.pk,
        }
        await socket.disconnect()
    finally:
        await sync_to_async(connections.close_all)()


@pytest.mark.asyncio
async def test_a_unicode_digit_chat_on_connect_is_refused_not_a_crash() -> None:
    a = await sync_to_async(tenant)("A")
    try:
        cookie = await sync_to_async(_cookie)(a.manager)
        socket = WebsocketCommunicator(
            application, "/ws/inbox/?chat=%C2%B2", headers=[cookie, ORIGIN]
        )
        connected, code = await socket.connect(timeout=5)
        assert (connected, code) == (False, 4403)
        assert await _online(a.business.pk) == set()
        await socket.wait(timeout=5)
    finally:
        await sync_to_async(connections.close_all)()


@pytest.mark.asyncio
async def test_a_handler_that_fails_closes_the_socket_and_ends_presence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Any failure, not only a frame's: a notification without its fields (a publisher of
    another release) breaks its handler; the socket closes with 1011 and the manager goes
    offline with it."""
    monkeypatch.setattr(online, "HEARTBEAT_SECONDS", 0.1)
    monkeypatch.setattr(online, "TTL_SECONDS", 0.5)
    a = await sync_to_async(tenant)("A")
    try:
        socket = await connect(a.manager)
        await get_channel_layer().group_send(
            realtime.user_group(a.manager.pk),
            {"type": "inbox.notify", "business_id": a.business.pk, "channel_id": a.channel.pk},
        )
        ended: Any
        try:
            ended = await socket.receive_output(timeout=5)
        except Exception as exc:  # the consumer crashed
            ended = repr(exc)
        assert await _offline_within(a.business.pk, online.TTL_SECONDS * 4), (
            "still online after the socket ended"
        )
        assert ended == {"type": "websocket.close", "code": 1011}
    finally:
        await sync_to_async(connections.close_all)()
