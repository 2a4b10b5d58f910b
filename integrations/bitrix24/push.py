"""Chats and handoffs to Bitrix24, many chats per request.

A worker claims up to CHUNK chats (their `CrmLink` rows) and moves each one forward in rounds;
every round packs the next commands of all chats into as few `batch` requests as fit:

    round 1  look up   crm.duplicate.findbycomm (phone) · crm.item.list originId (our entity)
    round 2  contact   crm.item.add (contact, phone as an `fm` array entry) if none was found
    round 3  entity    crm.item.add (deal/lead at the pipeline's first stage) + the link comment
                       (`$result[...]` refers to the new entity inside the same batch)
    later    handoffs  crm.item.update stage (+ mapped user fields) · handoff comment
             responsible · full-sync checks (contact phone by `fm` item ID, entity exists)

Every write is safe to repeat: contacts are found by phone before creating, entities by their
`originId`, comments by a marker line (looked for when an earlier attempt may have written
one). Before a round with writes the link is flagged `in_doubt` and the fields we are about to
write are stored with their hash (echo protection); the flag is cleared once the answer is
recorded. A failed command fails only its own chat, which is retried later; the others go on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from inbox.models import Chat
from integrations.bitrix24 import fields as f
from integrations.bitrix24 import outbox, snapshot
from integrations.bitrix24.client import BATCH_LIMIT, Bitrix24Client, Command
from integrations.bitrix24.connection import active_settings, client_for
from integrations.bitrix24.errors import Bitrix24Error, NotFound, TransientError
from integrations.bitrix24.models import Bitrix24Settings, CrmLink, HandoffSync, UserLink
from integrations.bitrix24.phpquery import result_ref
from integrations.bitrix24.portal import PortalInfo, portal_info

log = logging.getLogger(__name__)

CHUNK = 16
MAX_ROUNDS = 12
ENTITY_SELECT = [
    "id",
    "stageId",
    "categoryId",
    "assignedById",
    "contactId",
    "updatedBy",
    "updatedTime",
]


@dataclass
class DrainReport:
    synced: int = 0
    failed: int = 0
    requests: int = 0
    next_due: float | None = None  # seconds until the earliest failed link is due


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

    def key(self, step: str) -> str:
        return f"w{self.link.pk}_{step}"


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
                        w.key("dup"),
                        "crm.duplicate.findbycomm",
                        {"entity_type": "CONTACT", "type": "PHONE", "values": [w.phone]},
                    )
                )
            else:
                commands.append(
                    Command(
                        w.key("cor"),
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
                    w.key("ent"),
                    "crm.item.list",
                    self._item_params(
                        self.entity_type_id,
                        filter=self._origin_filter("chat", w.chat.pk),
                        select=ENTITY_SELECT + self.uf_names,
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
        return Command(w.key("cadd"), "crm.item.add", self._item_params(3, fields=fields))

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
            w.key("eadd"), "crm.item.add", self._item_params(self.entity_type_id, fields=fields)
        )
        comment = Command(
            w.key("lc"),
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
                    w.key("cl"),
                    "crm.timeline.comment.list",
                    {
                        "filter": {
                            "ENTITY_ID": w.link.entity_id,
                            "ENTITY_TYPE": self.entity,
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
            key = w.key("lc") if hs is None else w.key(f"h{hs.handoff_id}c")
            commands.append(
                Command(
                    key,
                    "crm.timeline.comment.add",
                    {
                        "fields": {
                            "ENTITY_ID": w.link.entity_id,
                            "ENTITY_TYPE": self.entity,
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
                w.key("hs"),
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
                return [Command(w.key("usr"), "user.get", {"filter": {"EMAIL": assigned.email}})]
        w.responsible_sent = True
        responsible = self.responsible_id(w)
        if not responsible or str(responsible) == str(w.link.remote_state.get("assignedById")):
            w.link.needs_responsible = False
            return []
        self._expect(w, {"assignedById": responsible})
        w.writes = True
        return [
            Command(
                w.key("resp"),
                "crm.item.update",
                self._item_params(
                    self.entity_type_id, id=w.link.entity_id, fields={"assignedById": responsible}
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
                    w.key("ve"),
                    "crm.item.get",
                    self._item_params(self.entity_type_id, id=w.link.entity_id),
                )
            )
        if w.phone and not w.contact_checked:
            w.contact_checked = True
            commands.append(
                Command(w.key("vc"), "crm.item.get", self._item_params(3, id=w.link.contact_id))
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
        snapshot.record_entity(w.link, item, self.entity, self.cfg, self.info)

    def apply(self, w: Work, outcome: Any) -> None:
        """Apply the answers to this chat's commands of the round."""
        link = w.link
        prefix = f"w{link.pk}_"
        results = {k[len(prefix) :]: v for k, v in outcome.results.items() if k.startswith(prefix)}
        errors = {k[len(prefix) :]: v for k, v in outcome.errors.items() if k.startswith(prefix)}
        if "dup" in results:
            found = results["dup"].get("CONTACT") if isinstance(results["dup"], dict) else None
            link.contact_id = min(int(i) for i in found) if found else None
        if "cor" in results:
            items = (results["cor"] or {}).get("items") or []
            link.contact_id = min(int(i["id"]) for i in items) if items else None
        if "ent" in results:
            items = sorted((results["ent"] or {}).get("items") or [], key=lambda i: int(i["id"]))
            if items:
                link.entity_id = int(items[0]["id"])
                w.entity_found = True
                self.read_entity(w, items[0])
        if {"dup", "cor", "ent"} & set(results) and not ({"dup", "cor", "ent"} & set(errors)):
            w.looked_up = True
        if "cadd" in results:
            item = results["cadd"]["item"]
            link.contact_id = int(item["id"])
            link.phone_item_id = _phone_item(item, w.phone)
            link.contact_name = " ".join(p for p in (item.get("name"), item.get("lastName")) if p)
            link.contact_hash = f.state_hash(f.relevant_state(item, f.CONTACT_FIELDS))
        if "eadd" in results:
            item = results["eadd"]["item"]
            link.entity_id = int(item["id"])
            self.read_entity(w, item)
        if "lc" in results:
            link.link_comment_id = int(results["lc"])
        if "cl" in results:
            rows = results["cl"] if isinstance(results["cl"], list) else []
            for row in rows:
                text = str(row.get("COMMENT") or "")
                for marker_text in _markers_in(text):
                    w.found_comments[marker_text] = int(row["ID"])
                w.scan_cursor = max(w.scan_cursor, int(row["ID"]))
            w.scan_done = len(rows) < BATCH_LIMIT
            self._record_found_comments(w)
        for hs in w.handoffs:
            key = f"h{hs.handoff_id}c"
            if key in results:
                hs.comment_id = int(results[key])
        if "hs" in results:
            self.read_entity(w, results["hs"]["item"])
            for hs in w.handoffs:
                hs.stage_done = True
        if "usr" in results:
            users = results["usr"] if isinstance(results["usr"], list) else []
            if len(users) == 1 and w.chat.assigned_to_id:
                UserLink.objects.get_or_create(
                    business_id=self.cfg.business_id,
                    user_id=w.chat.assigned_to_id,
                    defaults={"bitrix_user_id": int(users[0]["ID"])},
                )
        if "resp" in results:
            self.read_entity(w, results["resp"]["item"])
            link.needs_responsible = False
        if "ve" in results:
            self.read_entity(w, results["ve"]["item"])
        if "vc" in results:
            self._check_contact_phone(w, results["vc"]["item"])
        if "vcu" in results:
            link.phone_item_id = _phone_item(results["vcu"]["item"], w.phone)
        for step, error in errors.items():
            if isinstance(error, NotFound) and step in {"ve", "hs", "resp"}:
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
            if step in {"eadd", "hs", "resp"} and w.previous is not None:
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
            w.key("vcu"),
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


