"""One chat's sync pass, step by step: what to send next and what the answers mean.

`LinkSync.plan(work)` returns the next commands for a chat from what is known so far (look up,
create the contact, create the lead/deal with its link comment, then handoffs, responsible user,
full-sync checks); `LinkSync.apply(work, outcome)` records the answers. push.py runs the rounds
for many chats at once and packs their commands into batches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from django.db import IntegrityError, transaction

from inbox.conversations.models import Chat
from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.crm import snapshot
from integrations.bitrix24.crm.portal import PortalInfo
from integrations.bitrix24.models import (
    ENTITY_TYPE_IDS,
    Bitrix24Settings,
    CrmLink,
    HandoffSync,
    UserLink,
)
from integrations.bitrix24.rest.client import BATCH_LIMIT, BatchResult, Command
from integrations.bitrix24.rest.errors import Bitrix24Error, NotFound
from integrations.bitrix24.rest.phpquery import result_ref

log = logging.getLogger(__name__)


class Step(StrEnum):
    """A command of one chat's pass. The value names the command inside a batch
    (`w{link id}_{value}`, e.g. `w12_eadd`); HANDOFF_COMMENT is a template filled with the
    handoff id, one comment per handoff."""

    FIND_CONTACT_BY_PHONE = "dup"
    FIND_CONTACT_BY_ORIGIN = "cor"
    FIND_ENTITY = "ent"
    ADD_CONTACT = "cadd"
    ADD_ENTITY = "eadd"
    LINK_COMMENT = "lc"
    LIST_COMMENTS = "cl"
    HANDOFF_COMMENT = "h{}c"
    HANDOFF_STAGE = "hs"
    FIND_USER = "usr"
    SET_RESPONSIBLE = "resp"
    VERIFY_ENTITY = "ve"
    VERIFY_CONTACT = "vc"
    FIX_CONTACT_PHONE = "vcu"

    def code(self, handoff_id: int | None = None) -> str:
        """The step's part of a batch key (for a handoff comment, with the handoff id in it)."""
        if self is Step.HANDOFF_COMMENT:
            return self.value.format(handoff_id)
        return self.value


# Answered without an error, these mean the lookup of the chat's contact and entity is done.
LOOKUP_STEPS = frozenset(
    {Step.FIND_CONTACT_BY_PHONE, Step.FIND_CONTACT_BY_ORIGIN, Step.FIND_ENTITY}
)
# Steps on the existing entity: NotFound means a manager deleted it.
ENTITY_STEPS = frozenset({Step.VERIFY_ENTITY, Step.HANDOFF_STAGE, Step.SET_RESPONSIBLE})
# Steps whose written state was stored in advance (`LinkSync._expect`): undone when they fail.
EXPECTED_STEPS = frozenset({Step.ADD_ENTITY, Step.HANDOFF_STAGE, Step.SET_RESPONSIBLE})


@dataclass
class Work:
    """One chat's pass: what is known, what this pass already did, what failed."""

    link: CrmLink
    seq: int
    chat: Chat
    handoffs: list[HandoffSync]
    phone: str
    looked_up: bool = False
    entity_found: bool = False
    scan_cursor: int = 0
    scan_done: bool = False
    found_comments: dict[str, int] = field(default_factory=dict)
    stage_sent: bool = False
    responsible_sent: bool = False
    user_lookup_done: bool = False
    contact_checked: bool = False
    phone_fixed: bool = False
    entity_checked: bool = False
    phone_fix: Command | None = None
    started_in_doubt: bool = False
    complete: bool = False
    error: Bitrix24Error | None = None
    previous: tuple[dict[str, Any], str] | None = None
    writes: bool = False

    def key(self, step: Step, handoff_id: int | None = None) -> str:
        """The command's key in a batch: unique per chat and step, never numeric."""
        return f"w{self.link.pk}_{step.code(handoff_id)}"


