"""The figures of one business's reports over a date range: the queries, computed from the audit
rows the core writes. Putting them together for the page and the CSV is `report.py`; the queries
stay together here because they share the `Period` and one read of the range's handoffs.

Sources: `Message` (conversations, voice notes, manager replies), `ChatTransition` (who
owned the chat: bot-only means no transition to a human in the range and no manager message),
`Handoff` (reasons, the clock for the first human reply), `Turn` (questions outside the
knowledge base), `Draft` (supervised replies: approved as is, edited, rejected, how long to
approve), `Followup` (the nudges after an unanswered quote, and the leads that answered one).
Days are the business's days (`Business.timezone`); the range is
[first day 00:00, day after the last 00:00) in that zone.

The page reads each source once over an indexed range (migrations 0011_reports and
0012_reports_speed): one grouped pass over the customers' messages (`summary`), one query for
every handoff figure including the first human replies (`handoffs`), one for the pending waits,
one for the managers' messages, two for the questions. The percentiles are interpolated in
Python like PostgreSQL's `percentile_cont` from the few thousand waits fetched, so SQLite and
PostgreSQL give the same answers by the same code.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import TruncDate

from inbox.conversations import names
from inbox.conversations.models import (
    Business,
    Channel,
    ChatTransition,
    Draft,
    Followup,
    Handoff,
    HandoffReason,
    Message,
    Owner,
    Turn,
)
from inbox.upkeep.alerts import business_zone

MANAGER_AUTHORS = [Message.Author.MANAGER.value, Message.Author.PHONE.value]
HUMAN_OWNERS = [Owner.PENDING_HUMAN.value, Owner.HUMAN.value]
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
    # Sandbox chats are the team trying the assistant, not customers: counted only when the
    # sandbox channel itself is picked.
    ids = (
        (channel.pk,)
        if channel is not None
        else tuple(
            business.channels.exclude(kind=Channel.Kind.SANDBOX)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
    )
    return Period(business, ids, first, last, zone)


# --- percentiles ---------------------------------------------------------------------------------


def _interpolate(values: list[float], fraction: float) -> float:
    """percentile_cont: linear interpolation between the two nearest ranks."""
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Waits:
    """Seconds; p50/p90 None when nothing was measured."""

    measured: int
    open: int
    p50: float | None
    p90: float | None


def _waits(seconds: list[float], total: int) -> Waits:
    """`total` clocks started, `seconds` the ones that stopped, and how long they ran."""
    if not seconds:
        return Waits(0, total, None, None)
    return Waits(
        len(seconds), total - len(seconds), _interpolate(seconds, 0.5), _interpolate(seconds, 0.9)
    )


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


# The customers' messages of the range, one row per chat (an index-only scan of the partial
# index message_report_inbound on PostgreSQL); a chat is bot-only when no manager wrote in it in
# the range (message_report_replies) and no transition to a human happened in it. Anti-joins
# on the two small sets rather than a subquery per chat (whose estimate woke PostgreSQL's JIT).
CUSTOMERS_SQL = """
SELECT COUNT(*), COALESCE(SUM(s.inbound), 0), COALESCE(SUM(s.voice), 0),
       COALESCE(SUM(s.unclear), 0),
       COUNT(CASE WHEN w.chat_id IS NULL AND h.chat_id IS NULL THEN 1 END)
