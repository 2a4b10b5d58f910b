"""Progress of long work: one `Job` row per run, written by the worker, read by the pages.

    job_id = progress.start(business_id, Job.Kind.PURGE, total=1200)
    progress.advance(job_id, done=500)     # increments: workers may share a job
    progress.report(job_id, done=800, total=1200, errors=3)   # or the figures outright
    progress.advance(job_id, errors=1, error="message 42: OSError")
    progress.finish(job_id)                # or finish(job_id, error="...")
    job = progress.latest([business_id], Job.Kind.PURGE)   # what a page shows after a reload

The pages render `templates/inbox/_progress.html` for `latest(...)`; while the job runs, the
fragment polls `inbox.web.progress_views.job_progress` (tenant-checked) and stops once it ends.
Only the last KEEP_PER_KIND runs of a kind are kept per business, so hourly work does not grow
the table.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F
from django.utils import timezone

from inbox.conversations.models import Job

KEEP_PER_KIND = 5


def start(business_id: int, kind: Job.Kind, *, total: int | None = None) -> int:
    """A new running job; older finished runs past KEEP_PER_KIND are dropped."""
    job = Job.objects.create(business_id=business_id, kind=kind, total=total)
    old = Job.objects.filter(business_id=business_id, kind=kind).exclude(state=Job.State.RUNNING)
    stale = list(old.order_by("-id").values_list("pk", flat=True)[KEEP_PER_KIND:])
    if stale:
        Job.objects.filter(pk__in=stale).delete()
    return int(job.pk)


def report(job_id: int, *, done: int, total: int | None = None, errors: int | None = None) -> None:
    """Set the figures outright, for work that measures its progress (rows read of a file,
    rows left in an outbox) rather than counting it."""
    changes: dict[str, object] = {"done": max(0, done), "updated_at": timezone.now()}
    if total is not None:
        changes["total"] = total
    if errors is not None:
        changes["errors"] = errors
    Job.objects.filter(pk=job_id).update(**changes)


def advance(job_id: int, *, done: int = 0, errors: int = 0, error: str = "") -> None:
    """Count work done and errors so far (increments, so concurrent workers add up)."""
    changes: dict[str, object] = {"updated_at": timezone.now()}
    if done:
        changes["done"] = F("done") + done
    if errors:
        changes["errors"] = F("errors") + errors
    if error:
        changes["last_error"] = error[:300]
    Job.objects.filter(pk=job_id).update(**changes)


def finish(job_id: int, *, error: str = "") -> None:
    """The job ended: done, or failed with `error` (a message fit for an admin, no secrets).
    A job that already ended keeps its first ending."""
    now = timezone.now()
    changes: dict[str, object] = {"finished_at": now, "updated_at": now}
    if error:
        changes.update(state=Job.State.FAILED, last_error=error[:300])
    else:
        changes["state"] = Job.State.DONE
    Job.objects.filter(pk=job_id, state=Job.State.RUNNING).update(**changes)


def running(business_id: int, kind: Job.Kind) -> Job | None:
    return (
        Job.objects.filter(business_id=business_id, kind=kind, state=Job.State.RUNNING)
        .order_by("-id")
        .first()
    )


def latest(business_ids: Iterable[int], kind: Job.Kind) -> Job | None:
    """The newest run of this kind among these businesses: what a page shows."""
    return Job.objects.filter(business_id__in=list(business_ids), kind=kind).order_by("-id").first()


def visible(job_id: int, business_ids: Iterable[int]) -> Job | None:
    """The job if it belongs to one of these businesses (the caller's), else None."""
    return Job.objects.filter(pk=job_id, business_id__in=list(business_ids)).first()
