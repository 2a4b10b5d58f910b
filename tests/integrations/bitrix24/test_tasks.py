"""The tasks' error policy, run eagerly against the emulated portal: a transient error
schedules a retry (never further off than MAX_COUNTDOWN), a permanent one is logged and the
task returns its empty value, and the push task tells managers when the sync keeps failing."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from celery.exceptions import Retry
from celery.signals import task_retry
from django.db import transaction

from inbox.conversations.models import Alert, Chat
from inbox.upkeep.alerts import active_alerts
from integrations.bitrix24 import hooks, tasks
from integrations.bitrix24.inbound import pull
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.rest.errors import RateLimited
from integrations.bitrix24.setup import config
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.integrations.bitrix24.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)


def _chat(channel: Any) -> Chat:
    n = Chat.objects.count() + 1
    phone = f"7700{n:07d}"
    return factories.chat(
        channel, customer_name="Aigerim Sadykova", customer_phone=phone, customer_key=phone
    )


def _pending_pull(portal: Bitrix24Emulator) -> Bitrix24Settings:
    cfg = connect(portal)
    pull.mark_remote_change(cfg.business_id, "deal", 1)
    return cfg


def _pending_push(portal: Bitrix24Emulator) -> Bitrix24Settings:
    cfg = connect(portal)
    with transaction.atomic():
        hooks.chat_created(_chat(factories.channel(cfg.business, kind="bridge")).pk)
    return cfg


@pytest.fixture
def slow_retries(settings: Any) -> None:
    """One attempt per call, and a retry delay far beyond what a task may wait."""
    settings.BITRIX24_MAX_ATTEMPTS = 1
    settings.BITRIX24_RETRY_BASE = 10_000.0
    settings.BITRIX24_RETRY_CAP = 10_000.0


@pytest.fixture
def retries() -> Iterator[list[Retry]]:
    """The retries Celery schedules (eagerly it then runs the task again at once)."""
    scheduled: list[Retry] = []

    def record(reason: Retry, **_: Any) -> None:
        scheduled.append(reason)

    task_retry.connect(record, weak=False)
    yield scheduled
    task_retry.disconnect(record)


@pytest.mark.usefixtures("slow_retries")
def test_a_transient_error_retries_the_task_no_later_than_max_countdown(
    portal: Bitrix24Emulator, retries: list[Retry]
) -> None:
    cfg = _pending_pull(portal)
    portal.storm(60)

    tasks.pull.apply(args=[cfg.business_id])

    (retry,) = retries  # the eager re-run finds the pull not due yet and stops
    assert isinstance(retry.exc, RateLimited)
    assert retry.when == tasks.MAX_COUNTDOWN


def test_a_permanent_error_is_logged_and_the_task_returns_its_empty_value(
    portal: Bitrix24Emulator, retries: list[Retry], caplog: pytest.LogCaptureFixture
) -> None:
    cfg = _pending_pull(portal)
    config.configure(
        cfg.business, webhook_url=cfg.webhook_url.replace(portal.webhook_code, "wrongcode123")
    )

    with caplog.at_level(logging.ERROR, logger=tasks.__name__):
        result = tasks.pull.apply(args=[cfg.business_id])

    assert (result.state, result.result) == ("SUCCESS", {})
    assert retries == []
    (record,) = [r for r in caplog.records if r.getMessage() == "bitrix24.pull_failed"]
    assert (record.business_id, record.code) == (cfg.business_id, "NO_AUTH_FOUND")  # type: ignore[attr-defined]


@pytest.mark.usefixtures("slow_retries")
def test_push_alerts_the_business_only_after_several_transient_failures_in_a_row(
    portal: Bitrix24Emulator, retries: list[Retry]
) -> None:
    cfg = _pending_push(portal)
    portal.storm(60)

    tasks.push.apply(args=[cfg.business_id])

    assert len(retries) == 1
    assert not Alert.objects.filter(business_id=cfg.business_id).exists()

    with transaction.atomic():
        hooks.chat_created(_chat(factories.channel(cfg.business, kind="bridge")).pk)
    tasks.push.apply(args=[cfg.business_id], retries=tasks.ALERT_AFTER_RETRIES)

    assert len(retries) == 2
    (alert,) = Alert.objects.filter(business_id=cfg.business_id)
    assert alert.kind == tasks.ALERT_KIND
    assert alert.message == "Bitrix24 sync is failing: QUERY_LIMIT_EXCEEDED (retrying)"


def test_a_failing_sync_raises_an_alert_for_the_business_and_clears_it_when_it_works(
    portal: Bitrix24Emulator,
) -> None:
    cfg = connect(portal)
    good_webhook = cfg.webhook_url
    config.configure(
        cfg.business, webhook_url=good_webhook.replace(portal.webhook_code, "wrongcode123")
    )
    with transaction.atomic():
        hooks.chat_created(_chat(factories.channel(cfg.business, kind="bridge")).pk)

    tasks.push.apply(args=[cfg.business_id])  # the portal refuses the webhook: permanent

    (alert,) = active_alerts(cfg.business_id)
    assert alert.kind == Alert.Kind.CRM_SYNC_FAILING
    assert "NO_AUTH_FOUND" in alert.message
    assert "wrongcode123" not in alert.message  # the secret never shows

    config.configure(cfg.business, webhook_url=good_webhook)
    tasks.push.apply(args=[cfg.business_id])

    assert active_alerts(cfg.business_id) == []
