"""The customer sees their messages read and "typing…" while the assistant composes: one Graph
API read mark with the typing indicator as the turn starts, shown again while a slow model is
still composing, nothing when the channel turns it off, and never a broken turn when the
platform refuses it. Each turn runs end to end against the Graph API and LLM emulators."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from assistant.turn import take_turn
from inbox.conversations.models import Channel, Chat, Turn
from integrations.whatsapp.cloud_api import CloudApiTransport
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import Step
from tests.emulators.waha import WahaEmulator

pytestmark = pytest.mark.django_db

TOKEN = "graph-token"
CUSTOMER = "77011234567"
REPLY = "Hello! We are open from 9 to 18."


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as server:
        settings.WHATSAPP_GRAPH_URL = server.graph_url
        yield server


def _cloud_chat(graph: GraphApiEmulator, **channel_fields: Any) -> tuple[Chat, str]:
    channel = factories.channel(kind=Channel.Kind.CLOUD_API, access_token=TOKEN, **channel_fields)
    graph.register_number(channel.phone_number_id, TOKEN)
    chat = factories.chat(channel, customer_key=CUSTOMER, customer_phone=CUSTOMER)
    factories.customer_message(chat, "Hi", provider_message_id="wamid.first")
    factories.customer_message(chat, "When are you open?", provider_message_id="wamid.newest")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    return chat, channel.phone_number_id


def _turn(settings: Any, emu: Any, chat: Chat, step: Step | None = None) -> Turn:
    settings.LLM_BASE_URL = emu.base_url
    emu.script(step or Step.decision(reply=REPLY))
    turn = take_turn(chat.pk)
    assert turn is not None
    return turn


def test_the_turn_marks_the_newest_message_read_with_typing_before_the_reply(
    settings: Any, emu: Any, graph: GraphApiEmulator
) -> None:
    chat, number = _cloud_chat(graph)

    turn = _turn(settings, emu, chat)

    assert turn.outcome == Turn.Outcome.ANSWERED
    (reply,) = graph.sent_to(CUSTOMER)
    assert reply.text == REPLY
    (read,) = graph.reads_for(number)
    assert (read.message_id, read.typing) == ("wamid.newest", True)
    assert read.at <= reply.at


def test_a_channel_without_read_receipts_makes_no_call(
    settings: Any, emu: Any, graph: GraphApiEmulator
) -> None:
    chat, number = _cloud_chat(graph, read_receipts=False)

    _turn(settings, emu, chat)

    assert [m.text for m in graph.sent_to(CUSTOMER)] == [REPLY]
    assert graph.reads_for(number) == []


def test_a_channel_without_the_typing_indicator_only_marks_read(
    settings: Any, emu: Any, graph: GraphApiEmulator
) -> None:
    chat, number = _cloud_chat(graph, typing_indicator=False)
    settings.TYPING_REFRESH_SECONDS = 0.05

    _turn(settings, emu, chat, Step.decision(reply=REPLY, delay=0.5))

    assert [(r.message_id, r.typing) for r in graph.reads_for(number)] == [("wamid.newest", False)]


def test_a_slow_model_gets_the_indicator_shown_again_and_nothing_after_the_turn(
    settings: Any, emu: Any, graph: GraphApiEmulator
) -> None:
    chat, number = _cloud_chat(graph)
    settings.TYPING_REFRESH_SECONDS = 0.2  # stands for WhatsApp's 25 s (refreshed at 20 s)

    turn = _turn(settings, emu, chat, Step.decision(reply=REPLY, delay=1.5))

    assert turn.outcome == Turn.Outcome.ANSWERED
    reads = graph.reads_for(number)
    assert len(reads) >= 3, reads
    assert all(r.typing and r.message_id == "wamid.newest" for r in reads)
    (reply,) = graph.sent_to(CUSTOMER)
    assert all(r.at <= reply.at for r in reads)
    # The refresher ended with the turn: nothing can show "typing…" after it.
    assert not [t for t in threading.enumerate() if t.name == f"typing-chat-{chat.pk}"]


def test_a_refused_read_mark_never_breaks_the_turn(
    settings: Any, emu: Any, graph: GraphApiEmulator
) -> None:
    chat, number = _cloud_chat(graph)
    graph.fail_next_reads(131000, http_status=500)

    turn = _turn(settings, emu, chat)

    assert turn.outcome == Turn.Outcome.ANSWERED
    assert [m.text for m in graph.sent_to(CUSTOMER)] == [REPLY]
    assert graph.reads_for(number) == []


def test_a_sandbox_channel_turn_needs_no_read_mark(settings: Any, emu: Any) -> None:
    chat = factories.chat(factories.channel())
    factories.customer_message(chat, "When are you open?")
    Chat.objects.filter(pk=chat.pk).update(version=1)

    turn = _turn(settings, emu, chat)

    assert turn.outcome == Turn.Outcome.ANSWERED


def test_a_waha_channel_turn_shows_seen_and_typing_before_the_reply(
    settings: Any, emu: Any
) -> None:
    with WahaEmulator(api_key="waha-key", echo_sends=False) as waha:
        channel = factories.channel(kind=Channel.Kind.WAHA, bridge_url=waha.base_url,
                                    bridge_token="waha-key", gateway_instance="default")  # fmt: skip
        chat = factories.chat(channel, customer_key="77011234567@c.us")
        factories.customer_message(chat, "When are you open?", provider_message_id="3EB0C1")
        Chat.objects.filter(pk=chat.pk).update(version=1)

        turn = _turn(settings, emu, chat)

        assert turn.outcome == Turn.Outcome.ANSWERED
        assert waha.presence == [
            ("/api/sendSeen", "77011234567@c.us"),
            ("/api/startTyping", "77011234567@c.us"),
        ]
        assert [m.text for m in waha.sent] == [REPLY]


class TestTheEmulatorTakesOnlyTheRealShape:
    @pytest.fixture
    def number(self, graph: GraphApiEmulator) -> str:
        graph.register_number("106540352240001", TOKEN)
        return "106540352240001"

    def _post(self, graph: GraphApiEmulator, number: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(
            f"{graph.graph_url}/{number}/messages",
            json=body,
            headers={"Authorization": f"Bearer {TOKEN}"},
        )

    def test_the_transport_sends_read_with_typing_and_read_alone(
        self, graph: GraphApiEmulator, number: str
    ) -> None:
        channel = factories.channel(
            kind=Channel.Kind.CLOUD_API, phone_number_id=number, access_token=TOKEN
        )
        chat = factories.chat(channel)
        transport = CloudApiTransport(channel)

        transport.mark_read(chat, message_id="wamid.A", typing=True)
        transport.mark_read(chat, message_id="wamid.B", typing=False)

        assert [(r.message_id, r.typing) for r in graph.reads_for(number)] == [
            ("wamid.A", True),
            ("wamid.B", False),
        ]
        assert graph.sent == []  # a read mark is no message

    def test_the_documented_body_is_accepted(self, graph: GraphApiEmulator, number: str) -> None:
        response = self._post(
            graph,
            number,
            {
                "messaging_product": "whatsapp",
                "status": "read",
                "message_id": "wamid.X",
                "typing_indicator": {"type": "text"},
            },
        )
        assert (response.status_code, response.json()) == (200, {"success": True})

    @pytest.mark.parametrize(
        "body",
        [
            {"status": "read", "message_id": "wamid.X"},
            {"messaging_product": "whatsapp", "status": "delivered", "message_id": "wamid.X"},
            {"messaging_product": "whatsapp", "status": "read"},
            {"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.X",
             "typing_indicator": {"type": "audio"}},
            {"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.X",
             "to": CUSTOMER},
        ],
    )  # fmt: skip
    def test_a_malformed_read_mark_is_refused_like_meta_does(
        self, graph: GraphApiEmulator, number: str, body: dict[str, Any]
    ) -> None:
        response = self._post(graph, number, body)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == 100
        assert graph.reads == []
