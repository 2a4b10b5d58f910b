"""`/metrics`: Prometheus text format for every process of the installation.

With PROMETHEUS_MULTIPROC_DIR set (make run and deploy/ set it), every process (daphne, Celery
children, the ingest consumer) writes its metrics there and this view adds them up. Queue depths
and ages are read from Redis at scrape time, so any process can report them.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterator

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric

from inbox.platform.redis import get_redis
from inbox.upkeep import queues


class QueueCollector:
    """Depth and age of the oldest waiting job, per queue, read from Redis when scraped."""

    def collect(self) -> Iterator[Metric]:
        client = get_redis()
        depth = GaugeMetricFamily("inbox_queue_depth", "Jobs waiting, per queue", labels=["queue"])
        age = GaugeMetricFamily(
            "inbox_oldest_job_age_seconds", "Age of the oldest unprocessed job", labels=["queue"]
        )
        try:
            for queue, count in queues.depths(client).items():
                depth.add_metric([queue], float(count))
            for queue, seconds in queues.oldest_job_ages(client).items():
                age.add_metric([queue], seconds)
        except redis.RedisError:
            return
        yield depth
        yield age


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
