"""Alerts: the inbox saying, unattended, that something needs a person.

    raise_alert(business_id, kind, message, subject="")   open (or refresh) one alert
    resolve_alert(business_id, kind, subject="")           close it; True if one was open
    active_alerts(business_id)                             what the dashboard shows
    check_all()                                            the beat task, every minute

At most one alert is open per (business, kind, subject) (a database constraint), so calling
`raise_alert` on every failure and `resolve_alert` on every success is cheap and idempotent.
Installation-wide alerts (a queue backlog, the model server down) have no business and are
shown to every business. A newly opened alert is announced after commit to ALERT_WEBHOOK_URL
(a JSON POST) and ALERT_EMAILS, rate-limited (see `notify`); `inbox_alerts_active{kind}` counts
the open ones.

A kind is an `Alert.Kind` (a closed set: the model's choices, the metric's label values).
Kinds checked here every minute: CHANNEL_SILENT, a channel silent for longer than its window
during its working hours; QUEUE_BACKLOG, a queue whose oldest job waited too long;
LLM_BREAKER_OPEN, an LLM replica whose circuit breaker is open; and MODEL_MISCONFIGURED, a
replica that refused requests as configured (wrong key, unknown model, context too small, schema
refused), with the cause; the assistant also queues this check the moment it hands a chat off
for that reason. CRM_SYNC_FAILING is raised and resolved by the Bitrix24 sync itself:

    alerts.raise_alert(business_id, Alert.Kind.CRM_SYNC_FAILING, "Bitrix24 answers 503")
    alerts.resolve_alert(business_id, Alert.Kind.CRM_SYNC_FAILING)
"""

from __future__ import annotations

import logging
import smtplib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
import redis
from celery import current_app
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from assistant.llm.health import breaker_states, misconfigured_replicas
from assistant.llm.resilience import OPEN
from inbox.conversations.models import Alert, Channel
from inbox.platform import metrics
from inbox.platform.redis import get_redis
from inbox.upkeep import queues

log = logging.getLogger(__name__)

NOTIFY_TASK = "inbox.notify_alert"
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Silence is measured over at most this much calendar time (a longer silence alerts anyway).
SILENCE_LOOKBACK = timedelta(days=14)


# --- raising and resolving -----------------------------------------------------------------


def _scope(business_id: int | None) -> Q:
    return Q(business__isnull=True) if business_id is None else Q(business_id=business_id)


def _open(business_id: int | None, kind: str, subject: str) -> QuerySet[Alert]:
    return Alert.objects.filter(
        _scope(business_id), kind=kind, subject=subject, resolved_at__isnull=True
    )


def raise_alert(
    business_id: int | None, kind: Alert.Kind, message: str, *, subject: str = ""
) -> Alert:
    """Open the alert, or refresh the message of the one already open. Notifies (after commit,
    rate-limited) only when this call opened it. Safe to call from any process, as often as
    the condition is seen."""
    alert = _open(business_id, kind, subject).first()
    if alert is not None:
        if alert.message != message:
            Alert.objects.filter(pk=alert.pk).update(message=message)
            alert.message = message
        return alert
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                business_id=business_id, kind=kind, subject=subject, message=message
            )
    except IntegrityError:
        return _open(business_id, kind, subject).get()  # another process opened it first
    log.warning(
        "alert.raised",
        extra={"alert_id": alert.pk, "kind": kind, "subject": subject, "business_id": business_id},
    )
    publish_counts([kind])
    alert_id = alert.pk
    transaction.on_commit(lambda: _queue_notification(alert_id), robust=True)
    return alert


def resolve_alert(business_id: int | None, kind: str, *, subject: str = "") -> bool:
    """Close the open alert, if any. Returns True when one was open. `kind` is an `Alert.Kind`,
    or the `kind` of a stored row (the admin's "mark resolved" passes the row's own)."""
    closed = _open(business_id, kind, subject).update(resolved_at=timezone.now())
    if closed:
        log.info(
            "alert.resolved",
            extra={"kind": kind, "subject": subject, "business_id": business_id},
        )
        publish_counts([kind])
    return bool(closed)


def active_alerts(business_id: int | None) -> list[Alert]:
    """Open alerts a business's managers should see: its own and the installation-wide ones,
    newest first. `None` gives the installation-wide ones only."""
    scope = Q(business__isnull=True)
    if business_id is not None:
        scope |= Q(business_id=business_id)
    return list(
        Alert.objects.filter(scope, resolved_at__isnull=True)
        .select_related("business")
        .order_by("-raised_at", "-pk")
    )


