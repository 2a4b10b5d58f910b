"""Alerts: silent numbers in working hours, queue backlog, the model server down, the CRM hook,
notifications to a real HTTP receiver and by e-mail, the metric and the dashboard's list."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.utils import timezone

from assistant.llm.resilience import OPEN, Permit, RedisGuard
from inbox.conversations import ingest
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Alert, Channel
from inbox.platform.redis import get_redis
from inbox.upkeep import alerts
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)

ALMATY = ZoneInfo("Asia/Almaty")
OFFICE = {d: ["09:00", "18:00"] for d in ("mon", "tue", "wed", "thu", "fri")}
# Wednesday 2026-11-25, 12:00 in Almaty (UTC+5).
WED_NOON = datetime(2026, 11, 25, 12, 0, tzinfo=ALMATY)


class TestWorkingTime:
    def test_only_working_hours_count_towards_silence(self) -> None:
        friday_5pm = datetime(2026, 11, 27, 17, 0, tzinfo=ALMATY)
        monday_10am = datetime(2026, 11, 30, 10, 0, tzinfo=ALMATY)

        worked = alerts.working_time_between(friday_5pm, monday_10am, OFFICE, ALMATY)

        assert worked == timedelta(hours=2)  # 17–18 on Friday, 9–10 on Monday

    def test_no_hours_means_always_on_and_split_days_and_midnight_work(self) -> None:
        start, end = WED_NOON, WED_NOON + timedelta(hours=30)
        assert alerts.working_time_between(start, end, {}, ALMATY) == timedelta(hours=30)
        split = {"wed": [["09:00", "13:00"], ["14:00", "24:00"]]}
        assert alerts.working_time_between(start, end, split, ALMATY) == timedelta(hours=11)


def _cloud_channel(**kwargs: Any) -> Channel:
    biz = factories.business(timezone="Asia/Almaty")
    return factories.channel(biz, kind=Channel.Kind.CLOUD_API, silent_alert_minutes=60, **kwargs)


def _event_on(channel: Channel) -> None:
    """A customer message through the real ingest path (which stamps Channel.last_event_at)."""
    ingest.accept(
        InboundEvent(
            channel_id=channel.pk,
            provider_message_id=f"wamid.alert{time.monotonic_ns()}",
            chat_key="77011234567",
            from_me=False,
            kind="text",
            text="hello",
            media=None,
            provider_ts=int(time.time()),
        )
    )


class TestSilentChannel:
    def test_silent_number_in_working_hours_raises_then_an_event_resolves_it(self) -> None:
        channel = _cloud_channel(working_hours=OFFICE)
        Channel.objects.filter(pk=channel.pk).update(last_event_at=WED_NOON - timedelta(hours=2))

        alerts.check_all(now=WED_NOON)

        (alert,) = alerts.active_alerts(channel.business_id)
        assert (alert.kind, alert.subject) == (Alert.Kind.CHANNEL_SILENT, f"channel:{channel.pk}")
        assert "120 min of working hours" in alert.message

        _event_on(channel)
        alerts.check_all()

        assert alerts.active_alerts(channel.business_id) == []
        assert Alert.objects.get(pk=alert.pk).resolved_at is not None

    def test_a_quiet_night_and_weekend_is_not_an_outage(self) -> None:
        channel = _cloud_channel(working_hours=OFFICE)
        friday_evening = datetime(2026, 11, 27, 17, 55, tzinfo=ALMATY)
        Channel.objects.filter(pk=channel.pk).update(last_event_at=friday_evening)

        alerts.check_all(now=datetime(2026, 11, 30, 9, 30, tzinfo=ALMATY))  # Monday 09:30
        assert alerts.active_alerts(channel.business_id) == []

        alerts.check_all(now=datetime(2026, 11, 30, 10, 0, tzinfo=ALMATY))  # 65 working min
        assert [a.kind for a in alerts.active_alerts(channel.business_id)] == [
            Alert.Kind.CHANNEL_SILENT
        ]

    def test_sandbox_and_inactive_channels_never_alert(self) -> None:
        factories.channel(kind=Channel.Kind.SANDBOX, silent_alert_minutes=1)
        _cloud_channel(is_active=False)

        alerts.check_all(now=timezone.now() + timedelta(days=3))

        assert not Alert.objects.exists()


def test_oldest_job_over_the_threshold_raises_a_global_alert_and_the_metric(
    settings: Any, client: Any
) -> None:
    settings.ALERT_OLDEST_JOB_SECONDS = 60
    settings.METRICS_TOKEN = "t"
    biz = factories.business()
    ten_minutes_ago = int((time.time() - 600) * 1000)
    entry = get_redis().xadd(ingest.STREAM, {"e": b"{}"}, id=f"{ten_minutes_ago}-0")

    alerts.check_all()

    (alert,) = alerts.active_alerts(biz.pk)  # installation-wide: every business sees it
    assert (alert.kind, alert.subject, alert.business_id) == (
        Alert.Kind.QUEUE_BACKLOG,
        "ingest",
        None,
    )
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer t").content.decode()
    assert 'inbox_alerts_active{kind="queue_backlog"} 1.0' in text

    get_redis().xdel(ingest.STREAM, entry)
    alerts.check_all()

    assert alerts.active_alerts(biz.pk) == []
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer t").content.decode()
    assert 'inbox_alerts_active{kind="queue_backlog"} 0.0' in text


def test_open_llm_breaker_raises_and_recovery_resolves(settings: Any) -> None:
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.LLM_BREAKER_FAILURES = 2
    guard = RedisGuard(
        get_redis(), failures=2, cooldown_seconds=30, max_in_flight=4, lease_seconds=10
    )
    permit = Permit("http://127.0.0.1:9/v1", probe=False)
    guard.failed(permit)
    assert guard.failed(permit) == OPEN

    alerts.check_all()

    (alert,) = alerts.active_alerts(None)
    assert (alert.kind, alert.subject) == (Alert.Kind.LLM_BREAKER_OPEN, "127.0.0.1:9/v1")

    guard.succeeded(permit)
    alerts.check_all()
    assert alerts.active_alerts(None) == []


class TestRaiseAndResolve:
    def test_one_open_alert_per_subject_and_the_crm_hook(self) -> None:
        biz, other = factories.business(), factories.business()

        first = alerts.raise_alert(biz.pk, Alert.Kind.CRM_SYNC_FAILING, "Bitrix24 answers 503")
        again = alerts.raise_alert(
            biz.pk, Alert.Kind.CRM_SYNC_FAILING, "Bitrix24 answers 503 for 5 min"
        )

        assert again.pk == first.pk
        assert Alert.objects.get(pk=first.pk).message == "Bitrix24 answers 503 for 5 min"
        assert alerts.active_alerts(other.pk) == []
        assert alerts.resolve_alert(biz.pk, Alert.Kind.CRM_SYNC_FAILING) is True
        assert alerts.resolve_alert(biz.pk, Alert.Kind.CRM_SYNC_FAILING) is False
        reopened = alerts.raise_alert(biz.pk, Alert.Kind.CRM_SYNC_FAILING, "failing again")
        assert reopened.pk != first.pk
        assert Alert.objects.filter(business=biz).count() == 2

    def test_global_alerts_are_unique_too(self) -> None:
        alerts.raise_alert(None, Alert.Kind.QUEUE_BACKLOG, "slow", subject="assistant")
        alerts.raise_alert(None, Alert.Kind.QUEUE_BACKLOG, "slower", subject="assistant")

        assert Alert.objects.filter(resolved_at__isnull=True).count() == 1


class _Receiver:
    """A real HTTP server on loopback that records the JSON bodies POSTed to it."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/alerts?token=abc"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver()
    yield r
    r.close()


