"""What a portal is configured with: pipeline stages and their semantics, whether leads are
enabled, enum user fields. Read with one batch request and cached for a few minutes.

Stage IDs depend on the pipeline (`WON` in the default one, `C3:WON` in category 3), so they
are always resolved from `crm.status.list`, never hardcoded. Enum user fields store option
IDs, not labels: `UserField` maps both ways.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache

from integrations.bitrix24.models import Bitrix24Settings, CrmEntity, CrmLink
from integrations.bitrix24.rest.client import Bitrix24Client, Command
from integrations.bitrix24.rest.errors import Bitrix24Error, PermanentError

log = logging.getLogger(__name__)

CACHE_SECONDS = 600
SEMANTICS = {"S": CrmLink.Semantics.WON, "F": CrmLink.Semantics.LOST}
# entityTypeId of the two things a new chat may create (stage lists and user fields differ).
LEAD_TYPE_ID, DEAL_TYPE_ID = CrmEntity.LEAD.type_id, CrmEntity.DEAL.type_id
USERFIELD_METHODS = {
    LEAD_TYPE_ID: "crm.lead.userfield.list",
    DEAL_TYPE_ID: "crm.deal.userfield.list",
}


@dataclass(frozen=True)
class Stage:
    id: str
    name: str
    semantics: str  # a CrmLink.Semantics: won | lost | in_progress
    sort: int


@dataclass(frozen=True)
class Pipeline:
    entity_type_id: int
    category_id: int
    stages: tuple[Stage, ...]

    def first(self) -> Stage:
        return self.stages[0]

    def get(self, stage_id: str) -> Stage | None:
        return next((s for s in self.stages if s.id == stage_id), None)

    def resolve(self, configured: str) -> Stage:
        """A configured stage as its ID in this pipeline: `PREPARATION`, `C3:PREPARATION` or
        the stage's name all find `C3:PREPARATION` in category 3."""
        wanted = configured.strip()
        if not wanted:
            return self.first()
        prefix = (
            f"C{self.category_id}:"
            if self.entity_type_id == DEAL_TYPE_ID and self.category_id
            else ""
        )
        candidates = [wanted, prefix + wanted.split(":", 1)[-1]]
        for stage in self.stages:
            if stage.id in candidates:
                return stage
        for stage in self.stages:
            if stage.name.casefold() == wanted.casefold():
                return stage
        names = ", ".join(s.id for s in self.stages)
        raise PermanentError(
            "STAGE_NOT_FOUND", f"stage {wanted!r} is not in this pipeline ({names})"
        )


@dataclass(frozen=True)
class UserField:
    name: str
    type: str
    options: tuple[tuple[str, str, str], ...] = ()  # (id, label, xml_id)

    def to_crm(self, value: Any) -> str | None:
        """A fact as the field's stored value: an option ID for enumerations."""
        if value is None or value == "":
            return None
        if isinstance(value, list | tuple):
            value = ", ".join(str(v) for v in value)
        text = str(value).strip()
        if self.type != "enumeration":
            return text
        for option_id, label, xml_id in self.options:
            if text.casefold() in (label.casefold(), xml_id.casefold()) or text == option_id:
                return option_id
        return None

    def from_crm(self, value: Any) -> str:
        """A stored value as people read it: the option's label for enumerations."""
        if value in (None, "", []):
            return ""
        if self.type != "enumeration":
            return str(value)
        values = value if isinstance(value, list) else [value]
        labels = {option_id: label for option_id, label, _ in self.options}
        return ", ".join(labels.get(str(v), str(v)) for v in values)


@dataclass(frozen=True)
class PortalInfo:
    leads_enabled: bool
    entity: str  # a CrmEntity, deal or lead, after the leads-disabled fallback
    pipeline: Pipeline
    userfields: dict[str, UserField] = field(default_factory=dict)
    current_user_id: int | None = None

    @property
    def entity_type_id(self) -> int:
        return CrmEntity(self.entity).type_id


def stage_list_entity(entity_type_id: int, category_id: int) -> str:
    if entity_type_id == LEAD_TYPE_ID:
        return "STATUS"
    return "DEAL_STAGE" if category_id == 0 else f"DEAL_STAGE_{category_id}"


def pipeline_from_rows(entity_type_id: int, category_id: int, rows: Any) -> Pipeline:
    stages = []
    for row in rows if isinstance(rows, list) else []:
        raw = str(row.get("SEMANTICS") or "")
        stages.append(
            Stage(
                id=str(row["STATUS_ID"]),
                name=str(row.get("NAME") or row["STATUS_ID"]),
                semantics=SEMANTICS.get(raw, CrmLink.Semantics.IN_PROGRESS),
                sort=int(row.get("SORT") or 0),
            )
        )
    if not stages:
        raise PermanentError(
            "PIPELINE_NOT_FOUND", f"no stages for {stage_list_entity(entity_type_id, category_id)}"
        )
    stages.sort(key=lambda s: s.sort)
    return Pipeline(entity_type_id, category_id, tuple(stages))


