"""Tenant isolation, by enumeration: every URL pattern the resolver knows and every websocket
route is tried as a manager (and as an admin) of business A with the ids of business B's
objects. Routes added later are covered automatically; a route with a parameter this test does
not know fails here until someone says which of B's objects fills it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import ReplayRun
from inbox.conversations import ownership, progress
from inbox.conversations.models import Chat, Job, Membership, Owner
from inbox.site.asgi import application
from inbox.site.routing import websocket_urlpatterns
from inbox.web.api_tokens import create_token
from tests.inbox.tenants import Tenant, tenant

pytestmark = pytest.mark.django_db(transaction=True)

# Public by design or protected by another rule, each with its reason.
SKIPPED_PREFIXES = {
    "admin/": "Django admin: staff only (tested below: a manager is sent to the admin login)",
    "accounts/": "login, logout and password flows are public",
}
# Answers above 499 that are the route's contract, not a failure.
EXPECTED_ERRORS = {"readyz": {503}}  # names the dependency that is down (no worker here)
B_MARKERS = ("Customer B", "secret question of B", "summary of B", "Channel B")
DENIED = {401, 403, 404, 405}


def routes(patterns: list[Any], prefix: str = "") -> Iterator[str]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern)


def fill(route: str, ids: dict[str, int]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(2)
        assert name in ids, f"route {route!r}: say which of B's objects fills <{name}>"
        return str(ids[name])

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route).lstrip("^").rstrip("$")


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    t = tenant("B")
    ownership.request_human(t.chat.pk, reason="outside_knowledge_base")
    return t


@pytest.fixture
def b_ids(b: Tenant) -> dict[str, int]:
    """Which of B's objects fills each kind of id in a route."""
    b_list = apply_price_list(parse_price_file(b"name,price\nB's table,100\n", "b.csv"), b.business)
    return {
        "list_id": b_list.price_list_id,
        "item_id": b_list.items.get().pk,
        "chat_id": b.chat.pk,
        "channel_id": b.channel.pk,
        "message_id": b.message.pk,
        "handoff_id": b.handoff.pk,
        "business_id": b.business.pk,
        "user_id": b.manager.pk,
        "run_id": ReplayRun.objects.create(business=b.business).pk,
        "membership_id": Membership.objects.get(user=b.manager).pk,
        "job_id": progress.start(b.business.pk, Job.Kind.PURGE, total=10),
        "version_id": b_list.pk,
    }


def visitor(user: Any) -> Client:
    _, token = create_token(user, "walker")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    client.force_login(user)
    return client


@pytest.mark.parametrize("role", ["manager", "admin"])
def test_every_url_denies_or_hides_another_business(
    a: Tenant, b: Tenant, b_ids: dict[str, int], role: str
) -> None:
    client = visitor(a.manager if role == "manager" else a.admin)
    ids = b_ids
    query = (
        f"?business={b.business.pk}&chat={b.chat.pk}&channel={b.channel.pk}&since=0"
        f"&owner=pending_human&reason=outside_knowledge_base&q=Customer"
    )
    walked = []
    for route in routes(get_resolver().url_patterns):
        if any(route.startswith(prefix) for prefix in SKIPPED_PREFIXES):
            continue
        url = fill(route, ids)
        walked.append(url)
        for method in ("get", "post"):
            if method == "post":
                # A body every action accepts, so the request gets past input validation.
                body_in = {
                    "text": "hello", "user_id": a.manager.pk, "assignee": a.manager.pk,
                    "until": (timezone.now() + timedelta(hours=1)).isoformat(),
                    "category": "wrong_amount", "name": "order_ready", "language": "en_US",
                }  # fmt: skip
                response = client.post(url, body_in, content_type="application/json")
            else:
                response = client.get(url)
            body = response.content.decode(errors="replace")
            if "<" in route:
                assert response.status_code in DENIED, (
                    f"{method.upper()} {url}: {response.status_code}"
                )
            else:
                ok = response.status_code < 500
                ok = ok or response.status_code in EXPECTED_ERRORS.get(route, set())
                assert ok, f"{method.upper()} {url}: {response.status_code}"
            assert not any(m in body for m in B_MARKERS), f"{method.upper()} {url} shows B's data"
        if "<" not in route:
            response = client.get(url + query)
            body = response.content.decode(errors="replace")
            ok = response.status_code < 500
            ok = ok or response.status_code in EXPECTED_ERRORS.get(route, set())
            assert ok, f"GET {url + query}: {response.status_code}"
            assert not any(m in body for m in B_MARKERS), f"GET {url + query} shows B's data"

    assert f"/inbox/chat/{b.chat.pk}/take-over/" in walked
    assert f"/api/v1/chats/{b.chat.pk}/reply" in walked
    chat = Chat.objects.get(pk=b.chat.pk)
    assert chat.owner == Owner.PENDING_HUMAN
    assert chat.assigned_to_id is None
    assert not chat.messages.exclude(pk=b.message.pk).exists()
    assert Membership.objects.filter(user=b.manager, business=b.business).exists()


def test_django_admin_is_staff_only(a: Tenant) -> None:
    client = visitor(a.admin)
    response = client.get("/admin/inbox/chat/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def _cookie(user: Any) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


@pytest.mark.asyncio
async def test_every_websocket_route_refuses_another_business(
    a: Tenant, b: Tenant, b_ids: dict[str, int]
) -> None:
    headers = [await sync_to_async(_cookie)(a.manager), (b"origin", b"http://127.0.0.1")]
    ids = b_ids
    try:
        for pattern in websocket_urlpatterns:
            path = fill(str(pattern.pattern), ids)
            refused = WebsocketCommunicator(
                application, f"{path}?chat={b.chat.pk}", headers=headers
            )
            assert (await refused.connect(timeout=5))[0] is False, path

            socket = WebsocketCommunicator(application, path, headers=headers)
            connected, _ = await socket.connect(timeout=5)
            assert connected, path
            hello = await socket.receive_json_from(timeout=5)
            assert str(b.business.pk) not in hello["seq"]
            await socket.send_json_to({"action": "subscribe", "chat": b.chat.pk})
            assert (await socket.receive_json_from(timeout=5))["type"] == "error"
            await sync_to_async(ownership.take_over)(b.chat.pk, manager=b.manager)
            assert await socket.receive_nothing(timeout=0.5), path
            await sync_to_async(ownership.release)(b.chat.pk, manager=b.manager)
            await socket.disconnect()
    finally:
        await sync_to_async(connections.close_all)()
