"""Changes made in Bitrix24 back to the inbox: deal/lead stage (won, lost, in progress),
responsible user, contact name.

Events carry only an ID, so every source (online events, the offline queue, reconciliation)
records "entity X changed" as a `PendingPull` row; a worker re-reads up to 50 of them with one
request and applies what it finds. An update whose synced fields hash to what we last wrote or
read is our own echo and is dropped, as is a change made by the integration's technical user:
processing an echo writes nothing anywhere, so a write → event → read loop ends in one step.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from inbox.conversations import hooks
from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.crm import snapshot
from integrations.bitrix24.crm.portal import PortalInfo, portal_info
from integrations.bitrix24.inbound import customers
from integrations.bitrix24.models import Bitrix24Settings, CrmEntity, CrmLink, PendingPull
from integrations.bitrix24.rest.client import Bitrix24Client, Command
from integrations.bitrix24.rest.connection import active_settings, client_for
from integrations.bitrix24.rest.errors import Bitrix24Error
from integrations.bitrix24.sync import outbox

log = logging.getLogger(__name__)

CLAIM = 50
LEASE = timedelta(seconds=300)


class PullOutcome(StrEnum):
    """What reading an entity back did (logged as `outcome`; only APPLIED changes anything)."""

    APPLIED = "applied"  # a manager's change, now on the chat's link (and customer name)
    ECHO = "echo"  # the synced fields hash to what we last wrote or read
    OWN_CHANGE = "own_change"  # made by the integration's technical user
    NOT_LINKED = "not_linked"  # no chat of ours is linked to it
    DELETED = "deleted"  # gone from Bitrix24: the link is marked deleted


def mark_remote_change(
    business_id: int,
    entity: CrmEntity | str,
    entity_id: int,
    *,
    event: str = "",
    source: PendingPull.Source = PendingPull.Source.EVENT,
) -> None:
    """Record that Bitrix24 says this entity changed (idempotent; bumps the row's seq)."""
    match = PendingPull.objects.filter(
        business_id=business_id, entity_type=entity, entity_id=entity_id
    )
    if match.update(seq=F("seq") + 1, event=event[:64], source=source):
        return
    try:
        with transaction.atomic():
            PendingPull.objects.create(
                business_id=business_id,
                entity_type=entity,
                entity_id=entity_id,
                event=event[:64],
                source=source,
            )
    except IntegrityError:
        match.update(seq=F("seq") + 1, event=event[:64], source=source)


def claim_pulls(business_id: int, limit: int = CLAIM) -> list[tuple[int, str, int, int]]:
    """(row id, entity type, entity id, seq) of due rows, leased to this worker."""
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            PendingPull.objects.select_for_update(skip_locked=True)
            .filter(business_id=business_id)
            .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
            .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
            .order_by("requested_at", "id")
            .values_list("id", "entity_type", "entity_id", "seq")[:limit]
        )
        if rows:
            PendingPull.objects.filter(id__in=[r[0] for r in rows]).update(
                claimed_until=now + LEASE, attempts=F("attempts") + 1
            )
    return rows


@dataclass
class PullReport:
    applied: int = 0
    echoes: int = 0
    ignored: int = 0
    failed: int = 0


def apply_entity(
    cfg: Bitrix24Settings, info: PortalInfo, entity: str, item: dict[str, Any]
) -> PullOutcome:
    """Apply a lead/deal as read from Bitrix24. Returns APPLIED, ECHO, OWN_CHANGE or
    NOT_LINKED; only APPLIED changes anything."""
    with transaction.atomic():
        link = (
            CrmLink.objects.select_for_update()
            .filter(business_id=cfg.business_id, entity_type=entity, entity_id=int(item["id"]))
            .first()
        )
        if link is None:
            return PullOutcome.NOT_LINKED
        state = snapshot.entity_state(item, entity, cfg, info)
        if f.state_hash(state) == link.synced_hash:
            return PullOutcome.ECHO
        if cfg.technical_user_id and str(item.get("updatedBy")) == str(cfg.technical_user_id):
            return PullOutcome.OWN_CHANGE
        before = (link.stage_id, link.responsible_id)
        snapshot.record_entity(link, item, entity, cfg, info)
        link.remote_deleted = False
        link.save(update_fields=[*snapshot.SNAPSHOT_FIELDS, "remote_deleted"])
        log.info(
            "bitrix24.crm_changed",
            extra={
                "business_id": cfg.business_id,
                "chat_id": link.chat_id,
                "entity": entity,
                "entity_id": link.entity_id,
                "stage": link.stage_id,
                "semantics": link.stage_semantics,
                "stage_changed": before[0] != link.stage_id,
                "responsible_changed": before[1] != link.responsible_id,
            },
        )
        hooks.chat_changed(link.chat_id)  # the chat header shows the CRM stage
    return PullOutcome.APPLIED


def apply_contact(cfg: Bitrix24Settings, item: dict[str, Any]) -> PullOutcome:
    """Apply a contact as read from Bitrix24: a new name renames the customer on every chat
    linked to it."""
    state = f.relevant_state(item, f.CONTACT_FIELDS)
    digest = f.state_hash(state)
    name = " ".join(p for p in (state["name"], state["lastName"]) if p)
    outcome = PullOutcome.NOT_LINKED
    with transaction.atomic():
        links = list(
            CrmLink.objects.select_for_update().filter(
                business_id=cfg.business_id, contact_id=int(item["id"])
            )
        )
        for link in links:
            if link.contact_hash == digest:
                outcome = PullOutcome.ECHO if outcome == PullOutcome.NOT_LINKED else outcome
                continue
            if cfg.technical_user_id and str(item.get("updatedBy")) == str(cfg.technical_user_id):
                outcome = PullOutcome.OWN_CHANGE if outcome != PullOutcome.APPLIED else outcome
                continue
            link.contact_hash = digest
            link.contact_name = name
            link.save(update_fields=["contact_hash", "contact_name"])
            customers.update_customer_name(link.chat_id, name)
            outcome = PullOutcome.APPLIED
    return outcome


