"""The guardrail's entry points: `check` (reads the channel's list and the business's settings),
`check_against` (given them, as the turn and replay call it), `findings` (every `Finding` for
a reply) and `proofs` (what backs each amount it states, for the manager's "Why?"). Each part
of the reply is proven by its own module: amounts of money (`amounts`), percentages,
deadlines, dates and times (`terms`), promises (`promises`)."""

from __future__ import annotations

from assistant.decision.guardrails.amounts import amount_proofs, unbacked_amounts
from assistant.decision.guardrails.finding import Finding, GuardrailResult, Proof
from assistant.decision.guardrails.promises import forbidden_promises, promised_terms
from assistant.decision.guardrails.terms import (
    unbacked_dates_and_times,
    unbacked_deadlines,
    unbacked_percentages,
)
from assistant.knowledge.effective import Knowledge, assistant_settings, knowledge_for_channel
from assistant.models import AssistantSettings
from assistant.schema import Decision, TurnInput


def check(decision: Decision, turn: TurnInput) -> GuardrailResult:
    """Whether the decision's reply may be sent, with what was found if not."""
    knowledge = knowledge_for_channel(turn.channel_id)
    config = assistant_settings(turn.business_id)
    return check_against(decision, turn, knowledge, config)


def check_against(
    decision: Decision, turn: TurnInput, knowledge: Knowledge, config: AssistantSettings
) -> GuardrailResult:
    found = findings(decision.reply_to_customer, turn, knowledge, config)
    return GuardrailResult(allowed=not found, blocked=[f.text for f in found])


def findings(
    reply: str, turn: TurnInput, knowledge: Knowledge, config: AssistantSettings
) -> list[Finding]:
    if not reply.strip():
        return []
    rules = _reference_text(knowledge, config)
    managers = [e.text for e in turn.history if e.speaker == "manager"]
    reference = "\n".join([rules, *managers])
    # Numbers in the list's own names ("Extended warranty 1 year", "Milk 2.5%") are the names'.
    named = "\n".join([reference, *(i.name for i in knowledge.items)])
    result: list[Finding] = []
    result += unbacked_amounts(reply, turn, knowledge, rules, managers)
    result += unbacked_percentages(reply, named)
    result += unbacked_deadlines(reply, named)
    result += unbacked_dates_and_times(reply, named)
    result += promised_terms(reply, turn, knowledge, rules, managers)
    result += forbidden_promises(reply, config)
    return list(dict.fromkeys(result))


def proofs(
    reply: str, turn: TurnInput, knowledge: Knowledge, config: AssistantSettings
) -> list[Proof]:
    """How each amount of money in the reply is backed, in the order the reply states them."""
    if not reply.strip():
        return []
    rules = _reference_text(knowledge, config)
    managers = [e.text for e in turn.history if e.speaker == "manager"]
    return amount_proofs(reply, turn, knowledge, rules, managers)


def _reference_text(knowledge: Knowledge, config: AssistantSettings) -> str:
    """Everything the business wrote down: rules, descriptions, availability notes."""
    parts = [config.business_rules or ""]
    for item in knowledge.items:
        parts.append(item.description)
        parts.append(item.availability_note)
    return "\n".join(p for p in parts if p)
