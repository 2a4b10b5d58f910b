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
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from integrations.bitrix24.crm import fields as f
from integrations.bitrix24.crm.portal import PortalInfo, portal_info
from integrations.bitrix24.models import Bitrix24Settings, CrmLink, FailedMessageSync, HandoffSync
from integrations.bitrix24.rest.client import BATCH_LIMIT, Bitrix24Client, Command
from integrations.bitrix24.rest.connection import active_settings, client_for
from integrations.bitrix24.rest.errors import Bitrix24Error, TransientError
from integrations.bitrix24.sync import full_sync, outbox
from integrations.bitrix24.sync.steps import LinkSync
from integrations.bitrix24.sync.work import Work

log = logging.getLogger(__name__)

CHUNK = 16
MAX_ROUNDS = 12


@dataclass
class DrainReport:
    synced: int = 0
    failed: int = 0
    requests: int = 0
    next_due: float | None = None  # seconds until the earliest failed link is due


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
            for fs in w.failures:
                if fs.done_at is None and fs.comment_id is not None:
                    fs.done_at = now
                fs.save(update_fields=["comment_id", "done_at"])


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
    failures: dict[int, list[FailedMessageSync]] = {}
    failed = (
        FailedMessageSync.objects.filter(link_id__in=list(seqs), done_at__isnull=True)
        .select_related("message__chat__channel")
        .order_by("id")
    )
    for fs in failed:
        failures.setdefault(fs.link_id, []).append(fs)
    return [
        Work(
            link=link,
            seq=seqs[link.pk],
            chat=link.chat,
            handoffs=handoffs.get(link.pk, []),
            phone=f.chat_phone(link.chat),
            started_in_doubt=link.in_doubt,
            failures=failures.get(link.pk, []),
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


def drain(
    business_id: int, *, budget: float = 240.0, keep_watch: bool = False, watch_for: float = 0.0
) -> DrainReport:
    """Sync every due chat of the business, chunk by chunk, until none is left or the time
    budget is spent (the task then runs again).

    `keep_watch` is for a run that came back for links it put off: when it ends with links
    still waiting (put off by another run, with a later jitter) due within `watch_for`
    seconds, the report says when to come back, so no waiting link is left without a run."""
    cfg = active_settings(business_id)
    report = DrainReport()
    if cfg is None:
        return report
    _drain(cfg, report, budget)
    if keep_watch and report.next_due is None:
        wait = outbox.seconds_until_due(business_id, timezone.now())
        if wait is not None and wait <= watch_for:
            report.next_due = wait
    return report


def _drain(cfg: Bitrix24Settings, report: DrainReport, budget: float) -> None:
    business_id = cfg.business_id
    deadline = time.monotonic() + budget
    claimed = outbox.claim_links(business_id, CHUNK)
    if not claimed:
        return  # most wake-ups in a burst: other workers already took the work
    with client_for(cfg) as client:
        info: PortalInfo | None = None
        while claimed:
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
                first_due = min(
                    outbox.fail_link(link_id, attempts.get(link_id, 1), exc, now)
                    for link_id, _seq in claimed
                )
                full_sync.measure(business_id)
                if isinstance(exc, TransientError):
                    # The task's retry must not come before the links it put off are due.
                    wait = (first_due - now).total_seconds()
                    exc.retry_after = max(exc.retry_after or 0.0, wait)
                raise
            full_sync.measure(business_id)
            report.synced += part.synced
            report.failed += part.failed
            report.requests += part.requests
            if part.next_due is not None:
                due = [d for d in (report.next_due, part.next_due) if d is not None]
                report.next_due = min(due)
            if time.monotonic() > deadline:
                break
            claimed = outbox.claim_links(business_id, CHUNK)