def publish_counts(kinds: Iterable[str] | None = None) -> None:
    """Set `inbox_alerts_active{kind}` from the database (every known kind when none given)."""
    wanted = set(kinds) if kinds is not None else set(Alert.Kind.values)
    counts = dict(
        Alert.objects.filter(resolved_at__isnull=True, kind__in=wanted)
        .values_list("kind")
        .annotate(n=Count("id"))
        .values_list("kind", "n")
    )
    for kind in wanted:
        metrics.ALERTS_ACTIVE.labels(kind=kind).set(counts.get(kind, 0))


def sync(kind: Alert.Kind, wanted: dict[tuple[int | None, str], str]) -> None:
    """Make the open alerts of `kind` exactly `wanted` ((business id, subject) → message)."""
    for (business_id, subject), message in wanted.items():
        raise_alert(business_id, kind, message, subject=subject)
    for alert in Alert.objects.filter(kind=kind, resolved_at__isnull=True):
        if (alert.business_id, alert.subject) not in wanted:
            resolve_alert(alert.business_id, kind, subject=alert.subject)


# --- notifications -------------------------------------------------------------------------


def _queue_notification(alert_id: int) -> None:
    if not (settings.ALERT_WEBHOOK_URL or settings.ALERT_EMAILS):
        return
    current_app.send_task(NOTIFY_TASK, args=[alert_id])


def payload(alert: Alert) -> dict[str, Any]:
    """The JSON body POSTed to ALERT_WEBHOOK_URL."""
    return {
        "alert_id": alert.pk,
        "kind": alert.kind,
        "title": str(alert),
        "subject": alert.subject,
        "business_id": alert.business_id,
        "business": alert.business.name if alert.business is not None else None,
        "message": alert.message,
        "raised_at": alert.raised_at.isoformat(),
        "url": f"{settings.PUBLIC_BASE_URL}/admin/inbox/alert/{alert.pk}/change/",
    }


def _claim_notification(alert: Alert, now: datetime) -> bool:
    """Rate limits, checked in the database so every worker agrees: the same (business, kind,
    subject) at most once per ALERT_NOTIFY_INTERVAL_SECONDS (a flapping alert does not spam),
    at most ALERT_NOTIFY_MAX_PER_HOUR notifications in all. The claim is a compare-and-set on
    the row, so one alert notifies once however often the task runs."""
    interval = timedelta(seconds=settings.ALERT_NOTIFY_INTERVAL_SECONDS)
    same = (
        Alert.objects.filter(_scope(alert.business_id), kind=alert.kind, subject=alert.subject)
        .filter(last_notified_at__gte=now - interval)
        .exclude(pk=alert.pk)
    )
    if same.exists():
        return False
    if (
        Alert.objects.filter(last_notified_at__gte=now - timedelta(hours=1)).count()
        >= settings.ALERT_NOTIFY_MAX_PER_HOUR
    ):
        return False
    return bool(
        Alert.objects.filter(pk=alert.pk, last_notified_at__isnull=True).update(
            last_notified_at=now
        )
    )


def notify(alert_id: int) -> bool:
    """Announce an open alert to ALERT_WEBHOOK_URL and ALERT_EMAILS. Returns False when there is
    nothing to send to, the alert was resolved meanwhile, or a rate limit holds it back."""
    if not (settings.ALERT_WEBHOOK_URL or settings.ALERT_EMAILS):
        return False
    alert = (
        Alert.objects.select_related("business")
        .filter(pk=alert_id, resolved_at__isnull=True)
        .first()
    )
    if alert is None:
        return False
    if not _claim_notification(alert, timezone.now()):
        log.info("alert.notify_suppressed", extra={"alert_id": alert_id, "kind": alert.kind})
        return False
    body = payload(alert)
    if settings.ALERT_WEBHOOK_URL:
        try:
            response = httpx.post(settings.ALERT_WEBHOOK_URL, json=body, timeout=10.0)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            # The URL may carry a token: log the error's class, never the URL.
            log.warning(
                "alert.webhook_failed", extra={"alert_id": alert_id, "error": type(exc).__name__}
            )
    if settings.ALERT_EMAILS:
        where = f" ({body['business']})" if body["business"] else ""
        try:
            send_mail(
                subject=f"[inbox alert] {body['title']}{where}",
                message=f"{alert.message}\n\nRaised at {body['raised_at']}.\n{body['url']}\n",
                from_email=None,
                recipient_list=list(settings.ALERT_EMAILS),
            )
        except (OSError, smtplib.SMTPException) as exc:
            log.warning(
                "alert.email_failed", extra={"alert_id": alert_id, "error": type(exc).__name__}
            )
    log.info("alert.notified", extra={"alert_id": alert_id, "kind": alert.kind})
    return True