def mark_deleted(cfg: Bitrix24Settings, entity: str, entity_id: int) -> bool:
    if entity == CrmEntity.CONTACT:
        return False
    gone = CrmLink.objects.filter(
        business_id=cfg.business_id, entity_type=entity, entity_id=entity_id, remote_deleted=False
    ).update(remote_deleted=True)
    if gone:
        log.warning(
            "bitrix24.entity_gone",
            extra={"business_id": cfg.business_id, "entity": entity, "entity_id": entity_id},
        )
    return bool(gone)


def apply_item(
    cfg: Bitrix24Settings, info: PortalInfo, entity: str, item: dict[str, Any]
) -> PullOutcome:
    if entity == CrmEntity.CONTACT:
        return apply_contact(cfg, item)
    return apply_entity(cfg, info, entity, item)


def fetch(
    client: Bitrix24Client, cfg: Bitrix24Settings, info: PortalInfo, wanted: dict[str, list[int]]
) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[str, Bitrix24Error]]:
    """Current state of up to 50 entities per type, with one batch request."""
    ufs = snapshot.synced_userfields(cfg, info)
    commands = []
    for entity, ids in sorted(wanted.items()):
        contact = entity == CrmEntity.CONTACT
        select = snapshot.CONTACT_SELECT if contact else snapshot.ENTITY_SELECT + ufs
        commands.append(
            Command(
                f"p_{entity}",
                "crm.item.list",
                {
                    "entityTypeId": CrmEntity(entity).type_id,
                    "filter": {"@id": sorted(ids)},
                    "select": select,
                    "order": {"id": "ASC"},
                    "useOriginalUfNames": "Y",
                    "start": -1,
                },
            )
        )
    outcome = client.batch(commands)
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for entity in wanted:
        result = outcome.results.get(f"p_{entity}")
        for item in (result or {}).get("items", []) if isinstance(result, dict) else []:
            found[(entity, int(item["id"]))] = item
    errors = {key[2:]: error for key, error in outcome.errors.items()}
    return found, errors


def pull_claimed(
    client: Bitrix24Client,
    cfg: Bitrix24Settings,
    info: PortalInfo,
    rows: list[tuple[int, str, int, int]],
) -> PullReport:
    report = PullReport()
    wanted: dict[str, list[int]] = defaultdict(list)
    for _row_id, entity, entity_id, _seq in rows:
        wanted[entity].append(entity_id)
    found, errors = fetch(client, cfg, info, wanted)
    now = timezone.now()
    for row_id, entity, entity_id, seq in rows:
        error = errors.get(entity)
        if error is not None:
            report.failed += 1
            attempts = PendingPull.objects.filter(pk=row_id).values_list("attempts", flat=True)
            due = now + timedelta(seconds=outbox.retry_delay(attempts.first() or 1, error))
            PendingPull.objects.filter(pk=row_id).update(
                claimed_until=None, next_attempt_at=due, last_error=str(error)[:500]
            )
            continue
        item = found.get((entity, entity_id))
        if item is None:
            mark_deleted(cfg, entity, entity_id)
            outcome = PullOutcome.DELETED
        else:
            outcome = apply_item(cfg, info, entity, item)
        if outcome == PullOutcome.APPLIED:
            report.applied += 1
        elif outcome == PullOutcome.ECHO:
            report.echoes += 1
        else:
            report.ignored += 1
        log.info(
            "bitrix24.pulled",
            extra={
                "business_id": cfg.business_id,
                "entity": entity,
                "entity_id": entity_id,
                "outcome": outcome,
            },
        )
        if not PendingPull.objects.filter(pk=row_id, seq=seq).delete()[0]:
            PendingPull.objects.filter(pk=row_id).update(claimed_until=None)
    return report


def drain(business_id: int, *, budget: float = 240.0) -> PullReport:
    """Re-read every entity Bitrix24 said changed, 50 at a time."""
    cfg = active_settings(business_id)
    report = PullReport()
    if cfg is None or not cfg.sync_back:
        PendingPull.objects.filter(business_id=business_id).delete()
        return report
    deadline = time.monotonic() + budget
    rows = claim_pulls(business_id)
    if not rows:
        return report
    with client_for(cfg) as client:
        info: PortalInfo | None = None
        while rows:
            try:
                info = info or portal_info(client, cfg)
                part = pull_claimed(client, cfg, info, rows)
            except Bitrix24Error as exc:
                now = timezone.now()
                due = now + timedelta(seconds=outbox.retry_delay(1, exc))
                PendingPull.objects.filter(pk__in=[r[0] for r in rows]).update(
                    claimed_until=None, next_attempt_at=due, last_error=str(exc)[:500]
                )
                raise
            report.applied += part.applied
            report.echoes += part.echoes
            report.ignored += part.ignored
            report.failed += part.failed
            if time.monotonic() > deadline:
                break
            rows = claim_pulls(business_id)
    return report
