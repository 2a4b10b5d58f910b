"""The follow-up ladder: a short nudge when a customer left the bot's quote unanswered.

Off by default; a business turns it on with `Business.followup_steps` (hours after the quote,
e.g. "2, 24") and may word each step (`followup_texts`, one line per step), else a built-in nudge
in the customer's language. `eligible` is the one judgement of whether a step is due now; the
beat task `inbox.send_followups` (every few minutes) finds the candidates with one indexed query
per step (answered turns that finished in the step's range, `turn_followup_due`) and sends each
through the core (`inbox.conversations.followups.send`), which re-checks under the chat's lock.

The ladder stops for good on any customer message, a manager's message or any change of owner
(a handoff, a person taking the chat) since the quote, a resolve or snooze, and an opt-out. A
step judged due outside the channel's working hours waits for them; one more than `LATE_LIMIT`
past its time is dropped (a nudge a day late reads oddly).
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import DateTimeField, Exists, ExpressionWrapper, OuterRef, QuerySet

from assistant.language import customer_language
from inbox.conversations import followups, opt_outs, pending_replies, templates
from inbox.conversations.models import (
    Business,
    Chat,
    ChatStatus,
    Followup,
    Message,
    MessageTemplate,
    Owner,
    Turn,
)
from inbox.upkeep.alerts import business_zone, working_time_between

log = logging.getLogger(__name__)

MAX_STEPS = 3
MIN_HOURS = 0.5
MAX_HOURS = 72.0
LATE_LIMIT = timedelta(hours=18)
BATCH = 500

DEFAULT_TEXTS: dict[str, str] = {
    "ru": "Остались вопросы по заказу? Я на связи.",
    "en": "Any questions about your order? I'm here to help.",
    "kk": "Тапсырыс бойынша сұрақтарыңыз бар ма? Мен байланыстамын.",
}


def parse_steps(value: str) -> list[float]:
    """ "2, 24" → [2.0, 24.0]; raises ValueError for anything but ascending hours in range."""
    parts = [part.strip() for part in value.replace(";", ",").split(",") if part.strip()]
    hours = [float(part) for part in parts]
    if len(hours) > MAX_STEPS:
        raise ValueError(f"At most {MAX_STEPS} steps.")
    if any(not MIN_HOURS <= h <= MAX_HOURS for h in hours):
        raise ValueError(f"Each step between {MIN_HOURS:g} and {MAX_HOURS:g} hours.")
    if any(b <= a for a, b in itertools.pairwise(hours)):
        raise ValueError("Steps in ascending order, e.g. 2, 24.")
    return hours


def steps_of(business: Business) -> list[float]:
    """The business's ladder; empty (off) when unset or unreadable."""
    try:
        return parse_steps(business.followup_steps or "")
    except ValueError:
        return []


def is_quote(turn: Turn) -> bool:
    """Did the turn answer with priced lines (`Turn.decision["explained"]["lines"]`)?"""
    decision = turn.decision if isinstance(turn.decision, dict) else {}
    explained = decision.get("explained")
    return turn.outcome == Turn.Outcome.ANSWERED and bool(
        isinstance(explained, dict) and explained.get("lines")
    )


def language_of(chat: Chat) -> str:
    """The customer's language for the built-in nudge: ru, en or kk."""
    written = list(
        chat.messages.filter(direction=Message.Direction.INBOUND)
        .order_by("-id")
        .values_list("text", flat=True)[:5]
    )
    fallback = chat.channel.language or chat.channel.business.language
    language = customer_language(written, fallback)
    return language if language in DEFAULT_TEXTS else "en"


def text_for(chat: Chat, step: int) -> str:
    """The business's own words for the step (the last line serves later steps), else the
    built-in nudge in the customer's language."""
    own = [line.strip() for line in chat.channel.business.followup_texts.splitlines()]
    own = [line for line in own if line]
    if own:
        return own[min(step, len(own)) - 1]
    return DEFAULT_TEXTS[language_of(chat)]


@dataclass(frozen=True)
class Verdict:
    """A step due now (`step` ≥ 1), or why none is (`reason`)."""

    step: int
    reason: str
    # Whether the reason ends the ladder for this quote for good.
    final: bool = False


def _no(reason: str, *, final: bool = True) -> Verdict:
    return Verdict(0, reason, final)