class TestNotifications:
    @pytest.fixture(autouse=True)
    def _targets(self, settings: Any, receiver: _Receiver) -> None:
        settings.ALERT_WEBHOOK_URL = receiver.url
        settings.ALERT_EMAILS = ["ops@example.com"]
        settings.ALERT_NOTIFY_INTERVAL_SECONDS = 3600
        settings.ALERT_NOTIFY_MAX_PER_HOUR = 3

    def test_a_raised_alert_is_queued_posted_as_json_and_mailed_once(
        self, receiver: _Receiver
    ) -> None:
        biz = factories.business(name="Dana Furniture")

        alert = alerts.raise_alert(biz.pk, Alert.Kind.CRM_SYNC_FAILING, "Bitrix24 answers 503")

        queued = json.loads(get_redis().lindex("default", -1))
        assert queued["headers"]["task"] == "inbox.notify_alert"
        assert alerts.notify(alert.pk) is True
        (body,) = receiver.bodies
        assert body["kind"] == "crm_sync_failing"
        assert body["business"] == "Dana Furniture"
        assert body["message"] == "Bitrix24 answers 503"
        (email,) = mail.outbox
        assert email.to == ["ops@example.com"]
        assert "Bitrix24 sync failing" in email.subject
        # The task redelivered (a worker died after sending) does not notify twice.
        assert alerts.notify(alert.pk) is False
        assert len(receiver.bodies) == 1
        assert Alert.objects.get(pk=alert.pk).last_notified_at is not None

    def test_a_flapping_alert_notifies_once_per_interval(self, receiver: _Receiver) -> None:
        biz = factories.business()
        for _ in range(3):
            alert = alerts.raise_alert(biz.pk, Alert.Kind.CRM_SYNC_FAILING, "503")
            alerts.notify(alert.pk)
            alerts.resolve_alert(biz.pk, Alert.Kind.CRM_SYNC_FAILING)

        assert len(receiver.bodies) == 1

    def test_at_most_the_hourly_cap_leaves_in_all(self, receiver: _Receiver) -> None:
        for n in range(5):
            alert = alerts.raise_alert(None, Alert.Kind.QUEUE_BACKLOG, "slow", subject=f"queue{n}")
            alerts.notify(alert.pk)

        assert len(receiver.bodies) == 3
        assert len(mail.outbox) == 3

    def test_a_resolved_alert_is_not_announced(self, receiver: _Receiver) -> None:
        alert = alerts.raise_alert(None, Alert.Kind.QUEUE_BACKLOG, "slow", subject="ingest")
        alerts.resolve_alert(None, Alert.Kind.QUEUE_BACKLOG, subject="ingest")

        assert alerts.notify(alert.pk) is False
        assert receiver.bodies == []

    def test_an_unreachable_receiver_does_not_fail_the_task(self, settings: Any) -> None:
        settings.ALERT_WEBHOOK_URL = "http://127.0.0.1:9/hooks"
        alert = alerts.raise_alert(None, Alert.Kind.QUEUE_BACKLOG, "slow", subject="ingest")

        assert alerts.notify(alert.pk) is True
        assert len(mail.outbox) == 1


def test_the_admin_lists_alerts(admin_client: Any) -> None:
    alerts.raise_alert(
        None, Alert.Kind.QUEUE_BACKLOG, "The oldest job waited 400 s", subject="ingest"
    )

    page = admin_client.get("/admin/inbox/alert/")

    assert page.status_code == 200
    assert "ingest" in page.content.decode()


def test_datetime_helpers_accept_aware_utc() -> None:
    start = datetime(2026, 11, 25, 6, 0, tzinfo=UTC)  # 11:00 in Almaty
    assert alerts.working_time_between(start, WED_NOON, OFFICE, ALMATY) == timedelta(hours=1)
