"""WhatsApp chats in Bitrix24 Open Channels, through an `imconnector` (local-application mode).

Customer → Bitrix24: `imconnector.send.messages` (at least once; a message that may or may not
have arrived is sent again rather than lost).
Operator → customer: the `ONIMCONNECTORMESSAGEADD` event carries the operator's text (BB-code);
it goes out through our WhatsApp transport (`inbox.conversations.outbound.send_manager_reply`) at
most once, and the delivery is acknowledged with `imconnector.send.status.delivery`.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from inbox.conversations.models import Chat
from inbox.conversations.outbound import send_manager_reply
from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.models import Bitrix24Settings, ConnectorMessage, UserLink
from integrations.bitrix24.openlines import bbcode
from integrations.bitrix24.rest.connection import active_settings, client_for
from integrations.bitrix24.rest.errors import Bitrix24Error
from integrations.bitrix24.sync import outbox

log = logging.getLogger(__name__)

CLAIM = 20
LEASE = timedelta(seconds=300)
SOURCE = "bitrix24"
PENDING, SENT = ConnectorMessage.State.PENDING, ConnectorMessage.State.SENT


def external_chat_id(chat: Chat) -> str:
    """The chat's id in Bitrix24 Open Channels (`chat.id` in connector messages)."""
    return f"wa-{chat.pk}"


def _chat_for(business_id: int, external_id: str) -> Chat | None:
    match = re.fullmatch(r"wa-(\d{1,18})", external_id or "")
    if not match:
        return None
    return (
        Chat.objects.select_related("channel")
        .filter(pk=int(match.group(1)), channel__business_id=business_id)
        .first()
    )


def _person_name(chat: Chat) -> tuple[str, str]:
    """Open Channels accept names of ≤25 letters, spaces, hyphens and apostrophes."""
    cleaned = re.sub(r"[^\w\s'\-]|\d|_", "", chat.customer_name).strip()
    first, last = f.split_name(cleaned)
    return (first[:25] or "WhatsApp"), last[:25]


def _connector_ready(cfg: Bitrix24Settings | None) -> bool:
    return bool(
        cfg is not None
        and cfg.mode == Bitrix24Settings.Mode.APP
        and cfg.sync_open_channels
        and cfg.connector_id
        and cfg.line_id
    )


def _claim(
    business_id: int, direction: ConnectorMessage.Direction, states: list[ConnectorMessage.State]
) -> list[ConnectorMessage]:
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            ConnectorMessage.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(business_id=business_id, direction=direction, state__in=states)
            .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
            .select_related("chat__channel", "message")
            .order_by("id")[:CLAIM]
        )
        ConnectorMessage.objects.filter(pk__in=[r.pk for r in rows]).update(
            next_attempt_at=now + LEASE
        )
    return rows


def _postpone(rows: list[ConnectorMessage], error: Bitrix24Error) -> None:
    now = timezone.now()
    for row in rows:
        row.attempts += 1
        row.next_attempt_at = now + timedelta(seconds=outbox.retry_delay(row.attempts, error))
        row.reason = str(error)[:255]
        row.save(update_fields=["attempts", "next_attempt_at", "reason"])


def send_pending(business_id: int) -> int:
    """Send pending customer messages to Open Channels; returns how many were accepted."""
    cfg = active_settings(business_id)
    if not _connector_ready(cfg):
        return 0
    assert cfg is not None
    sent = 0
    with client_for(cfg) as client:
        while rows := _claim(business_id, ConnectorMessage.Direction.TO_BITRIX, [PENDING]):
            messages = []
            for row in rows:
                assert row.chat is not None
                assert row.message is not None
                chat, message = row.chat, row.message
                first, last = _person_name(chat)
                when = message.provider_timestamp or message.created_at
                messages.append(
                    {
                        "user": {
                            "id": external_chat_id(chat),
                            "name": first,
                            "last_name": last,
                            "phone": f.chat_phone(chat),
                            "skip_phone_validate": "Y",
                        },
                        "message": {
                            "id": f"msg-{message.pk}",
                            "date": int(when.timestamp()),
                            "text": message.content or f"[{message.get_kind_display()}]",
                        },
                        "chat": {
                            "id": external_chat_id(chat),
                            "name": f.customer_label(chat),
                            "url": f.chat_url(chat),
                        },
                    }
                )
            try:
                response = client.call(
                    "imconnector.send.messages",
                    {"CONNECTOR": cfg.connector_id, "LINE": cfg.line_id, "MESSAGES": messages},
                )
            except Bitrix24Error as exc:
                _postpone(rows, exc)
                raise
            data = response.result if isinstance(response.result, dict) else {}
            results = (data.get("DATA") or {}).get("RESULT") or []
            for index, row in enumerate(rows):
                outcome = results[index] if index < len(results) else {}
                ok = isinstance(outcome, dict) and outcome.get("SUCCESS") in (True, "Y", 1)
                row.state = ConnectorMessage.State.SENT if ok else ConnectorMessage.State.REJECTED
                row.reason = "" if ok else str(outcome.get("ERROR") or "rejected")[:255]
                row.external_chat_id = external_chat_id(row.chat)  # type: ignore[arg-type]
                session = outcome.get("session") if isinstance(outcome, dict) else None
                if isinstance(session, dict):
                    row.im_chat_id = str(session.get("CHAT_ID") or "")
                row.save(update_fields=["state", "reason", "external_chat_id", "im_chat_id"])
                sent += ok
    return sent


