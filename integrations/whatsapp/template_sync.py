"""A Cloud API channel's message templates, read from the Graph API into the template store,
and the status changes WhatsApp announces by webhook.

`GET /{waba-id}/message_templates` lists the WhatsApp Business Account's templates a page at a
time; the next page is asked for with the `after` cursor of `paging.cursors` for as long as the
answer has `paging.next` (the `next` URL itself is not followed: requests go only to the
operator's Graph URL). Templates no longer listed were deleted at Meta and are dropped here.
Synced on demand (the channel page's button, `manage.py sync_templates`) and by Celery beat
(`whatsapp.sync_templates`); the `message_template_status_update` webhook field updates one
template's status between syncs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import httpx
from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from inbox.conversations import templates
from inbox.conversations.models import Channel, MessageTemplate
from inbox.platform import http
from integrations.whatsapp.cloud_api import _graph_error

log = logging.getLogger(__name__)

SYNC_TASK = "whatsapp.sync_templates"
STATUS_FIELD = "message_template_status_update"
FIELDS = "id,name,language,status,category,components,parameter_format"
PAGE_SIZE = 100
MAX_PAGES = 50  # 5,000 templates: far more than WhatsApp lets one account have
TIMEOUT = http.timeouts(20.0)


class SyncError(Exception):
    """The Graph API refused or failed the listing; `str(exc)` says why, for the admin."""


@dataclass(frozen=True)
class SyncResult:
    stored: int
    removed: int


def fetch(channel: Channel) -> list[dict[str, Any]]:
    """Every template of the channel's WABA, all pages."""
    if not channel.waba_id or not channel.access_token:
        raise SyncError(gettext("Set the channel's WABA ID and access token first."))
    url = f"{settings.WHATSAPP_GRAPH_URL}/{channel.waba_id}/message_templates"
    headers = {"Authorization": f"Bearer {channel.access_token}"}
    params: dict[str, Any] = {"fields": FIELDS, "limit": PAGE_SIZE}
    found: list[dict[str, Any]] = []
    for _page in range(MAX_PAGES):
        try:
            response = http.shared().get(url, params=params, headers=headers, timeout=TIMEOUT)
        except httpx.TransportError as exc:
            raise SyncError(gettext("The Graph API is unreachable: try again later.")) from exc
        if response.status_code != 200:
            error = _graph_error(response)
            if error.code == "100":
                raise SyncError(
                    gettext(
                        "WhatsApp does not know the WABA ID %(waba)s (or this token cannot "
                        "see it): check the channel's WABA ID."
                    )
                    % {"waba": channel.waba_id}
                )
            raise SyncError(error.title)
        try:
            body = response.json()
        except ValueError as exc:
            raise SyncError(gettext("The Graph API gave an unexpected answer.")) from exc
        if not isinstance(body, dict):
            raise SyncError(gettext("The Graph API gave an unexpected answer."))
        data = body.get("data")
        if isinstance(data, list):
            found.extend(item for item in data if isinstance(item, dict))
        paging = _object(body.get("paging"))
        after = _object(paging.get("cursors")).get("after")
        if not paging.get("next") or not isinstance(after, str) or not after:
            return found
        params = {**params, "after": after}
    log.warning("templates.too_many_pages", extra={"channel_id": channel.pk})
    return found


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _row(item: dict[str, Any]) -> dict[str, Any] | None:
    name, language = item.get("name"), item.get("language")
    if not isinstance(name, str) or not isinstance(language, str) or not name or not language:
        return None
    status = str(item.get("status", "")).upper()
    category = str(item.get("category", "")).upper()
    components = item.get("components")
    return {
        "name": name[:512],
        "language": language[:16],
        "status": status if status in MessageTemplate.Status.values else "PENDING",
        "category": category if category in MessageTemplate.Category.values else "UTILITY",
        "components": components if isinstance(components, list) else [],
        "parameter_format": str(item.get("parameter_format", ""))[:16],
        "template_id": str(item.get("id", ""))[:64],
    }


def sync(channel: Channel) -> SyncResult:
    """Read the channel's templates from the Graph API into the store; raises `SyncError`."""
    rows = [row for row in map(_row, fetch(channel)) if row is not None]
    now = timezone.now()
    with transaction.atomic():
        keep: list[int] = []
        for row in rows:
            template, _ = MessageTemplate.objects.update_or_create(
                channel=channel,
                name=row.pop("name"),
                language=row.pop("language"),
                defaults={**row, "synced_at": now, "reason": ""},
            )
            keep.append(template.pk)
        removed, _ = MessageTemplate.objects.filter(channel=channel).exclude(pk__in=keep).delete()
    log.info("templates.synced", extra={"channel_id": channel.pk, "stored": len(keep)})
    return SyncResult(len(keep), removed)


def syncable() -> list[Channel]:
    return list(
        Channel.objects.filter(kind=Channel.Kind.CLOUD_API, is_active=True).exclude(waba_id="")
    )


@shared_task(name=SYNC_TASK, ignore_result=True, soft_time_limit=300, time_limit=330)
def sync_all() -> int:
    """Beat: every active Cloud API channel with a WABA id; one failing does not stop the rest."""
    done = 0
    for channel in syncable():
        try:
            sync(channel)
            done += 1
        except SyncError as exc:
            log.warning("templates.sync_failed", extra={"channel_id": channel.pk, "why": str(exc)})
    return done


def status_changes(body: Any) -> list[tuple[str, dict[str, Any]]]:
    """(WABA id, value) of each `message_template_status_update` change of a webhook body."""
    found: list[tuple[str, dict[str, Any]]] = []
    entries = body.get("entry") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        changes = entry.get("changes") if isinstance(entry, dict) else None
        for change in changes if isinstance(changes, list) else []:
            if not isinstance(change, dict) or change.get("field") != STATUS_FIELD:
                continue
            value = change.get("value")
            if isinstance(value, dict) and isinstance(entry.get("id"), str):
                found.append((entry["id"], value))
    return found


def apply_status_changes(changes: list[tuple[str, dict[str, Any]]]) -> int:
    """Update the stored templates the changes name (on every channel of that WABA); the number
    of rows changed. Events that are no status of ours (e.g. a category change) are ignored."""
    updated = 0
    for waba_id, value in changes:
        channel_ids = list(
            Channel.objects.filter(kind=Channel.Kind.CLOUD_API, waba_id=waba_id).values_list(
                "pk", flat=True
            )
        )
        name = value.get("message_template_name")
        if not channel_ids or not isinstance(name, str):
            continue
        language = value.get("message_template_language")
        reason = value.get("reason")
        updated += templates.set_status(
            channel_ids,
            name,
            language if isinstance(language, str) else "",
            str(value.get("event", "")).upper(),
            reason if isinstance(reason, str) and reason != "NONE" else "",
        )
    return updated


def apply_status_changes_quietly(changes: list[tuple[str, dict[str, Any]]]) -> None:
    """`apply_status_changes` for the webhook, which needs no count."""
    apply_status_changes(changes)
