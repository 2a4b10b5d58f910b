"""Hostile input: what anyone may send without a login or a token is bounded before any work.

Every endpoint that answers strangers (the WhatsApp Cloud API and bridge webhooks, the Bitrix24
event webhook, the login and password-reset forms) refuses a body over its size limit or with
more fields than `FORM_MAX_FIELDS` with a 4xx, queues and stores nothing, and a declared
oversize body on the webhooks is refused without being read. Driven through the real ASGI
application, as a client would reach it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from inbox.conversations import ingest
from inbox.conversations.models import Channel, Message
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from integrations.bitrix24.models import PendingPull
from integrations.whatsapp.webhooks import routes
from tests import factories

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

LIMIT = 64 * 1024
ANONYMOUS_POSTS = [
    "/webhooks/whatsapp/",
    "/webhooks/bridge/{bridge}/",
    "/webhooks/bitrix24/",
    "/accounts/login/",
    "/accounts/password_reset/",
]


@pytest.fixture(autouse=True)
def _small_limits(settings: Any) -> None:
    settings.WHATSAPP_APP_SECRET = "limits-app-secret"
    settings.WHATSAPP_VERIFY_TOKEN = "limits-verify-token"
    settings.WEBHOOK_MAX_BODY_BYTES = LIMIT
    settings.BITRIX24_EVENT_MAX_BODY_BYTES = LIMIT
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    routes.clear()


@pytest.fixture
def bridge() -> Channel:
    return factories.channel(kind=Channel.Kind.BRIDGE, bridge_token="limits-bridge-token")


def _request(method: str, path: str, body: bytes = b"", **headers: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            if path.startswith("/accounts/"):
                # With a CSRF cookie, as a browser has one: without, the form is a 403 unread.
                await client.get(path)
            return await client.request(method, path, content=body, headers=headers)

    return asyncio.run(go())


def _nothing_stored() -> None:
    assert get_redis().xlen(ingest.STREAM) == 0
    assert get_redis().llen("integrations") == 0
    assert not Message.objects.exists()
    assert not PendingPull.objects.exists()


@pytest.mark.parametrize("path", ANONYMOUS_POSTS)
def test_a_body_over_the_size_limit_is_refused(path: str, bridge: Channel) -> None:
    body = b"a=" + b"x" * (LIMIT + 1)
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    answer = _request("POST", path.format(bridge=bridge.pk), body, **form)

    assert answer.status_code == (400 if path.startswith("/accounts/") else 413)
    _nothing_stored()


@pytest.mark.parametrize("path", ANONYMOUS_POSTS)
def test_a_body_of_more_fields_than_the_cap_is_refused_quickly(
    path: str, bridge: Channel, settings: Any
) -> None:
    """`a[]=&` × 20,000: 100 KB that cost the Bitrix24 webhook 31 s of CPU when parsed."""
    settings.WEBHOOK_MAX_BODY_BYTES = settings.BITRIX24_EVENT_MAX_BODY_BYTES = 256 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    started = time.process_time()
    answer = _request("POST", path.format(bridge=bridge.pk), b"a[]=&" * 20_000, **form)

    assert time.process_time() - started < 2
    # The WhatsApp webhooks take JSON, and only once signed or with the token: a 403 unparsed.
    expected = 403 if path.startswith("/webhooks/whatsapp") or "bridge" in path else 400
    assert answer.status_code == expected
    _nothing_stored()


def test_the_verification_handshake_refuses_a_query_of_more_fields_than_the_cap(
    settings: Any,
) -> None:
    fields = "&".join(f"f{i}=1" for i in range(settings.FORM_MAX_FIELDS + 1))
    handshake = "hub.mode=subscribe&hub.verify_token=limits-verify-token&hub.challenge=42"

    assert _request("GET", f"/webhooks/whatsapp/?{handshake}&{fields}").status_code == 400
    assert _request("GET", f"/webhooks/whatsapp/?{handshake}").text == "42"


@pytest.mark.parametrize("path", ["/webhooks/whatsapp/", "/webhooks/bridge/{bridge}/"])
def test_a_declared_oversize_body_is_refused_without_reading_it(path: str, bridge: Channel) -> None:
    sent: list[MutableMapping[str, Any]] = []
    read: list[str] = []

    async def receive() -> dict[str, Any]:
        read.append("body")
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "method": "POST", "path": path.format(bridge=bridge.pk),
        "query_string": b"", "headers": [(b"content-length", str(10**12).encode()),
                                         (b"content-type", b"application/json")],
    }  # fmt: skip
    asyncio.run(application(scope, receive, send))

    assert sent[0]["status"] == 413
    assert read == []
    _nothing_stored()
