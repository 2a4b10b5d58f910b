"""The bot's turn on a Cloud API chat whose customer-service window has closed: no model call,
no free text (WhatsApp would fail it with 131047); a person gets the chat with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from assistant.turn import take_turn
from inbox.conversations import window
from inbox.conversations.models import Channel, Chat, Handoff, HandoffReason, Message, Owner, Turn
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import Step

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        yield emulator


def _chat(graph: GraphApiEmulator, *, wrote_hours_ago: float) -> Chat:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242777", access_token="tok-t",
        late_answer_cutoff_minutes=100_000,
    )  # fmt: skip
    graph.register_number("106540352242777", "tok-t")
    written = timezone.now() - timedelta(hours=wrote_hours_ago)
    chat = factories.chat(
        channel, customer_key="77015550002", customer_phone="77015550002",
        last_customer_at=written, window_closes_at=written + window.WINDOW,
    )  # fmt: skip
    factories.customer_message(chat, "Do you have oak tables?", provider_timestamp=written)
    Chat.objects.filter(pk=chat.pk).update(version=1)
    return chat


def test_a_turn_after_the_window_hands_off_without_sending(settings, emu, graph) -> None:
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(reply="Yes, the oak table is 120 000 KZT."))
    chat = _chat(graph, wrote_hours_ago=25)

    turn = take_turn(chat.pk)

    assert turn is not None
    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, HandoffReason.WINDOW_CLOSED)
    assert emu.chat_requests == []  # nothing the model wrote could have been sent
    assert graph.sent_to("77015550002") == []
    assert not chat.messages.filter(direction=Message.Direction.OUTBOUND).exists()
    assert Chat.objects.get(pk=chat.pk).owner == Owner.PENDING_HUMAN
    handoff = Handoff.objects.get(chat=chat)
    assert handoff.reason == HandoffReason.WINDOW_CLOSED
    assert "only an approved template can reach the customer" in handoff.summary
    assert HandoffReason.label_for(handoff.reason) == "WhatsApp window closed: template only"


def test_inside_the_window_the_bot_answers(settings, emu, graph) -> None:
    settings.LLM_BASE_URL = emu.base_url
    emu.script(Step.decision(reply="Yes, we have oak tables."))
    chat = _chat(graph, wrote_hours_ago=0.01)

    turn = take_turn(chat.pk)

    assert turn is not None
    assert turn.outcome == Turn.Outcome.ANSWERED
    assert [m.text for m in graph.sent_to("77015550002")] == ["Yes, we have oak tables."]