def _userfields(rows: Any) -> dict[str, UserField]:
    fields: dict[str, UserField] = {}
    for row in rows if isinstance(rows, list) else []:
        options = tuple(
            (str(o.get("ID")), str(o.get("VALUE") or ""), str(o.get("XML_ID") or ""))
            for o in row.get("LIST") or []
        )
        fields[str(row["FIELD_NAME"])] = UserField(
            str(row["FIELD_NAME"]), str(row.get("USER_TYPE_ID") or ""), options
        )
    return fields


def _to_cache(info: PortalInfo) -> dict[str, Any]:
    return {
        "leads_enabled": info.leads_enabled,
        "entity": info.entity,
        "pipeline": [
            info.pipeline.entity_type_id,
            info.pipeline.category_id,
            [[s.id, s.name, str(s.semantics), s.sort] for s in info.pipeline.stages],
        ],
        "userfields": {
            k: [v.name, v.type, [list(o) for o in v.options]] for k, v in info.userfields.items()
        },
        "current_user_id": info.current_user_id,
    }


def _from_cache(raw: dict[str, Any]) -> PortalInfo:
    etid, cat, stages = raw["pipeline"]
    return PortalInfo(
        leads_enabled=raw["leads_enabled"],
        entity=raw["entity"],
        pipeline=Pipeline(etid, cat, tuple(Stage(*s) for s in stages)),
        userfields={
            k: UserField(name, kind, tuple(tuple(o) for o in options))
            for k, (name, kind, options) in raw["userfields"].items()
        },
        current_user_id=raw["current_user_id"],
    )


def _cache_key(cfg: Bitrix24Settings) -> str:
    return f"b24:portal:{cfg.pk}:{cfg.entity}:{cfg.pipeline_id}:{int(cfg.updated_at.timestamp())}"


def portal_info(client: Bitrix24Client, cfg: Bitrix24Settings) -> PortalInfo:
    """The portal's stages, lead mode and user fields for this business (cached)."""
    key = _cache_key(cfg)
    cached = cache.get(key)
    if cached:
        return _from_cache(cached)
    commands = [
        Command("mode", "crm.settings.mode.get"),
        Command("me", "user.current"),
        Command(
            "deal_stages",
            "crm.status.list",
            {
                "filter": {"ENTITY_ID": stage_list_entity(DEAL_TYPE_ID, cfg.pipeline_id)},
                "order": {"SORT": "ASC"},
            },
        ),
        Command("deal_fields", USERFIELD_METHODS[DEAL_TYPE_ID], {"order": {"SORT": "ASC"}}),
    ]
    if cfg.entity == Bitrix24Settings.Entity.LEAD:
        commands += [
            Command(
                "lead_stages",
                "crm.status.list",
                {"filter": {"ENTITY_ID": "STATUS"}, "order": {"SORT": "ASC"}},
            ),
            Command("lead_fields", USERFIELD_METHODS[LEAD_TYPE_ID], {"order": {"SORT": "ASC"}}),
        ]
    outcome = client.batch(commands)
    for key_name in ("mode", "deal_stages"):
        if key_name in outcome.errors:
            raise outcome.errors[key_name]
    # Simple mode (2) turns every lead into a deal: leads are effectively disabled.
    leads_enabled = str(outcome.results.get("mode")) != "2"
    entity = cfg.entity
    if entity == Bitrix24Settings.Entity.LEAD and not leads_enabled:
        log.warning(
            "bitrix24.leads_disabled",
            extra={"portal": cfg.portal_host, "business_id": cfg.business_id},
        )
        entity = Bitrix24Settings.Entity.DEAL
    if entity == Bitrix24Settings.Entity.LEAD:
        error: Bitrix24Error | None = outcome.errors.get("lead_stages")
        if error is not None:
            raise error
        pipeline = pipeline_from_rows(LEAD_TYPE_ID, 0, outcome.results.get("lead_stages"))
        fields = _userfields(outcome.results.get("lead_fields"))
    else:
        pipeline = pipeline_from_rows(
            DEAL_TYPE_ID, cfg.pipeline_id, outcome.results.get("deal_stages")
        )
        fields = _userfields(outcome.results.get("deal_fields"))
    me = outcome.results.get("me")
    user_id = int(me["ID"]) if isinstance(me, dict) and str(me.get("ID", "")).isdigit() else None
    info = PortalInfo(leads_enabled, entity, pipeline, fields, user_id)
    cache.set(key, _to_cache(info), CACHE_SECONDS)
    return info
