"""Periodic upkeep of the conversation core (Celery beat)."""

from __future__ import annotations

import logging

from celery import shared_task

from inbox import ownership

log = logging.getLogger(__name__)


@shared_task(name="inbox.release_idle_chats", queue="default", ignore_result=True)
def release_idle_chats() -> int:
    """Give HUMAN chats back to the bot once their manager has been silent for the channel's
    idle-release hours. The bot writes nothing until the customer does."""
    released = 0
    for chat_id in ownership.idle_chat_ids():
        try:
            released += ownership.idle_release(chat_id).changed
        except ownership.InvalidTransition:
            continue  # a manager wrote in the meantime
    if released:
        log.info("ownership.idle_released", extra={"count": released})
    return released