FROM (
    SELECT m.chat_id, COUNT(*) AS inbound,
           SUM(CASE WHEN m.kind = 'voice' THEN 1 ELSE 0 END) AS voice,
           SUM(CASE WHEN m.kind = 'voice' AND (m.transcript_status = 'failed'
                    OR m.transcript_confidence < {thresholds})
               THEN 1 ELSE 0 END) AS unclear
    FROM inbox_message m
    WHERE m.channel_id IN ({channels}) AND m.created_at >= %s AND m.created_at < %s
      AND m.direction = 'in'
    GROUP BY m.chat_id
) s
LEFT JOIN (
    SELECT DISTINCT r.chat_id FROM inbox_message r
    WHERE r.channel_id IN ({channels}) AND r.created_at >= %s AND r.created_at < %s
      AND r.author IN ('manager', 'phone')
) w ON w.chat_id = s.chat_id
LEFT JOIN (
    SELECT DISTINCT t.chat_id FROM inbox_ownershiptransition t
    JOIN inbox_chat c ON c.id = t.chat_id
    WHERE c.channel_id IN ({channels}) AND t.at >= %s AND t.at < %s
      AND t.to_owner IN ('pending_human', 'human')
) h ON h.chat_id = s.chat_id
"""


def summary(period: Period, found: Handoffs | None = None) -> Summary:
    """Conversations (chats with a customer message in the range) and how many the bot closed
    alone: no transition to a human in the range and no manager message in it.

    One pass over the range's customer messages, grouped by chat, in plain SQL both databases
    run the same way (the ORM would scan the range once per figure)."""
    found = found or handoffs(period)
    if not period.channel_ids:
        return Summary(0, 0, 0, 0, 0, found.total, found.of_reason(HandoffReason.GUARDRAIL))
    channels = ", ".join(str(int(pk)) for pk in period.channel_ids)
    start = connection.ops.adapt_datetimefield_value(period.start)
    end = connection.ops.adapt_datetimefield_value(period.end)
    # Each channel's threshold as a literal CASE: no join of every message row to its channel.
    thresholds = list(
        Channel.objects.filter(pk__in=period.channel_ids).values_list(
            "pk", "voice_confidence_threshold"
        )
    )
    case = " ".join(["CASE m.channel_id", *("WHEN %s THEN %s" for _ in thresholds), "END"])
    case = case if thresholds else "NULL"
    sql = CUSTOMERS_SQL.format(channels=channels, thresholds=case)
    params = [v for pair in thresholds for v in pair] + [start, end, start, end, start, end]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        conversations, inbound, voice, unclear, bot_only = cursor.fetchone()
    return Summary(
        conversations=int(conversations),
        bot_only=int(bot_only),
        customer_messages=int(inbound),
        voice_notes=int(voice),
        unclear_voice=int(unclear),
        handoffs=found.total,
        guardrail_blocks=found.of_reason(HandoffReason.GUARDRAIL),
    )


def _first_manager_message(column: str) -> Subquery:
    """`column` of the chat's first manager message at or after the outer row's created_at:
    one index-only probe of message_report_first_reply (chat, created_at, sent_by) per
    handoff; both columns come from the same first entry of that index."""
    return Subquery(
        Message.objects.filter(
            chat_id=OuterRef("chat_id"),
            author__in=MANAGER_AUTHORS,
            created_at__gte=OuterRef("created_at"),
        )
        .order_by("created_at")
        .values(column)[:1]
    )


@dataclass(frozen=True)
class Handoffs:
    """The range's handoffs, read once for every figure about them: per handoff its local day,
    its reason, the seconds to the first manager message after it (None while nobody has
    answered) and who sent that message (None: from the phone)."""

    period: Period
    rows: list[tuple[date, str, float | None, int | None]]

    @property
    def total(self) -> int:
        return len(self.rows)

    def of_reason(self, reason: str) -> int:
        return sum(1 for row in self.rows if row[1] == reason)

    def by_reason(self) -> list[tuple[str, int]]:
        """Most frequent first; ties by reason."""
        totals: dict[str, int] = defaultdict(int)
        for _, reason, _, _ in self.rows:
            totals[reason] += 1
        return sorted(totals.items(), key=lambda item: (-item[1], item[0]))

    def by_day(self) -> dict[str, list[int]]:
        """Per reason, the handoffs of each local day of the range (zeros included)."""
        index = {day: n for n, day in enumerate(self.period.days)}
        series: dict[str, list[int]] = {}
        for day, reason, _, _ in self.rows:
            counts = series.setdefault(reason, [0] * len(index))
            if day in index:
                counts[index[day]] += 1
        return dict(sorted(series.items(), key=lambda item: (-sum(item[1]), item[0])))

    def first_reply(self) -> Waits:
        return _waits([w for _, _, w, _ in self.rows if w is not None], self.total)

    def first_replies_by_manager(self) -> dict[int | None, list[float]]:
        found: dict[int | None, list[float]] = defaultdict(list)
        for _, _, wait, user_id in self.rows:
            if wait is not None:
                found[user_id].append(wait)
        return found


def handoffs(period: Period) -> Handoffs:
    """One query for the handoff counts, the reasons, the days, the first human reply and each
    manager's first responses (they used to be five, two of them the same subquery)."""
    # The wait and the day come out computed (an interval and a date, not two datetimes to
    # parse per handoff); the first reply's subquery appears once in the SQL.
    rows = (
        _handoffs(period)
        .annotate(
            day=TruncDate("created_at", tzinfo=period.zone),
            wait=ExpressionWrapper(
                _first_manager_message("created_at") - F("created_at"),
                output_field=DurationField(),
            ),
            first_by=_first_manager_message("sent_by_id"),
        )
        .order_by()
        .values_list("day", "reason", "wait", "first_by")
    )
    return Handoffs(
        period,
        [
            (
                day,
                reason,
                wait.total_seconds() if wait is not None else None,
                by if wait is not None else None,
            )
            for day, reason, wait, by in rows
        ],
    )


def handoffs_by_reason(period: Period) -> list[tuple[str, int]]:
    """Most frequent first; ties by reason."""
    return handoffs(period).by_reason()


def handoffs_by_day(period: Period) -> dict[str, list[int]]:
    """Per reason, the handoffs of each local day of the range (zeros included)."""
    return handoffs(period).by_day()


def first_human_reply(period: Period) -> Waits:
    """From each handoff to the first manager message after it (inbox or phone)."""
    return handoffs(period).first_reply()


