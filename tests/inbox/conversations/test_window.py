"""WhatsApp's customer-service window: when a chat's window closes (written by the ingest from
the customer's last message), and free text refused past it before the Graph API is called."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from inbox.conversations import ingest, window
from inbox.conversations.events import HISTORY_AGE_SECONDS, InboundEvent
from inbox.conversations.handoff import hand_off
from inbox.conversations.models import (
    Channel,
    Chat,
    ChatTransition,
    Handoff,
    HandoffReason,
    Message,
    Owner,
)
from inbox.conversations.outbound import send_manager_reply, send_reply
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = pytest.mark.django_db(transaction=True)

HOUR = 3600


def _event(channel: Channel, n: int, at: int, **overrides: object) -> InboundEvent:
    event = InboundEvent(
        channel_id=channel.pk,
        provider_message_id=f"wamid.window{n}",
        chat_key="77011234567",
        from_me=False,
        kind="text",
        text="Is the oak table still available?",
        media=None,
        provider_ts=at,
        customer_phone="77011234567",
    )
    return replace(event, **overrides)  # type: ignore[arg-type]


def _at(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


@pytest.fixture
def cloud() -> Channel:
    return factories.channel(kind=Channel.Kind.CLOUD_API)


class TestWindowFromIngest:
    def test_closes_24_hours_after_the_customer_message_by_its_provider_timestamp(
        self, cloud: Channel
    ) -> None:
        # Delivered now, written by the customer 20 hours ago (a webhook backlog).
        written = int(time.time()) - 20 * HOUR
        chat = Chat.objects.get(pk=ingest.accept(_event(cloud, 1, written)).chat_id)

        assert chat.window_closes_at == _at(written + 24 * HOUR)
        assert window.is_open(chat)
        assert not window.is_open(chat, now=_at(written + 24 * HOUR + 1))

    def test_a_batch_keeps_the_latest_and_an_older_message_arriving_late_never_shortens_it(
        self, cloud: Channel
    ) -> None:
        now = int(time.time())
        ingest.accept_batch([_event(cloud, 1, now - 3 * HOUR), _event(cloud, 2, now - HOUR)])
        chat = Chat.objects.get(channel=cloud)
        assert chat.window_closes_at == _at(now - HOUR + 24 * HOUR)

        ingest.accept(_event(cloud, 3, now - 10 * HOUR))  # stuck at the provider, out of order

        chat.refresh_from_db()
        assert chat.window_closes_at == _at(now - HOUR + 24 * HOUR)

    def test_echoes_from_the_business_phone_and_replayed_history_never_reopen_it(
        self, cloud: Channel
    ) -> None:
        now = int(time.time())
        first = ingest.accept(_event(cloud, 1, now - 30 * HOUR))
        chat = Chat.objects.get(pk=first.chat_id)
        assert not window.is_open(chat)

        # The business wrote from the WhatsApp Business app (an echo), then history replayed.
        ingest.accept(_event(cloud, 2, now - 60, from_me=True))
        ingest.accept(_event(cloud, 3, now - HISTORY_AGE_SECONDS - 60, extra={"history": True}))

        chat.refresh_from_db()
        assert chat.window_closes_at == _at(now - 30 * HOUR + 24 * HOUR)
        assert not window.is_open(chat)
        assert chat.messages.count() == 3

    def test_a_message_from_a_click_to_whatsapp_ad_still_allows_free_text_for_24_hours_only(
        self, cloud: Channel
    ) -> None:
        """Its 72-hour free entry point is about price: Meta sends non-template messages only
        within the 24-hour customer-service window."""
        written = int(time.time()) - 30 * HOUR
        referral = {"source_type": "ad", "headline": "Oak tables -20%", "source_url": "x"}
        chat_id = ingest.accept(_event(cloud, 1, written, extra={"referral": referral})).chat_id

        chat = Chat.objects.get(pk=chat_id)
        assert chat.messages.get().payload["referral"]["headline"] == "Oak tables -20%"
        assert chat.window_closes_at == _at(written + 24 * HOUR)
        assert not window.is_open(chat)

    def test_a_linked_device_chat_has_no_window(self) -> None:
        bridge = factories.channel(kind=Channel.Kind.BRIDGE)
        written = int(time.time()) - 30 * HOUR
        chat = Chat.objects.get(pk=ingest.accept(_event(bridge, 1, written)).chat_id)

        assert chat.window_closes_at is None
        assert window.closes_at(chat) is None
        assert window.is_open(chat)
        assert window.describe(chat).state == "none"

    def test_the_inbox_words_for_the_time_left(self, cloud: Channel) -> None:
        now = timezone.now()
        chat = factories.chat(cloud, window_closes_at=now + timedelta(hours=3, minutes=10))
        assert window.describe(chat, now).label == "Window closes in 3 h"
        chat.window_closes_at = now + timedelta(minutes=42)
        assert (window.describe(chat, now).state, window.describe(chat, now).label) == (
            "closing",
            "Window closes in 42 min",
        )
        chat.window_closes_at = now - timedelta(minutes=1)
        assert window.describe(chat, now).state == "closed"


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        yield emulator


@pytest.fixture
def closed_chat(graph: GraphApiEmulator) -> Chat:
    """A Cloud API chat whose customer last wrote 25 hours ago."""
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922", access_token="tok-1"
    )
    graph.register_number("106540352242922", "tok-1")
    written = timezone.now() - timedelta(hours=25)
    chat = factories.chat(
        channel,
        customer_key="77011234567",
        customer_phone="77011234567",
        last_customer_at=written,
        window_closes_at=written + window.WINDOW,
    )
    factories.customer_message(chat, "Do you deliver?", provider_timestamp=written)
    Chat.objects.filter(pk=chat.pk).update(version=1)
    return chat


class TestSendingOutsideTheWindow:
    def test_a_manager_reply_is_refused_before_the_graph_api_is_called(
        self, closed_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        manager = factories.manager(closed_chat.channel.business)

        outcome = send_manager_reply(closed_chat.pk, "We deliver tomorrow.", manager=manager)

        assert (outcome.sent, outcome.reason) == (False, "window_closed")
        assert "only an approved template" in outcome.error
        assert graph.sent_to("77011234567") == []
        assert not closed_chat.messages.filter(direction=Message.Direction.OUTBOUND).exists()
        assert Chat.objects.get(pk=closed_chat.pk).owner == Owner.BOT  # nothing taken over

    def test_the_bots_late_reply_hands_the_chat_to_a_person_instead(
        self, closed_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        asked = closed_chat.messages.get()

        outcome = send_reply(
            closed_chat.pk, "Yes, we deliver.", generated_at_version=1, answered_up_to=asked.pk
        )

        assert (outcome.sent, outcome.reason) == (False, "window_closed")
        assert graph.sent_to("77011234567") == []
        assert Chat.objects.get(pk=closed_chat.pk).owner == Owner.PENDING_HUMAN
        transition = ChatTransition.objects.filter(chat=closed_chat).latest("pk")
        assert transition.reason == HandoffReason.WINDOW_CLOSED

    def test_a_handoff_outside_the_window_tells_the_customer_nothing(
        self, closed_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        asked = closed_chat.messages.get()

        outcome = hand_off(
            closed_chat.pk,
            reason=HandoffReason.COMPLAINT,
            summary="Unhappy with the delivery.",
            facts={},
            message_to_customer="A manager will contact you shortly.",
            generated_at_version=1,
            answered_up_to=asked.pk,
        )

        assert outcome.handed_off
        assert outcome.notice_message_id is None
        assert graph.sent_to("77011234567") == []
        assert Handoff.objects.get(pk=outcome.handoff_id).message_to_customer == ""

    def test_inside_the_window_the_manager_reply_goes_out(
        self, closed_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        Chat.objects.filter(pk=closed_chat.pk).update(
            window_closes_at=timezone.now() + timedelta(hours=2)
        )
        manager = factories.manager(closed_chat.channel.business)

        outcome = send_manager_reply(closed_chat.pk, "We deliver tomorrow.", manager=manager)

        assert outcome.sent
        assert [m.text for m in graph.sent_to("77011234567")] == ["We deliver tomorrow."]
