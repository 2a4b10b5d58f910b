"""Progress of the checking sync of every existing chat ("Check every chat against the CRM",
the first sync of a business's chats): a `Job` whose figures are measured from the outbox, so
every push worker that takes part of the work moves the same bar.

done = chats marked at the start minus links still marked `verify`; errors = those of them
whose last attempt failed (they are retried by the outbox as usual).
"""

from __future__ import annotations

from inbox.conversations import progress
from inbox.conversations.models import Job
from integrations.bitrix24.models import CrmLink

KIND = Job.Kind.CRM_FULL_SYNC


def start(business_id: int, total: int) -> int:
    """A new pass replaces a running one (whose chats it marks again)."""
    previous = progress.running(business_id, KIND)
    if previous is not None:
        progress.finish(previous.pk, error="replaced by a newer check of every chat")
    return progress.start(business_id, KIND, total=total)


def measure(business_id: int) -> None:
    """Bring the running pass's figures up to date; it ends once no chat is left to check."""
    job = progress.running(business_id, KIND)
    if job is None:
        return
    left = CrmLink.objects.filter(business_id=business_id, verify=True)
    remaining = left.count()
    failing = left.exclude(last_error="").count()
    total = job.total or 0
    progress.report(job.pk, done=total - min(total, remaining), errors=failing)
    if remaining == 0:
        progress.finish(job.pk)
