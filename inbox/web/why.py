""" "Why did it say that?": the facts behind one bot message, for the chat's Why panel and the
JSON API alike, read from the `Turn` whose reply it is (`Turn.decision` with what the turn
recorded under `explained`, `assistant.decision.explain`) and the flags managers left on it.

Selectors only: the flag itself is written by `inbox.conversations.flags`. A message of a chat
the user may not see is `flags.MessageNotFound`, which the views answer with 404.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext, gettext_noop

from inbox.conversations.access import User
from inbox.conversations.flags import bot_message
from inbox.conversations.models import HandoffReason, Message, MessageFlag, Turn

# The intents a reading may hold that are no handoff reason, in a manager's words.
# Marked for translation here, translated where read (the panel and the API speak the reader's
# language; plain strings, so the API's JSON holds text).
INTENT_LABELS = {
    "price_question": gettext_noop("Asks a price"),
    "rules_question": gettext_noop("Asks about terms (delivery, payment, …)"),
    "greeting": gettext_noop("Greeting"),
}
ACTION_LABELS = {
    "answer": gettext_noop("Answered"),
    "clarify": gettext_noop("Asked the customer to clarify"),
    "handoff": gettext_noop("Handed the chat to a person"),
}


def why_for(user: User, chat_id: int, message_id: int) -> dict[str, Any]:
    """The facts behind a bot message of a chat the user sees (raises `MessageNotFound`)."""
    message = bot_message(user, chat_id, message_id)
    turn = Turn.objects.filter(reply_message=message).order_by("-pk").first()
    return {**facts_of(message, turn), "flags": flags_of(message)}


def facts_of(message: Message, turn: Turn | None) -> dict[str, Any]:
    """What the turn behind `message` read, computed and checked (all empty without a turn)."""
    decision = turn.decision if turn is not None and isinstance(turn.decision, dict) else {}
    explained = decision.get("explained")
    explained = explained if isinstance(explained, dict) else {}
    lines = [_strings(line) for line in _list(explained.get("lines"))]
    written = str(decision.get("reply_to_customer") or "")
    return {
        "message_id": message.pk,
        "chat_id": message.chat_id,
        "recorded": turn is not None,
        "asked": asked_in(turn) if turn is not None else [],
        "outcome": str(turn.get_outcome_display()) if turn is not None else "",
        "action": action_label(turn.action) if turn is not None else "",
        "reason": HandoffReason.label_for(turn.reason) if turn and turn.reason else "",
        "backend": backend_label(turn.backend) if turn is not None else "",
        "model": str(explained.get("model") or ""),
        "latency_ms": round(turn.latency_ms) if turn and turn.latency_ms is not None else None,
        "model_error": turn.model_error if turn is not None else "",
        "intents": [intent_label(str(i)) for i in _list(explained.get("intents"))],
        "items": _items(lines, decision),
        "lines": lines,
        "total": str(explained.get("total") or ""),
        "proofs": [_strings(p) for p in _list(explained.get("proofs"))],
        "findings": [str(f) for f in _list(turn.guardrail_findings if turn else [])],
        "rules": [str(r) for r in _list(explained.get("rules"))],
        "agreements": [str(a) for a in _list(explained.get("agreements"))],
        # What the assistant wrote, where it is not what was sent (a reply the guardrail
        # stopped, the handoff notice sent instead).
        "reply_written": written if written.strip() and written != message.text else "",
    }


def asked_in(turn: Turn) -> list[str]:
    """The customer's messages this turn answered (voice notes as their transcripts)."""
    rows = Message.objects.filter(
        chat_id=turn.chat_id,
        pk__gte=turn.first_message_id,
        pk__lte=turn.last_message_id,
        author=Message.Author.CUSTOMER,
    ).order_by("pk")
    return [m.content for m in rows if m.content][:20]


def flags_of(message: Message) -> list[dict[str, Any]]:
    rows = MessageFlag.objects.filter(message=message).select_related("flagged_by")
    return [flag_out(flag) for flag in rows.order_by("pk")]


def flag_out(flag: MessageFlag) -> dict[str, Any]:
    return {
        "id": flag.pk,
        "category": flag.category,
        "category_label": str(flag.get_category_display()),
        "note": flag.note,
        "flagged_by": flag.flagged_by.get_username() if flag.flagged_by else "",
        "created_at": flag.created_at,
    }


def backend_label(backend: str) -> str:
    if backend == "catalogue":
        return gettext("Catalogue assistant (the price list and rules, no model)")
    if backend.startswith("llm:"):
        return gettext("Language model (%(name)s endpoint)") % {
            "name": backend.removeprefix("llm:")
        }
    if backend == "fallback":
        return gettext("No model answered (fallback)")
    return backend or gettext("Not recorded")


def intent_label(intent: str) -> str:
    if intent in INTENT_LABELS:
        return gettext(INTENT_LABELS[intent])
    return HandoffReason.label_for(intent)


def action_label(action: str) -> str:
    return gettext(ACTION_LABELS[action]) if action in ACTION_LABELS else action


def _items(lines: list[dict[str, str]], decision: dict[str, Any]) -> list[dict[str, str]]:
    """What the assistant read the customer wants: the quoted lines' items, else the items on
    the decision's facts (older turns, handoffs)."""
    if lines:
        keys = ("item", "sku", "qty", "unit")
        return [{key: line.get(key, "") for key in keys} for line in lines]
    facts = decision.get("facts")
    facts = facts if isinstance(facts, dict) else {}
    items = []
    for entry in _list(facts.get("items")):
        if isinstance(entry, dict):
            qty = entry.get("qty")
            shown = "" if qty is None else f"{qty:g}" if isinstance(qty, float) else str(qty)
            items.append({"item": str(entry.get("name", "")), "sku": "", "qty": shown, "unit": ""})
    return items


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
