"""Everything the business says to a customer goes out through here.

`send_reply` is the bot's only way out: under the chat's row lock it checks that the bot still
owns the chat and that nothing changed since the reply was generated (`Chat.version`), records
the reply, and only then calls the transport. A reply that loses either check is dropped and the
reason recorded. Managers' replies (`send_manager_reply`) move the chat to HUMAN first.

Every id of a message the bot sent is remembered (a Redis set per chat, plus `sent_by_bot` on
the row), so the echo of our own message is never mistaken for a manager taking over.

Transient failures are retried under `SEND_POLICY` (`inbox.platform.http.Backoff`: at most
`SEND_ATTEMPTS` tries, full-jitter backoff, a provider's Retry-After honoured, a bounded total
time). A bot message is tried once where it was recorded (the turn's task); its retries are the
`inbox.deliver_reply` task's (inbox/conversations/tasks.py), each a Celery retry with a
countdown, so no worker sleeps between tries. Before each retry the bot must still own the chat
(else the send is cancelled, not failed). A manager's message is retried where it is sent, with
`http.retry`. After the last try a bot message is marked failed and its chat goes to a human
(`send_failed`); a send whose worker died mid-way is settled as outcome unknown
(`settle_stuck_sends`, `send_unknown`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Literal

import kombu.exceptions
import redis
from celery import current_app
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Max, QuerySet
from django.utils import timezone
from django.utils.translation import gettext_noop

from inbox.conversations import delivery_errors, delivery_status, hooks, ownership, window
from inbox.conversations.models import Chat, HandoffReason, Message, Owner, Turn
from inbox.conversations.transport_registry import transport_for
from inbox.conversations.transports import (
    OutgoingMedia,
    OutgoingTemplate,
    PermanentSendError,
    SendError,
    TransientSendError,
    Transport,
)
from inbox.platform import http, metrics
from inbox.platform.redis import get_redis

log = logging.getLogger(__name__)

BOT_SENT_TTL_SECONDS = 7 * 86400
SEND_ATTEMPTS = 3
# Retries of one send: up to 1 s, then up to 2 s (full jitter), or the provider's Retry-After
# (at most 30 s); none starts later than 60 s after the first try, well before the upkeep
# settles a send still "sending" after 2 minutes as outcome unknown.
SEND_POLICY = http.Backoff(
    attempts=SEND_ATTEMPTS, base=1.0, cap=4.0, total=60.0, retry_after_max=30.0
)
DELIVER_TASK = "inbox.deliver_reply"  # inbox/conversations/tasks.py

# What a manager can attach (inbox/conversations/manager_attachments.py).
OUTBOUND_MEDIA_KINDS = frozenset({Message.Kind.IMAGE, Message.Kind.DOCUMENT})

# "retrying": the first try failed for now and the deliver task tries again (bot messages).
# "undeliverable": WhatsApp said the customer cannot receive messages (131026), and they have not
# written since: the bot does not try.
# "window_closed": WhatsApp's customer-service window is closed (`window`): only a template.
DropReason = Literal[
    "sent",
    "stale",
    "not_bot_owner",
    "already_answered",
    "failed",
    "empty",
    "retrying",
    "undeliverable",
    "window_closed",
]


@dataclass(frozen=True)
class SendOutcome:
    sent: bool
    reason: DropReason
    message_id: int | None = None
    provider_message_id: str = ""
    error: str = ""


# --- bot-sent ids ----------------------------------------------------------------------------


def _bot_sent_key(chat_id: int) -> str:
    return f"bot_sent:{chat_id}"


def remember_bot_sent(chat_id: int, provider_message_id: str) -> None:
    if not provider_message_id:
        return
    pipe = get_redis().pipeline()
    pipe.sadd(_bot_sent_key(chat_id), provider_message_id)
    pipe.expire(_bot_sent_key(chat_id), BOT_SENT_TTL_SECONDS)
    pipe.execute()


def is_bot_sent(chat_id: int, provider_message_id: str) -> bool:
    """Did the bot send this message? Redis first; the row's `sent_by_bot` when Redis forgot."""
    if get_redis().sismember(_bot_sent_key(chat_id), provider_message_id):
        return True
    return Message.objects.filter(
        chat_id=chat_id, provider_message_id=provider_message_id, sent_by_bot=True
    ).exists()


