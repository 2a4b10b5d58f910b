"""The Celery application. Queues split by workload so each can be scaled on its own hosts, and
so one tenant's admin work never waits in front of another tenant's bot: price-list parsing and
the replay (an admin's bulk jobs, seconds to minutes of CPU or model time each) run on `bulk`,
a pool of their own, never on the `assistant` workers that answer customers.

Two cross-cutting duties live here because they belong to every task: the correlation id
travels in a task header (and is bound while the task runs), and each worker keeps a heartbeat
key in Redis that `/readyz` reads.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import Any

from celery import Celery, signals
from django.db import close_old_connections
from kombu import Queue

from inbox.platform.logs import correlation_id, new_correlation_id
from inbox.platform.redis import get_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")

app = Celery("inbox")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [
    Queue("default"),
    Queue("assistant"),
    Queue("speech"),
    Queue("integrations"),
    Queue("bulk"),
]
# Which queue each task runs on, by name: one place for the routing rule (Celery 6 drops the
# per-task `queue` attribute).
# Exact names win over the patterns (Celery's MapRoute).
app.conf.task_routes = {
    "assistant.transcribe_voice": {"queue": "speech"},
    "assistant.parse_price_upload": {"queue": "bulk"},
    "assistant.replay": {"queue": "bulk"},
    "assistant.*": {"queue": "assistant"},
    "bitrix24.*": {"queue": "integrations"},
    "whatsapp.*": {"queue": "integrations"},
    "inbox.*": {"queue": "default"},
}
app.autodiscover_tasks()
app.autodiscover_tasks(["inbox.conversations"], related_name="attachments")
app.autodiscover_tasks(["inbox.conversations"], related_name="manager_attachments")
app.autodiscover_tasks(["inbox.conversations"], related_name="pending_replies")
app.autodiscover_tasks(["integrations.whatsapp"], related_name="template_sync")
app.autodiscover_tasks(["assistant.knowledge"], related_name="price_upload")
app.autodiscover_tasks(["assistant.replay"], related_name="tasks")

HEARTBEAT_KEY = "heartbeat:celery"  # sorted set: worker name → last beat (Unix seconds)
HEARTBEAT_SECONDS = 10


@signals.before_task_publish.connect
def _carry_correlation_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:

    if headers is not None:
        headers.setdefault("cid", correlation_id.get())
        headers.setdefault("published_at", time.time())


_bound_tokens: dict[str, Any] = {}


@signals.task_prerun.connect
def _bind_correlation_id(task_id: str = "", task: Any = None, **kwargs: Any) -> None:

    cid = getattr(task.request, "cid", None) if task is not None else None
    _bound_tokens[task_id] = correlation_id.set(cid or new_correlation_id())


@signals.task_postrun.connect
def _unbind_correlation_id(task_id: str = "", **kwargs: Any) -> None:

    token = _bound_tokens.pop(task_id, None)
    if token is not None:
        correlation_id.reset(token)


@signals.task_prerun.connect
@signals.task_postrun.connect
def _recycle_database_connections(task: Any = None, **kwargs: Any) -> None:
    """Django's rule for a request, around each task: keep the connection for CONN_MAX_AGE,
    check it before its first use, close one that failed. Celery's own fixup closes it before
    and after every task unless `db_reuse_max` is set (settings), and a new PostgreSQL
    connection cost a turn 5 ms of its dispatch (connect, then the first query's set-up). An
    eager task runs inside its caller's transaction: never touched."""
    if task is not None and not getattr(task.request, "is_eager", False):
        close_old_connections()


@signals.worker_ready.connect
def _start_heartbeat(sender: Any = None, **kwargs: Any) -> None:
    """Every worker announces itself every few seconds; `/readyz` wants at least one."""
    name = getattr(sender, "hostname", None) or socket.gethostname()

    def beat() -> None:

        while True:
            # Redis down: readiness reports it; the heartbeat resumes when Redis is back.
            with contextlib.suppress(Exception):
                get_redis().zadd(HEARTBEAT_KEY, {name: time.time()})
            time.sleep(HEARTBEAT_SECONDS)

    threading.Thread(target=beat, name="heartbeat", daemon=True).start()
