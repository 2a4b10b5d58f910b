"""Prometheus metrics of the conversation core (webhooks, ingest, replies, turns, handoffs)."""

from __future__ import annotations

import hmac
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric

WEBHOOKS_RECEIVED = Counter(
    "inbox_webhooks_received_total", "Webhook requests received", ["transport", "outcome"]
)
EVENTS_ENQUEUED = Counter(
    "inbox_events_enqueued_total", "Events put on the ingest queue", ["transport"]
)
DUPLICATES_DROPPED = Counter(
    "inbox_duplicates_dropped_total", "Events dropped as duplicates before the queue", ["transport"]
)
INGEST_SECONDS = Histogram(
    "inbox_ingest_seconds",
    "Time to accept one event in the consumer",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
REPLIES_SENT = Counter("inbox_replies_sent_total", "Outbound messages sent", ["author"])
REPLIES_DROPPED = Counter(
    "inbox_replies_dropped_total",
    "Bot replies not sent, by reason (stale, not_bot_owner)",
    ["reason"],
)
REPLIES_FAILED = Counter(
    "inbox_replies_failed_total", "Outbound messages that failed", ["author", "code"]
)
TURNS = Counter("inbox_turns_total", "Assistant turns, by outcome", ["outcome"])
HANDOFFS = Counter("inbox_handoffs_total", "Chats handed to a human, by reason", ["reason"])
WEBSOCKETS = Gauge(
    "inbox_websocket_connections", "Open dashboard websockets", multiprocess_mode="livesum"
)
# "mostrecent": the value the last check wrote wins; "max" would keep a resolved alert's count
# alive in the file of whichever process set it last.
ALERTS_ACTIVE = Gauge(
    "inbox_alerts_active",
    "Alerts currently raised, by kind",
    ["kind"],
    multiprocess_mode="mostrecent",
)


# --- exposition -------------------------------------------------------------------------------
# With PROMETHEUS_MULTIPROC_DIR set (make run and deploy/ set it), every process — daphne,
# Celery children, the ingest consumer — writes its metrics there and /metrics adds them up.
# Queue depths and ages are read from Redis at scrape time, so any process can report them.


class QueueCollector:
    """Depth and age of the oldest waiting job, per queue, read from Redis when scraped."""

    def collect(self) -> Iterator[Metric]:
        from inbox import ingest
        from inbox.ingest_worker import oldest_pending_age_seconds
        from inbox.redis import get_redis

        client = get_redis()
        depth = GaugeMetricFamily("inbox_queue_depth", "Jobs waiting, per queue", labels=["queue"])
        age = GaugeMetricFamily(
            "inbox_oldest_job_age_seconds", "Age of the oldest unprocessed job", labels=["queue"]
        )
        try:
            depth.add_metric(["ingest"], float(client.xlen(ingest.STREAM)))
            age.add_metric(["ingest"], oldest_pending_age_seconds(client))
            depth.add_metric(["ingest_dead_letter"], float(client.xlen(ingest.DEAD_LETTER_STREAM)))
            for queue in CELERY_QUEUES:
                depth.add_metric([queue], float(client.llen(queue)))
                age.add_metric([queue], _oldest_celery_age(client, queue))
        except redis.RedisError:
            return
        yield depth
        yield age


CELERY_QUEUES = ("default", "assistant", "speech", "integrations")


def _oldest_celery_age(client: redis.Redis, queue: str) -> float:
    """Kombu pushes on the left and pops on the right: the oldest message is the last one.
    Its `published_at` header is stamped by inbox/celery.py."""
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
    from inbox.ingest_worker import oldest_pending_age_seconds

    ages = {"ingest": oldest_pending_age_seconds(client)}
    for queue in CELERY_QUEUES:
        ages[queue] = _oldest_celery_age(client, queue)
    return ages


def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(reg)  # type: ignore[no-untyped-call]
    else:
        for collector in list(REGISTRY._collector_to_names):
            reg.register(collector)
    reg.register(QueueCollector())
    return reg


def _allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        return bool(given) and hmac.compare_digest(given, token)
    return request.META.get("REMOTE_ADDR", "") in settings.METRICS_ALLOWED_IPS


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus text format; needs METRICS_TOKEN as a bearer token, or (without a token
    configured) a request from one of METRICS_ALLOWED_IPS."""
    if not _allowed(request):
        return HttpResponse("forbidden", status=403, content_type="text/plain")
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
