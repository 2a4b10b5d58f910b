"""Celery tasks: every Bitrix24 call runs here, on the `integrations` queue, never in a request.

Tasks take ids, call one function and declare their policy. The durable record of work is in
the database (outbox rows), so a task that gives up, or is lost, loses nothing: the periodic
sweep starts it again. Countdowns stay below the broker's visibility timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from typing import Any, TypeVar, overload

from celery import Task, shared_task
from django.db.models import Q
from django.utils import timezone, translation

from inbox.conversations.models import Alert
from inbox.upkeep import alerts
from integrations.bitrix24.inbound import offline
from integrations.bitrix24.inbound import pull as pulling
from integrations.bitrix24.inbound import reconcile as reconciliation
from integrations.bitrix24.models import Bitrix24Settings, ConnectorMessage, CrmLink, PendingPull
from integrations.bitrix24.openlines import imconnector
from integrations.bitrix24.payloads import entity_of_event
from integrations.bitrix24.rest.errors import PermanentError, TransientError
from integrations.bitrix24.setup import check, install
from integrations.bitrix24.sync import outbox
from integrations.bitrix24.sync import push as pushing

log = logging.getLogger(__name__)

MAX_COUNTDOWN = 240.0
POLICY: dict[str, Any] = {
    "acks_late": True,
    "max_retries": 100,
    "soft_time_limit": 300,
    "time_limit": 330,
}


def _retry(task: Task, exc: TransientError | None, delay: float) -> None:  # type: ignore[type-arg]
    raise task.retry(exc=exc, countdown=max(1.0, min(MAX_COUNTDOWN, delay)))


# Transient failures in a row before managers are told the CRM sync is failing.
ALERT_AFTER_RETRIES = 3
ALERT_KIND = Alert.Kind.CRM_SYNC_FAILING


def _sync_failing(business_id: int, why: str) -> None:
    alerts.raise_alert(business_id, ALERT_KIND, f"Bitrix24 sync is failing: {why}")


def _sync_working(business_id: int) -> None:
    alerts.resolve_alert(business_id, ALERT_KIND)


_R = TypeVar("_R")


@overload
def _call(
    task: Task,  # type: ignore[type-arg]
    work: Callable[[int], _R],
    business_id: int,
    *,
    alert: bool = False,
) -> _R: ...


@overload
def _call(
    task: Task,  # type: ignore[type-arg]
    work: Callable[[int], _R],
    business_id: int,
    *,
    failed_event: str,
    alert: bool = False,
) -> _R | None: ...


def _call(
    task: Task,  # type: ignore[type-arg]
    work: Callable[[int], _R],
    business_id: int,
    *,
    failed_event: str | None = None,
    alert: bool = False,
) -> _R | None:
    """Run `work(business_id)` under the tasks' error policy. A transient error retries the
    task (countdown at most MAX_COUNTDOWN). A permanent one fails the task, unless the task
    gives up on it: it is then logged as `failed_event` and None is returned. `alert` tells
    managers the sync is failing: at once on a permanent error, after ALERT_AFTER_RETRIES
    transient ones in a row."""
    try:
        return work(business_id)
    except TransientError as exc:
        if alert and task.request.retries >= ALERT_AFTER_RETRIES:
            _sync_failing(business_id, f"{exc.code or 'temporary error'} (retrying)")
        _retry(task, exc, outbox.retry_delay(task.request.retries + 1, exc))
        raise
    except PermanentError as exc:
        if failed_event is None:
            raise
        log.error(failed_event, extra={"business_id": business_id, "code": exc.code})
        if alert:
            _sync_failing(business_id, f"{exc.code}: {exc.description}"[:300])
        return None


@shared_task(bind=True, name=outbox.PUSH_TASK, **POLICY)
def push(self: Task, business_id: int) -> dict[str, Any]:  # type: ignore[type-arg]
    """Sync due chats and handoffs of one business to Bitrix24."""
    # A retry came back for links it put off: it keeps watch while one is waiting (links due
    # later than the longest countdown are the periodic sweep's).
    work = partial(pushing.drain, keep_watch=self.request.retries > 0, watch_for=MAX_COUNTDOWN)
    report = _call(self, work, business_id, failed_event="bitrix24.push_failed", alert=True)
    if report is None:
        return {}
    _sync_working(business_id)
    if report.next_due is not None:
        _retry(self, None, report.next_due)
    return asdict(report)


@shared_task(bind=True, name="bitrix24.pull", **POLICY)
def pull(self: Task, business_id: int) -> dict[str, Any]:  # type: ignore[type-arg]
    """Re-read entities Bitrix24 said changed and apply them to the inbox."""
    report = _call(self, pulling.drain, business_id, failed_event="bitrix24.pull_failed")
    return {} if report is None else asdict(report)


@shared_task(name="bitrix24.event_received", acks_late=True, time_limit=60)
def event_received(business_id: int, event: str, entity_id: int) -> None:
    """An outbound event named an entity: record it, then re-read it (batched with others)."""
    entity = entity_of_event(event)
    if entity is None:
        return
    pulling.mark_remote_change(business_id, entity, entity_id, event=event)
    pull.delay(business_id)


@shared_task(bind=True, name="bitrix24.offline", **POLICY)
def offline_task(self: Task, business_id: int) -> int:  # type: ignore[type-arg]
    """Local-application mode: move the portal's offline queue into pending pulls."""
    count = _call(
        self, offline.process_offline, business_id, failed_event="bitrix24.offline_failed"
    )
    if count is None:
        return 0
    if count:
        pull.delay(business_id)
    return count


