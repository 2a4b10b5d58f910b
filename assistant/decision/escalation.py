"""Why a turn goes to a person instead of getting the bot's reply: the one place that decides
it, and what the customer is told then.

The backend (model or catalogue assistant) may itself hand off, with a business's reason
(asks_for_human, ready_to_buy, complaint, …). On top of that, the system hands off:

    late               the oldest pending message waited past the channel's late-answer cutoff
    window_closed      WhatsApp's customer-service window closed before the bot answered: free
                       text would fail (131047); the customer is told nothing
    guardrail          the reply names a price, discount, deadline or promise nothing backs
    voice_unclear      a voice note below the confidence threshold, the second time in a row
                       (the first time the customer is asked to repeat it)
    model_unavailable  no model endpoint answered
    model_error        the model's answer was unusable, or the model path crashed
    model_misconfigured the model server refused the request as configured (API key, model
                       name, context length, schema): the cause is on the handoff card

Every handoff reaches the customer in their language (`assistant.decision.replies`).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from assistant.decision import summary as card
from assistant.decision.guardrails import GuardrailResult
from assistant.decision.replies import handoff_message, is_text, language_for, text
from assistant.models import SYSTEM_HANDOFF_REASONS, AssistantSettings
from assistant.schema import Action, Decision, Facts, TurnInput
from inbox.conversations.models import HandoffReason

log = logging.getLogger(__name__)

DEFAULT_REASON = HandoffReason.ASKS_FOR_HUMAN


def too_late(turn: TurnInput, *, waited: timedelta, cutoff: timedelta) -> Decision | None:
    """After an outage, an old question is not answered as if nothing happened."""
    if waited <= cutoff:
        return None
    minutes = int(waited.total_seconds() // 60)
    summary = (
        f"The customer's message waited {minutes} min (late-answer cutoff "
        f"{cutoff.total_seconds() / 60:.0f} min); a person should answer it."
    )
    return _handoff(turn, HandoffReason.LATE, summary)


def window_closed(turn: TurnInput, closes_at: datetime | None) -> Decision:
    """Past WhatsApp's customer-service window the bot says nothing (only a template would be
    delivered): a person decides how to reach the customer."""
    when = f" at {closes_at:%Y-%m-%d %H:%M} UTC" if closes_at else ""
    summary = (
        f"WhatsApp's 24-hour customer-service window closed{when} before the assistant "
        "answered; only an approved template can reach the customer now."
    )
    return Decision(
        action=Action.HANDOFF,
        reason=HandoffReason.WINDOW_CLOSED,
        summary=card.offline(HandoffReason.WINDOW_CLOSED, turn, detail=summary),
        reply_to_customer="",
        facts=Facts(),
    )


def unclear_voice(turn: TurnInput, decision: Decision) -> Decision:
    """Below the confidence threshold the customer is asked to repeat, whatever the backend
    decided; if the bot's last message already asked that, a person takes over."""
    confidence = turn.lowest_voice_confidence
    if confidence is None or confidence >= turn.voice_confidence_threshold:
        return decision
    last_bot = next((e for e in reversed(turn.history) if e.speaker in ("bot", "manager")), None)
    if (
        last_bot is not None
        and last_bot.speaker == "bot"
        and (is_text(last_bot.text, "clarify.voice") or _asked_after_unclear_voice(turn))
    ):
        summary = f"({confidence:.2f})"
        return _handoff(turn, HandoffReason.VOICE_UNCLEAR, summary, decision.facts, lead=True)
    return Decision(
        action=Action.CLARIFY,
        reason=HandoffReason.VOICE_UNCLEAR,
        summary=decision.summary,
        reply_to_customer=text("clarify.voice", language_for(turn)),
        facts=decision.facts,
    )


def _asked_after_unclear_voice(turn: TurnInput) -> bool:
    """Whether the customer's message before the bot's last one was a voice note below the
    threshold too: whatever words the bot (or a model) asked again with, this is the second
    unclear note in a row."""
    entries = list(turn.history)
    last_bot = max(i for i, e in enumerate(entries) if e.speaker == "bot")
    before = [e for e in entries[:last_bot] if e.speaker == "customer"]
    if not before or any(e.speaker == "customer" for e in entries[last_bot:]):
        return False
    confidence = before[-1].voice_confidence
    return confidence is not None and confidence < turn.voice_confidence_threshold


def model_failed(turn: TurnInput, reason: str, summary: str) -> Decision:
    """The handoff every failure of the model path ends in."""
    return _handoff(turn, reason, summary)


def normalise(decision: Decision, turn: TurnInput, config: AssistantSettings) -> Decision:
    """A backend's handoff with its reason as a code and a message for the customer; an
    unknown reason is kept but logged, so a business can add it to its list."""
    if decision.action != Action.HANDOFF:
        return decision
    reason = decision.reason.strip().lower().replace(" ", "_")[:64] or DEFAULT_REASON
    known = set(config.reason_codes()) | set(SYSTEM_HANDOFF_REASONS)
    if reason not in known:
        log.info("assistant.unknown_reason", extra={"reason": reason})
    reply = decision.reply_to_customer.strip() or handoff_message(reason, language_for(turn))
    return decision.model_copy(update={"reason": reason, "reply_to_customer": reply})


def guarded(
    decision: Decision, verdict: GuardrailResult, turn: TurnInput
) -> tuple[Decision, dict[str, Any]]:
    """The decision to act on once the guardrails have read it, and what the manager should
    see of a blocked reply (the reply itself and the findings)."""
    if verdict.allowed:
        return decision, {}
    blocked = card.blocked_line(turn)
    details = {"blocked_reply": decision.reply_to_customer, "findings": verdict.blocked}
    handoff = _handoff(turn, HandoffReason.GUARDRAIL, blocked, decision.facts)
    if decision.summary.strip():
        wanted = card.from_facts(decision.facts)
        kept = card.checked(f"{blocked} {decision.summary.strip()}", handoff.summary, wanted)
        handoff = handoff.model_copy(update={"summary": kept})
    return handoff, details


def _handoff(
    turn: TurnInput, reason: str, summary: str, facts: Facts | None = None, lead: bool = False
) -> Decision:
    """A system handoff whose card keeps the customer's request (`summary.offline`): the
    reason's own sentence (`summary`) first, or after the reason's lead where `lead`."""
    facts = facts or Facts()
    wanted = card.from_facts(facts)
    if lead:
        first = card.request(reason, turn).rstrip(".")
        summary = f"{first} {summary}."
    return Decision(
        action=Action.HANDOFF,
        reason=reason,
        summary=card.offline(reason, turn, wanted, city=facts.city, detail=summary),
        reply_to_customer=handoff_message(reason, language_for(turn)),
        facts=facts,
    )
