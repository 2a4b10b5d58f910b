"""Celery tasks of the core's send path (found by the Celery app's autodiscovery). Thin: call
one function of `outbound`, declare the policy.

`deliver_reply` retries a bot message whose first try, in the turn, failed for now. Each try is
one run of the task; the next is a Celery retry with the countdown `outbound.SEND_POLICY` gives
(the provider's Retry-After, or full-jitter backoff), so no worker sleeps between tries. The
message is acknowledged when the task starts: a worker that dies mid-send does not have its try
repeated by another (a message is never sent twice); the message stays "sending" and the upkeep
settles it as outcome unknown, handing the chat to a human (`send_unknown`).
"""

from __future__ import annotations

from celery import Task, shared_task

from inbox.conversations import outbound

# One run per try after the first: the policy ends the retries; this only bounds a runaway.
MAX_RETRIES = outbound.SEND_ATTEMPTS


@shared_task(
    name=outbound.DELIVER_TASK,
    bind=True,
    acks_late=False,
    max_retries=MAX_RETRIES,
    soft_time_limit=120,
    time_limit=150,
    ignore_result=True,
)
def deliver_reply(self: Task, message_id: int, first_try_at: float) -> None:  # type: ignore[type-arg]
    """Try a bot message again (try 2 on the first run, one more per Celery retry); after the
    last try it is marked failed and its chat goes to a human (in `outbound`)."""
    step = outbound.retry_delivery(
        message_id, attempt=2 + self.request.retries, first_try_at=first_try_at
    )
    if isinstance(step, outbound.RetryLater):
        raise self.retry(exc=step.error, countdown=step.countdown)
