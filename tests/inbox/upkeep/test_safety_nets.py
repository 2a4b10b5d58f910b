"""The periodic safety nets for work a dead process left half-done."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inbox.conversations.models import Alert, Chat, Message, Owner, Turn
from inbox.upkeep.tasks import resume_stuck_transcriptions, settle_stuck_sends
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def _outbound(chat: Chat, *, by_bot: bool, minutes_ago: float) -> Message:
    return Message.objects.create(
        chat=chat, channel=chat.channel, direction="out", author="bot" if by_bot else "manager",
        from_me=True, sent_by_bot=by_bot, text="The oak table is 189 000 KZT", status="sending",
        status_at=timezone.now() - timedelta(minutes=minutes_ago),
    )  # fmt: skip


def test_a_reply_stuck_sending_is_never_resent_and_its_chat_goes_to_a_human() -> None:
    chat = factories.chat()
    stuck = _outbound(chat, by_bot=True, minutes_ago=5)
    in_flight = _outbound(factories.chat(), by_bot=True, minutes_ago=0.1)

    assert settle_stuck_sends() == 1

    stuck.refresh_from_db()
    assert stuck.status == "unknown"
    assert "check with the customer" in stuck.error_title
    chat.refresh_from_db()
    assert chat.owner == Owner.PENDING_HUMAN
    assert chat.transitions.get().reason == "send_unknown"
    in_flight.refresh_from_db()
    assert in_flight.status == "sending"  # still within its send


def test_a_managers_stuck_reply_is_marked_but_the_owner_stays() -> None:
    chat = factories.chat()
    Chat.objects.filter(pk=chat.pk).update(owner=Owner.HUMAN)
    _outbound(chat, by_bot=False, minutes_ago=5)

    settle_stuck_sends()

    chat.refresh_from_db()
    assert chat.owner == Owner.HUMAN


def test_a_voice_note_whose_transcription_was_lost_is_queued_again(redis_client) -> None:  # type: ignore[no-untyped-def]
    chat = factories.chat()
    lost = factories.customer_message(
        chat, "", kind="voice", media_ref="m1", transcript_status="pending"
    )
    recent = factories.customer_message(
        chat, "", kind="voice", media_ref="m2", transcript_status="pending"
    )
    Message.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(minutes=30))
    before = redis_client.llen("speech")

    assert resume_stuck_transcriptions() == 1

    assert redis_client.llen("speech") == before + 1
    assert recent.pk


def test_a_turn_left_running_by_a_dead_worker_is_closed_when_the_next_one_starts() -> None:
    from assistant.turn import take_turn

    chat = factories.chat()
    asked = factories.customer_message(chat, "hello")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    orphan = Turn.objects.create(
        chat=chat, first_message_id=asked.pk, last_message_id=asked.pk, generated_at_version=1
    )
    # Older than any turn may run: its worker is gone.
    Turn.objects.filter(pk=orphan.pk).update(started_at=timezone.now() - timedelta(minutes=10))

    take_turn(chat.pk)

    orphan.refresh_from_db()
    assert (orphan.outcome, orphan.model_error) == ("failed", "interrupted")
    assert not Turn.objects.filter(chat=chat, outcome="running").exists()


def test_open_alerts_show_on_the_inbox_of_their_business_only(client) -> None:  # type: ignore[no-untyped-def]
    from inbox.upkeep.alerts import raise_alert

    mine, other = factories.business(), factories.business()
    raise_alert(mine.pk, Alert.Kind.CRM_SYNC_FAILING, "Bitrix24 sync is failing: NO_AUTH_FOUND")
    raise_alert(
        None, Alert.Kind.QUEUE_BACKLOG, "The oldest job in the assistant queue waits for 9 min"
    )

    client.force_login(factories.manager(mine))
    page = client.get("/inbox/").content.decode()
    assert "Bitrix24 sync is failing" in page
    assert "oldest job in the assistant queue" in page

    client.force_login(factories.manager(other))
    page = client.get("/inbox/").content.decode()
    assert "Bitrix24 sync is failing" not in page
    assert "oldest job in the assistant queue" in page  # installation-wide