def _pack(groups: list[tuple[Work, list[Command]]]) -> list[list[tuple[Work, list[Command]]]]:
    """Fill batches of ≤50 commands without splitting one chat's commands of a round."""
    batches: list[list[tuple[Work, list[Command]]]] = []
    current: list[tuple[Work, list[Command]]] = []
    size = 0
    for work, commands in groups:
        if current and size + len(commands) > BATCH_LIMIT:
            batches.append(current)
            current, size = [], 0
        current.append((work, commands))
        size += len(commands)
    if current:
        batches.append(current)
    return batches


LINK_FIELDS = [
    "responsible_user",
    "entity_type",
    "entity_id",
    "contact_id",
    "category_id",
    "stage_id",
    "stage_semantics",
    "stage_name",
    "responsible_id",
    "contact_name",
    "crm_fields",
    "remote_state",
    "synced_hash",
    "contact_hash",
    "link_comment_id",
    "phone_item_id",
    "remote_deleted",
    "remote_modified_at",
    "needs_responsible",
    "in_doubt",
]


def _save(works: Iterable[Work]) -> None:
    now = timezone.now()
    with transaction.atomic():
        for w in works:
            w.link.save(update_fields=LINK_FIELDS)
            for hs in w.handoffs:
                if hs.done_at is None and hs.stage_done and hs.comment_id is not None:
                    hs.done_at = now
                hs.save(update_fields=["stage_done", "comment_id", "done_at"])


