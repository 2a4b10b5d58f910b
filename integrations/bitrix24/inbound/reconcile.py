"""The periodic pass that catches what events lost: Bitrix24 delivers each outbound event once
and never retries, so every few minutes we list our entities (and contacts) modified after the
last checkpoint, minus an overlap window, and run them through the same code as events.

Dates are compared as aware datetimes: Bitrix24 returns them in the server's time zone with an
offset, and we send the filter with an offset too.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Min, QuerySet
from django.utils import timezone

from inbox.conversations import progress
from inbox.conversations.models import Job
from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.crm import snapshot
from integrations.bitrix24.crm.portal import portal_info
from integrations.bitrix24.inbound import pull
from integrations.bitrix24.models import Bitrix24Settings, CrmEntity, CrmLink
from integrations.bitrix24.rest.connection import active_settings, client_for

log = logging.getLogger(__name__)


@dataclass
class ReconcileReport:
    seen: int = 0
    applied: int = 0
    checkpoint: datetime | None = None


def _later(*values: datetime | None) -> datetime | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def reconcile(business_id: int) -> ReconcileReport:
    """List entities modified since the checkpoint and apply them; move the checkpoint."""
    report = ReconcileReport()
    cfg = active_settings(business_id)
    if cfg is None or not cfg.sync_back:
        return report
    links = CrmLink.objects.filter(business_id=business_id)
    first_link = links.aggregate(first=Min("created_at"))["first"]
    if first_link is None:
        return report
    job_id = progress.start(business_id, Job.Kind.CRM_RECONCILE)
    try:
        _reconcile(cfg, links, first_link, report, job_id)
    except Exception as exc:
        progress.finish(job_id, error=f"stopped: {type(exc).__name__}; the next pass retries")
        raise
    progress.finish(job_id)
    return report


def _reconcile(
    cfg: Bitrix24Settings,
    links: QuerySet[CrmLink],
    first_link: datetime,
    report: ReconcileReport,
    job_id: int,
) -> None:
    business_id = cfg.business_id
    started = timezone.now()
    overlap = timedelta(seconds=float(getattr(settings, "BITRIX24_RECONCILE_OVERLAP_SECONDS", 300)))
    entities = set(links.exclude(entity_type="").values_list("entity_type", flat=True).distinct())
    with client_for(cfg) as client:
        info = portal_info(client, cfg)
        entities.add(info.entity)
        since = (cfg.reconcile_checkpoint or first_link) - overlap
        newest: datetime | None = None
        ufs = snapshot.synced_userfields(cfg, info)
        for entity in sorted(entities):
            params: dict[str, Any] = {
                "entityTypeId": CrmEntity(entity).type_id,
                "filter": {">updatedTime": since.isoformat(), "=originatorId": cfg.originator_id},
                "select": snapshot.ENTITY_SELECT + ufs,
                "useOriginalUfNames": "Y",
            }
            for item in client.iterate("crm.item.list", params, id_field="id", items_key="items"):
                report.seen += 1
                if pull.apply_item(cfg, info, entity, item) == pull.PullOutcome.APPLIED:
                    report.applied += 1
                progress.advance(job_id, done=1)
                newest = _later(newest, f.parse_datetime(item.get("updatedTime")))
        contact_since = (cfg.contact_checkpoint or first_link) - overlap
        linked = set(links.exclude(contact_id=None).values_list("contact_id", flat=True))
        newest_contact: datetime | None = None
        contact_params = {
            "entityTypeId": CrmEntity.CONTACT.type_id,
            "filter": {">updatedTime": contact_since.isoformat()},
            "select": snapshot.CONTACT_SELECT,
        }
        for item in client.iterate(
            "crm.item.list", contact_params, id_field="id", items_key="items"
        ):
            newest_contact = _later(newest_contact, f.parse_datetime(item.get("updatedTime")))
            if int(item["id"]) not in linked:
                continue
            report.seen += 1
            if pull.apply_contact(cfg, item) == pull.PullOutcome.APPLIED:
                report.applied += 1
            progress.advance(job_id, done=1)
    floor = started - overlap
    checkpoint = _later(cfg.reconcile_checkpoint, newest, floor)
    contact_checkpoint = _later(cfg.contact_checkpoint, newest_contact, floor)
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(
        reconcile_checkpoint=checkpoint, contact_checkpoint=contact_checkpoint
    )
    report.checkpoint = checkpoint
    log.info(
        "bitrix24.reconciled",
        extra={
            "business_id": business_id,
            "seen": report.seen,
            "applied": report.applied,
            "since": since.isoformat(),
        },
    )
