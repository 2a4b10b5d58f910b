"""The reports of one business over a date range: computed from the audit rows the core writes.

Sources: `Message` (conversations, voice notes, manager replies), `OwnershipTransition` (who
owned the chat: bot-only means no transition to a human in the range and no manager message),
`Handoff` (reasons, the clock for the first human reply), `Turn` (questions outside the
knowledge base). Days are the business's days (`Business.timezone`); the range is
[first day 00:00, day after the last 00:00) in that zone.

Every figure is one aggregate query over an indexed range (migration 0011_reports); the
percentiles are PostgreSQL's `percentile_cont`, or the same interpolation in Python on SQLite
(`percentiles`), so both give the same answers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import TruncDate

from inbox.conversations.models import (
    Business,
    Channel,
    Handoff,
    Message,
    Owner,
    OwnershipTransition,
    Turn,
)
from inbox.upkeep.alerts import business_zone

MANAGER_AUTHORS = [Message.Author.MANAGER.value, Message.Author.PHONE.value]
HUMAN_OWNERS = [Owner.PENDING_HUMAN.value, Owner.HUMAN.value]
OUTSIDE_KNOWLEDGE_BASE = "outside_knowledge_base"
GUARDRAIL = "guardrail"
DEFAULT_DAYS = 30
MAX_DAYS = 366
QUESTIONS_SHOWN = 50


@dataclass(frozen=True)
class Period:
    """One business, its chosen channels, and a range of its local days."""

    business: Business
    channel_ids: tuple[int, ...]
    first_day: date
    last_day: date
    zone: ZoneInfo

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first_day, time(0), tzinfo=self.zone)

    @property
    def end(self) -> datetime:
        return datetime.combine(self.last_day + timedelta(days=1), time(0), tzinfo=self.zone)

    @property
    def days(self) -> list[date]:
        count = (self.last_day - self.first_day).days + 1
        return [self.first_day + timedelta(days=n) for n in range(count)]


def period_for(
    business: Business,
    first_day: date | None,
    last_day: date | None,
    channel: Channel | None = None,
    *,
    today: date | None = None,
) -> Period:
    """The range a manager asked for, bounded to MAX_DAYS; the last DEFAULT_DAYS by default."""
    zone = business_zone(business.timezone)
    today = today or datetime.now(zone).date()
    last = last_day or today
    first = first_day or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        first, last = last, first
    first = max(first, last - timedelta(days=MAX_DAYS - 1))
    ids = (
        (channel.pk,)
        if channel is not None
        else tuple(business.channels.order_by("pk").values_list("pk", flat=True))
    )
    return Period(business, ids, first, last, zone)


# --- percentiles: in the database where it can -----------------------------------------------


def _interpolate(values: list[float], fraction: float) -> float:
    """percentile_cont: linear interpolation between the two nearest ranks."""
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def percentiles(
    rows: QuerySet[Any], duration: str, fractions: tuple[float, ...], *, group: str | None = None
) -> dict[Any, tuple[int, list[float]]]:
    """Per value of `group` (one key, None, without it): how many rows have a `duration`, and
    its `fractions` percentiles in seconds. Rows whose duration is NULL are left out."""
    rows = rows.filter(**{f"{duration}__isnull": False})
    columns = [duration, group] if group else [duration]
    if connection.vendor == "postgresql":
        sql, params = rows.values(*columns).query.sql_with_params()
        calls = ", ".join(
            f'percentile_cont({f:.4f}) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM s."{duration}"))'
            for f in fractions
        )
        key = f's."{group}"' if group else "NULL"
        tail = f' GROUP BY s."{group}"' if group else ""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {key}, COUNT(*), {calls} FROM ({sql}) s{tail}", params)  # noqa: S608
            return {
                row[0]: (int(row[1]), [float(v) for v in row[2:]])
                for row in cursor.fetchall()
                if row[1]
            }
    grouped: dict[Any, list[float]] = defaultdict(list)
    for row in rows.values(*columns):
        grouped[row[group] if group else None].append(row[duration].total_seconds())
    return {k: (len(v), [_interpolate(v, f) for f in fractions]) for k, v in grouped.items()}


# --- the figures -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    conversations: int
    bot_only: int
    customer_messages: int
    voice_notes: int
    unclear_voice: int
    handoffs: int
    guardrail_blocks: int

    @property
    def bot_only_share(self) -> float | None:
        return self.bot_only / self.conversations if self.conversations else None

    @property
    def voice_share(self) -> float | None:
        return self.voice_notes / self.customer_messages if self.customer_messages else None

    @property
    def unclear_voice_rate(self) -> float | None:
        return self.unclear_voice / self.voice_notes if self.voice_notes else None


def _messages(period: Period) -> QuerySet[Message]:
    return Message.objects.filter(
        channel_id__in=period.channel_ids,
        created_at__gte=period.start,
        created_at__lt=period.end,
    )


def _handoffs(period: Period) -> QuerySet[Handoff]:
    return Handoff.objects.filter(
        chat__channel_id__in=period.channel_ids,
        created_at__gte=period.start,
        created_at__lt=period.end,
    )


SUMMARY_SQL = """
SELECT COUNT(CASE WHEN s.inbound > 0 THEN 1 END),
       COALESCE(SUM(s.inbound), 0), COALESCE(SUM(s.voice), 0),
       COUNT(CASE WHEN s.inbound > 0 AND s.manager = 0 AND s.chat_id NOT IN (
           SELECT t.chat_id FROM inbox_ownershiptransition t
           JOIN inbox_chat c ON c.id = t.chat_id
           WHERE c.channel_id IN ({channels}) AND t.at >= %s AND t.at < %s
             AND t.to_owner IN ('pending_human', 'human')) THEN 1 END)
