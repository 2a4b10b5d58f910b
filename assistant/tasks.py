"""Celery tasks of the assistant. Thin: check, call one function, declare the policy.

A worker that consumes the assistant queue also runs a debounce scheduler loop on a thread
(inbox/conversations/debounce/scheduler.py), so whatever runs turns fires their timers too.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from celery import Task, shared_task, signals
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from assistant.speech import voice_notes
from assistant.turn import TURN_TIME_LIMIT_SECONDS, take_turn
from inbox.conversations import debounce, ownership, voice
from inbox.conversations.models import HandoffReason, Message

log = logging.getLogger(__name__)


@shared_task(
    name=debounce.TURN_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, RedisConnectionError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
    soft_time_limit=180,
    time_limit=TURN_TIME_LIMIT_SECONDS,
    ignore_result=True,
)
def run_turn(chat_id: int, token: str) -> None:
    """Fires the chat's debounce seconds after its last message. Runs only for the newest token
    (a burst of messages is one turn); a task redelivered after a worker died runs again and the
    send path makes sure the same messages are answered once."""
    if not debounce.is_current(chat_id, token):
        return
    try:
        take_turn(chat_id)
    except (OperationalError, RedisConnectionError):
        raise  # retried by Celery with backoff
    except Exception:
        log.exception("turn.crashed", extra={"chat_id": chat_id})
        # Never leave the customer hanging on a bug: a human takes the chat.
        with contextlib.suppress(ownership.InvalidTransition):
            ownership.request_human(chat_id, reason=HandoffReason.TURN_FAILED)
        return
    debounce.finish(chat_id, token)


def _consumes(consumer: Any, queue: str) -> bool:
    queues = getattr(getattr(getattr(consumer, "app", None), "amqp", None), "queues", None)
    consume_from = getattr(queues, "consume_from", None)
    return not consume_from or queue in consume_from  # no -Q: every queue


@signals.worker_ready.connect
def _start_debounce_scheduler(sender: Any = None, **kwargs: Any) -> None:
    """A worker on the assistant queue hands due timers to it. Several such workers share the
    work safely (the claim is atomic), and one that is killed loses nothing."""
    if settings.DEBOUNCE_SCHEDULER_IN_WORKERS and _consumes(sender, "assistant"):
        debounce.start_in_thread()


# Seconds before each retry of a voice note whose download or speech backend failed for now.
TRANSCRIBE_BACKOFF = (5, 20, 60, 120, 240)


@shared_task(
    name=voice.TRANSCRIBE_TASK,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=len(TRANSCRIBE_BACKOFF),
    # Below the broker's visibility timeout (300 s), or a long note would be redelivered to a
    # second worker while the first is still transcribing it.
    soft_time_limit=240,
    time_limit=270,
    ignore_result=True,
)
def transcribe_voice(self: Task, message_id: int) -> None:  # type: ignore[type-arg]
    """Download, keep and transcribe one voice note, then start the chat's debounce. Transient
    failures retry with backoff; the last attempt hands the chat to a human instead. A note
    already transcribed (or failed) is skipped, so a redelivered task is harmless."""
    last_attempt = self.request.retries >= len(TRANSCRIBE_BACKOFF)
    try:
        voice_notes.transcribe_message(message_id, last_attempt=last_attempt)
    except (
        voice_notes.TryLater,
        OperationalError,
        RedisConnectionError,
        SoftTimeLimitExceeded,
    ) as exc:
        if last_attempt:
            log.exception("voice.gave_up", extra={"message_id": message_id})
            _fail_voice(message_id, f"it kept failing ({type(exc).__name__}: {exc})")
            return
        log.warning("voice.retry", extra={"message_id": message_id, "error": str(exc)[:200]})
        raise self.retry(exc=exc, countdown=TRANSCRIBE_BACKOFF[self.request.retries]) from exc
    except Exception as exc:
        # A bug or an unexpected file: never a crash loop, never a silent drop.
        log.exception("voice.crashed", extra={"message_id": message_id})
        _fail_voice(message_id, f"an unexpected error ({type(exc).__name__})")


def _fail_voice(message_id: int, why: str) -> None:
    message = Message.objects.select_related("chat", "channel").filter(pk=message_id).first()
    if message is not None:
        voice_notes.fail(
            message,
            voice_notes.Failure("speech_failed", f"Transcription stopped because of {why}."),
        )
