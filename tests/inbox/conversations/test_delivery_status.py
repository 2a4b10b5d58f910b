"""Delivery statuses of our messages: forward only, a failure explained in plain words and
counted, a 131026 that stops the bot until the customer writes again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from prometheus_client import REGISTRY

from assistant.turn import take_turn
from inbox.conversations import delivery_errors, delivery_status, ingest
from inbox.conversations.events import InboundEvent, StatusEvent
from inbox.conversations.models import Channel, Chat, Message, Turn
from inbox.conversations.outbound import send_manager_reply, send_reply
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = pytest.mark.django_db(transaction=True)

CUSTOMER = "77011234567"


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        yield emulator


@pytest.fixture
def chat(graph: GraphApiEmulator) -> Chat:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922", access_token="tok-1"
    )
    graph.register_number("106540352242922", "tok-1")
    return factories.chat(channel, customer_key=CUSTOMER, customer_phone=CUSTOMER)


def _status(message: Message, status: str, *, code: str = "", title: str = "",
            at: int | None = None) -> StatusEvent:  # fmt: skip
    return StatusEvent(
        channel_id=message.channel_id,
        provider_message_id=message.provider_message_id,
        status=status,  # type: ignore[arg-type]
        provider_ts=at if at is not None else int(time.time()),
        error_code=code,
        error_title=title,
    )


def _customer_writes(chat: Chat, text: str, at: int) -> Message:
    """A customer message through the ingest, as the consumer stores it."""
    event = InboundEvent(
        channel_id=chat.channel_id, provider_message_id=f"wamid.in{time.monotonic_ns()}",
        chat_key=chat.customer_key, from_me=False, kind="text", text=text, media=None,
        provider_ts=at,
    )  # fmt: skip
    accepted = ingest.accept(event)
    assert accepted.message_id is not None
    return Message.objects.get(pk=accepted.message_id)


def _failed_count(code: str, author: str) -> float:
    value = REGISTRY.get_sample_value(
        "inbox_replies_failed_total", {"author": author, "code": code}
    )
    return value or 0.0


def _page(chat: Chat) -> str:
    client = Client()
    client.force_login(factories.manager(chat.channel.business))
    return client.get(f"/inbox/chat/{chat.pk}/").content.decode()


class TestExplanations:
    @pytest.mark.parametrize(
        ("code", "words"),
        [
            ("131026", "not on WhatsApp or cannot receive messages"),
            ("131047", "only lets a template message through"),
            ("131049", "limits how many marketing messages"),
            ("131050", "stop marketing messages"),
            ("131051", "does not support this kind of message"),
            ("131052", "could not fetch the attached file"),
            ("131053", "did not accept the attached file"),
            ("130429", "from this number in a short time"),
            ("131056", "to this customer in a short time"),
        ],
    )
    def test_each_known_code_has_its_own_sentence(self, code: str, words: str) -> None:
        assert words in delivery_errors.explain(code, "Meta's own title")
        assert "Meta's own title" not in delivery_errors.explain(code, "Meta's own title")

    def test_an_unknown_meta_code_gets_the_generic_sentence_and_metas_title(self) -> None:
        text = delivery_errors.explain("131000", "Something went wrong")
        assert (
            text == "WhatsApp could not deliver this message. WhatsApp says: Something went wrong"
        )

    def test_our_own_codes_keep_the_sentence_written_for_the_manager(self) -> None:
        assert delivery_errors.explain("storage", "The file could not be stored.") == (
            "The file could not be stored."
        )

    def test_only_undeliverable_and_the_closed_window_refuse_a_resend(self) -> None:
        refused = {c for c in delivery_errors.Code if delivery_errors.resend_refusal(c)}
        assert refused == {"131026", "131047"}
        assert "template" in delivery_errors.resend_refusal("131047")


class TestApply:
    def test_a_failed_status_is_shown_under_the_message_in_plain_words_escaped(
        self, chat: Chat, graph: GraphApiEmulator
    ) -> None:
        outcome = send_manager_reply(chat.pk, "Your table ships today.", manager=None)
        message = Message.objects.get(pk=outcome.message_id)
        before = _failed_count("131000", "manager")

        delivery_status.apply(
            _status(message, "failed", code="131000", title="<b>Something</b> went wrong")
        )

        message.refresh_from_db()
        assert (message.status, message.error_code) == ("failed", "131000")
        page = _page(chat)
        assert "WhatsApp could not deliver this message." in page
        assert "&lt;b&gt;Something&lt;/b&gt; went wrong" in page
        assert "<b>Something</b>" not in page
        assert _failed_count("131000", "manager") == before + 1

    def test_a_failure_never_overrides_read_and_statuses_only_move_forward(
        self, chat: Chat, graph: GraphApiEmulator
    ) -> None:
        outcome = send_manager_reply(chat.pk, "hi", manager=None)
        message = Message.objects.get(pk=outcome.message_id)

        delivery_status.apply(_status(message, "read"))
        delivery_status.apply(_status(message, "delivered"))
        delivery_status.apply(_status(message, "failed", code="131026", title="Undeliverable"))

        message.refresh_from_db()
        assert (message.status, message.error_code) == ("read", "")
        assert not delivery_status.undeliverable(Chat.objects.get(pk=chat.pk))

    def test_the_same_failure_twice_counts_once(self, chat: Chat, graph: GraphApiEmulator) -> None:
        outcome = send_manager_reply(chat.pk, "hi", manager=None)
        message = Message.objects.get(pk=outcome.message_id)
        before = _failed_count("131049", "manager")

        for _ in range(2):
            delivery_status.apply(_status(message, "failed", code="131049", title="Ecosystem"))

        assert _failed_count("131049", "manager") == before + 1


class TestUndeliverable:
    def test_131026_stops_the_bot_until_the_customer_writes_again(
        self, chat: Chat, graph: GraphApiEmulator
    ) -> None:
        now = int(time.time())
        asked = _customer_writes(chat, "price of the oak table?", now - 60)
        first = send_reply(chat.pk, "120 000 KZT.", generated_at_version=1, answered_up_to=asked.pk)
        reply = Message.objects.get(pk=first.message_id)

        delivery_status.apply(_status(reply, "failed", code="131026", title="Undeliverable",
                                      at=now - 30))  # fmt: skip

        chat.refresh_from_db()
        assert delivery_status.undeliverable(chat)
        assert "Cannot receive WhatsApp messages" in _page(chat)
        # A customer message written before the failure (delivered late) does not lift it, and
        # the bot neither answers it nor sends anything.
        late = _customer_writes(chat, "and the chair?", now - 45)
        assert take_turn(chat.pk) is None
        refused = send_reply(chat.pk, "Chair: 15 000 KZT.", generated_at_version=2,
                             answered_up_to=late.pk)  # fmt: skip
        assert (refused.sent, refused.reason) == (False, "undeliverable")
        assert [m.text for m in graph.sent_to(CUSTOMER)] == ["120 000 KZT."]
        assert not Turn.objects.filter(chat=chat).exists()

        # The customer writes again: they can receive messages, the bot answers.
        again = _customer_writes(chat, "hello?", now)
        chat.refresh_from_db()
        assert not delivery_status.undeliverable(chat)
        assert "Cannot receive WhatsApp messages" not in _page(chat)
        answered = send_reply(chat.pk, "Hello!", generated_at_version=chat.version,
                              answered_up_to=again.pk)  # fmt: skip
        assert answered.sent
        assert [m.text for m in graph.sent_to(CUSTOMER)] == ["120 000 KZT.", "Hello!"]

    def test_131026_answered_at_the_send_itself_marks_the_customer_too(
        self, chat: Chat, graph: GraphApiEmulator
    ) -> None:
        graph.fail_next_sends(131026)

        outcome = send_manager_reply(chat.pk, "Hello?", manager=None)

        assert (outcome.sent, Message.objects.get(pk=outcome.message_id).error_code) == (
            False,
            "131026",
        )
        assert delivery_status.undeliverable(Chat.objects.get(pk=chat.pk))
