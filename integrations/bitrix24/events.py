"""Intake of Bitrix24 outbound events (`POST /webhooks/bitrix24/`).

The body is form-encoded in PHP bracket style. `auth[application_token]` is compared in
constant time with every configured business's token; anything else gets 403 and nothing is
enqueued. A valid event enqueues only the event name and the entity ID (an Open Channels reply
also carries its text, which cannot be read back later) and answers 200 at once: Bitrix24
never retries a failed delivery, so this path makes no outside calls and must not fail.
"""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.db import transaction

from integrations.bitrix24 import payloads, tasks
from integrations.bitrix24.inbound import pull
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.rest import phpquery
from integrations.bitrix24.setup import install

log = logging.getLogger(__name__)


def matching_businesses(token: str) -> list[int]:
    """Businesses whose application token equals `token`, compared in constant time against
    every configured token (the loop never stops early)."""
    if not token:
        return []
    given = token.encode()
    matched = []
    rows = Bitrix24Settings.objects.filter(is_active=True).exclude(application_token="")
    for business_id, stored in rows.values_list("business_id", "application_token"):
        if hmac.compare_digest(str(stored).encode(), given):
            matched.append(business_id)
    return matched


def _operator_messages(event: payloads.Event, connector: str) -> list[dict[str, str]]:
    if event.data.CONNECTOR.lower() != connector.lower():
        return []
    return [message.as_task_args() for message in event.data.MESSAGES]


def _dispatch(business_id: int, parsed: payloads.Event) -> bool:
    """Enqueue what this event asks for. Returns False if it could not be recorded anywhere."""
    event = parsed.event
    entity = payloads.entity_of_event(event)
    if entity is not None:
        entity_id = parsed.entity_id
        if entity_id is None:
            return True
        try:
            tasks.event_received.delay(business_id, event, entity_id)
        except Exception:
            log.exception("bitrix24.event_enqueue_failed", extra={"event": event})
            # The broker is down: keep it in the database for the sweep.
            pull.mark_remote_change(business_id, entity, entity_id, event=event)
        return True
    if event == payloads.EventName.OFFLINE_EVENT:
        tasks.offline_task.delay(business_id)
        return True
    if event == payloads.EventName.CONNECTOR_MESSAGE_ADD:
        cfg = Bitrix24Settings.objects.filter(business_id=business_id).first()
        messages = _operator_messages(parsed, cfg.connector_id if cfg else "")
        if messages:
            tasks.operator_replies.delay(business_id, messages)
        return True
    log.info("bitrix24.event_ignored", extra={"business_id": business_id, "event": event})
    return True


def receive(body: bytes) -> int:
    """Handle one event POST; returns the HTTP status to answer.

    Size and field count are checked before anything is parsed: this runs for anyone, before
    the token is known, in the web process that also serves the pages."""
    if len(body) > settings.BITRIX24_EVENT_MAX_BODY_BYTES:
        return 413
    try:
        form = phpquery.decode(body.decode("utf-8", "replace"), settings.FORM_MAX_FIELDS)
    except phpquery.TooManyFields:
        log.warning("bitrix24.event_too_many_fields", extra={"size": len(body)})
        return 400
    parsed = payloads.parse(form)
    event, portal = parsed.event, parsed.auth.domain
    if event == payloads.EventName.APP_INSTALL:
        business_id = install.record_install(form)
        if business_id is None:
            log.warning("bitrix24.app_install_unmatched", extra={"portal": portal})
            return 403
        transaction.on_commit(lambda: tasks.app_installed.delay(business_id), robust=True)
        return 200
    businesses = matching_businesses(parsed.auth.application_token)
    if not businesses:
        log.warning("bitrix24.event_rejected", extra={"portal": portal, "event": event})
        return 403
    recorded = True
    for business_id in businesses:
        try:
            recorded = _dispatch(business_id, parsed) and recorded
        except Exception:
            log.exception("bitrix24.event_dispatch_failed", extra={"event": event})
            recorded = False
    log.info("bitrix24.event_received", extra={"portal": portal, "event": event})
    return 200 if recorded else 503