# --- working hours -------------------------------------------------------------------------


def _parse_time(value: str) -> time | None:
    """'09:00' → 09:00; '24:00' → None (the end of the day)."""
    hours, minutes = (int(part) for part in value.strip().split(":"))
    if (hours, minutes) == (24, 0):
        return None
    return time(hours, minutes)


def _day_intervals(spec: Any) -> list[tuple[time, time | None]]:
    """A day's value: ["09:00", "18:00"], or several: [["09:00", "13:00"], ["14:00", "18:00"]];
    empty or missing = closed that day."""
    if not spec:
        return []
    pairs = [spec] if isinstance(spec[0], str) else list(spec)
    intervals = []
    for pair in pairs:
        start, end = _parse_time(pair[0]), _parse_time(pair[1])
        if start is None:
            raise ValueError("a day cannot start at 24:00")
        if end is not None and end <= start:
            raise ValueError(f"{pair[0]}–{pair[1]} ends before it starts")
        intervals.append((start, end))
    return intervals


def working_time_between(
    start: datetime, end: datetime, hours: dict[str, Any], tz: ZoneInfo
) -> timedelta:
    """How much of [start, end] falls inside the working hours (read in `tz`). Empty hours =
    always working. A day missing from the hours is a day off."""
    if end <= start:
        return timedelta(0)
    if not hours:
        return end - start
    schedule = {str(k).strip().lower()[:3]: v for k, v in hours.items()}
    total = timedelta(0)
    day: date = start.astimezone(tz).date()
    last: date = end.astimezone(tz).date()
    while day <= last:
        for open_at, close_at in _day_intervals(schedule.get(WEEKDAYS[day.weekday()])):
            window_start = datetime.combine(day, open_at, tzinfo=tz)
            window_end = (
                datetime.combine(day + timedelta(days=1), time(0), tzinfo=tz)
                if close_at is None
                else datetime.combine(day, close_at, tzinfo=tz)
            )
            overlap = min(end, window_end) - max(start, window_start)
            if overlap > timedelta(0):
                total += overlap
        day += timedelta(days=1)
    return total


def business_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        log.warning("alert.unknown_timezone", extra={"timezone": name})
        return ZoneInfo("UTC")


# --- the checks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Silence:
    channel: Channel
    working_minutes: float


def silent_channels(now: datetime) -> list[Silence]:
    """Active WhatsApp channels with no event for longer than their window of working time."""
    found = []
    channels = (
        Channel.objects.filter(is_active=True, silent_alert_minutes__gt=0)
        .exclude(kind=Channel.Kind.SANDBOX)
        .select_related("business")
    )
    for channel in channels:
        since = max(channel.last_event_at or channel.created_at, now - SILENCE_LOOKBACK)
        try:
            silent = working_time_between(
                since, now, channel.working_hours or {}, business_zone(channel.business.timezone)
            )
        except (ValueError, TypeError, IndexError, AttributeError):
            log.warning("alert.bad_working_hours", extra={"channel_id": channel.pk})
            silent = now - since  # unreadable hours: treat the number as always on
        minutes = silent.total_seconds() / 60
        if minutes > channel.silent_alert_minutes:
            found.append(Silence(channel, minutes))
    return found


# Channels whose linked-device gateway (Evolution API, WAHA) reported its phone link lost, until
# it reports the link back: silent from now on, so the alert goes up at once instead of after the
# quiet window, and the minute check keeps it up.
_LINK_LOST_KEY = "alerts:gateway_link_lost"


def _link_lost_message(channel: Channel, detail: str) -> str:
    return (
        f"The gateway of “{channel.name}” lost its link to the phone ({detail}): nothing is "
        "received or sent until the phone is online and the number linked again."
    )