# --- sending ---------------------------------------------------------------------------------


def send_reply(
    chat_id: int, text: str, *, generated_at_version: int, answered_up_to: int
) -> SendOutcome:
    """Send the bot's reply if the bot still owns the chat and the chat is still at the version
    the reply was generated at. `answered_up_to` is the id of the newest customer message the
    reply answers; it is recorded together with the reply, so the same messages are never
    answered twice (even if the turn runs again after a crash)."""
    text = text.strip()
    if not text:
        return SendOutcome(False, "empty")
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        if chat.owner != Owner.BOT:
            _dropped(chat, "not_bot_owner", generated_at_version)
            return SendOutcome(False, "not_bot_owner")
        if chat.version != generated_at_version:
            _dropped(chat, "stale", generated_at_version)
            return SendOutcome(False, "stale")
        if answered_up_to <= chat.answered_up_to:
            # The same turn ran twice (a task redelivered after a worker died): answered once.
            _dropped(chat, "already_answered", generated_at_version)
            return SendOutcome(False, "already_answered")
        if delivery_status.undeliverable(chat):
            _dropped(chat, "undeliverable", generated_at_version)
            return SendOutcome(False, "undeliverable")
        if not window.is_open(chat):
            # Free text now would be accepted and then fail (131047): a person decides instead.
            _dropped(chat, "window_closed", generated_at_version)
            ownership.request_human(chat.pk, reason=HandoffReason.WINDOW_CLOSED)
            return SendOutcome(False, "window_closed", error=window.CLOSED_DETAIL)
        message = record_outbound(chat, text, author=Message.Author.BOT, manager=None)
        chat.answered_up_to = answered_up_to
        chat.save(update_fields=["answered_up_to"])
    return deliver_recorded(message)


def send_manager_reply(
    chat_id: int, text: str, *, manager: User | None, source: str = "inbox"
) -> SendOutcome:
    """A manager's reply from the inbox (or another operator tool named by `source`): the chat
    becomes HUMAN before anything is sent, so no bot reply in flight can follow it."""
    text = text.strip()
    if not text:
        return SendOutcome(False, "empty")
    if not window_open(chat_id):
        return SendOutcome(False, "window_closed", error=window.CLOSED_DETAIL)
    ownership.manager_replied(chat_id, manager=manager)
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        message = record_outbound(chat, text, author=Message.Author.MANAGER, manager=manager)
        message.payload = {"source": source}
        message.save(update_fields=["payload"])
        latest = chat.messages.filter(direction=Message.Direction.INBOUND).aggregate(m=Max("id"))
        chat.answered_up_to = max(chat.answered_up_to, latest["m"] or 0)
        chat.save(update_fields=["answered_up_to"])
    return deliver_recorded(message)


def window_open(chat_id: int) -> bool:
    """May free text or media reach the chat's customer now (`window.is_open`)? Checked before
    anything is recorded: the window only ever closes with time and a customer message only
    reopens it, so a check a moment before the send cannot let a closed window through."""
    chat = Chat.objects.select_related("channel").only("window_closes_at", "channel__kind")
    return window.is_open(chat.get(pk=chat_id))


def add_internal_note(chat_id: int, text: str, *, author: User | None = None) -> Message:
    """A note only managers see (never sent to the customer)."""
    with transaction.atomic():
        chat = Chat.objects.select_related("channel").get(pk=chat_id)
        note = Message.objects.create(
            chat=chat,
            channel=chat.channel,
            direction=Message.Direction.INTERNAL,
            author=Message.Author.MANAGER if author else Message.Author.SYSTEM,
            sent_by=author,
            kind=Message.Kind.NOTE,
            text=text.strip(),
            status=Message.Status.SENT,
        )
        hooks.message_changed(note.pk)
    return note


