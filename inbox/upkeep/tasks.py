"""Periodic upkeep of the conversation core (Celery beat)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.utils import timezone

from inbox.conversations import debounce, outbound, ownership, status, turns, voice
from inbox.upkeep import alerts, approvals, followups, retention

log = logging.getLogger(__name__)


@shared_task(name="inbox.release_idle_chats", ignore_result=True)
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


@shared_task(name="inbox.wake_snoozed_chats", ignore_result=True, time_limit=55)
def wake_snoozed_chats() -> int:
    """Every minute: snoozed chats whose time has come are open again, with a notification."""
    woken = sum(status.wake(chat_id).changed for chat_id in status.due_snoozed_ids())
    if woken:
        log.info("status.woken", extra={"count": woken})
    return woken


RESUME_AFTER_SECONDS = 120


@shared_task(name="inbox.resume_unanswered_chats", ignore_result=True)
def resume_unanswered_chats() -> int:
    """Safety net: a bot chat whose customer messages have waited well past the debounce
    (the turn task was lost with a crashed process or a flushed broker) gets its turn now.
    Messages past the late-answer cutoff still go to a human: the turn decides that."""
    chat_ids = turns.stuck_chat_ids(RESUME_AFTER_SECONDS)
    for chat_id in chat_ids:
        debounce.schedule(chat_id, delay=0)
    if chat_ids:
        log.warning("turn.resumed", extra={"count": len(chat_ids)})
    return len(chat_ids)


@shared_task(name="inbox.check_alerts", ignore_result=True, time_limit=55)
def check_alerts() -> None:
    """Every minute: raise and resolve the alerts the inbox checks by itself."""
    alerts.check_all()


@shared_task(
    name="inbox.notify_alert",
    ignore_result=True,
    acks_late=True,
    time_limit=60,
)
def notify_alert(alert_id: int) -> None:
    """Announce a newly raised alert (webhook, e-mail); rate-limited in `alerts.notify`."""
    alerts.notify(alert_id)


@shared_task(name="inbox.purge_old_data", ignore_result=True, time_limit=3000)
def purge_old_data() -> None:
    """Hourly: remove message content past the retention period (inbox/upkeep/retention.py)."""
    retention.purge()


STUCK_SEND_SECONDS = 120
STUCK_TRANSCRIPT_SECONDS = 900


@shared_task(name="inbox.settle_stuck_sends", ignore_result=True)
def settle_stuck_sends() -> int:
    """A reply recorded as "sending" whose worker died mid-send may or may not have reached
    the customer. It is never sent twice: it is marked "outcome unknown" and a bot reply's chat
    goes to a human, who can see what happened and answer."""
    settled = outbound.settle_stuck_sends(older_than_seconds=STUCK_SEND_SECONDS)
    if settled:
        log.warning("send.settled_unknown", extra={"count": settled})
    return settled


@shared_task(name="inbox.resume_stuck_transcriptions", ignore_result=True)
def resume_stuck_transcriptions() -> int:
    """Voice notes still "transcribing" long after they arrived (the task was lost): queue
    their transcription again (it is idempotent)."""
    message_ids = voice.stuck_transcriptions(STUCK_TRANSCRIPT_SECONDS)
    for message_id in message_ids:
        voice.transcribe(message_id)
    return len(message_ids)


@shared_task(name="inbox.expire_drafts", ignore_result=True, time_limit=55)
def expire_drafts() -> int:
    """Every minute: bot drafts no one approved within the channel's limit go to a person,
    and the customer is told one will confirm (inbox/upkeep/approvals.py)."""
    return approvals.expire_overdue(timezone.now())


@shared_task(name="inbox.send_followups", ignore_result=True, time_limit=240)
def send_followups() -> int:
    """Every five minutes: the follow-up steps due after unanswered quotes go out
    (inbox/upkeep/followups.py)."""
    return followups.send_due(timezone.now())
