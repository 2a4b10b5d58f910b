"""The replay's Celery task (queue `bulk`, by inbox.site.celery's routes: an admin's bulk job never
waits in front of a customer's turn). Thin."""

from __future__ import annotations

from celery import shared_task

from assistant.replay import engine


@shared_task(
    name=engine.REPLAY_TASK,
    acks_late=True,
    soft_time_limit=engine.REPLAY_TIME_LIMIT_SECONDS - 60,
    time_limit=engine.REPLAY_TIME_LIMIT_SECONDS,
    ignore_result=True,
)
def run_replay(run_id: int) -> None:
    """Answer the run's turns again with its candidate; a second delivery does nothing (a run
    whose worker died shows as failed once past the time limit: `engine.settle`)."""
    engine.replay(run_id)