@shared_task(bind=True, name="bitrix24.reconcile", **POLICY)
def reconcile_task(self: Task, business_id: int) -> dict[str, Any]:  # type: ignore[type-arg]
    """List entities modified since the checkpoint (what events lost) and apply them."""
    report = _call(
        self, reconciliation.reconcile, business_id, failed_event="bitrix24.reconcile_failed"
    )
    if report is None:
        return {}
    return {"seen": report.seen, "applied": report.applied}


@shared_task(bind=True, name=outbox.CONNECTOR_SEND_TASK, **POLICY)
def connector_send(self: Task, business_id: int) -> int:  # type: ignore[type-arg]
    """Send pending customer messages to Bitrix24 Open Channels."""
    return _call(self, imconnector.send_pending, business_id)


@shared_task(bind=True, name="bitrix24.operator_replies", **POLICY)
def operator_replies(self: Task, business_id: int, messages: list[dict[str, Any]]) -> int:  # type: ignore[type-arg]
    """Operator replies from Open Channels: send them to WhatsApp and acknowledge delivery."""
    imconnector.record_operator_messages(business_id, messages)
    return _call(self, imconnector.deliver_pending, business_id)


@shared_task(bind=True, name="bitrix24.app_installed", **POLICY)
def app_installed(self: Task, business_id: int) -> None:  # type: ignore[type-arg]
    """Verify a fresh local-application install and bind its events."""
    _call(self, install.complete_install, business_id)


@shared_task(name="bitrix24.test_connection", time_limit=120)
def test_connection_task(business_id: int, language: str = "") -> dict[str, Any]:  # noqa: PT028
    """The settings page's "test connection": the report is stored on the settings row, worded
    in `language` (the admin's who asked; English when none is given)."""
    with translation.override(language or "en"):
        return check.store_report(business_id, check.test_connection(business_id))


@shared_task(name="bitrix24.sweep", time_limit=60)
def sweep() -> int:
    """Start workers for outbox rows that are due (lost enqueues, retries after a give-up)."""
    now = timezone.now()
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    active = set(
        Bitrix24Settings.objects.filter(is_active=True).values_list("business_id", flat=True)
    )
    pushes = set(
        CrmLink.objects.filter(due, free, needs_sync=True).values_list("business_id", flat=True)
    )
    pulls = set(PendingPull.objects.filter(due, free).values_list("business_id", flat=True))
    connector = set(
        ConnectorMessage.objects.filter(due, state=ConnectorMessage.State.PENDING).values_list(
            "business_id", flat=True
        )
    )
    for business_id in pushes & active:
        push.delay(business_id)
    for business_id in pulls & active:
        pull.delay(business_id)
    for business_id in connector & active:
        connector_send.delay(business_id)
        operator_replies.delay(business_id, [])
    return len(pushes | pulls | connector)


@shared_task(name="bitrix24.reconcile_all", time_limit=60)
def reconcile_all() -> int:
    ids = list(
        Bitrix24Settings.objects.filter(is_active=True, sync_back=True).values_list(
            "business_id", flat=True
        )
    )
    for business_id in ids:
        reconcile_task.delay(business_id)
    return len(ids)


@shared_task(name="bitrix24.offline_all", time_limit=60)
def offline_all() -> int:
    ids = list(
        Bitrix24Settings.objects.filter(
            is_active=True, sync_back=True, mode=Bitrix24Settings.Mode.APP
        ).values_list("business_id", flat=True)
    )
    for business_id in ids:
        offline_task.delay(business_id)
    return len(ids)
