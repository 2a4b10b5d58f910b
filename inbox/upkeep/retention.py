"""Data retention: customer content older than the retention period is removed for good.

The period is RETENTION_DAYS (0 = keep forever), overridden per business by
`Business.retention_days` (0 there = keep this business's data forever). Past it:

* messages lose their text, transcript and its segments, the attachment file (deleted from
  storage) with its name and provider reference, and any content kept in the payload (previous
  texts of edits, locations, contacts); the row stays with `purged_at` set, so the
  conversation's shape (who wrote when, statuses, ownership audit) remains;
* handoffs lose their summary, collected facts and the notice text; turns lose the model's
  decision (which quotes the reply) and guardrail findings;
* the ingest dead-letter stream (raw webhook events kept for an operator) is trimmed to the
  shortest period in force.

`manage.py purge_old_data [--dry-run]` runs it by hand; Celery beat runs it every hour.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import redis
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from inbox.conversations import ingest, progress
from inbox.conversations.models import Business, Handoff, Job, Message, Turn
from inbox.platform.redis import get_redis

log = logging.getLogger(__name__)

BATCH = 500
# Payload keys that describe the message's shape, not what the customer said.
KEPT_PAYLOAD_KEYS = frozenset({"revoked", "edited", "handoff_id", "source"})
PURGED = {"purged": True}


@dataclass
class PurgeReport:
    business_id: int
    business: str
    days: int
    cutoff: datetime
    messages: int = 0
    media_files: int = 0
    handoffs: int = 0
    turns: int = 0
    errors: list[str] = field(default_factory=list)


def retention_days(business: Business) -> int:
    if business.retention_days is not None:
        return business.retention_days
    return settings.RETENTION_DAYS


def purge(now: datetime | None = None, *, dry_run: bool = False) -> list[PurgeReport]:
    """Purge every business's content older than its retention period. With `dry_run`, only
    count what would go. Returns one report per business with a period in force."""
    now = now or timezone.now()
    reports = []
    for business in Business.objects.order_by("pk"):
        days = retention_days(business)
        if days <= 0:
            continue
        report = PurgeReport(business.pk, business.name, days, now - timedelta(days=days))
        _purge_business(report, dry_run)
        reports.append(report)
        if report.messages or report.handoffs or report.turns:
            log.info(
                "retention.purged",
                extra={
                    "business_id": business.pk,
                    "dry_run": dry_run,
                    "messages": report.messages,
                    "media_files": report.media_files,
                    "handoffs": report.handoffs,
                    "turns": report.turns,
                },
            )
    if reports and not dry_run:
        _trim_dead_letters(min(r.cutoff for r in reports))
    return reports


def _purge_business(report: PurgeReport, dry_run: bool) -> None:
    messages = Message.objects.filter(
        channel__business_id=report.business_id,
        created_at__lt=report.cutoff,
        purged_at__isnull=True,
    )
    handoffs = Handoff.objects.filter(
        chat__channel__business_id=report.business_id, created_at__lt=report.cutoff
    ).exclude(details__has_key="purged")
    turns = Turn.objects.filter(
        chat__channel__business_id=report.business_id, started_at__lt=report.cutoff
    ).exclude(decision__has_key="purged")
    if dry_run:
        report.messages = messages.count()
        report.media_files = messages.exclude(media_file="").count()
        report.handoffs = handoffs.count()
        report.turns = turns.count()
        return
    total = messages.count() + handoffs.count() + turns.count()
    if not total:
        return  # most hours: nothing is old enough, and no progress row is written
    job_id = progress.start(report.business_id, Job.Kind.PURGE, total=total)
    try:
        failed: set[int] = set()  # rows whose file could not be deleted wait for the next run
        while ids := list(
            messages.exclude(pk__in=failed).order_by("pk").values_list("pk", flat=True)[:BATCH]
        ):
            errors_before = len(report.errors)
            failed |= _purge_messages(ids, report)
            new_errors = report.errors[errors_before:]
            progress.advance(job_id, done=len(ids) - len(new_errors), errors=len(new_errors),
                             error=new_errors[-1] if new_errors else "")  # fmt: skip
        while ids := list(handoffs.order_by("pk").values_list("pk", flat=True)[:BATCH]):
            report.handoffs += Handoff.objects.filter(pk__in=ids).update(
                summary="", facts={}, message_to_customer="", details=PURGED
            )
            progress.advance(job_id, done=len(ids))
        while ids := list(turns.order_by("pk").values_list("pk", flat=True)[:BATCH]):
            report.turns += Turn.objects.filter(pk__in=ids).update(
                decision=PURGED, guardrail_findings=[]
            )
            progress.advance(job_id, done=len(ids))
    except Exception as exc:
        progress.finish(job_id, error=f"stopped: {type(exc).__name__}")
        raise
    progress.finish(job_id)


def _purge_messages(ids: list[int], report: PurgeReport) -> set[int]:
    """Files first, then the rows: a crash in between leaves rows that the next run purges
    again (deleting a missing file is a no-op), never a row marked purged with its file left."""
    now = timezone.now()
    failed: set[int] = set()
    rows = list(Message.objects.filter(pk__in=ids).only("pk", "media_file", "payload"))
    for row in rows:
        if row.media_file and row.media_file.name:
            try:
                default_storage.delete(row.media_file.name)
                report.media_files += 1
            except OSError as exc:
                # Leave the row unpurged: it is retried on the next run.
                report.errors.append(f"message {row.pk}: {type(exc).__name__}")
                log.warning("retention.media_delete_failed", extra={"message_id": row.pk})
                failed.add(row.pk)
    with transaction.atomic():
        for row in Message.objects.select_for_update().filter(pk__in=ids).exclude(pk__in=failed):
            row.text = ""
            row.transcript = ""
            row.transcript_segments = []
            row.media_file.name = ""
            row.media_filename = ""
            row.media_ref = ""
            row.payload = _kept_payload(row.payload)
            row.purged_at = now
            row.save(
                update_fields=[
                    "text",
                    "transcript",
                    "transcript_segments",
                    "media_file",
                    "media_filename",
                    "media_ref",
                    "payload",
                    "purged_at",
                ]
            )
            report.messages += 1
    return failed


def _kept_payload(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        return {}
    return {key: value for key, value in payload.items() if key in KEPT_PAYLOAD_KEYS}


def _trim_dead_letters(cutoff: datetime) -> None:
    """Raw events in the dead-letter stream carry message text: drop those older than cutoff."""

    try:
        get_redis().xtrim(
            ingest.DEAD_LETTER_STREAM, minid=int(cutoff.timestamp() * 1000), approximate=False
        )
    except redis.RedisError:
        log.warning("retention.dead_letters_not_trimmed", exc_info=True)