def gateway_link_lost(channel_id: int, detail: str) -> None:
    """A gateway said the phone is no longer linked (`detail`: what it said): the
    silent-number alert, at once."""
    channel = Channel.objects.filter(pk=channel_id, is_active=True).first()
    if channel is None:
        return
    get_redis().hset(_LINK_LOST_KEY, str(channel_id), detail[:300])
    raise_alert(
        channel.business_id,
        Alert.Kind.CHANNEL_SILENT,
        _link_lost_message(channel, detail[:300]),
        subject=f"channel:{channel_id}",
    )


def gateway_link_restored(channel_id: int) -> None:
    """The link is back: the alert closes (the quiet-window check may open its own later)."""
    channel = Channel.objects.filter(pk=channel_id).first()
    if get_redis().hdel(_LINK_LOST_KEY, str(channel_id)) and channel is not None:
        resolve_alert(
            channel.business_id, Alert.Kind.CHANNEL_SILENT, subject=f"channel:{channel_id}"
        )


def _links_lost() -> dict[int, str]:
    raw: dict[Any, Any] = get_redis().hgetall(_LINK_LOST_KEY)
    return {int(k): v.decode() if isinstance(v, bytes) else str(v) for k, v in raw.items()}


def check_silent_channels(now: datetime) -> None:
    wanted: dict[tuple[int | None, str], str] = {}
    lost = _links_lost()
    for channel in Channel.objects.filter(pk__in=list(lost), is_active=True):
        wanted[(channel.business_id, f"channel:{channel.pk}")] = _link_lost_message(
            channel, lost[channel.pk]
        )
    for silence in silent_channels(now):
        channel = silence.channel
        if (channel.business_id, f"channel:{channel.pk}") in wanted:
            continue
        wanted[(channel.business_id, f"channel:{channel.pk}")] = (
            f"No message on “{channel.name}” for {silence.working_minutes:.0f} min of working "
            f"hours (window {channel.silent_alert_minutes} min): check that the phone is online "
            "and the number still linked."
        )
    sync(Alert.Kind.CHANNEL_SILENT, wanted)


def check_queues() -> None:
    threshold = settings.ALERT_OLDEST_JOB_SECONDS
    wanted: dict[tuple[int | None, str], str] = {}
    if threshold > 0:
        for queue, age in queues.oldest_job_ages(get_redis()).items():
            if age > threshold:
                wanted[(None, queue)] = (
                    f"The oldest job on the {queue} queue has waited {age:.0f} s (threshold "
                    f"{threshold:.0f} s): check that its workers run, or add workers."
                )
    sync(Alert.Kind.QUEUE_BACKLOG, wanted)


def check_llm() -> None:
    """An open breaker alerts as LLM_BREAKER_OPEN; one that a configuration error tripped
    (the server answered 401/403/404/422/400) alerts as MODEL_MISCONFIGURED, with the cause,
    until a request succeeds again."""
    causes = misconfigured_replicas()
    misconfigured: dict[tuple[int | None, str], str] = {
        (None, label): (
            f"The model server {label} refuses the inbox's requests: {cause}. Fix the model "
            "settings (LLM_API_KEY, LLM_MODEL, the server's context length or "
            "LLM_STRUCTURED_OUTPUT); until then chats are handed to managers."
        )
        for label, cause in causes.items()
    }
    wanted: dict[tuple[int | None, str], str] = {
        (None, label): (
            f"The model server {label} is not answering (circuit breaker open): new chats are "
            "handed to managers until it recovers."
        )
        for label, state in breaker_states().items()
        if state == OPEN and label not in causes
    }
    sync(Alert.Kind.MODEL_MISCONFIGURED, misconfigured)
    sync(Alert.Kind.LLM_BREAKER_OPEN, wanted)


def check_all(now: datetime | None = None) -> None:
    """Raise and resolve every alert the inbox checks by itself. A check that cannot run (Redis
    down) leaves its alerts as they are; the others still run."""
    now = now or timezone.now()
    checks: tuple[tuple[Alert.Kind, Callable[[], None]], ...] = (
        (Alert.Kind.CHANNEL_SILENT, lambda: check_silent_channels(now)),
        (Alert.Kind.QUEUE_BACKLOG, check_queues),
        (Alert.Kind.LLM_BREAKER_OPEN, check_llm),  # and MODEL_MISCONFIGURED
    )
    for name, check in checks:
        try:
            check()
        except (redis.RedisError, OSError):
            log.warning("alert.check_unavailable", extra={"check": name}, exc_info=True)
    publish_counts()
