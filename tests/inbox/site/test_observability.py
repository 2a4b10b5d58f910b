"""Logs (JSON, correlated, no customer data), /metrics and /readyz."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
from typing import Any

import httpx
import pytest

from inbox.conversations import ingest
from inbox.conversations.debounce import DebounceScheduler
from inbox.conversations.events import event_from_json
from inbox.conversations.ingest.worker import IngestWorker
from inbox.conversations.models import Channel
from inbox.platform.logs import JsonLines, PrivacyFilter, bound
from inbox.platform.redis import get_redis
from inbox.site.asgi import application
from inbox.site.celery import HEARTBEAT_KEY
from tests import factories
from tests.emulators.graph_api import contact, envelope, sign, text_message
from tests.processes import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
PHONE = "77011234567"


@pytest.fixture
def json_log() -> Any:
    """Capture what the application logs, formatted exactly as production formats it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    handler.addFilter(PrivacyFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    previous = root.level
    root.setLevel(logging.DEBUG)
    yield stream
    root.removeHandler(handler)
    root.setLevel(previous)


def test_logs_are_json_lines_with_the_correlation_id_and_no_phone_number(
    json_log: io.StringIO,
) -> None:
    log = logging.getLogger("inbox.test")
    with bound("cid-123"):
        log.info(
            "customer %s wrote",
            "+7 701 123 45 67",
            extra={"chat_key": f"{PHONE}@s.whatsapp.net", "text": "my address is ..."},
        )
        try:
            raise ValueError(f"bad number {PHONE}")
        except ValueError:
            log.exception("ingest.failed", extra={"wa_id": PHONE})

    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["customer …67 wrote", "ingest.failed"]
    assert all(line["correlation_id"] == "cid-123" for line in lines)
    assert lines[0]["text"] == "[masked]"
    assert "1234567" not in json_log.getvalue()
    assert "701 123" not in json_log.getvalue()


def test_the_webhooks_correlation_id_travels_with_the_event_into_the_consumer_and_the_task(
    settings: Any, json_log: io.StringIO
) -> None:
    settings.WHATSAPP_APP_SECRET = "s"
    factories.channel(
        kind=Channel.Kind.CLOUD_API, phone_number_id="106540352249999", debounce_seconds=0
    )
    body = json.dumps(
        envelope("106540352249999", messages=[text_message(PHONE, "hi")], contacts=[contact(PHONE)])
    ).encode()

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application), base_url="http://t"
        ) as client:
            return await client.post(
                "/webhooks/whatsapp/",
                content=body,
                headers={"X-Hub-Signature-256": sign("s", body)},
            )

    answer = asyncio.run(post())
    cid = answer.headers["x-correlation-id"]
    assert answer.status_code == 200
    assert len(cid) == 16
    ((_, fields),) = get_redis().xrange(ingest.STREAM)
    assert event_from_json(fields[b"e"]).correlation_id == cid

    IngestWorker(name="obs", block_ms=10).step()
    consumer_lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    assert any(line["correlation_id"] == cid for line in consumer_lines)

    # The turn task the debounce scheduler queues for it carries the same id in its headers.
    scheduler = DebounceScheduler()
    raw = wait_for(
        lambda: scheduler.run_once() is not None and get_redis().lindex("assistant", -1),
        timeout=5,
        interval=0.05,
    )
    assert json.loads(raw)["headers"]["cid"] == cid


class TestMetrics:
    def test_metrics_need_the_token_or_an_allowed_address(self, client: Any, settings: Any) -> None:
        settings.METRICS_TOKEN = "metrics-secret"

        assert client.get("/metrics").status_code == 403
        assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
        answer = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-secret")

        assert answer.status_code == 200
        text = answer.content.decode()
        assert 'inbox_queue_depth{queue="ingest"}' in text
        assert "inbox_oldest_job_age_seconds" in text

    def test_age_of_the_oldest_unprocessed_job_is_reported(
        self, client: Any, settings: Any
    ) -> None:
        settings.METRICS_TOKEN = ""
        settings.METRICS_ALLOWED_IPS = ["127.0.0.1"]
        # An event queued two minutes ago that no consumer has taken yet.
        two_minutes_ago = int((time.time() - 120) * 1000)
        get_redis().xadd(ingest.STREAM, {"e": b"{}"}, id=f"{two_minutes_ago}-0")

        answer = client.get("/metrics", REMOTE_ADDR="127.0.0.1")

        assert answer.status_code == 200
        lines = answer.content.decode().splitlines()
        depth = next(line for line in lines if line.startswith('inbox_queue_depth{queue="ingest"}'))
        age = next(
            line
            for line in lines
            if line.startswith('inbox_oldest_job_age_seconds{queue="ingest"}')
        )
        assert depth.endswith(" 1.0")
        assert 119 <= float(age.split()[-1]) < 200
        assert client.get("/metrics", REMOTE_ADDR="10.0.0.9").status_code == 403


class TestReadiness:
    def test_ready_when_database_redis_and_a_worker_are_there(self, client: Any) -> None:
        get_redis().zadd(HEARTBEAT_KEY, {"worker-1@host": time.time()})

        answer = client.get("/readyz")

        assert answer.status_code == 200
        assert answer.json()["ready"] is True

    def test_not_ready_names_the_failing_part(self, client: Any) -> None:
        get_redis().zadd(HEARTBEAT_KEY, {"worker-1@host": time.time() - 300})

        answer = client.get("/readyz")

        assert answer.status_code == 503
        assert answer.json()["failing"] == ["celery"]
        assert "heartbeat" in answer.json()["checks"]["celery"]

    def test_liveness_does_not_depend_on_anything(self, client: Any) -> None:
        assert client.get("/healthz").status_code == 200

    def test_llm_breaker_open_on_every_replica_is_reported(
        self, client: Any, settings: Any
    ) -> None:
        from assistant.llm.client import LLMClient

        settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
        settings.LLM_BREAKER_FAILURES = 2
        get_redis().zadd(HEARTBEAT_KEY, {"worker-1@host": time.time()})
        guard = LLMClient.from_settings().guard
        assert client.get("/readyz").status_code == 200
        for _ in range(2):
            # Keyed exactly as LLMClient keys it: by the replica's base URL.
            permit = guard.allow("http://127.0.0.1:9/v1")
            assert permit is not None
            guard.failed(permit)

        answer = client.get("/readyz")

        assert answer.status_code == 503
        assert answer.json()["failing"] == ["llm"]
        assert "breaker open" in answer.json()["checks"]["llm"]
