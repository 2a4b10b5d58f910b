"""Voice notes enter the turn only once transcribed: ingest hands them to the speech queue."""

from __future__ import annotations

from django.db import transaction

from inbox.celery import app

TRANSCRIBE_TASK = "assistant.transcribe_voice"


def transcribe_on_commit(message_id: int) -> None:
    transaction.on_commit(
        lambda: app.send_task(TRANSCRIBE_TASK, args=[message_id], queue="speech"), robust=True
    )
