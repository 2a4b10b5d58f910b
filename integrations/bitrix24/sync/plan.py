"""What one chat's pass sends next: `Planner.plan(work)` returns the next commands from what is
known so far (look up, create the contact, create the lead/deal with its link comment, then
handoffs, responsible user, full-sync checks). Writing commands store the state they will leave
first (`_expect`), so the echo of a write is recognised even before its answer arrives.
"""

from __future__ import annotations

import logging
from typing import Any

from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.crm import snapshot
from integrations.bitrix24.crm.portal import PortalInfo
from integrations.bitrix24.models import Bitrix24Settings, CrmEntity, UserLink
from integrations.bitrix24.rest.client import Command
from integrations.bitrix24.rest.phpquery import result_ref
from integrations.bitrix24.sync.work import Step, Work

log = logging.getLogger(__name__)


class Planner:
    """Plans the next commands for each chat of a business's pass."""

    def __init__(self, cfg: Bitrix24Settings, info: PortalInfo) -> None:
        self.cfg = cfg
        self.info = info
        self.entity = info.entity
        self.entity_type_id = info.entity_type_id
        self.hash_fields = snapshot.hash_fields(self.entity)
        self.uf_names = snapshot.synced_userfields(cfg, info)

    def plan(self, w: Work) -> list[Command]:
        if w.error is not None:
            return []
        link = w.link
        if not w.looked_up and (link.contact_id is None or link.entity_id is None):
            return self._plan_lookup(w)
        if link.contact_id is None:
            return [self._contact_add(w)]
        if link.entity_id is None:
            return self._entity_add(w)
        if link.remote_deleted:
            return []
        commands: list[Command] = []
        commands += self._plan_comments(w)
        commands += self._plan_handoff_stage(w)
        commands += self._plan_responsible(w)
        commands += self._plan_verify(w)
        return commands

    def _entity_of(self, w: Work) -> str:
        return w.link.entity_type or self.entity

    def _elsewhere(self, w: Work) -> bool:
        """The chat's lead/deal is not where new ones go now (the settings changed, or a manager
        moved the deal to another pipeline): we still comment on it but do not move it."""
        if w.link.entity_type and w.link.entity_type != self.entity:
            return True
        category = w.link.category_id
        return (
            self.entity == CrmEntity.DEAL
            and category is not None
            and (category != self.info.pipeline.category_id)
        )

    def _item_params(self, entity_type_id: int, **extra: Any) -> dict[str, Any]:
        return {"entityTypeId": entity_type_id, "useOriginalUfNames": "Y", **extra}

    def _origin_filter(self, kind: f.Origin, pk: int) -> dict[str, Any]:
        return {"=originatorId": self.cfg.originator_id, "=originId": f.origin_id(kind, pk)}

    def _plan_lookup(self, w: Work) -> list[Command]:
        commands = []
        if w.link.contact_id is None:
            if w.phone:
                commands.append(
                    Command(
                        w.key(Step.FIND_CONTACT_BY_PHONE),
                        "crm.duplicate.findbycomm",
                        {"entity_type": "CONTACT", "type": "PHONE", "values": [w.phone]},
                    )
                )
            else:
                commands.append(
                    Command(
                        w.key(Step.FIND_CONTACT_BY_ORIGIN),
                        "crm.item.list",
                        self._item_params(
                            CrmEntity.CONTACT.type_id,
                            filter=self._origin_filter(f.Origin.CHAT, w.chat.pk),
                            select=["id"],
                            order={"id": "ASC"},
                        ),
                    )
                )
        if w.link.entity_id is None:
            commands.append(
                Command(
                    w.key(Step.FIND_ENTITY),
                    "crm.item.list",
                    self._item_params(
                        self.entity_type_id,
                        filter=self._origin_filter(f.Origin.CHAT, w.chat.pk),
                        select=snapshot.ENTITY_SELECT + self.uf_names,
                        order={"id": "ASC"},
                    ),
                )
            )
        return commands

    def responsible_id(self, w: Work) -> int | None:
        user_id = w.chat.assigned_to_id
        if user_id is not None:
            mapped = (
                UserLink.objects.filter(business_id=self.cfg.business_id, user_id=user_id)
                .values_list("bitrix_user_id", flat=True)
                .first()
            )
            if mapped:
                return int(mapped)
        return (
            self.cfg.default_responsible_id
            or self.cfg.technical_user_id
            or self.info.current_user_id
        )

    def _contact_add(self, w: Work) -> Command:
        first, last = f.split_name(w.chat.customer_name)
        fields: dict[str, Any] = {
            "name": first or f.customer_label(w.chat),
            "lastName": last,
            "originatorId": self.cfg.originator_id,
            "originId": f.origin_id(f.Origin.CHAT, w.chat.pk),
        }
        responsible = self.responsible_id(w)
        if responsible:
            fields["assignedById"] = responsible
        if w.phone:
            fields["fm"] = [{"typeId": "PHONE", "valueType": "MOBILE", "value": w.phone}]
        w.writes = True
        return Command(
            w.key(Step.ADD_CONTACT),
            "crm.item.add",
            self._item_params(CrmEntity.CONTACT.type_id, fields=fields),
        )

    def _entity_add(self, w: Work) -> list[Command]:
        pipeline = self.info.pipeline
        fields: dict[str, Any] = {
            "title": f.entity_title(w.chat),
            "stageId": pipeline.first().id,
            "contactId": w.link.contact_id,
            "originatorId": self.cfg.originator_id,
            "originId": f.origin_id(f.Origin.CHAT, w.chat.pk),
        }
        responsible = self.responsible_id(w)
        if responsible:
            fields["assignedById"] = responsible
        if self.entity == CrmEntity.DEAL:
            fields["categoryId"] = pipeline.category_id
        else:
            first, last = f.split_name(w.chat.customer_name)
            fields.update(name=first, lastName=last)
            if w.phone:
                fields["fm"] = [{"typeId": "PHONE", "valueType": "MOBILE", "value": w.phone}]
        self._expect(w, {k: fields.get(k) for k in self.hash_fields})
        w.found_comments.setdefault(f.marker(f.Origin.CHAT, w.chat.pk), 0)
        w.writes = True
        add = Command(
            w.key(Step.ADD_ENTITY),
            "crm.item.add",
            self._item_params(self.entity_type_id, fields=fields),
        )
        comment = Command(
            w.key(Step.LINK_COMMENT),
            "crm.timeline.comment.add",
            {
                "fields": {
                    "ENTITY_ID": result_ref(add.key, "item", "id"),
                    "ENTITY_TYPE": self.entity,
                    "COMMENT": f.link_comment(w.chat),
                }
            },
        )
        return [add, comment]

    def _markers_to_write(self, w: Work) -> list[tuple[str, str, str]]:
        """(marker, text, batch key) of comments this chat still needs on its entity."""
        wanted: list[tuple[str, str, str]] = []
        if w.link.link_comment_id is None:
            wanted.append(
                (
                    f.marker(f.Origin.CHAT, w.chat.pk),
                    f.link_comment(w.chat),
                    w.key(Step.LINK_COMMENT),
                )
            )
        if self.cfg.sync_handoffs:
            for hs in w.handoffs:
                if hs.comment_id is None:
                    wanted.append(
                        (
                            f.marker(f.Origin.HANDOFF, hs.handoff_id),
                            f.handoff_comment(hs.handoff),
                            w.key(Step.HANDOFF_COMMENT, hs.handoff_id),
                        )
                    )
        for fs in w.failures:
            if fs.comment_id is None:
                wanted.append(
                    (
                        f.marker(f.Origin.FAILED, fs.message_id),
                        f.failed_message_comment(fs.message),
                        w.key(Step.FAILED_COMMENT, fs.message_id),
                    )
                )
        return [item for item in wanted if item[0] not in w.found_comments]

    def _plan_comments(self, w: Work) -> list[Command]:
        wanted = self._markers_to_write(w)
        if not wanted:
            return []
        must_look = w.started_in_doubt or w.entity_found or w.link.verify
        if must_look and not w.scan_done:
            return [
                Command(
                    w.key(Step.LIST_COMMENTS),
                    "crm.timeline.comment.list",
                    {
                        "filter": {
                            "ENTITY_ID": w.link.entity_id,
                            "ENTITY_TYPE": self._entity_of(w),
                            ">ID": w.scan_cursor,
                        },
                        "select": ["ID", "COMMENT"],
                        "order": {"ID": "ASC"},
                        "start": -1,
                    },
                )
            ]
        commands = []
        for marker_text, text, key in wanted:
            commands.append(
                Command(
                    key,
                    "crm.timeline.comment.add",
                    {
                        "fields": {
                            "ENTITY_ID": w.link.entity_id,
                            "ENTITY_TYPE": self._entity_of(w),
                            "COMMENT": text,
                        }
                    },
                )
            )
            w.found_comments.setdefault(marker_text, 0)  # planned: do not plan it twice
        w.writes = True
        return commands

    def _plan_handoff_stage(self, w: Work) -> list[Command]:
        if not self.cfg.sync_handoffs or w.stage_sent:
            return []
        pending = [hs for hs in w.handoffs if not hs.stage_done]
        if not pending:
            return []
        w.stage_sent = True
        if self._elsewhere(w):
            log.info(
                "bitrix24.handoff_stage_skipped",
                extra={"business_id": self.cfg.business_id, "chat_id": w.chat.pk},
            )
            for hs in pending:
                hs.stage_done = True
            return []
        latest = pending[-1]
        fields: dict[str, Any] = {"stageId": self.info.pipeline.resolve(self.cfg.handoff_stage).id}
        if not self.cfg.handoff_stage:
            fields.pop("stageId")
        facts = latest.handoff.facts if isinstance(latest.handoff.facts, dict) else {}
        for fact, uf in sorted(self.cfg.field_map.items()):
            definition = self.info.userfields.get(uf)
            if definition is None:
                continue
            value = definition.to_crm(f.fact_value(facts.get(fact)))
            if value is not None:
                fields[uf] = value
            elif facts.get(fact):
                log.warning(
                    "bitrix24.field_value_unmapped",
                    extra={"business_id": self.cfg.business_id, "field": uf, "fact": fact},
                )
        if not fields:
            for hs in pending:
                hs.stage_done = True
            return []
        self._expect(w, fields)
        w.writes = True
        return [
            Command(
                w.key(Step.HANDOFF_STAGE),
                "crm.item.update",
                self._item_params(self.entity_type_id, id=w.link.entity_id, fields=fields),
            )
        ]

    def _plan_responsible(self, w: Work) -> list[Command]:
        if not (w.link.needs_responsible and self.cfg.sync_responsible) or w.responsible_sent:
            return []
        assigned = w.chat.assigned_to
        if assigned is not None and assigned.email and not w.user_lookup_done:
            known = UserLink.objects.filter(business_id=self.cfg.business_id, user=assigned)
            if not known.exists():
                w.user_lookup_done = True
                return [
                    Command(
                        w.key(Step.FIND_USER), "user.get", {"filter": {"EMAIL": assigned.email}}
                    )
                ]
        w.responsible_sent = True
        responsible = self.responsible_id(w)
        if not responsible or str(responsible) == str(w.link.remote_state.get("assignedById")):
            w.link.needs_responsible = False
            return []
        self._expect(w, {"assignedById": responsible})
        w.writes = True
        return [
            Command(
                w.key(Step.SET_RESPONSIBLE),
                "crm.item.update",
                self._item_params(
                    CrmEntity(self._entity_of(w)).type_id,
                    id=w.link.entity_id,
                    fields={"assignedById": responsible},
                ),
            )
        ]

    def _plan_verify(self, w: Work) -> list[Command]:
        if not w.link.verify:
            return []
        commands = []
        if not w.entity_checked:
            w.entity_checked = True
            commands.append(
                Command(
                    w.key(Step.VERIFY_ENTITY),
                    "crm.item.get",
                    self._item_params(CrmEntity(self._entity_of(w)).type_id, id=w.link.entity_id),
                )
            )
        if w.phone and not w.contact_checked:
            w.contact_checked = True
            commands.append(
                Command(
                    w.key(Step.VERIFY_CONTACT),
                    "crm.item.get",
                    self._item_params(CrmEntity.CONTACT.type_id, id=w.link.contact_id),
                )
            )
        if w.phone_fix is not None and not w.phone_fixed:
            w.phone_fixed = True
            w.writes = True
            commands.append(w.phone_fix)
        return commands

    def _expect(self, w: Work, written: dict[str, Any]) -> None:
        """Store the state our write will leave (and its hash) before sending it, so the echo
        of this write is recognised even if it arrives before the answer does."""
        if w.previous is None:
            w.previous = (dict(w.link.remote_state), w.link.synced_hash)
        state = {**w.link.remote_state, **f.relevant_state(written, written.keys())}
        base = f.relevant_state(state, self.hash_fields, self.uf_names)
        w.link.remote_state = base
        w.link.synced_hash = f.state_hash(base)