def pending_waits(period: Period) -> Waits:
    """How long chats sat in PENDING_HUMAN: from the transition into it to the next one out."""
    left = (
        ChatTransition.objects.filter(
            chat_id=OuterRef("chat_id"), id__gt=OuterRef("id"), from_owner=Owner.PENDING_HUMAN
        )
        .order_by("id")
        .values("at")[:1]
    )
    waits = list(
        ChatTransition.objects.filter(
            chat__channel_id__in=period.channel_ids,
            at__gte=period.start,
            at__lt=period.end,
            to_owner=Owner.PENDING_HUMAN,
        )
        .annotate(wait=ExpressionWrapper(Subquery(left) - F("at"), output_field=DurationField()))
        .order_by()
        .values_list("wait", flat=True)
    )
    return _waits([w.total_seconds() for w in waits if w is not None], len(waits))


@dataclass(frozen=True)
class ManagerRow:
    user_id: int | None
    name: str
    first_responses: int
    first_response_p50: float | None
    chats_handled: int
    messages: int


def managers(period: Period, found: Handoffs | None = None) -> list[ManagerRow]:
    """Per manager: handoffs they answered first (and how fast), chats they wrote in, messages.
    Replies from the phone have no user: they are one row, "From the phone"."""
    firsts = (found or handoffs(period)).first_replies_by_manager()
    handled: dict[int | None, tuple[int, int]] = {
        row["sent_by_id"]: (row["chats"], row["n"])
        for row in _messages(period)
        .filter(author__in=MANAGER_AUTHORS)
        .values("sent_by_id")
        .annotate(chats=Count("chat", distinct=True), n=Count("id"))
        .order_by()
    }
    ids = set(firsts) | set(handled)
    users = get_user_model().objects.in_bulk([i for i in ids if i is not None])
    rows = []
    for user_id in ids:
        user = users.get(user_id) if user_id is not None else None
        name = names.display_name(user, period.business.pk, "From the phone")
        chats, sent = handled.get(user_id, (0, 0))
        waits = firsts.get(user_id, [])
        p50 = _interpolate(waits, 0.5) if waits else None
        rows.append(ManagerRow(user_id, name, len(waits), p50, chats, sent))
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
        reason=HandoffReason.OUTSIDE_KNOWLEDGE_BASE,
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
class Approvals:
    """Bot drafts written in the range, by what a person did with them."""

    approved: int
    edited: int
    rejected: int
    expired: int
    time_to_approve: Waits  # approved or edited: from the draft to the decision

    @property
    def decided(self) -> int:
        return self.approved + self.edited + self.rejected


def approvals(period: Period) -> Approvals:
    rows = Draft.objects.filter(
        chat__channel_id__in=period.channel_ids,
        created_at__gte=period.start,
        created_at__lt=period.end,
    ).values_list("state", "created_at", "decided_at")
    counts: dict[str, int] = defaultdict(int)
    seconds = []
    for state, created, decided in rows:
        counts[state] += 1
        if state in (Draft.State.APPROVED, Draft.State.EDITED) and decided is not None:
            seconds.append((decided - created).total_seconds())
    sent = counts[Draft.State.APPROVED] + counts[Draft.State.EDITED]
    return Approvals(
        approved=counts[Draft.State.APPROVED],
        edited=counts[Draft.State.EDITED],
        rejected=counts[Draft.State.REJECTED],
        expired=counts[Draft.State.EXPIRED],
        time_to_approve=_waits(seconds, sent),
    )


@dataclass(frozen=True)
class Followups:
    """The follow-up nudges sent in the range, and the leads (chats) that wrote after one."""

    sent: int
    skipped: int  # past the window with no template to send
    leads: int  # chats that were sent a nudge
    answered: int  # of those, chats whose customer wrote after a nudge

    @property
    def answered_share(self) -> float | None:
        return self.answered / self.leads if self.leads else None


def followups(period: Period) -> Followups:
    """One query: the range's rows counted by outcome, and their chats, with whether the
    customer wrote after the nudge."""
    replied = Message.objects.filter(
        chat_id=OuterRef("chat_id"),
        direction=Message.Direction.INBOUND,
        created_at__gt=OuterRef("created_at"),
    )
    sent = Q(outcome=Followup.Outcome.SENT)
    found = (
        Followup.objects.filter(
            chat__channel_id__in=period.channel_ids,
            created_at__gte=period.start,
            created_at__lt=period.end,
        )
        .annotate(replied=Exists(replied))
        .aggregate(
            sent=Count("id", filter=sent),
            skipped=Count("id", filter=Q(outcome=Followup.Outcome.SKIPPED)),
            leads=Count("chat_id", filter=sent, distinct=True),
            answered=Count("chat_id", filter=sent & Q(replied=True), distinct=True),
        )
    )
    return Followups(
        sent=found["sent"],
        skipped=found["skipped"],
        leads=found["leads"],
        answered=found["answered"],
    )