def record_outbound(
    chat: Chat,
    text: str,
    *,
    author: str,
    manager: User | None,
    kind: str = Message.Kind.TEXT,
    media_mime: str = "",
    media_filename: str = "",
) -> Message:
    """The reply's row, committed before the transport is called: a crash after sending can
    never lead to sending the same reply again. A manager's attachment is an image or document
    row whose text is the caption."""
    transport = transport_for(chat.channel)
    client_id = f"{uuid.uuid4().hex.upper()[:20]}" if transport.assigns_message_ids else ""
    is_bot = author == Message.Author.BOT
    if is_bot and client_id:
        # Known before the send: the echo of this message may beat the send's response.
        remember_bot_sent(chat.pk, client_id)
    now = timezone.now()
    message = Message.objects.create(
        chat=chat,
        channel=chat.channel,
        direction=Message.Direction.OUTBOUND,
        author=author,
        sent_by=manager,
        from_me=True,
        sent_by_bot=is_bot,
        kind=kind,
        text=text,
        media_mime=media_mime,
        media_filename=media_filename,
        provider_message_id=client_id,
        status=Message.Status.SENDING,
        status_at=now,
    )
    Chat.objects.filter(pk=chat.pk).update(last_message_at=now)
    if not is_bot:
        # A manager sees their reply at once ("sending"); a bot reply appears when `deliver`
        # settles it a moment later (one push per reply instead of two).
        hooks.message_changed(message.pk)
    return message


def _dropped(chat: Chat, reason: str, generated_at_version: int) -> None:
    metrics.REPLIES_DROPPED.labels(reason=reason).inc()
    log.info(
        "reply.dropped",
        extra={
            "chat_id": chat.pk,
            "reason": reason,
            "owner": chat.owner,
            "version": chat.version,
            "generated_at_version": generated_at_version,
        },
    )


def deliver(message_id: int) -> SendOutcome:
    """Hand a recorded outbound message to its transport (see `deliver_recorded`)."""
    return deliver_recorded(Message.objects.select_related("chat", "channel").get(pk=message_id))


def deliver_recorded(message: Message) -> SendOutcome:
    """`deliver` for the row just recorded and committed, with its chat and channel in hand
    (the reply paths: no second read before the send). A bot message is tried once here and a
    transient failure queues its retries (outcome "retrying"); any other message is retried
    here, under the same policy."""
    if message.sent_by_bot:
        first_try_at = time.time()
        step = _next_step(message, _attempt(message), attempt=1, first_try_at=first_try_at)
        if isinstance(step, RetryLater):
            return _queue_retry(message, step, first_try_at)
        return step
    transport = transport_for(message.channel)
    try:
        provider_id = http.retry(
            lambda: _send_once_logged(transport, message), SEND_POLICY, on=TransientSendError
        )
    except SendError as exc:
        return _mark_failed(message, exc)
    return _mark_sent(message, provider_id)


@dataclass(frozen=True)
class RetryLater:
    """The try failed for now: the deliver task tries again in `countdown` seconds."""

    error: TransientSendError
    countdown: float


def retry_delivery(
    message_id: int, *, attempt: int, first_try_at: float
) -> SendOutcome | RetryLater:
    """Try number `attempt` (2 is the first retry) of a bot message: the deliver task's body.
    Nothing is sent for a message no longer "sending" (settled meanwhile, or a task run twice),
    nor when the bot no longer owns the chat (cancelled: a manager answers now)."""
    message = (
        Message.objects.select_related("chat", "channel")
        .filter(pk=message_id, status=Message.Status.SENDING)
        .first()
    )
    if message is None:
        return SendOutcome(False, "failed", message_id, error="no longer sending")
    if message.sent_by_bot and not _bot_still_owns(message.chat_id):
        return _cancelled(message)
    return _next_step(message, _attempt(message), attempt=attempt, first_try_at=first_try_at)


def _attempt(message: Message) -> str | SendError:
    """One try: the provider's message id, or what went wrong."""
    try:
        return _send_once_logged(transport_for(message.channel), message)
    except SendError as exc:
        return exc


def _send_once_logged(transport: Transport, message: Message) -> str:
    try:
        return _send_once(transport, message)
    except SendError as exc:
        log.warning(
            "send.failed",
            extra={"message_id": message.pk, "code": exc.code, "permanent": exc.permanent},
        )
        raise