def eligible(turn: Turn, now: datetime) -> Verdict:
    """The one judgement of whether a follow-up step of this quote is due now."""
    chat = turn.chat
    business = chat.channel.business
    hours = steps_of(business)
    quote = turn.reply_message
    if not hours:
        return _no("off")
    if quote is None or not is_quote(turn):
        return _no("not_a_quote")
    if quote.status in (Message.Status.FAILED, Message.Status.UNKNOWN):
        return _no("quote_not_delivered")
    if chat.owner != Owner.BOT:
        return _no("not_bot_owner")
    if chat.owner_changed_at is not None and chat.owner_changed_at > quote.created_at:
        return _no("owner_changed")
    if chat.status != ChatStatus.OPEN:
        return _no("not_open")
    if chat.status_changed_at is not None and chat.status_changed_at > quote.created_at:
        return _no("status_changed")
    if chat.last_customer_at is not None and chat.last_customer_at > quote.created_at:
        return _no("customer_wrote")
    if _last_message_id(chat) != quote.pk:
        return _no("not_last")  # the customer, a manager or a later bot turn spoke since
    if opt_outs.refusal(business, chat.customer_key) is not None:
        return _no("opted_out")
    due = [i + 1 for i, h in enumerate(hours) if quote.created_at + timedelta(hours=h) <= now]
    if not due:
        return _no("not_due", final=False)
    step = due[-1]
    if Followup.objects.filter(quote_message=quote, step__gte=step).exists():
        return _no("already_sent")
    if now - (quote.created_at + timedelta(hours=hours[step - 1])) > LATE_LIMIT:
        return _no("too_late")
    if not within_hours(chat, now):
        return _no("outside_hours", final=False)
    return Verdict(step, "due")


def within_hours(chat: Chat, now: datetime) -> bool:
    """Is `now` inside the channel's working hours (always, when it has none)?"""
    channel = chat.channel
    if not channel.working_hours:
        return True
    zone = business_zone(channel.business.timezone)
    try:
        inside = working_time_between(now, now + timedelta(minutes=1), channel.working_hours, zone)
    except (ValueError, TypeError, IndexError, AttributeError):
        return True  # unreadable hours: the channel is treated as always on, as the alerts do
    return inside > timedelta(0)


def _nudge_ids(chat: Chat) -> list[int]:
    return [
        pk
        for pk in Followup.objects.filter(chat=chat, message__isnull=False).values_list(
            "message_id", flat=True
        )
        if pk is not None
    ]


def _last_message_id(chat: Chat) -> int | None:
    """The chat's newest message but internal notes and the nudges themselves."""
    return (
        chat.messages.exclude(direction=Message.Direction.INTERNAL)
        .exclude(pk__in=_nudge_ids(chat))
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )


def candidates(now: datetime) -> list[Turn]:
    """Answered bot turns of businesses with a ladder whose quote reached one of its steps'
    range and has no row for that step yet: one indexed query per distinct step length."""
    lengths = {
        h
        for value in Business.objects.exclude(followup_steps="").values_list(
            "followup_steps", flat=True
        )
        for h in _safe_steps(value)
    }
    found: dict[int, Turn] = {}
    for hours in sorted(lengths):
        due_at = now - timedelta(hours=hours)
        turns = (
            Turn.objects.filter(
                outcome=Turn.Outcome.ANSWERED,
                finished_at__lte=due_at,
                finished_at__gte=due_at - LATE_LIMIT - timedelta(minutes=5),
                reply_message__isnull=False,
                chat__owner=Owner.BOT,
                chat__status=ChatStatus.OPEN,
            )
            .exclude(chat__channel__business__followup_steps="")
            .filter(~Exists(_recorded_since(hours)))
            .select_related("chat__channel__business", "reply_message")
            .order_by("finished_at")[:BATCH]
        )
        for turn in turns:
            found.setdefault(turn.pk, turn)
    return list(found.values())


def _recorded_since(hours: float) -> QuerySet[Followup]:
    """A row of the quote written once this step length had passed: this step or a later one
    is done (a minute's slack: the turn finishes a moment after its reply is recorded)."""
    since = ExpressionWrapper(
        OuterRef("finished_at") + timedelta(hours=hours) - timedelta(minutes=1),
        output_field=DateTimeField(),
    )
    return Followup.objects.filter(
        quote_message_id=OuterRef("reply_message_id"), created_at__gte=since
    )


def _safe_steps(value: str) -> list[float]:
    try:
        return parse_steps(value)
    except ValueError:
        return []


def template_values(template: MessageTemplate, chat: Chat) -> dict[str, str] | None:
    """The template's variables filled from what the chat knows (the customer's name, the
    bot's quote); None when one cannot be filled."""
    known = templates.prefill(chat)
    values = {}
    for name in templates.variables(template):
        lowered = name.lower()
        quote_like = any(word in lowered for word in ("quote", "offer", "price", "total"))
        value = known.quote if quote_like else known.customer_name
        if not value:
            return None
        values[name] = value
    return values


def send_due(now: datetime) -> int:
    """Send every step due now; how many went out."""
    sent = 0
    for turn in candidates(now):
        verdict = eligible(turn, now)
        if not verdict.step:
            continue
        sent += _send(turn, verdict.step)
    if sent:
        log.info("followup.sent_due", extra={"count": sent})
    return sent


def _send(turn: Turn, number: int) -> int:
    chat = turn.chat
    assert turn.reply_message_id is not None
    step = followups.Step(
        chat_id=chat.pk,
        quote_message_id=turn.reply_message_id,
        step=number,
        text=text_for(chat, number),
        version=chat.version,
        last_message_id=max(turn.reply_message_id, *_nudge_ids(chat), 0),
    )
    template = pending_replies.reengage_template(chat)
    values = template_values(template, chat) if template is not None else {}
    if template is not None and values is None:
        template, values = None, {}
    result = followups.send(step, template, values or {})
    return 1 if result.reason == "sent" else 0
