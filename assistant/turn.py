"""One turn: a chat's pending customer messages become exactly one safe reply or a handoff.

    collect pending messages (the bot must own the chat; voice notes must be transcribed)
    mark them read, "typing…" while composing (assistant/composing.py, a courtesy)
    only an opt-out keyword ("STOP")  → record it, confirm once (assistant/opt_out.py)
    WhatsApp's window closed (Cloud API) → hand to a human with reason `window_closed`, no text
    too old (the channel's late-answer cutoff)  → hand to a human with reason `late`
    brain.decide → Decision {answer | clarify | handoff}
    guardrails: prices, discounts, deadlines, forbidden promises not backed → handoff `guardrail`
    answer / clarify → inbox.conversations.outbound.send_reply(…, generated_at_version)
                       (tried once here; a transient failure is retried by a Celery task),
                       or, where the channel wants a person to approve it (assistant/approval.py),
                       inbox.conversations.drafts.hold: a draft waits for a manager
    handoff          → inbox.conversations.handoff.hand_off(…, generated_at_version)

Whether the reply goes out is decided at the last moment under the chat's row lock (owner still
BOT, version unchanged, these messages not answered yet), so a manager taking over or a new
customer message while the model is thinking always wins. Every turn leaves an `inbox.Turn` row.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from django.utils import timezone, translation

from assistant import approval, composing, opt_out
from assistant.decision import brain, escalation, explain, guardrails
from assistant.knowledge.effective import assistant_settings, knowledge_for
from assistant.schema import Action, Decision, HistoryEntry, Speaker, TurnInput
from inbox.conversations import delivery_status, drafts, hooks, turns, window
from inbox.conversations.handoff import HandoffOutcome, hand_off
from inbox.conversations.models import Message, Turn
from inbox.conversations.outbound import SendOutcome, send_reply, settle_turn
from inbox.platform import metrics

log = logging.getLogger(__name__)

TURN_TIME_LIMIT_SECONDS = 240  # the Celery task's hard time limit (assistant/tasks.py)

SPEAKERS: dict[str, Speaker] = {
    Message.Author.CUSTOMER: "customer",
    Message.Author.BOT: "bot",
    Message.Author.MANAGER: "manager",
    Message.Author.PHONE: "manager",
    Message.Author.SYSTEM: "system",
}

SEND_OUTCOMES = {
    "stale": Turn.Outcome.DROPPED_STALE,
    "not_bot_owner": Turn.Outcome.DROPPED_OWNER,
    "already_answered": Turn.Outcome.ALREADY_ANSWERED,
    "failed": Turn.Outcome.SEND_FAILED,
    "empty": Turn.Outcome.FAILED,
    "undeliverable": Turn.Outcome.SEND_FAILED,
    # The window closed while the model was thinking: `send_reply` handed the chat over.
    "window_closed": Turn.Outcome.HANDED_OFF,
}


def _entry(message: Message) -> HistoryEntry:
    text = message.content
    if not text and message.kind not in ("text", "voice", "audio"):
        label = message.get_kind_display().lower()
        text = f"[{label}{': ' + message.media_filename if message.media_filename else ''}]"
    return HistoryEntry(
        speaker=SPEAKERS.get(message.author, "system"),
        text=text,
        at=message.provider_timestamp or message.created_at,
        voice_confidence=message.transcript_confidence
        if message.kind in ("voice", "audio")
        else None,
    )


def build_input(pending: turns.PendingTurn) -> TurnInput:
    chat = pending.chat
    channel = chat.channel
    confidences = [
        m.transcript_confidence
        for m in pending.messages
        if m.kind in ("voice", "audio") and m.transcript_confidence is not None
    ]
    return TurnInput(
        business_id=channel.business_id,
        channel_id=channel.pk,
        chat_id=chat.pk,
        language=channel.language or channel.business.language,
        history=[_entry(m) for m in pending.history],
        pending=[_entry(m) for m in pending.messages],
        lowest_voice_confidence=min(confidences) if confidences else None,
        voice_confidence_threshold=channel.voice_confidence_threshold,
        team_language=channel.business.ui_language,
    )


def take_turn(chat_id: int) -> Turn | None:
    """Run the turn for the chat's pending messages. None when there is nothing to do now."""
    pending = turns.collect(chat_id)
    if pending is None or pending.waiting_for_transcript:
        return None
    if delivery_status.undeliverable(pending.chat):
        # WhatsApp said the customer cannot receive messages: no model call for a reply that
        # cannot arrive (send_reply would refuse it too). Their next message lifts this.
        log.info("turn.skipped_undeliverable", extra={"chat_id": chat_id})
        return None
    # A turn "running" for longer than any turn may run (the task's hard time limit) lost its
    # worker: record it as interrupted instead of leaving it running forever.
    Turn.objects.filter(
        chat=pending.chat,
        outcome=Turn.Outcome.RUNNING,
        started_at__lt=timezone.now() - timedelta(seconds=TURN_TIME_LIMIT_SECONDS),
    ).update(outcome=Turn.Outcome.FAILED, model_error="interrupted", finished_at=timezone.now())
    turn = Turn.objects.create(
        chat=pending.chat,
        first_message_id=pending.messages[0].pk,
        last_message_id=pending.answered_up_to,
        generated_at_version=pending.version,
    )
    started = time.monotonic()
    hooks.turn_running(pending.chat, running=True)
    try:
        # "typing…" while deciding only: it must not come back after the reply went.
        with composing.composing(pending.chat, pending.messages):
            decision, details = _decide(turn, pending)
        retrying = _act(turn, pending, decision, details)
    except Exception as exc:
        _finish(
            turn, Turn.Outcome.FAILED, started, model_error=f"{type(exc).__name__}: {exc}"[:500]
        )
        raise
    finally:
        hooks.turn_running(pending.chat, running=False)
    turn.latency_ms = (time.monotonic() - started) * 1000
    turn.finished_at = timezone.now()
    turn.save()
    if retrying:
        # The reply's retries (the deliver task) may have given up before this row named it.
        settle_turn(turn.pk)
    metrics.TURNS.labels(outcome=turn.outcome).inc()
    log.info(
        "turn.finished",
        extra={
            "chat_id": chat_id,
            "outcome": turn.outcome,
            "reason": turn.reason,
            "backend": turn.backend,
        },
    )
    return turn


