"""Data retention: content past the period is purged, the conversation's shape stays."""

from __future__ import annotations

import io
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.utils import timezone

from inbox.conversations import ingest
from inbox.conversations.models import Chat, ChatTransition, Handoff, Message, Turn
from inbox.conversations.ownership import request_human
from inbox.platform.redis import get_redis
from inbox.upkeep import retention
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _media_root(settings: Any, tmp_path: Path) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RETENTION_DAYS = 30


def _old(message: Message, days: int) -> Message:
    Message.objects.filter(pk=message.pk).update(created_at=timezone.now() - timedelta(days=days))
    message.refresh_from_db()
    return message


def _conversation(chat: Chat, days_ago: int) -> dict[str, Any]:
    text = _old(factories.customer_message(chat, "My address is Abay 10, flat 5"), days_ago)
    voice = factories.customer_message(
        chat,
        "",
        kind="voice",
        transcript="call me at home",
        transcript_segments=[{"text": "call me at home", "start": 0.0}],
        media_filename="voice-note.ogg",
        media_ref="1234567890",
        payload={"edited": True, "edits": [{"previous_text": "secret plan"}]},
    )
    voice.media_file.save("voice-note.ogg", ContentFile(b"OggS" + b"\0" * 100))
    voice = _old(voice, days_ago)
    request_human(chat.pk, reason="asks_for_human")
    handoff = Handoff.objects.create(
        chat=chat, reason="asks_for_human", summary="Wants delivery to Abay 10",
        facts={"city": "Almaty"}, message_to_customer="A manager will answer",
    )  # fmt: skip
    Handoff.objects.filter(pk=handoff.pk).update(
        created_at=timezone.now() - timedelta(days=days_ago)
    )
    turn = Turn.objects.create(
        chat=chat, first_message_id=text.pk, last_message_id=voice.pk, generated_at_version=1,
        decision={"reply_to_customer": "We deliver to Abay 10"},
    )  # fmt: skip
    Turn.objects.filter(pk=turn.pk).update(started_at=timezone.now() - timedelta(days=days_ago))
    return {"text": text, "voice": voice, "handoff": handoff, "turn": turn}


def test_content_older_than_the_period_is_purged_and_the_rows_stay(settings: Any) -> None:
    chat = factories.chat()
    old = _conversation(chat, days_ago=45)
    recent = _old(factories.customer_message(chat, "Is it in stock?"), 3)
    file_path = Path(old["voice"].media_file.path)
    assert file_path.exists()

    reports = retention.purge()

    text, voice = Message.objects.get(pk=old["text"].pk), Message.objects.get(pk=old["voice"].pk)
    assert (text.text, text.purged_at is not None) == ("", True)
    assert voice.transcript == ""
    assert voice.transcript_segments == []
    assert (voice.media_file.name, voice.media_filename, voice.media_ref) == ("", "", "")
    assert voice.payload == {"edited": True}  # the shape stays, the previous text goes
    assert not file_path.exists()
    handoff = Handoff.objects.get(pk=old["handoff"].pk)
    assert (handoff.summary, handoff.facts, handoff.message_to_customer) == ("", {}, "")
    assert handoff.reason == "asks_for_human"
    assert Turn.objects.get(pk=old["turn"].pk).decision == {"purged": True}
    # The recent message, the rows, their authors and times and the audit trail remain.
    assert Message.objects.get(pk=recent.pk).text == "Is it in stock?"
    assert Message.objects.get(pk=recent.pk).purged_at is None
    assert Message.objects.filter(chat=chat).count() == 3
    assert text.author == "customer"
    assert voice.kind == "voice"
    assert ChatTransition.objects.filter(chat=chat).exists()
    (report,) = reports
    assert (report.messages, report.media_files, report.handoffs, report.turns) == (2, 1, 1, 1)

    # Running again changes nothing.
    (again,) = retention.purge()
    assert (again.messages, again.handoffs, again.turns) == (0, 0, 0)


def test_the_business_override_and_keep_forever(settings: Any) -> None:
    keep = factories.business(retention_days=0)
    short = factories.business(retention_days=7)
    kept = _old(factories.customer_message(factories.chat(factories.channel(keep)), "keep"), 400)
    gone = _old(factories.customer_message(factories.chat(factories.channel(short)), "gone"), 10)

    retention.purge()

    assert Message.objects.get(pk=kept.pk).text == "keep"
    assert Message.objects.get(pk=gone.pk).text == ""


def test_nothing_happens_when_no_period_is_set(settings: Any) -> None:
    settings.RETENTION_DAYS = 0
    message = _old(factories.customer_message(factories.chat(), "hello"), 1000)

    assert retention.purge() == []
    assert Message.objects.get(pk=message.pk).text == "hello"


def test_dry_run_command_counts_and_changes_nothing_then_the_command_purges() -> None:
    message = _old(factories.customer_message(factories.chat(), "hello"), 60)
    out = io.StringIO()

    call_command("purge_old_data", "--dry-run", stdout=out)

    assert "would purge 1 messages" in out.getvalue()
    assert Message.objects.get(pk=message.pk).text == "hello"

    call_command("purge_old_data", stdout=io.StringIO())
    assert Message.objects.get(pk=message.pk).text == ""


def test_raw_events_in_the_dead_letter_stream_are_trimmed_too() -> None:
    factories.business()
    old_ms = int((time.time() - 60 * 86400) * 1000)
    get_redis().xadd(ingest.DEAD_LETTER_STREAM, {"e": b'{"text": "old"}'}, id=f"{old_ms}-0")
    get_redis().xadd(ingest.DEAD_LETTER_STREAM, {"e": b'{"text": "new"}'})

    retention.purge()

    assert get_redis().xlen(ingest.DEAD_LETTER_STREAM) == 1
