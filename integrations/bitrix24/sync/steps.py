"""One chat's sync pass, step by step: what to send next and what the answers mean.

`LinkSync.plan(work)` returns the next commands for a chat (`plan.Planner`: look up, create the
contact, create the lead/deal with its link comment, then handoffs, responsible user, full-sync
checks); `LinkSync.apply(work, outcome)`, here, records the answers. The pass's state and its
step codes are `work.py`'s. push.py runs the rounds for many chats at once and packs their
commands into batches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError, transaction

from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.crm import snapshot
from integrations.bitrix24.models import CrmEntity, UserLink
from integrations.bitrix24.rest.client import BATCH_LIMIT, BatchResult, Command
from integrations.bitrix24.rest.errors import NotFound
from integrations.bitrix24.sync.plan import Planner
from integrations.bitrix24.sync.work import (
    ENTITY_STEPS,
    EXPECTED_STEPS,
    LOOKUP_STEPS,
    Step,
    Work,
)

log = logging.getLogger(__name__)


class LinkSync(Planner):
    """Plans the next commands for each chat (`Planner`) and applies the answers."""

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
        for fs in w.failures:
            code = Step.FAILED_COMMENT.code(fs.message_id)
            if code in results:
                fs.comment_id = int(results[code])
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
            for fs in w.failures:
                fs.comment_id = fs.comment_id or 0

    def _record_found_comments(self, w: Work) -> None:
        chat_marker = f.marker(f.Origin.CHAT, w.chat.pk)
        if w.found_comments.get(chat_marker):
            w.link.link_comment_id = w.found_comments[chat_marker]
        for hs in w.handoffs:
            found = w.found_comments.get(f.marker(f.Origin.HANDOFF, hs.handoff_id))
            if found:
                hs.comment_id = found
        for fs in w.failures:
            found = w.found_comments.get(f.marker(f.Origin.FAILED, fs.message_id))
            if found:
                fs.comment_id = found

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
                CrmEntity.CONTACT.type_id,
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