FROM (
    SELECT m.chat_id,
           SUM(CASE WHEN m.direction = 'in' THEN 1 ELSE 0 END) AS inbound,
           SUM(CASE WHEN m.author IN ('manager', 'phone') THEN 1 ELSE 0 END) AS manager,
           SUM(CASE WHEN m.direction = 'in' AND m.kind = 'voice' THEN 1 ELSE 0 END) AS voice
    FROM inbox_message m
    WHERE m.channel_id IN ({channels}) AND m.created_at >= %s AND m.created_at < %s
    GROUP BY m.chat_id
) s
"""


def summary(period: Period) -> Summary:
    """Conversations (chats with a customer message in the range) and how many the bot closed
    alone: no transition to a human in the range and no manager message in it.

    One pass over the range's messages, grouped by chat, in plain SQL both databases run the
    same way: on PostgreSQL an index-only scan of message_report_range (the ORM would scan the
    range once per figure). Unclear voice notes read only the voice rows (message_report_voice).
    """
    if not period.channel_ids:
        return Summary(0, 0, 0, 0, 0, 0, 0)
    channels = ", ".join(str(int(pk)) for pk in period.channel_ids)
    start = connection.ops.adapt_datetimefield_value(period.start)
    end = connection.ops.adapt_datetimefield_value(period.end)
    with connection.cursor() as cursor:
        cursor.execute(SUMMARY_SQL.format(channels=channels), [start, end, start, end])
        conversations, inbound, voice, bot_only = cursor.fetchone()
    unclear = (
        _messages(period)
        .filter(direction=Message.Direction.INBOUND, kind=Message.Kind.VOICE)
        .filter(
            Q(transcript_status=Message.TranscriptStatus.FAILED)
            | Q(transcript_confidence__lt=F("channel__voice_confidence_threshold"))
        )
        .count()
    )
    handoffs = _handoffs(period).aggregate(
        n=Count("id"), guardrail=Count("id", filter=Q(reason=GUARDRAIL))
    )
    return Summary(
        conversations=int(conversations),
        bot_only=int(bot_only),
        customer_messages=int(inbound),
        voice_notes=int(voice),
        unclear_voice=int(unclear),
        handoffs=handoffs["n"],
        guardrail_blocks=handoffs["guardrail"],
    )


def handoffs_by_reason(period: Period) -> list[tuple[str, int]]:
    """Most frequent first; ties by reason."""
    rows = _handoffs(period).values("reason").annotate(n=Count("id")).order_by("-n", "reason")
    return [(row["reason"], row["n"]) for row in rows]


def handoffs_by_day(period: Period) -> dict[str, list[int]]:
    """Per reason, the handoffs of each local day of the range (zeros included)."""
    rows = (
        _handoffs(period)
        .annotate(day=TruncDate("created_at", tzinfo=period.zone))
        .values("day", "reason")
        .annotate(n=Count("id"))
    )
    index = {day: n for n, day in enumerate(period.days)}
    series: dict[str, list[int]] = {}
    for row in rows:
        counts = series.setdefault(row["reason"], [0] * len(index))
        if row["day"] in index:
            counts[index[row["day"]]] += row["n"]
    return dict(sorted(series.items(), key=lambda item: (-sum(item[1]), item[0])))


@dataclass(frozen=True)
class Waits:
    """Seconds; p50/p90 None when nothing was measured."""

    measured: int
    open: int
    p50: float | None
    p90: float | None


def _first_reply() -> Subquery:
    return Subquery(
        Message.objects.filter(
            chat_id=OuterRef("chat_id"),
            author__in=MANAGER_AUTHORS,
            created_at__gte=OuterRef("created_at"),
        )
        .order_by("created_at")
        .values("created_at")[:1]
    )


def _answered_handoffs(period: Period) -> QuerySet[Handoff]:
    return _handoffs(period).annotate(
        reply_at=_first_reply(),
        wait=ExpressionWrapper(F("reply_at") - F("created_at"), output_field=DurationField()),
    )


def _waits(rows: QuerySet[Any], total: int) -> Waits:
    measured, found = percentiles(rows, "wait", (0.5, 0.9)).get(None, (0, [None, None]))
    return Waits(measured, total - measured, found[0], found[1])


def first_human_reply(period: Period) -> Waits:
    """From each handoff to the first manager message after it (inbox or phone)."""
    return _waits(_answered_handoffs(period), _handoffs(period).count())


def pending_waits(period: Period) -> Waits:
    """How long chats sat in PENDING_HUMAN: from the transition into it to the next one out."""
    entered = OwnershipTransition.objects.filter(
        chat__channel_id__in=period.channel_ids,
        at__gte=period.start,
        at__lt=period.end,
        to_owner=Owner.PENDING_HUMAN,
    )
    left = (
        OwnershipTransition.objects.filter(
            chat_id=OuterRef("chat_id"), id__gt=OuterRef("id"), from_owner=Owner.PENDING_HUMAN
        )
        .order_by("id")
        .values("at")[:1]
    )
    rows = entered.annotate(
        left_at=Subquery(left),
        wait=ExpressionWrapper(F("left_at") - F("at"), output_field=DurationField()),
    )
    return _waits(rows, entered.count())


@dataclass(frozen=True)
class ManagerRow:
    user_id: int | None
    name: str
    first_responses: int
    first_response_p50: float | None
    chats_handled: int
    messages: int


def managers(period: Period) -> list[ManagerRow]:
    """Per manager: handoffs they answered first (and how fast), chats they wrote in, messages.
    Replies from the phone have no user: they are one row, "From the phone"."""
    first_by = Subquery(
        Message.objects.filter(
            chat_id=OuterRef("chat_id"),
            author__in=MANAGER_AUTHORS,
            created_at__gte=OuterRef("created_at"),
        )
        .order_by("created_at")
        .values("sent_by_id")[:1]
    )
    answered = _answered_handoffs(period).annotate(first_by=first_by)
    medians = percentiles(answered, "wait", (0.5,), group="first_by")
    firsts = {user_id: n for user_id, (n, _) in medians.items()}
    handled = {
        row["sent_by_id"]: (row["chats"], row["n"])
        for row in _messages(period)
        .filter(author__in=MANAGER_AUTHORS)
        .values("sent_by_id")
        .annotate(chats=Count("chat", distinct=True), n=Count("id"))
    }
    ids = set(firsts) | set(handled)
    users = get_user_model().objects.in_bulk([i for i in ids if i is not None])
    rows = []
    for user_id in ids:
        user = users.get(user_id) if user_id is not None else None
        name = (user.get_full_name() or user.get_username()) if user else "From the phone"
        chats, sent = handled.get(user_id, (0, 0))
        p50 = medians[user_id][1][0] if user_id in medians else None
        rows.append(ManagerRow(user_id, name, firsts.get(user_id, 0), p50, chats, sent))
    return sorted(rows, key=lambda r: (r.user_id is None, -r.chats_handled, r.name))


@dataclass(frozen=True)
class Question:
    turn_id: int
    chat_id: int
    at: datetime
    customer: str
    text: str
    outcome: str


@dataclass
class Questions:
    total: int
    shown: list[Question] = field(default_factory=list)


def outside_knowledge_base(period: Period, limit: int = QUESTIONS_SHOWN) -> Questions:
    """Turns the price list and rules could not answer (asked back or handed off), newest first,
    with what the customer wrote last in that turn."""
    turns = Turn.objects.filter(
        chat__channel_id__in=period.channel_ids,
        reason=OUTSIDE_KNOWLEDGE_BASE,
        started_at__gte=period.start,
        started_at__lt=period.end,
    )
    newest = list(turns.select_related("chat").order_by("-started_at", "-id")[:limit])
    said = Message.objects.in_bulk([t.last_message_id for t in newest])
    shown = [
        Question(
            turn_id=t.pk,
            chat_id=t.chat_id,
            at=t.started_at,
            customer=t.chat.customer_name or t.chat.customer_key,
            text=said[t.last_message_id].content if t.last_message_id in said else "",
            outcome=t.get_outcome_display(),
        )
        for t in newest
    ]
    return Questions(total=turns.count(), shown=shown)


@dataclass(frozen=True)
class Report:
    period: Period
    summary: Summary
    reasons: list[tuple[str, int]]
    by_day: dict[str, list[int]]
    first_reply: Waits
    pending: Waits
    managers: list[ManagerRow]
    questions: Questions


def build(period: Period) -> Report:
    return Report(
        period=period,
        summary=summary(period),
        reasons=handoffs_by_reason(period),
        by_day=handoffs_by_day(period),
        first_reply=first_human_reply(period),
        pending=pending_waits(period),
        managers=managers(period),
        questions=outside_knowledge_base(period),
    )


# --- the tables, for the CSV export ------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


TABLES = ("summary", "reasons", "days", "managers", "questions")


def table(name: str, period: Period) -> list[list[str]]:
    """One table of the page as rows of text, header first (the CSV export)."""
    if name == "summary":
        s = summary(period)
        first, pending = first_human_reply(period), pending_waits(period)
        return [
            ["figure", "value"],
            ["conversations", str(s.conversations)],
            ["bot_only", str(s.bot_only)],
            ["bot_only_share", _share(s.bot_only_share)],
            ["handoffs", str(s.handoffs)],
            ["first_human_reply_p50_s", _seconds(first.p50)],
            ["first_human_reply_p90_s", _seconds(first.p90)],
            ["handoffs_unanswered", str(first.open)],
            ["pending_human_p50_s", _seconds(pending.p50)],
            ["pending_human_p90_s", _seconds(pending.p90)],
            ["pending_human_still_waiting", str(pending.open)],
            ["customer_messages", str(s.customer_messages)],
            ["voice_notes", str(s.voice_notes)],
            ["voice_share", _share(s.voice_share)],
            ["unclear_voice", str(s.unclear_voice)],
            ["unclear_voice_rate", _share(s.unclear_voice_rate)],
            ["guardrail_blocks", str(s.guardrail_blocks)],
        ]
    if name == "reasons":
        return [["reason", "handoffs"]] + [[r, str(n)] for r, n in handoffs_by_reason(period)]
    if name == "days":
        series = handoffs_by_day(period)
        header = ["day", *series]
        return [header] + [
            [day.isoformat(), *(str(series[r][i]) for r in series)]
            for i, day in enumerate(period.days)
        ]
    if name == "managers":
        return [["manager", "first_responses", "first_response_p50_s", "chats", "messages"]] + [
            [
                m.name,
                str(m.first_responses),
                _seconds(m.first_response_p50),
                str(m.chats_handled),
                str(m.messages),
            ]
            for m in managers(period)
        ]
    if name == "questions":
        found = outside_knowledge_base(period, limit=10_000)
        return [["at", "chat", "customer", "question", "outcome"]] + [
            [
                q.at.astimezone(period.zone).isoformat(),
                str(q.chat_id),
                q.customer,
                q.text,
                q.outcome,
            ]
            for q in found.shown
        ]
    raise KeyError(name)