def _next_step(
    message: Message, result: str | SendError, *, attempt: int, first_try_at: float
) -> SendOutcome | RetryLater:
    """What try number `attempt` of a bot message comes to: sent, failed, cancelled, or a retry
    `SEND_POLICY` allows (the bot must still own the chat)."""
    if not isinstance(result, SendError):
        return _mark_sent(message, result)
    if not isinstance(result, TransientSendError):
        return _mark_failed(message, result)
    countdown = SEND_POLICY.delay(attempt, result.retry_after)
    if not SEND_POLICY.allows(attempt, time.time() - first_try_at, countdown):
        return _mark_failed(message, result)
    if not _bot_still_owns(message.chat_id):
        return _cancelled(message)
    return RetryLater(result, countdown)


def _queue_retry(message: Message, step: RetryLater, first_try_at: float) -> SendOutcome:
    try:
        current_app.send_task(
            DELIVER_TASK, args=[message.pk, first_try_at], countdown=step.countdown
        )
    except (OSError, kombu.exceptions.OperationalError):
        log.exception("send.retry_not_queued", extra={"message_id": message.pk})
        return _mark_failed(message, step.error)
    log.info(
        "send.retry_queued",
        extra={"message_id": message.pk, "code": step.error.code, "countdown": step.countdown},
    )
    return SendOutcome(False, "retrying", message.pk, error=step.error.title)


def _cancelled(message: Message) -> SendOutcome:
    return _mark_failed(
        message,
        SendError(gettext_noop("not retried: a manager took over the chat"), code="cancelled"),
    )


def _send_once(transport: Transport, message: Message) -> str:
    if message.kind == Message.Kind.TEMPLATE:
        return _send_template(transport, message)
    if message.kind not in OUTBOUND_MEDIA_KINDS:
        return transport.send_text(
            message.chat, message.text, client_message_id=message.provider_message_id
        )
    media = _outgoing_media(message)
    if not media.media_ref:
        media_ref = transport.upload_media(message.chat, media)
        if media_ref:
            # Kept at once: when the send after a good upload fails, the retry reuses the id.
            Message.objects.filter(pk=message.pk).update(media_ref=media_ref[:1024])
            message.media_ref = media_ref
            media = replace(media, media_ref=media_ref)
    return transport.send_media(message.chat, media, client_message_id=message.provider_message_id)


def _send_template(transport: Transport, message: Message) -> str:
    """A template message: its name, language and filled components are on the row's payload
    (`templates.send`); only a transport with `send_template` (the Cloud API) can send one."""
    spec = message.payload.get("template") if isinstance(message.payload, dict) else None
    send = getattr(transport, "send_template", None)
    if not isinstance(spec, dict) or send is None:
        raise PermanentSendError("this channel cannot send message templates", code="no_template")
    template = OutgoingTemplate(
        str(spec.get("name", "")), str(spec.get("language", "")), list(spec.get("components", []))
    )
    return str(send(message.chat, template, client_message_id=message.provider_message_id))


def _outgoing_media(message: Message) -> OutgoingMedia:
    """The manager's file as kept in storage (never the request's copy)."""
    if not message.media_file:
        raise PermanentSendError("the file was not kept", code="no_file")
    try:
        with message.media_file.open("rb") as handle:
            content = bytes(handle.read())
    except OSError as exc:
        raise TransientSendError("the kept file could not be read", code="storage") from exc
    return OutgoingMedia(
        kind=message.kind,
        content=content,
        mime_type=message.media_mime,
        filename=message.media_filename,
        caption=message.text,
        media_ref=message.media_ref,
    )


def _bot_still_owns(chat_id: int) -> bool:
    return Chat.objects.filter(pk=chat_id, owner=Owner.BOT).exists()