def record_operator_messages(business_id: int, messages: list[dict[str, Any]]) -> int:
    """Store operator replies from an ONIMCONNECTORMESSAGEADD event (once per message)."""
    created = 0
    for item in messages:
        im_chat_id = str(item.get("im_chat_id") or "")
        im_message_id = str(item.get("im_message_id") or "")
        if not (im_chat_id and im_message_id):
            continue
        external = str(item.get("chat_id") or "")
        user_id = str(item.get("user_id") or "")
        try:
            with transaction.atomic():
                _, made = ConnectorMessage.objects.get_or_create(
                    business_id=business_id,
                    direction=ConnectorMessage.Direction.FROM_BITRIX,
                    im_chat_id=im_chat_id,
                    im_message_id=im_message_id,
                    defaults={
                        "chat": _chat_for(business_id, external),
                        "external_chat_id": external[:64],
                        "bitrix_user_id": int(user_id) if user_id.isdigit() else None,
                        "text": str(item.get("text") or ""),
                    },
                )
        except IntegrityError:
            made = False  # the same event delivered twice, recorded by the other worker
        created += made
    return created


def _manager_for(business_id: int, bitrix_user_id: int | None) -> User | None:
    if bitrix_user_id is None:
        return None
    link = (
        UserLink.objects.filter(business_id=business_id, bitrix_user_id=bitrix_user_id)
        .select_related("user")
        .first()
    )
    return link.user if link is not None else None


def _send_to_customer(row: ConnectorMessage) -> None:
    """Send one operator reply through our transport, at most once: the row is marked SENDING
    first, and a row found SENDING later (the worker died) is never sent again."""
    if row.chat is None:
        row.state, row.reason = ConnectorMessage.State.REJECTED, "unknown chat"
        row.save(update_fields=["state", "reason"])
        return
    text = bbcode.to_whatsapp(row.text)
    if not text:
        row.state, row.reason = ConnectorMessage.State.REJECTED, "empty message"
        row.save(update_fields=["state", "reason"])
        return
    row.state = ConnectorMessage.State.SENDING
    row.save(update_fields=["state"])
    outcome = send_manager_reply(
        row.chat.pk, text, manager=_manager_for(row.business_id, row.bitrix_user_id), source=SOURCE
    )
    if outcome.sent:
        row.state, row.reason = ConnectorMessage.State.SENT, ""
        row.provider_message_id = outcome.provider_message_id
    else:
        row.state = ConnectorMessage.State.REJECTED
        row.reason = (outcome.error or outcome.reason or "not sent")[:255]
    row.next_attempt_at = None
    row.save(update_fields=["state", "reason", "provider_message_id", "next_attempt_at"])
    log.info(
        "bitrix24.operator_reply",
        extra={
            "business_id": row.business_id,
            "chat_id": row.chat.pk,
            "sent": outcome.sent,
            "reason": outcome.reason,
        },
    )


def deliver_pending(business_id: int) -> int:
    """Send stored operator replies to WhatsApp and acknowledge the sent ones to Bitrix24.
    Returns how many were acknowledged."""
    cfg = active_settings(business_id)
    if not _connector_ready(cfg):
        return 0
    assert cfg is not None
    stuck = ConnectorMessage.objects.filter(
        business_id=business_id,
        direction=ConnectorMessage.Direction.FROM_BITRIX,
        state=ConnectorMessage.State.SENDING,
        updated_at__lt=timezone.now() - LEASE,
    )
    for row in stuck:
        log.error("bitrix24.operator_reply_unknown", extra={"business_id": business_id})
        row.state, row.reason = ConnectorMessage.State.REJECTED, "outcome unknown: not resent"
        row.save(update_fields=["state", "reason"])
    acked = 0
    with client_for(cfg) as client:
        while rows := _claim(business_id, ConnectorMessage.Direction.FROM_BITRIX, [PENDING, SENT]):
            for row in rows:
                if row.state == ConnectorMessage.State.PENDING:
                    _send_to_customer(row)
            to_ack = [r for r in rows if r.state == ConnectorMessage.State.SENT]
            if not to_ack:
                continue
            now = int(timezone.now().timestamp())
            statuses = [
                {
                    "im": {"chat_id": r.im_chat_id, "message_id": r.im_message_id},
                    "message": {"id": [r.provider_message_id], "date": now},
                    "chat": {"id": r.external_chat_id},
                }
                for r in to_ack
            ]
            try:
                client.call(
                    "imconnector.send.status.delivery",
                    {"CONNECTOR": cfg.connector_id, "LINE": cfg.line_id, "MESSAGES": statuses},
                )
            except Bitrix24Error as exc:
                _postpone(to_ack, exc)
                raise
            ConnectorMessage.objects.filter(pk__in=[r.pk for r in to_ack]).update(
                state=ConnectorMessage.State.ACKED, next_attempt_at=None
            )
            acked += len(to_ack)
    return acked
