"""Liveness and readiness.

`/healthz`: the process answers. `/readyz`: the parts the inbox needs are there — the database,
Redis, at least one Celery worker (heartbeat in the last 30 s) and the LLM endpoint (its circuit
breaker not open). 503 names what is failing. Route web traffic on /healthz; alert and
orchestrate on /readyz (the inbox keeps serving managers while the model is down).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from assistant.llm.health import llm_status
from inbox.platform.redis import get_redis
from inbox.site.celery import HEARTBEAT_KEY, HEARTBEAT_SECONDS


@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _redis() -> str:
    get_redis().ping()
    return "ok"


def _celery() -> str:
    alive = get_redis().zrangebyscore(HEARTBEAT_KEY, time.time() - 3 * HEARTBEAT_SECONDS, "+inf")
    if not alive:
        raise RuntimeError("no Celery worker heartbeat in the last 30 s")
    return f"{len(alive)} worker(s)"


def _llm() -> str:

    return llm_status()


CHECKS: dict[str, Callable[[], str]] = {
    "database": _database,
    "redis": _redis,
    "celery": _celery,
    "llm": _llm,
}


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results: dict[str, str] = {}
    failing: list[str] = []
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except Exception as exc:
            results[name] = f"failing: {exc}"[:300]
            failing.append(name)
    status = 503 if failing else 200
    return JsonResponse(
        {"ready": not failing, "failing": failing, "checks": results}, status=status
    )