def _mark_sent(message: Message, provider_id: str) -> SendOutcome:
    # The row first: it is the durable record of what went out (and, with sent_by_bot, what
    # recognises the echo when Redis has forgotten). Redis being away must not lose it.
    if not _record_sent(message, provider_id):
        provider_id = ""
    metrics.REPLIES_SENT.labels(author=message.author).inc()
    try:
        if message.sent_by_bot and provider_id:
            remember_bot_sent(message.chat_id, provider_id)
        if provider_id:
            delivery_status.apply_early(message.channel_id, provider_id)
    except redis.RedisError:
        log.warning("send.redis_unavailable_after_send", extra={"message_id": message.pk})
    hooks.message_changed(message.pk)
    return SendOutcome(True, "sent", message.pk, provider_id)


def _record_sent(message: Message, provider_id: str) -> bool:
    """Mark the row sent under the provider's id. False when the provider gave an id another
    message of the channel has already (a transport's fault): the row is marked sent without
    it, the turn goes on, and that id's statuses and echo stay the earlier message's."""
    sending = Message.objects.filter(pk=message.pk, status=Message.Status.SENDING)
    now = timezone.now()
    try:
        with transaction.atomic():
            sending.update(
                provider_message_id=provider_id, status=Message.Status.SENT, status_at=now
            )
    except IntegrityError:
        log.warning(
            "send.provider_id_reused",
            extra={"message_id": message.pk, "channel_id": message.channel_id},
        )
        sending.update(status=Message.Status.SENT, status_at=now)
        return False
    return True


def _mark_failed(message: Message, error: SendError) -> SendOutcome:
    Message.objects.filter(pk=message.pk).update(
        status=Message.Status.FAILED,
        status_at=timezone.now(),
        error_code=error.code[:32],
        error_title=error.title[:500],
    )
    metrics.REPLIES_FAILED.labels(author=message.author, code=error.code[:32]).inc()
    hooks.message_changed(message.pk)
    if error.code == delivery_errors.Code.UNDELIVERABLE:
        delivery_status.mark_undeliverable(message.chat_id, timezone.now())
    if message.sent_by_bot:
        # A turn that recorded its reply as answered while the retries were still to come.
        _turns_answered_by(message.pk).update(outcome=Turn.Outcome.SEND_FAILED)
    if message.sent_by_bot and error.code != "cancelled":
        # The customer did not get the bot's answer: a human has to look at this chat.
        with contextlib.suppress(ownership.InvalidTransition):
            ownership.request_human(message.chat_id, reason=HandoffReason.SEND_FAILED)
    return SendOutcome(False, "failed", message.pk, error=error.title)


def _turns_answered_by(message_id: int) -> QuerySet[Turn]:
    return Turn.objects.filter(
        reply_message_id=message_id,
        outcome__in=(Turn.Outcome.ANSWERED, Turn.Outcome.CLARIFIED),
    )


def settle_turn(turn_id: int) -> None:
    """For the turn, once saved, whose reply was still being retried: when the retries already
    gave up (before the turn's row named its reply, so `_mark_failed` could not mark it), the
    turn says so too."""
    Turn.objects.filter(
        pk=turn_id,
        outcome__in=(Turn.Outcome.ANSWERED, Turn.Outcome.CLARIFIED),
        reply_message__status=Message.Status.FAILED,
    ).update(outcome=Turn.Outcome.SEND_FAILED)


def settle_stuck_sends(*, older_than_seconds: float) -> int:
    """Mark "sending" messages older than this as outcome unknown; see inbox.upkeep.tasks."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    stuck = list(
        Message.objects.filter(status=Message.Status.SENDING, status_at__lt=cutoff).values_list(
            "pk", "chat_id", "sent_by_bot"
        )[:500]
    )
    for message_id, chat_id, by_bot in stuck:
        marked = Message.objects.filter(pk=message_id, status=Message.Status.SENDING).update(
            status=Message.Status.UNKNOWN,
            status_at=timezone.now(),
            error_title="The worker stopped while sending: check with the customer whether "
            "this message arrived.",
        )
        if not marked:
            continue
        hooks.message_changed(message_id)
        if by_bot:
            with contextlib.suppress(ownership.InvalidTransition):
                ownership.request_human(chat_id, reason=HandoffReason.SEND_UNKNOWN)
    return len(stuck)
