"""The CRM state we keep on a chat's link: stage with its semantics, responsible user, mapped
user fields, and the hash of the synced fields (echo-loop protection). One place for how an
entity read from Bitrix24 is recorded, whether we wrote it or a manager changed it."""

from __future__ import annotations

from typing import Any

from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.crm.portal import PortalInfo
from integrations.bitrix24.models import Bitrix24Settings, CrmEntity, CrmLink, UserLink

SEMANTIC_IDS = {"S": CrmLink.Semantics.WON, "F": CrmLink.Semantics.LOST}
# What we read of a lead/deal (plus the mapped user fields): always an explicit select.
ENTITY_SELECT = [
    "id",
    "stageId",
    "stageSemanticId",
    "categoryId",
    "assignedById",
    "contactId",
    "updatedBy",
    "updatedTime",
]
CONTACT_SELECT = ["id", "name", "lastName", "updatedBy", "updatedTime"]


def hash_fields(entity: str) -> tuple[str, ...]:
    return f.DEAL_FIELDS if entity == CrmEntity.DEAL else f.LEAD_FIELDS


def synced_userfields(cfg: Bitrix24Settings, info: PortalInfo) -> list[str]:
    return sorted(uf for uf in cfg.field_map.values() if uf in info.userfields)


def entity_state(
    item: dict[str, Any], entity: str, cfg: Bitrix24Settings, info: PortalInfo
) -> dict[str, Any]:
    return f.relevant_state(item, hash_fields(entity), synced_userfields(cfg, info))


def record_entity(
    link: CrmLink, item: dict[str, Any], entity: str, cfg: Bitrix24Settings, info: PortalInfo
) -> None:
    """Copy a lead/deal as Bitrix24 returned it onto the link (caller saves)."""
    state = entity_state(item, entity, cfg, info)
    link.remote_state = state
    link.synced_hash = f.state_hash(state)
    link.entity_type = entity
    link.category_id = int(item.get("categoryId") or 0) if entity == CrmEntity.DEAL else None
    stage_id = str(item.get("stageId") or "")
    stage = info.pipeline.get(stage_id) if info.entity == entity else None
    link.stage_id = stage_id
    link.stage_name = stage.name if stage else stage_id
    if stage is not None:
        link.stage_semantics = stage.semantics
    else:
        semantic = str(item.get("stageSemanticId") or "")
        link.stage_semantics = SEMANTIC_IDS.get(semantic, CrmLink.Semantics.IN_PROGRESS)
    responsible = item.get("assignedById")
    link.responsible_id = int(responsible) if responsible else None
    link.responsible_user_id = (
        UserLink.objects.filter(business_id=cfg.business_id, bitrix_user_id=link.responsible_id)
        .values_list("user_id", flat=True)
        .first()
        if link.responsible_id
        else None
    )
    link.remote_modified_at = f.parse_datetime(item.get("updatedTime"))
    labels = {}
    for fact, uf in cfg.field_map.items():
        definition = info.userfields.get(uf)
        if definition is not None and item.get(uf) not in (None, ""):
            labels[fact] = definition.from_crm(item.get(uf))
    link.crm_fields = labels


SNAPSHOT_FIELDS = [
    "remote_state",
    "synced_hash",
    "entity_type",
    "category_id",
    "stage_id",
    "stage_name",
    "stage_semantics",
    "responsible_id",
    "responsible_user",
    "remote_modified_at",
    "crm_fields",
]
