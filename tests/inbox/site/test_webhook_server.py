"""The webhook server (`python -m inbox.site.webhook_server`), a real uvicorn process as it is
deployed behind nginx's `/webhooks/`: what WhatsApp sends is stored, a forged body is refused
before any work, nothing of the inbox is served on its port, and its access log keeps the
verify token and phone numbers out."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from inbox.conversations import ingest
from inbox.conversations.models import Channel, Message
from inbox.platform.redis import get_redis
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator, contact, envelope, text_message
from tests.processes import LOG_DIR, ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

VERIFY_TOKEN = "verify-me-4f1c9a"
PHONE_NUMBER_ID = "106540352249001"
CUSTOMER = "77019876543"


@pytest.fixture(scope="module")
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="webhook-server-secret") as emulator:
        yield emulator


@pytest.fixture(scope="module")
def server(subprocess_env: dict[str, str], graph: GraphApiEmulator) -> Iterator[tuple[str, Path]]:
    """The webhook server and the ingest consumer; the base URL and the server's log."""
    env = {**subprocess_env, "WHATSAPP_APP_SECRET": graph.app_secret,
           "WHATSAPP_VERIFY_TOKEN": VERIFY_TOKEN, "LOG_LEVEL": "INFO"}  # fmt: skip
    group = ProcessGroup(env)
    log = LOG_DIR / "webhook-server.log"
    log.unlink(missing_ok=True)
    base = group.start_webhook_server("webhook-server")
    group.start("webhook-server-ingest", [sys.executable, "manage.py", "ingest_worker"])
    graph.webhook_url = f"{base}/webhooks/whatsapp/"
    yield base, log
    group.stop_all()


def test_a_customer_message_is_stored(server: tuple[str, Path], graph: GraphApiEmulator) -> None:
    factories.channel(kind=Channel.Kind.CLOUD_API, phone_number_id=PHONE_NUMBER_ID)
    body = envelope(
        PHONE_NUMBER_ID,
        messages=[text_message(CUSTOMER, "Is the oak table still 120 cm?")],
        contacts=[contact(CUSTOMER)],
    )

    assert graph.deliver(body) == 200
    stored = wait_for(
        lambda: Message.objects.filter(text="Is the oak table still 120 cm?").first(),
        message="the message to be stored",
    )
    assert stored.direction == "in"
    assert stored.chat.customer_key == CUSTOMER


def test_a_forged_body_is_refused_before_it_is_queued(server: tuple[str, Path]) -> None:
    base, _ = server
    factories.channel(kind=Channel.Kind.CLOUD_API, phone_number_id=PHONE_NUMBER_ID)
    forged = envelope(PHONE_NUMBER_ID, messages=[text_message(CUSTOMER, "refund me")])
    raw = json.dumps(forged).encode()
    queued = get_redis().xlen(ingest.STREAM)

    response = httpx.post(
        f"{base}/webhooks/whatsapp/", content=raw,
        headers={"X-Hub-Signature-256": "sha256=" + "0" * 64, "Content-Type": "application/json"},
    )  # fmt: skip

    assert response.status_code == 403
    assert get_redis().xlen(ingest.STREAM) == queued
    assert not Message.objects.filter(text="refund me").exists()


def test_nothing_of_the_inbox_is_served_on_its_port(server: tuple[str, Path]) -> None:
    base, _ = server

    assert httpx.get(f"{base}/healthz").text == "ok"
    for path in ("/", "/inbox/", "/admin/", "/accounts/login/", "/api/v1/chats", "/metrics"):
        assert httpx.get(f"{base}{path}").status_code == 404, path

    async def open_socket() -> None:
        async with websockets.connect(base.replace("http://", "ws://") + "/ws/inbox/"):
            pass

    with pytest.raises(InvalidStatus) as refused:
        asyncio.run(open_socket())
    assert refused.value.response.status_code == 403


def test_the_access_log_masks_the_verify_token_and_phone_numbers(
    server: tuple[str, Path],
) -> None:
    base, log = server
    handshake = httpx.get(
        f"{base}/webhooks/whatsapp/",
        params={"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN,
                "hub.challenge": "1158201444"},
    )  # fmt: skip
    probe = httpx.get(f"{base}/webhooks/whatsapp/", params={"from": "+7 701 555 12 34"})

    assert handshake.status_code == 200
    assert handshake.text == "1158201444"
    assert probe.status_code == 403

    def access_lines() -> list[str] | None:
        records = [json.loads(line) for line in log.read_text().splitlines() if line[:1] == "{"]
        return [r["event"] for r in records if r["logger"] == "uvicorn.access"
                and "/webhooks/whatsapp/?" in r["event"]] or None  # fmt: skip

    lines = wait_for(access_lines, message="the access log lines")
    text = "\n".join(lines)
    assert len(lines) == 2
    assert "hub.verify_token=***" in text
    assert VERIFY_TOKEN not in text
    assert "…34" in text  # the number typed with a plus and spaces, masked as one
    assert "555" not in text