def _load(claimed: list[tuple[int, int]]) -> list[Work]:
    seqs = dict(claimed)
    links = CrmLink.objects.filter(pk__in=list(seqs)).select_related(
        "chat__channel", "chat__assigned_to"
    )
    handoffs: dict[int, list[HandoffSync]] = {}
    pending = (
        HandoffSync.objects.filter(link_id__in=list(seqs), done_at__isnull=True)
        .select_related("handoff__chat__channel")
        .order_by("id")
    )
    for hs in pending:
        handoffs.setdefault(hs.link_id, []).append(hs)
    return [
        Work(
            link=link,
            seq=seqs[link.pk],
            chat=link.chat,
            handoffs=handoffs.get(link.pk, []),
            phone=f.chat_phone(link.chat),
            started_in_doubt=link.in_doubt,
        )
        for link in sorted(links, key=lambda link: link.pk)
    ]


def sync_links(
    client: Bitrix24Client,
    cfg: Bitrix24Settings,
    info: PortalInfo,
    claimed: list[tuple[int, int]],
) -> DrainReport:
    """Move the claimed chats as far as they go, in as few requests as possible."""
    syncer = LinkSync(cfg, info)
    works = _load(claimed)
    report = DrainReport()
    for _ in range(MAX_ROUNDS):
        groups: list[tuple[Work, list[Command]]] = []
        for w in works:
            if w.error is not None or w.complete:
                continue
            w.writes = False
            try:
                commands = syncer.plan(w)
            except Bitrix24Error as exc:
                w.error = exc
                continue
            if commands:
                groups.append((w, commands))
            else:
                w.complete = True
        if not groups:
            break
        for batch in _pack(groups):
            batch_works = [w for w, _ in batch]
            writers = [w for w in batch_works if w.writes]
            for w in writers:
                w.link.in_doubt = True
            _save(writers)
            try:
                outcome = client.batch([c for _, commands in batch for c in commands])
            except Bitrix24Error as exc:
                unknown = isinstance(exc, TransientError) and exc.in_doubt
                for w in batch_works:
                    w.error = w.error or exc
                    if not unknown:
                        if w.previous is not None:
                            w.link.remote_state, w.link.synced_hash = w.previous
                        w.link.in_doubt = False
                _save(batch_works)
                continue
            report.requests += 1
            for w in batch_works:
                syncer.apply(w, outcome)
                w.previous = None
                w.link.in_doubt = False
            _save(batch_works)
    now = timezone.now()
    for w in works:
        if w.error is not None:
            report.failed += 1
            due = outbox.fail_link(w.link.pk, w.link.attempts, w.error, now)
            wait = (due - now).total_seconds()
            report.next_due = wait if report.next_due is None else min(report.next_due, wait)
            log.warning(
                "bitrix24.chat_sync_failed",
                extra={
                    "business_id": cfg.business_id,
                    "chat_id": w.chat.pk,
                    "code": w.error.code,
                    "error": str(w.error)[:200],
                    "retry_in_s": round(wait),
                },
            )
        elif w.complete:
            report.synced += 1
            outbox.finish_link(w.link.pk, w.seq, now)
            log.info(
                "bitrix24.chat_synced",
                extra={
                    "business_id": cfg.business_id,
                    "chat_id": w.chat.pk,
                    "entity": w.link.entity_type,
                    "entity_id": w.link.entity_id,
                    "contact_id": w.link.contact_id,
                },
            )
        else:
            outbox.release_links([w.link.pk])
    return report


def _remember_technical_user(cfg: Bitrix24Settings, info: PortalInfo) -> None:
    if cfg.technical_user_id is None and info.current_user_id:
        Bitrix24Settings.objects.filter(pk=cfg.pk, technical_user_id__isnull=True).update(
            technical_user_id=info.current_user_id
        )
        cfg.technical_user_id = info.current_user_id


def drain(business_id: int, *, budget: float = 240.0) -> DrainReport:
    """Sync every due chat of the business, chunk by chunk, until none is left or the time
    budget is spent (the task then runs again)."""
    cfg = active_settings(business_id)
    report = DrainReport()
    if cfg is None:
        return report
    deadline = time.monotonic() + budget
    with client_for(cfg) as client:
        info: PortalInfo | None = None
        while time.monotonic() < deadline:
            claimed = outbox.claim_links(business_id, CHUNK)
            if not claimed:
                break
            try:
                if info is None:
                    info = portal_info(client, cfg)
                    _remember_technical_user(cfg, info)
                part = sync_links(client, cfg, info, claimed)
            except Bitrix24Error as exc:
                now = timezone.now()
                attempts = dict(
                    CrmLink.objects.filter(pk__in=[c[0] for c in claimed]).values_list(
                        "id", "attempts"
                    )
                )
                for link_id, _seq in claimed:
                    outbox.fail_link(link_id, attempts.get(link_id, 1), exc, now)
                raise
            report.synced += part.synced
            report.failed += part.failed
            report.requests += part.requests
            if part.next_due is not None:
                report.next_due = (
                    part.next_due
                    if report.next_due is None
                    else min(report.next_due, part.next_due)
                )
    return report