class LinkSync:
    """Plans the next commands for each chat and applies the answers."""

    def __init__(self, cfg: Bitrix24Settings, info: PortalInfo) -> None:
        self.cfg = cfg
        self.info = info
        self.entity = info.entity
        self.entity_type_id = info.entity_type_id
        self.hash_fields = snapshot.hash_fields(self.entity)
        self.uf_names = snapshot.synced_userfields(cfg, info)

    # --- planning -------------------------------------------------------------------------

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
            self.entity == "deal"
            and category is not None
            and (category != self.info.pipeline.category_id)
        )

    def _item_params(self, entity_type_id: int, **extra: Any) -> dict[str, Any]:
        return {"entityTypeId": entity_type_id, "useOriginalUfNames": "Y", **extra}

    def _origin_filter(self, kind: str, pk: int) -> dict[str, Any]:
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
                            3,
                            filter=self._origin_filter("chat", w.chat.pk),
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
                        filter=self._origin_filter("chat", w.chat.pk),
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
            "originId": f.origin_id("chat", w.chat.pk),
        }
        responsible = self.responsible_id(w)
        if responsible:
            fields["assignedById"] = responsible
        if w.phone:
            fields["fm"] = [{"typeId": "PHONE", "valueType": "MOBILE", "value": w.phone}]
        w.writes = True
        return Command(w.key(Step.ADD_CONTACT), "crm.item.add", self._item_params(3, fields=fields))

    def _entity_add(self, w: Work) -> list[Command]:
        pipeline = self.info.pipeline
        fields: dict[str, Any] = {
            "title": f.entity_title(w.chat),
            "stageId": pipeline.first().id,
            "contactId": w.link.contact_id,
            "originatorId": self.cfg.originator_id,
            "originId": f.origin_id("chat", w.chat.pk),
        }
        responsible = self.responsible_id(w)
        if responsible:
            fields["assignedById"] = responsible
        if self.entity == "deal":
            fields["categoryId"] = pipeline.category_id
        else:
            first, last = f.split_name(w.chat.customer_name)
            fields.update(name=first, lastName=last)
            if w.phone:
                fields["fm"] = [{"typeId": "PHONE", "valueType": "MOBILE", "value": w.phone}]
        self._expect(w, {k: fields.get(k) for k in self.hash_fields})
        w.found_comments.setdefault(f.marker("chat", w.chat.pk), 0)
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

    def _markers_to_write(self, w: Work) -> list[tuple[str, str, HandoffSync | None]]:
        """(marker, text, handoff) of comments this chat still needs on its entity."""
        wanted: list[tuple[str, str, HandoffSync | None]] = []
        if w.link.link_comment_id is None:
            wanted.append((f.marker("chat", w.chat.pk), f.link_comment(w.chat), None))
        if self.cfg.sync_handoffs:
            for hs in w.handoffs:
                if hs.comment_id is None:
                    wanted.append(
                        (f.marker("handoff", hs.handoff_id), f.handoff_comment(hs.handoff), hs)
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
        for marker_text, text, hs in wanted:
            key = (
                w.key(Step.LINK_COMMENT)
                if hs is None
                else w.key(Step.HANDOFF_COMMENT, hs.handoff_id)
            )
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
                    ENTITY_TYPE_IDS[self._entity_of(w)],
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
                    self._item_params(ENTITY_TYPE_IDS[self._entity_of(w)], id=w.link.entity_id),
                )
            )
        if w.phone and not w.contact_checked:
            w.contact_checked = True
            commands.append(
                Command(
                    w.key(Step.VERIFY_CONTACT),
                    "crm.item.get",
                    self._item_params(3, id=w.link.contact_id),
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

    # --- applying answers -----------------------------------------------------------------

    def read_entity(self, w: Work, item: dict[str, Any]) -> None:
        """Record an entity as read from (or returned by) Bitrix24."""
        snapshot.record_entity(w.link, item, self._entity_of(w), self.cfg, self.info)

    def apply(self, w: Work, outcome: BatchResult) -> None:
        """Apply the answers to this chat's commands of the round (keyed by step code)."""
        link = w.link
        prefix = f"w{link.pk}_"
        results = {k[len(prefix) :]: v for k, v in outcome.results.items() if k.startswith(prefix)}
        errors = {k[len(prefix) :]: v for k, v in outcome.errors.items() if k.startswith(prefix)}
        if Step.FIND_CONTACT_BY_PHONE in results:
            duplicates = results[Step.FIND_CONTACT_BY_PHONE]
            found = duplicates.get("CONTACT") if isinstance(duplicates, dict) else None
            link.contact_id = min(int(i) for i in found) if found else None
        if Step.FIND_CONTACT_BY_ORIGIN in results:
            items = (results[Step.FIND_CONTACT_BY_ORIGIN] or {}).get("items") or []
            link.contact_id = min(int(i["id"]) for i in items) if items else None
        if Step.FIND_ENTITY in results:
            items = (results[Step.FIND_ENTITY] or {}).get("items") or []
            items = sorted(items, key=lambda i: int(i["id"]))
            if items:
                link.entity_id = int(items[0]["id"])
                w.entity_found = True
                self.read_entity(w, items[0])
        if LOOKUP_STEPS & set(results) and not (LOOKUP_STEPS & set(errors)):
            w.looked_up = True
        if Step.ADD_CONTACT in results:
            item = results[Step.ADD_CONTACT]["item"]
            link.contact_id = int(item["id"])
            link.phone_item_id = _phone_item(item, w.phone)
            link.contact_name = " ".join(p for p in (item.get("name"), item.get("lastName")) if p)
            link.contact_hash = f.state_hash(f.relevant_state(item, f.CONTACT_FIELDS))
        if Step.ADD_ENTITY in results:
            item = results[Step.ADD_ENTITY]["item"]
            link.entity_id = int(item["id"])
            self.read_entity(w, item)
        if Step.LINK_COMMENT in results:
            link.link_comment_id = int(results[Step.LINK_COMMENT])
        if Step.LIST_COMMENTS in results:
            listed = results[Step.LIST_COMMENTS]
            rows = listed if isinstance(listed, list) else []
            for row in rows:
                text = str(row.get("COMMENT") or "")
                for marker_text in _markers_in(text):
                    w.found_comments[marker_text] = int(row["ID"])
                w.scan_cursor = max(w.scan_cursor, int(row["ID"]))
            w.scan_done = len(rows) < BATCH_LIMIT
            self._record_found_comments(w)
        for hs in w.handoffs:
            code = Step.HANDOFF_COMMENT.code(hs.handoff_id)
            if code in results:
                hs.comment_id = int(results[code])
        if Step.HANDOFF_STAGE in results:
            self.read_entity(w, results[Step.HANDOFF_STAGE]["item"])
            for hs in w.handoffs:
                hs.stage_done = True
        if Step.FIND_USER in results:
            found_users = results[Step.FIND_USER]
            users = found_users if isinstance(found_users, list) else []
            if len(users) == 1 and w.chat.assigned_to_id:
                try:
                    with transaction.atomic():
                        UserLink.objects.get_or_create(
                            business_id=self.cfg.business_id,
                            user_id=w.chat.assigned_to_id,
                            defaults={"bitrix_user_id": int(users[0]["ID"])},
                        )
                except IntegrityError:
                    # That Bitrix24 user is already mapped to another manager: leave it.
                    log.warning("bitrix24.user_map_conflict", extra={"chat_id": w.chat.pk})
        if Step.SET_RESPONSIBLE in results:
            self.read_entity(w, results[Step.SET_RESPONSIBLE]["item"])
            link.needs_responsible = False
        if Step.VERIFY_ENTITY in results:
            self.read_entity(w, results[Step.VERIFY_ENTITY]["item"])
        if Step.VERIFY_CONTACT in results:
            self._check_contact_phone(w, results[Step.VERIFY_CONTACT]["item"])
        if Step.FIX_CONTACT_PHONE in results:
            link.phone_item_id = _phone_item(results[Step.FIX_CONTACT_PHONE]["item"], w.phone)
        for code, error in errors.items():
            if isinstance(error, NotFound) and code in ENTITY_STEPS:
                link.remote_deleted = True
                log.warning(
                    "bitrix24.entity_gone",
                    extra={
                        "business_id": self.cfg.business_id,
                        "chat_id": link.chat_id,
                        "entity_id": link.entity_id,
                    },
                )
                continue
            if code in EXPECTED_STEPS and w.previous is not None:
                link.remote_state, link.synced_hash = w.previous
            if w.error is None:
                w.error = error
        if link.remote_deleted:
            for hs in w.handoffs:
                hs.stage_done = True
                hs.comment_id = hs.comment_id or 0

    def _record_found_comments(self, w: Work) -> None:
        chat_marker = f.marker("chat", w.chat.pk)
        if w.found_comments.get(chat_marker):
            w.link.link_comment_id = w.found_comments[chat_marker]
        for hs in w.handoffs:
            found = w.found_comments.get(f.marker("handoff", hs.handoff_id))
            if found:
                hs.comment_id = found

    def _check_contact_phone(self, w: Work, contact: dict[str, Any]) -> None:
        """The contact must carry the customer's phone once: if it is missing, change our own
        entry by its ID (or add one); never append blindly."""
        w.link.contact_hash = f.state_hash(f.relevant_state(contact, f.CONTACT_FIELDS))
        entries = [e for e in contact.get("fm") or [] if e.get("typeId") == "PHONE"]
        wanted = f.phone_digits(w.phone)
        for entry in entries:
            if f.phone_digits(str(entry.get("value"))) == wanted:
                w.link.phone_item_id = int(entry["id"])
                return
        ours = next((e for e in entries if int(e["id"]) == (w.link.phone_item_id or -1)), None)
        key = str(ours["id"]) if ours else "n0"
        w.phone_fix = Command(
            w.key(Step.FIX_CONTACT_PHONE),
            "crm.item.update",
            self._item_params(
                3,
                id=w.link.contact_id,
                fields={"fm": {key: {"typeId": "PHONE", "valueType": "MOBILE", "value": w.phone}}},
            ),
        )


def _phone_item(item: dict[str, Any], phone: str) -> int | None:
    wanted = f.phone_digits(phone)
    for entry in item.get("fm") or []:
        if entry.get("typeId") == "PHONE" and f.phone_digits(str(entry.get("value"))) == wanted:
            return int(entry["id"])
    return None


def _markers_in(text: str) -> Iterable[str]:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[inbox:") and line.endswith("]"):
            yield line