def _decide(turn: Turn, pending: turns.PendingTurn) -> tuple[Decision, dict[str, Any] | None]:
    """What the turn will do (an answer, a question or a handoff, checked), with the
    guardrail's details for a handoff it caused."""
    stop = opt_out.confirmation(pending)
    if stop is not None:
        turn.action, turn.reason = stop.action.value, stop.reason
        return stop, None
    turn_input = build_input(pending)
    if not window.is_open(pending.chat):
        # No model call: whatever it wrote could not be sent.
        return escalation.window_closed(turn_input, pending.chat.window_closes_at), None
    oldest = pending.messages[0]
    late = escalation.too_late(
        turn_input,
        waited=timezone.now() - (oldest.provider_timestamp or oldest.created_at),
        cutoff=timedelta(minutes=pending.chat.channel.late_answer_cutoff_minutes),
    )
    if late is not None:
        return late, None

    # Read once for the decision and its check: both must judge by the same list.
    knowledge = knowledge_for(pending.chat.channel)
    config = assistant_settings(turn_input.business_id)
    result = brain.decide_with(turn_input, knowledge, config)
    turn.backend = result.backend
    turn.model_error = result.model_error[:500]
    # The findings and the proofs are stored as text for the team's handoff card and "Why?":
    # written in the team's language (Business.ui_language); nothing else here changes language.
    with translation.override(turn_input.team_language or "en"):
        explained = explain.explained(
            result.decision, turn_input, knowledge, config, result.backend
        )
        verdict = guardrails.check_against(result.decision, turn_input, knowledge, config)
    turn.decision = {**result.decision.model_dump(mode="json"), explain.KEY: explained}
    turn.action = result.decision.action.value
    turn.reason = result.decision.reason

    turn.guardrail_findings = verdict.blocked
    return escalation.guarded(result.decision, verdict, turn_input)


def _act(
    turn: Turn, pending: turns.PendingTurn, decision: Decision, details: dict[str, Any] | None
) -> bool:
    """Send the reply or hand off; True when the reply failed for now and is being retried."""
    if decision.action == Action.HANDOFF:
        _handoff(turn, pending, decision, details)
        return False
    return _reply(turn, pending, decision)


def _reply(turn: Turn, pending: turns.PendingTurn, decision: Decision) -> bool:
    if approval.held_because(pending.chat.channel, decision.reply_to_customer, decision.reason):
        held = drafts.hold(
            pending.chat.pk,
            decision.reply_to_customer,
            turn_id=turn.pk,
            generated_at_version=pending.version,
            answered_up_to=pending.answered_up_to,
        )
        turn.outcome = (
            Turn.Outcome.AWAITING_APPROVAL
            if held.held
            else SEND_OUTCOMES.get(held.reason, Turn.Outcome.FAILED)
        )
        return False
    outcome: SendOutcome = send_reply(
        pending.chat.pk,
        decision.reply_to_customer,
        generated_at_version=pending.version,
        answered_up_to=pending.answered_up_to,
    )
    if outcome.sent or outcome.reason == "retrying":
        # "retrying": the first try failed for now and the deliver task tries again; if its
        # tries give up, the turn becomes `send_failed` (inbox.conversations.outbound).
        turn.outcome = (
            Turn.Outcome.CLARIFIED if decision.action == Action.CLARIFY else Turn.Outcome.ANSWERED
        )
    else:
        turn.outcome = SEND_OUTCOMES.get(outcome.reason, Turn.Outcome.FAILED)
    if outcome.message_id is not None:
        turn.reply_message_id = outcome.message_id
    return outcome.reason == "retrying"


def _handoff(
    turn: Turn,
    pending: turns.PendingTurn,
    decision: Decision,
    details: dict[str, Any] | None = None,
) -> None:
    turn.action = turn.action or Action.HANDOFF.value
    turn.reason = decision.reason or escalation.DEFAULT_REASON
    outcome: HandoffOutcome = hand_off(
        pending.chat.pk,
        reason=turn.reason,
        summary=decision.summary,
        facts=decision.facts.model_dump(mode="json"),
        message_to_customer=decision.reply_to_customer,
        generated_at_version=pending.version,
        answered_up_to=pending.answered_up_to,
        details=details,
    )
    if outcome.handed_off:
        turn.outcome = Turn.Outcome.HANDED_OFF
        turn.reply_message_id = outcome.notice_message_id
    else:
        turn.outcome = SEND_OUTCOMES.get(outcome.reason, Turn.Outcome.FAILED)


def _finish(turn: Turn, outcome: str, started: float, *, model_error: str = "") -> None:
    turn.outcome = outcome
    turn.model_error = model_error or turn.model_error
    turn.latency_ms = (time.monotonic() - started) * 1000
    turn.finished_at = timezone.now()
    turn.save()
    metrics.TURNS.labels(outcome=outcome).inc()
