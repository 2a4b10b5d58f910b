"""Voice notes enter the turn only once transcribed: ingest hands them to the speech queue."""

from __future__ import annotations

from datetime import timedelta

from celery import current_app
from django.db import transaction
from django.utils import timezone

from inbox.conversations.models import Message

TRANSCRIBE_TASK = "assistant.transcribe_voice"


def transcribe(message_id: int) -> None:
    current_app.send_task(TRANSCRIBE_TASK, args=[message_id])


def transcribe_on_commit(message_id: int) -> None:
    # robust: a broker hiccup must not undo the stored message; the sweep
    # (inbox.upkeep.tasks.resume_stuck_transcriptions) queues a transcription that never got queued.
    transaction.on_commit(lambda: transcribe(message_id), robust=True)


def stuck_transcriptions(older_than_seconds: float, limit: int = 200) -> list[int]:
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    return list(
        Message.objects.filter(
            transcript_status=Message.TranscriptStatus.PENDING,
            created_at__lt=cutoff,
            created_at__gt=cutoff - timedelta(days=1),
        ).values_list("pk", flat=True)[:limit]
    )
