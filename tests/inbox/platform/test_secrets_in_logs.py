"""Secrets and customer numbers never reach the logs, whatever goes right or wrong.

Every record the application writes during a successful send, a send the Graph API refuses
(expired token), a send that keeps failing transiently, a model call with an API key to a dead
server and an alert posted to an unreachable webhook is captured through the production
formatter (JSON lines) and privacy filter, with every logger at DEBUG except those production
pins to WARNING (httpx/httpcore, whose request lines carry URLs).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from assistant.decision import brain
from inbox.conversations.models import Channel, Chat, Message
from inbox.conversations.outbound import send_reply
from inbox.platform.logs import JsonLines, PrivacyFilter
from inbox.upkeep import alerts
from tests import factories
from tests.assistant.builders import turn
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import refused_base_url

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "EAAGm0PX4ZCpsBAKZAsecretTokenValue1234567890"
LLM_KEY = "sk-live-llm-key-0987654321abcdef"
HOOK_TOKEN = "hook-token-5551234"
PHONE = "77011234567"


@pytest.fixture
def all_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    handler.addFilter(PrivacyFilter())
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    root.setLevel(previous)


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        yield emulator


def _chat(graph: GraphApiEmulator) -> Chat:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352247777", access_token=TOKEN
    )
    graph.register_number("106540352247777", TOKEN)
    return factories.chat(channel, customer_key=PHONE, customer_phone=PHONE)


def _ask(chat: Chat, text: str) -> Message:
    message = factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(version=chat.version + 1)
    chat.refresh_from_db()
    return message


def test_sends_failed_sends_model_calls_and_alerts_log_no_secret_and_no_phone_number(
    graph: GraphApiEmulator, all_logs: io.StringIO, settings: Any
) -> None:
    chat = _chat(graph)

    # A send that works.
    asked = _ask(chat, f"Call me on +{PHONE}")
    assert send_reply(chat.pk, "Sure!", generated_at_version=chat.version,
                      answered_up_to=asked.pk).sent  # fmt: skip
    # A transient failure, its retry queued, then a permanent one (expired token).
    graph.fail_next_sends(131000, times=1)
    asked = _ask(chat, "and the price?")
    assert send_reply(chat.pk, "12 000 KZT", generated_at_version=chat.version,
                      answered_up_to=asked.pk).reason == "retrying"  # fmt: skip
    graph.fail_next_sends(190, times=3)
    asked = _ask(chat, "thanks")
    failed = send_reply(chat.pk, "You're welcome", generated_at_version=chat.version,
                        answered_up_to=asked.pk)  # fmt: skip
    assert not failed.sent
    assert Message.objects.get(pk=failed.message_id).error_code == "190"
    # The model server with an API key, down.
    settings.LLM_BASE_URL = refused_base_url()
    settings.LLM_API_KEY = LLM_KEY
    settings.LLM_MAX_RETRIES = 0
    biz_channel = chat.channel
    result = brain.decide(turn(f"my number is {PHONE}", business_id=biz_channel.business_id,
                               channel_id=biz_channel.pk))  # fmt: skip
    assert result.decision.reason == "model_unavailable"
    # An alert posted to a webhook URL that carries a token, unreachable.
    settings.ALERT_WEBHOOK_URL = f"http://127.0.0.1:9/hooks?token={HOOK_TOKEN}"
    settings.ALERT_EMAILS = []
    alert = alerts.raise_alert(None, "queue_backlog", "slow", subject="ingest")
    assert alerts.notify(alert.pk) is True

    logged = all_logs.getvalue()
    assert "send.failed" in logged  # the failures were logged...
    assert "send.retry_queued" in logged
    assert "llm.endpoint_failed" in logged
    assert "alert.webhook_failed" in logged
    for secret in (TOKEN, LLM_KEY, HOOK_TOKEN, PHONE, "701 123"):
        assert secret not in logged, f"{secret!r} leaked into the logs"  # ...without secrets


@pytest.mark.parametrize(
    "number",
    ["+7.701.555.12.34", "8/701/5551234", "8–701–555–12–34", "8—701—555—12—34",
     "8\u00a0701\u00a0555\u00a012\u00a034", "8\u202f701\u202f555 12 34", "8_701_555_12_34",
     "+7 (701) 555.12.34"],
)  # fmt: skip
def test_numbers_with_any_separator_are_masked_in_log_messages(number: str) -> None:
    from inbox.platform.logs import mask_phone_numbers

    masked = mask_phone_numbers(f"customer {number} asked")

    assert masked == "customer …34 asked"


@pytest.mark.parametrize(
    ("line", "hidden", "shown"),
    [
        # The webhook handshake's token; the challenge is a number and is masked like one.
        ("GET /webhooks/whatsapp/?hub.mode=subscribe&hub.verify_token=s3cr3t&hub.challenge=1158201444 HTTP/1.1",
         ["s3cr3t", "1158201444"], ["hub.verify_token=***", "…44"]),
        # A manager searching for a customer, the number typed as people write it.
        ("GET /inbox/?q=%2B7+701+555+12+34 HTTP/1.1", ["555"], ["q=…34"]),
        ("GET /inbox/?q=8%20(701)%20555-12-34 HTTP/1.1", ["555"], ["q=…34"]),
        # ...with dots, slashes, en-dashes, non-breaking spaces or underscores between groups.
        ("GET /inbox/?q=%2B7.701.555.12.34 HTTP/1.1", ["555"], ["q=…34"]),
        ("GET /inbox/?q=8%2F701%2F5551234 HTTP/1.1", ["555"], ["q=…34"]),
        ("GET /inbox/?q=8/701/555/12/34 HTTP/1.1", ["555"], ["q=…34"]),
        ("GET /inbox/?q=8%E2%80%93701%E2%80%93555%E2%80%9312%E2%80%9334 HTTP/1.1", ["555"], ["q=…34"]),
        ("GET /inbox/?q=8%C2%A0701%C2%A0555%C2%A012%C2%A034 HTTP/1.1", ["555"], ["q=…34"]),
        ("GET /inbox/?q=8_701_555_12_34 HTTP/1.1", ["555"], ["q=…34"]),
        ("GET /inbox/?q=8.701.555.12.34. HTTP/1.1", ["555"], ["q=…34"]),
        # Addresses, versions and decimal amounts are no phone numbers.
        ("GET /inbox/?ip=10.20.30.40&v=1.2.3&amount=150000.50 HTTP/1.1", [],
         ["ip=10.20.30.40", "v=1.2.3", "amount=150000.50", "HTTP/1.1"]),
        # A secret with an encoded & in it is masked whole, before the line is decoded.
        ("GET /x/?token=abc%26def HTTP/1.1", ["abc", "def"], ["token=***"]),
        # An encoded line break cannot start a forged line in a plain-text log.
        ("GET /inbox/?q=a%0Aforged-entry HTTP/1.1", ["\n"], ["q=a?forged-entry"]),
    ],
)  # fmt: skip
def test_request_lines_in_access_logs_are_masked(
    line: str, hidden: list[str], shown: list[str]
) -> None:
    from inbox.platform.logs import mask_request_line

    masked = mask_request_line(line)

    for text in hidden:
        assert text not in masked
    for text in shown:
        assert text in masked
