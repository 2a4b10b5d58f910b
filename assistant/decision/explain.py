"""What a turn's "Why?" shows a manager, recorded when the turn decides: what the assistant
read (the items with quantities and units, the customer's intent), the lines and total the
composer computed from them, the rule sentences and agreed prices it used, how the guardrail
backed each amount, and which model answered. The turn stores it beside the decision
(`Turn.decision["explained"]`), so the panel shows what held when the reply was written, not
what the price list says today.

The items are read again with the same functions the backend used (`model_reading.quotes_for`
on the model's reading, `catalogue.quotes_read` for the catalogue assistant): both are pure
functions of the turn, the list and the settings.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from django.conf import settings

from assistant.decision import catalogue, guardrails, model_reading
from assistant.decision.intents import detect_intent
from assistant.decision.reading import Quote
from assistant.knowledge.agreements import manager_statements
from assistant.knowledge.effective import Knowledge
from assistant.knowledge.matching import format_quantity
from assistant.knowledge.money import format_money
from assistant.knowledge.rules import rule_answer
from assistant.llm.business import BUSINESS_ENDPOINT, DEFAULT_MODEL
from assistant.models import AssistantSettings
from assistant.schema import Decision, TurnInput

log = logging.getLogger(__name__)

KEY = "explained"  # where in `Turn.decision` the turn stores it


def explained(
    decision: Decision,
    turn: TurnInput,
    knowledge: Knowledge,
    config: AssistantSettings,
    backend: str,
) -> dict[str, Any]:
    """The facts behind `decision` (the backend's, before the guardrail), as JSON; empty when
    they cannot be read: the record for the manager never costs the customer the reply."""
    try:
        return _explained(decision, turn, knowledge, config, backend)
    except Exception:
        log.exception("turn.explain_failed", extra={"chat_id": turn.chat_id})
        return {}


def _explained(
    decision: Decision,
    turn: TurnInput,
    knowledge: Knowledge,
    config: AssistantSettings,
    backend: str,
) -> dict[str, Any]:
    message = " ".join(entry.text for entry in turn.pending)
    if decision.reading is not None:
        quotes = model_reading.quotes_for(decision.reading, turn, knowledge)
        intents: list[str] = list(decision.reading.intents)
    else:
        quotes = catalogue.quotes_read(turn, knowledge, config) if backend == "catalogue" else []
        intent = detect_intent(message, knowledge.catalogue.name_words)
        intents = [intent] if intent else []
    rule = rule_answer(message, config.business_rules or "", manager_statements(turn.history))
    proofs = guardrails.proofs(decision.reply_to_customer, turn, knowledge, config)
    return {
        "intents": intents,
        "lines": [_line(q) for q in quotes],
        "total": _total(quotes),
        "rules": list(rule.sentences) if rule is not None else [],
        "agreements": [q.agreed.words[:300] for q in quotes if q.agreed is not None],
        "proofs": [{"amount": p.amount, "basis": p.basis} for p in proofs],
        "model": model_of(backend, config),
    }


def _line(quote: Quote) -> dict[str, str]:
    item = quote.item
    return {
        "item": item.name,
        "sku": item.sku,
        "qty": format_quantity(quote.qty),
        "unit": item.unit or "",
        "unit_price": format_money(quote.unit_price, item.currency),
        "total": format_money(quote.total, item.currency),
        "agreed": quote.agreed.words[:300] if quote.agreed is not None else "",
    }


def _total(quotes: list[Quote]) -> str:
    """The order's total, when there are several lines in one currency."""
    currencies = {q.item.currency for q in quotes}
    if len(quotes) < 2 or len(currencies) != 1:
        return ""
    return format_money(sum((q.total for q in quotes), Decimal(0)), currencies.pop())


def model_of(backend: str, config: AssistantSettings) -> str:
    """The model an `llm:<endpoint>` backend names ("" for the catalogue and the fallback)."""
    endpoint = backend.removeprefix("llm:") if backend.startswith("llm:") else ""
    if endpoint == BUSINESS_ENDPOINT:
        return config.model_name.strip() or DEFAULT_MODEL
    if endpoint == "secondary":
        return str(getattr(settings, "LLM_FALLBACK_MODEL", ""))
    return str(getattr(settings, "LLM_MODEL", "")) if endpoint else ""
