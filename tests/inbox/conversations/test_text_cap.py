"""Inbound text is capped at ingest (a 2.9 MB message was stored and shown whole), and nothing the
customer sent is lost: the whole text is kept as the message's attachment for managers."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from inbox.conversations import ingest
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Channel, Message
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def _event(
    channel: Channel, text: str, message_id: str = "wamid.long", **extra: str
) -> InboundEvent:
    return InboundEvent(
        channel_id=channel.pk, provider_message_id=message_id, chat_key="77011234567",
        from_me=False, kind="text", text=text, media=None, provider_ts=int(time.time()),
        customer_name="Aigerim", customer_phone="77011234567", extra=dict(extra),
    )  # fmt: skip


def _download(message: Message) -> bytes:
    client = Client()
    client.force_login(factories.manager(message.channel.business))
    answer = client.get(f"/inbox/media/{message.pk}/")
    assert answer.status_code == 200
    return b"".join(answer.streaming_content) if answer.streaming else answer.content


def test_a_text_over_the_cap_is_cut_and_kept_whole_as_an_attachment(settings) -> None:  # type: ignore[no-untyped-def]
    channel = factories.channel(kind=Channel.Kind.CLOUD_API)
    limit = settings.INBOUND_TEXT_MAX_CHARS
    assert limit == 65_536  # WhatsApp's own limit on what a person can send
    text = "Привет! " + "Ж" * (3 * limit) + " the end"

    accepted = ingest.accept(_event(channel, text))

    message = Message.objects.get(pk=accepted.message_id)
    assert len(message.text) == limit
    assert text.startswith(message.text)
    assert message.payload["text_truncated"] == {"original_chars": len(text)}
    assert _download(message).decode("utf-8") == text
    manager = factories.manager(channel.business)
    page = Client()
    page.force_login(manager)
    shown = page.get(f"/inbox/chat/{message.chat_id}/").content.decode()
    assert f"Cut to {limit} of {len(text)} characters" in shown
    assert f"/inbox/media/{message.pk}/" in shown


def test_a_text_within_the_cap_is_stored_as_sent_with_no_attachment() -> None:
    channel = factories.channel(kind=Channel.Kind.CLOUD_API)
    text = "x" * 65_536

    message = Message.objects.get(pk=ingest.accept(_event(channel, text)).message_id)

    assert message.text == text
    assert "text_truncated" not in message.payload
    assert not message.media_file


def test_an_edit_to_a_text_over_the_cap_is_cut_and_kept_whole_too(settings) -> None:  # type: ignore[no-untyped-def]
    settings.INBOUND_TEXT_MAX_CHARS = 100
    channel = factories.channel(kind=Channel.Kind.CLOUD_API)
    original = ingest.accept(_event(channel, "How much is the oak table?", "wamid.first"))
    edited_text = "How much is the oak table? " + "please " * 50

    ingest.accept(_event(channel, edited_text, "wamid.edit", edit_of="wamid.first"))

    message = Message.objects.get(pk=original.message_id)
    assert message.payload["edited"] is True
    assert message.text == edited_text[:100]
    assert _download(message).decode("utf-8") == edited_text
