"""Celery tasks of the assistant. Thin: check, call one function, declare the policy."""

from __future__ import annotations

import contextlib
import logging

from celery import shared_task
from django.db import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from assistant.turn import take_turn
from inbox import debounce, ownership

log = logging.getLogger(__name__)


@shared_task(
    name=debounce.TURN_TASK,
    queue="assistant",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, RedisConnectionError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
    soft_time_limit=180,
    time_limit=240,
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
            ownership.request_human(chat_id, reason="turn_failed")
        return
    debounce.finish(chat_id, token)
