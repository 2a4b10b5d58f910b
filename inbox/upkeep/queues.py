"""How long work has waited, per queue: the ingest stream and each Celery queue, read from Redis.

Used by the queue-backlog alert and by `/metrics`. The Celery queues are the ones the Celery app
declares (`inbox/site/celery.py`), so a queue added there is watched here too.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis
from celery import current_app

from inbox.conversations import ingest


def celery_queues() -> list[str]:
    return [queue.name for queue in current_app.conf.task_queues or ()]


def oldest_celery_age(client: redis.Redis, queue: str) -> float:
    """Kombu pushes on the left and pops on the right: the oldest message is the last one.
    Its `published_at` header is stamped by inbox/site/celery.py."""
    raw: Any = client.lindex(queue, -1)
    if raw is None:
        return 0.0
    try:
        published = float(json.loads(raw)["headers"]["published_at"])
    except (ValueError, KeyError, TypeError):
        return 0.0
    return max(0.0, time.time() - published)


def oldest_job_ages(client: redis.Redis) -> dict[str, float]:
    """Seconds the oldest waiting job has waited, per queue (the ingest stream and Celery's)."""
    ages = {"ingest": ingest.oldest_pending_age_seconds(client)}
    for queue in celery_queues():
        ages[queue] = oldest_celery_age(client, queue)
    return ages


def depths(client: redis.Redis) -> dict[str, int]:
    """Jobs waiting per queue, the ingest dead-letter stream included."""
    found = {
        "ingest": int(client.xlen(ingest.STREAM)),
        "ingest_dead_letter": int(client.xlen(ingest.DEAD_LETTER_STREAM)),
    }
    for queue in celery_queues():
        found[queue] = int(client.llen(queue))
    return found
