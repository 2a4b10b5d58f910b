"""Offline events (local-application mode): Bitrix24 keeps a queue of changed objects for us,
one record per object, and we pull it, so events survive our downtime.

Records are read with `clear=0`, which reserves them under a `process_id` (hidden from other
readers); the process id is stored before anything else, so a worker that dies mid-way re-reads
the same reservation next time. Each record becomes a `PendingPull` row in our database; only
then is it cleared (`event.offline.clear`), and records we cannot use are marked with
`event.offline.error`. Our own writes carry `auth_connector`, so they are not queued back to us.
"""

from __future__ import annotations

import logging
from typing import Any

from integrations.bitrix24.inbound import pull
from integrations.bitrix24.models import Bitrix24Settings, CrmEntity, PendingPull
from integrations.bitrix24.payloads import entity_of_event
from integrations.bitrix24.rest.connection import active_settings, client_for

log = logging.getLogger(__name__)

LIMIT = 50
MAX_PAGES = 20


def _event_target(event: dict[str, Any]) -> tuple[CrmEntity, int] | None:
    entity = entity_of_event(str(event.get("EVENT_NAME") or ""))
    data = event.get("EVENT_DATA")
    fields = data.get("FIELDS") if isinstance(data, dict) else None
    raw_id = fields.get("ID") if isinstance(fields, dict) else None
    if entity is None or not str(raw_id or "").isdigit():
        return None
    return entity, int(str(raw_id))


def process_offline(business_id: int) -> int:
    """Move the portal's offline queue into pending pulls; returns how many records."""
    cfg = active_settings(business_id)
    if cfg is None or cfg.mode != Bitrix24Settings.Mode.APP or not cfg.sync_back:
        return 0
    total = 0
    with client_for(cfg) as client:
        for _ in range(MAX_PAGES):
            params: dict[str, Any] = {"clear": 0, "limit": LIMIT}
            if cfg.auth_connector:
                params["auth_connector"] = cfg.auth_connector
            resuming = cfg.offline_process_id
            if resuming:
                params["process_id"] = resuming
            result = client.call("event.offline.get", params).result or {}
            events = list(result.get("events") or [])
            process_id = str(result.get("process_id") or resuming or "")
            if not events:
                if resuming:
                    cfg.offline_process_id = ""
                    cfg.save(update_fields=["offline_process_id"])
                    continue
                break
            if process_id != cfg.offline_process_id:
                cfg.offline_process_id = process_id
                cfg.save(update_fields=["offline_process_id"])
            usable, unusable = [], []
            for event in events:
                target = _event_target(event)
                if target is None:
                    unusable.append(event["ID"])
                    continue
                pull.mark_remote_change(
                    business_id,
                    target[0],
                    target[1],
                    event=str(event.get("EVENT_NAME")),
                    source=PendingPull.Source.OFFLINE,
                )
                usable.append(event["ID"])
            if unusable:
                client.call("event.offline.error", {"process_id": process_id, "id": unusable})
            if usable:
                client.call("event.offline.clear", {"process_id": process_id, "id": usable})
            cfg.offline_process_id = ""
            cfg.save(update_fields=["offline_process_id"])
            total += len(events)
            log.info(
                "bitrix24.offline_events",
                extra={
                    "business_id": business_id,
                    "records": len(events),
                    "unusable": len(unusable),
                },
            )
            if len(events) < LIMIT:
                break
    return total
