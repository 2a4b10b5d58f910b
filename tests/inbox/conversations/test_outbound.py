"""The send path: owner and version checked under the lock, Graph errors mapped, media fetched.
Retries of a bot reply through a real Celery worker: test_outbound_retries.py."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from inbox.conversations import ownership
from inbox.conversations.handoff import hand_off
from inbox.conversations.models import Channel, Chat, Handoff, Message, Owner
from inbox.conversations.outbound import (
    add_internal_note,
    is_bot_sent,
    send_manager_reply,
    send_reply,
)
from inbox.conversations.transport_registry import transport_for
from inbox.conversations.transports import MediaError
from inbox.platform.http import Transient
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        yield emulator


@pytest.fixture
def cloud_chat(graph: GraphApiEmulator) -> Chat:
    channel = factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352242922", access_token="tok-1"
    )
    graph.register_number("106540352242922", "tok-1")
    chat = factories.chat(channel, customer_key="77011234567", customer_phone="77011234567")
    return chat


def _pending(chat: Chat, text: str = "price?") -> Message:
    message = factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(version=chat.version + 1)
    return message


class TestSendReply:
    def test_bot_reply_is_sent_and_remembered_as_bot_sent(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        asked = _pending(cloud_chat)

        outcome = send_reply(
            cloud_chat.pk,
            "The oak table is 120 000 KZT.",
            generated_at_version=1,
            answered_up_to=asked.pk,
        )

        assert outcome.sent
        (sent,) = graph.sent_to("77011234567")
        assert sent.text == "The oak table is 120 000 KZT."
        message = Message.objects.get(pk=outcome.message_id)
        assert (message.author, message.sent_by_bot, message.status) == ("bot", True, "sent")
        assert message.provider_message_id == sent.wamid
        assert is_bot_sent(cloud_chat.pk, sent.wamid)
        assert Chat.objects.get(pk=cloud_chat.pk).answered_up_to == asked.pk

    def test_reply_generated_before_a_new_customer_message_is_dropped_as_stale(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        asked = _pending(cloud_chat)
        _pending(Chat.objects.get(pk=cloud_chat.pk), "and delivery?")  # version 2 now

        outcome = send_reply(
            cloud_chat.pk, "stale answer", generated_at_version=1, answered_up_to=asked.pk
        )

        assert (outcome.sent, outcome.reason) == (False, "stale")
        assert graph.sent == []
        assert not Message.objects.filter(direction="out").exists()

    @pytest.mark.parametrize("owner", [Owner.HUMAN, Owner.PENDING_HUMAN])
    def test_reply_is_dropped_once_the_bot_no_longer_owns_the_chat(
        self, cloud_chat: Chat, graph: GraphApiEmulator, owner: str
    ) -> None:
        asked = _pending(cloud_chat)
        Chat.objects.filter(pk=cloud_chat.pk).update(owner=owner)

        outcome = send_reply(
            cloud_chat.pk, "hello", generated_at_version=1, answered_up_to=asked.pk
        )

        assert (outcome.sent, outcome.reason) == (False, "not_bot_owner")
        assert graph.sent == []

    def test_the_same_turn_answered_twice_sends_once(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        asked = _pending(cloud_chat)

        first = send_reply(cloud_chat.pk, "answer", generated_at_version=1, answered_up_to=asked.pk)
        second = send_reply(
            cloud_chat.pk, "answer again", generated_at_version=1, answered_up_to=asked.pk
        )

        assert first.sent
        assert (second.sent, second.reason) == (False, "already_answered")
        assert len(graph.sent) == 1

    @pytest.mark.parametrize(
        ("code", "words"), [(190, "token"), (131030, "allowed list"), (100, "parameter")]
    )
    def test_permanent_errors_fail_visibly_and_hand_the_chat_to_a_human(
        self, cloud_chat: Chat, graph: GraphApiEmulator, code: int, words: str
    ) -> None:
        asked = _pending(cloud_chat)
        graph.fail_next_sends(code, times=5)

        outcome = send_reply(cloud_chat.pk, "hi", generated_at_version=1, answered_up_to=asked.pk)

        assert (outcome.sent, outcome.reason) == (False, "failed")
        message = Message.objects.get(pk=outcome.message_id)
        assert (message.status, message.error_code) == ("failed", str(code))
        assert words in message.error_title
        assert graph.sent == []
        assert Chat.objects.get(pk=cloud_chat.pk).owner == Owner.PENDING_HUMAN

    def test_a_transient_error_leaves_the_reply_to_the_deliver_task(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        """Tried once here; the retries are a Celery task's (test_outbound_retries.py)."""
        asked = _pending(cloud_chat)
        graph.fail_next_sends(131000, times=1, http_status=500)

        outcome = send_reply(cloud_chat.pk, "hi", generated_at_version=1, answered_up_to=asked.pk)

        assert (outcome.sent, outcome.reason) == (False, "retrying")
        assert len(graph.send_times) == 1
        assert Message.objects.get(pk=outcome.message_id).status == Message.Status.SENDING
        assert Chat.objects.get(pk=cloud_chat.pk).owner == Owner.BOT

    def test_outside_the_24_hour_window_arrives_later_as_a_failed_status(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        # The send itself succeeds; the failure is the status webhook (tested in test_pipeline).
        asked = _pending(cloud_chat)
        graph.fail_async("77011234567", 131047)

        assert send_reply(cloud_chat.pk, "hi", generated_at_version=1, answered_up_to=asked.pk).sent

    def test_a_message_id_the_provider_gave_before_does_not_crash_the_turn(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        """The second reply's row broke the unique (channel, provider id) constraint: an
        IntegrityError escaped the turn and the reply the customer got was never shown."""
        first_asked = _pending(cloud_chat)
        first = send_reply(cloud_chat.pk, "Oak table: 120 000 KZT.", generated_at_version=1,
                           answered_up_to=first_asked.pk)  # fmt: skip
        graph.reuse_message_id(first.provider_message_id)
        asked = _pending(Chat.objects.get(pk=cloud_chat.pk), "and the chair?")

        second = send_reply(cloud_chat.pk, "Chair: 15 000 KZT.", generated_at_version=2,
                            answered_up_to=asked.pk)  # fmt: skip

        assert (second.sent, second.reason) == (True, "sent")
        assert [m.text for m in graph.sent_to("77011234567")] == [
            "Oak table: 120 000 KZT.",
            "Chair: 15 000 KZT.",
        ]
        reply = Message.objects.get(pk=second.message_id)
        assert (reply.text, reply.status) == ("Chair: 15 000 KZT.", Message.Status.SENT)
        earlier = Message.objects.get(pk=first.message_id)
        assert earlier.provider_message_id == first.provider_message_id  # the first keeps its id
        assert Chat.objects.get(pk=cloud_chat.pk).answered_up_to == asked.pk
        client = Client()
        client.force_login(factories.manager(cloud_chat.channel.business))
        page = client.get(f"/inbox/chat/{cloud_chat.pk}/").content.decode()
        assert "Oak table: 120 000 KZT." in page
        assert "Chair: 15 000 KZT." in page


class TestManagerActions:
    def test_manager_reply_moves_the_chat_to_human_before_sending(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        manager = factories.manager(cloud_chat.channel.business)
        _pending(cloud_chat)

        outcome = send_manager_reply(
            cloud_chat.pk, "Hi, this is Dana from the shop", manager=manager
        )

        assert outcome.sent
        chat = Chat.objects.get(pk=cloud_chat.pk)
        assert chat.owner == Owner.HUMAN
        message = Message.objects.get(pk=outcome.message_id)
        assert (message.author, message.sent_by, message.sent_by_bot) == ("manager", manager, False)
        assert not is_bot_sent(chat.pk, outcome.provider_message_id)

    def test_a_managers_reply_is_retried_where_it_is_sent(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        graph.fail_next_sends(130429, times=1, retry_after="0")

        outcome = send_manager_reply(cloud_chat.pk, "One moment", manager=None)

        assert outcome.sent
        assert len(graph.send_times) == 2
        assert [m.text for m in graph.sent] == ["One moment"]

    def test_a_managers_reply_gives_up_after_bounded_attempts(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        graph.fail_next_sends(131000, times=10, http_status=500, retry_after="0")

        outcome = send_manager_reply(cloud_chat.pk, "One moment", manager=None)

        assert (outcome.sent, outcome.reason) == (False, "failed")
        assert len(graph.send_times) == 3
        assert Message.objects.get(pk=outcome.message_id).status == Message.Status.FAILED
        assert Chat.objects.get(pk=cloud_chat.pk).owner == Owner.HUMAN  # no handoff card

    def test_internal_note_is_never_sent(self, cloud_chat: Chat, graph: GraphApiEmulator) -> None:
        note = add_internal_note(cloud_chat.pk, "Customer called, wants a discount")

        assert (note.direction, note.kind) == ("internal", "note")
        assert graph.sent == []


class TestHandOff:
    def test_handoff_stores_the_record_moves_the_chat_and_tells_the_customer(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        asked = _pending(cloud_chat, "I want 40 chairs with a discount")

        outcome = hand_off(
            cloud_chat.pk, reason="non_standard_terms", summary="Wants 40 chairs, asks for a volume discount.",
            facts={"items": [{"name": "chair", "qty": 40}]}, message_to_customer="A manager will reply shortly.",
            generated_at_version=1, answered_up_to=asked.pk,
        )  # fmt: skip

        assert outcome.handed_off
        assert outcome.notice_sent
        chat = Chat.objects.get(pk=cloud_chat.pk)
        assert chat.owner == Owner.PENDING_HUMAN
        handoff = Handoff.objects.get(pk=outcome.handoff_id)
        assert (handoff.reason, handoff.facts["items"][0]["qty"]) == ("non_standard_terms", 40)
        assert [m.text for m in graph.sent] == ["A manager will reply shortly."]

    def test_handoff_is_refused_when_a_manager_took_over_meanwhile(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        asked = _pending(cloud_chat)
        ownership.take_over(cloud_chat.pk, manager=factories.manager(cloud_chat.channel.business))

        outcome = hand_off(cloud_chat.pk, reason="complaint", summary="", facts={}, message_to_customer="...",
                           generated_at_version=1, answered_up_to=asked.pk)  # fmt: skip

        assert (outcome.handed_off, outcome.reason) == (False, "not_bot_owner")
        assert not Handoff.objects.exists()
        assert graph.sent == []


class TestMedia:
    def test_media_is_downloaded_with_the_token_and_checked(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        audio = b"OggS fake opus payload"
        sha = graph.add_media("1908647269898587", audio, "audio/ogg")
        message = factories.customer_message(
            cloud_chat, "", kind="voice", media_ref="1908647269898587", media_sha256=sha
        )

        blob = transport_for(cloud_chat.channel).fetch_media(message)

        assert (blob.content, blob.mime_type) == (audio, "audio/ogg")

    def test_expired_download_url_is_fetched_afresh(
        self, cloud_chat: Chat, graph: GraphApiEmulator
    ) -> None:
        graph.media_url_ttl = -1  # every URL is already expired when used
        graph.add_media("555", b"data", "image/jpeg")
        message = factories.customer_message(cloud_chat, "", kind="image", media_ref="555")

        with pytest.raises(MediaError, match="expiring") as raised:
            transport_for(cloud_chat.channel).fetch_media(message)
        assert len([r for r in graph.requests if r[1] == "/v24.0/555"]) == 2
        assert isinstance(raised.value, Transient)  # the platform's kind: worth a retry

    def test_checksum_mismatch_is_refused(self, cloud_chat: Chat, graph: GraphApiEmulator) -> None:
        graph.add_media("556", b"data", "image/jpeg")
        wrong = base64.b64encode(hashlib.sha256(b"other").digest()).decode()
        message = factories.customer_message(
            cloud_chat, "", kind="image", media_ref="556", media_sha256=wrong
        )

        with pytest.raises(MediaError, match="sha256"):
            transport_for(cloud_chat.channel).fetch_media(message)


def test_a_sent_reply_is_recorded_even_when_redis_is_away_right_after_the_send(
    cloud_chat: Chat, graph: GraphApiEmulator, settings: Any
) -> None:
    """The provider accepted the message: the row must say so, with its id (which also
    recognises the echo), whatever Redis does; before, the row stayed 'sending' without an id."""
    from inbox.site.embedded_redis import free_port

    asked = _pending(cloud_chat)
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    outcome = send_reply(cloud_chat.pk, "Yes, we deliver.", generated_at_version=1,
                         answered_up_to=asked.pk)  # fmt: skip

    (sent,) = graph.sent_to("77011234567")
    reply = Message.objects.get(pk=outcome.message_id)
    assert outcome.sent
    assert (reply.status, reply.provider_message_id) == (Message.Status.SENT, sent.wamid)
    assert reply.sent_by_bot
