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


@shared_task(name="inbox.check_alerts", queue="default", ignore_result=True, time_limit=55)
def check_alerts() -> None:
    """Every minute: raise and resolve the alerts the inbox checks by itself."""
    from inbox import alerts

    alerts.check_all()


@shared_task(
    name="inbox.notify_alert",
    queue="default",
    ignore_result=True,
    acks_late=True,
    time_limit=60,
)
def notify_alert(alert_id: int) -> None:
    """Announce a newly raised alert (webhook, e-mail); rate-limited in `alerts.notify`."""
    from inbox import alerts

    alerts.notify(alert_id)


@shared_task(name="inbox.purge_old_data", queue="default", ignore_result=True, time_limit=3000)
def purge_old_data() -> None:
    """Hourly: remove message content past the retention period (inbox/retention.py)."""
    from inbox import retention

    retention.purge()
