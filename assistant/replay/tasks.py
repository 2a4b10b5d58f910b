"""The replay's Celery task (queue `assistant`, by the `assistant.*` route). Thin."""

from __future__ import annotations

from celery import shared_task

from assistant.replay import engine


@shared_task(
    name=engine.REPLAY_TASK,
    acks_late=True,
    soft_time_limit=1800,
    time_limit=1860,
    ignore_result=True,
)
def run_replay(run_id: int) -> None:
    """Answer the run's turns again with its candidate; a redelivered message does nothing."""
    engine.replay(run_id)
