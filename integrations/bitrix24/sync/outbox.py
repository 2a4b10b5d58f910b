"""Recording sync work in the database (the outbox) and handing it to workers.

Work is a flag on the chat's `CrmLink` row (plus one `HandoffSync` row per handoff and one
`FailedMessageSync` row per message WhatsApp did not deliver), written
in the caller's transaction; the Celery task is enqueued on commit. A lost enqueue is picked
up by the periodic sweep, because the row says there is work.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from inbox.conversations.models import Chat
from integrations.bitrix24.models import CrmLink
from integrations.bitrix24.rest.errors import Bitrix24Error, PermanentError, TransientError

LEASE = timedelta(seconds=400)
# The Celery tasks that do the work (integrations/bitrix24/tasks.py), enqueued by name.
PUSH_TASK = "bitrix24.push"
CONNECTOR_SEND_TASK = "bitrix24.connector_send"


def request_sync(chat: Chat, *, responsible: bool = False, verify: bool = False) -> CrmLink:
    """Mark the chat as needing a sync pass (create its link row if missing)."""
    link, _ = CrmLink.objects.get_or_create(
        chat=chat, defaults={"business_id": chat.channel.business_id}
    )
    changes: dict[str, object] = {"needs_sync": True, "sync_seq": F("sync_seq") + 1}
    if responsible:
        changes["needs_responsible"] = True
    if verify:
        changes["verify"] = True
        changes["next_attempt_at"] = None
    CrmLink.objects.filter(pk=link.pk).update(**changes)
    return link


def enqueue_push_on_commit(business_id: int) -> None:
    """Start a push worker once the caller's transaction commits. Never fails the caller."""
    transaction.on_commit(lambda: current_app.send_task(PUSH_TASK, args=[business_id]), robust=True)


def enqueue_connector_on_commit(business_id: int) -> None:
    """Start sending pending Open Channels messages once the transaction commits."""
    transaction.on_commit(
        lambda: current_app.send_task(CONNECTOR_SEND_TASK, args=[business_id]), robust=True
    )


def claim_links(business_id: int, limit: int) -> list[tuple[int, int]]:
    """Take up to `limit` due links for this worker: returns (link id, sync_seq) pairs. Rows
    another worker holds are skipped (SKIP LOCKED, then a lease in `claimed_until`)."""
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            CrmLink.objects.select_for_update(skip_locked=True)
            .filter(business_id=business_id, needs_sync=True)
            .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
            .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
            .order_by("id")
            .values_list("id", "sync_seq")[:limit]
        )
        if rows:
            CrmLink.objects.filter(id__in=[r[0] for r in rows]).update(
                claimed_until=now + LEASE, attempts=F("attempts") + 1
            )
    return rows


def retry_delay(attempts: int, error: Bitrix24Error) -> float:
    """Seconds before the next try: doubling with jitter; long for permanent errors (someone
    has to fix the configuration or the data), and never sooner than Bitrix24 asked."""
    if isinstance(error, PermanentError):
        return float(min(86400, 3600 * 2 ** (min(attempts, 6) - 1)))
    base = float(getattr(settings, "BITRIX24_RETRY_BASE", 10.0))
    cap = float(getattr(settings, "BITRIX24_RETRY_CAP", 600.0))
    delay = min(cap, base * 2 ** (max(attempts, 1) - 1)) * random.uniform(0.75, 1.25)
    retry_after = error.retry_after if isinstance(error, TransientError) else None
    return float(max(delay, float(retry_after or 0)))


def finish_link(link_id: int, seq: int, now: datetime) -> None:
    """The pass did everything asked: clear the flag unless new work arrived meanwhile."""
    done = CrmLink.objects.filter(pk=link_id, sync_seq=seq).update(
        needs_sync=False,
        verify=False,
        attempts=0,
        last_error="",
        claimed_until=None,
        next_attempt_at=None,
        last_synced_at=now,
    )
    if not done:
        CrmLink.objects.filter(pk=link_id).update(claimed_until=None, last_synced_at=now)


def fail_link(link_id: int, attempts: int, error: Bitrix24Error, now: datetime) -> datetime:
    """Put the link back for a later pass; returns when it is due."""
    due = now + timedelta(seconds=retry_delay(attempts, error))
    CrmLink.objects.filter(pk=link_id).update(
        claimed_until=None, next_attempt_at=due, last_error=str(error)[:500]
    )
    return due


def seconds_until_due(business_id: int, now: datetime) -> float | None:
    """How long until the business's next free link with work is due (0 if one is due now);
    None when none is waiting. Links another worker holds are its business, not ours."""
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    waiting = CrmLink.objects.filter(free, business_id=business_id, needs_sync=True)
    if waiting.filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)).exists():
        return 0.0
    due = waiting.order_by("next_attempt_at").values_list("next_attempt_at", flat=True).first()
    return None if due is None else (due - now).total_seconds()


def release_links(link_ids: list[int]) -> None:
    CrmLink.objects.filter(pk__in=link_ids).update(claimed_until=None)
