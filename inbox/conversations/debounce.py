"""Per-chat debounce, shared by every process through Redis.

People write in bursts ("hi" / "how much is" / "delivery to Almaty?"). Each customer message
(or finished voice transcript) calls `schedule`: it stores a fresh token for the chat and queues
the turn task with that token, due after the channel's debounce seconds. When a task runs, it
goes on only if its token is still the chat's current one (`claim`), so a burst of N messages
ends in one turn over all of them. Nothing lives in a process's memory: any worker may run the
task, and a worker that dies before acknowledging it hands it to another.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import current_app
from django.db import transaction

from inbox.conversations.models import Chat
from inbox.conversations.redis import get_redis

log = logging.getLogger(__name__)

TURN_TASK = "assistant.run_turn"
TOKEN_TTL_SECONDS = 3600

# Compare-and-delete: clear the token only if no newer message replaced it meanwhile.
_FINISH_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""


def _key(chat_id: int) -> str:
    return f"debounce:{chat_id}"


def schedule(chat_id: int, delay: float | None = None) -> str:
    """(Re)start the chat's timer. Returns the token the queued turn carries."""
    if delay is None:
        delay = (
            Chat.objects.filter(pk=chat_id)
            .values_list("channel__debounce_seconds", flat=True)
            .first()
        ) or 0.0
    token = uuid.uuid4().hex
    get_redis().set(_key(chat_id), token, ex=TOKEN_TTL_SECONDS + int(delay))
    current_app.send_task(TURN_TASK, args=[chat_id, token], countdown=max(0.0, delay))
    log.debug("debounce.scheduled", extra={"chat_id": chat_id, "delay": delay})
    return token


def schedule_on_commit(chat_id: int, delay: float | None = None) -> None:
    """Schedule after commit. If Redis is away at that moment the turn is not lost: the
    consumer cannot acknowledge the event either, and its replay re-arms the turn
    (`ingest._rearm_unanswered`); `resume_unanswered_chats` is the last safety net."""
    transaction.on_commit(lambda: schedule(chat_id, delay), robust=True)


def is_current(chat_id: int, token: str) -> bool:
    """True while `token` is the chat's newest: the turn carrying it should run."""
    value: Any = get_redis().get(_key(chat_id))
    return value is not None and bytes(value).decode() == token


def finish(chat_id: int, token: str) -> None:
    """The turn for `token` is done; a newer token (a message that came meanwhile) stays."""
    script = get_redis().register_script(_FINISH_SCRIPT)
    script(keys=[_key(chat_id)], args=[token])
