"""The model's reading of a turn, acted on by code: the model reads, code decides and counts.

A model reports what the customer's new message does (`Reading.intents`, and in `negated` what
the customer denies: "менеджер не нужен") and what they want (`Reading.items`: the price list's
SKU and a quantity in the item's unit). A small model reads these well and acts on them badly:
it asked back where its own summary said "the customer asks for a person", and it multiplied
wrongly. So here, after a valid model answer and before `escalation.normalise`:

- an intent the business hands off for (complaint, asks_for_human, non_standard_terms,
  ready_to_buy; not denied) makes the turn a handoff with that reason, whatever the action;
- a model handoff for a reason the customer denied is answered when the items give a quote;
- a clarify whose items each resolve to one list item is an answer;
- every product amount is computed by `assistant.decision.composer` and put where the model
  wrote `{quote}` (appended to an answer without one). An SKU not in the list is not quoted.

A decision without a reading is returned unchanged. The guardrail remains the last proof.
A handoff's summary is the model's, checked by `summarised` to name the items it read.
"""

from __future__ import annotations

from decimal import Decimal

from assistant.decision import summary
from assistant.decision.composer import (
    applying_terms,
    order_with_charges,
    quote_lines,
    with_party,
)
from assistant.decision.intents import detect_intent, rules_give_the_terms
from assistant.decision.reading import Quote, agreed_for_another_quantity, find, with_agreement
from assistant.decision.replies import handoff_message, language_for, text
from assistant.knowledge.agreements import agreements, manager_statements
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.fees import child_rates
from assistant.knowledge.matching import party_of
from assistant.knowledge.rules import NO_RULE, rule_answer
from assistant.models import AssistantSettings
from assistant.schema import Action, Decision, Item, Reading, TurnInput, WantedItem
from inbox.conversations.models import HandoffReason

QUOTE = "{quote}"
# The intents that give a turn to a person, the first that applies wins.
HANDOFF_INTENTS: tuple[str, ...] = (
    HandoffReason.COMPLAINT,
    HandoffReason.ASKS_FOR_HUMAN,
    HandoffReason.NON_STANDARD_TERMS,
    HandoffReason.READY_TO_BUY,
)


# What code reads in the customer's words and hands off whatever the model answered (special
# terms too, unless the business rules already give the terms asked about).
CODE_READ_HANDOFFS = frozenset(
    {
        HandoffReason.COMPLAINT,
        HandoffReason.ASKS_FOR_HUMAN,
        HandoffReason.READY_TO_BUY,
        HandoffReason.NON_STANDARD_TERMS,
    }
)


def _code_hands_off(reason: str, message: str, config: AssistantSettings) -> bool:
    if reason not in CODE_READ_HANDOFFS:
        return False
    if reason != HandoffReason.NON_STANDARD_TERMS:
        return True
    rule = rule_answer(message, config.business_rules or "")
    return rule is None or not rules_give_the_terms(message, rule)


def applied(
    decision: Decision, turn: TurnInput, knowledge: Knowledge, config: AssistantSettings
) -> Decision:
    """The model's decision once code has acted on its reading (unchanged without one)."""
    reading = decision.reading
    if reading is None:
        return decision
    lang = language_for(turn)
    quotes = quotes_for(reading, turn, knowledge)
    composed = composed_quote(quotes, turn, config, lang)
    message = " ".join(entry.text for entry in turn.pending)
    read_by_code = detect_intent(message, knowledge.catalogue.name_words)
    if decision.action == Action.HANDOFF or not _code_hands_off(read_by_code, message, config):
        read_by_code = ""  # the model's own handoff keeps its reason
    reason = handoff_reason(reading, quotes, set(config.reason_codes()), read_by_code)
    if reason:
        decided = handed_off(decision, reason, quotes, composed, lang)
    elif quotes and _items_answer_it(decision, reading, knowledge):
        decided = _answer(decision, composed)
    else:
        decided = with_quote(decision, composed)
    if not decided.reply_to_customer.strip():
        decided = _nothing_to_quote(decided, set(config.reason_codes()), lang)
    return _with_facts(decided, quotes)


def summarised(decision: Decision, turn: TurnInput, knowledge: Knowledge) -> Decision:
    """A handoff's card (`assistant.decision.summary`): the model's summary when it names every
    item of its reading (by SKU or name), else with the offline request appended; the offline
    summary when the model wrote none. Without a reading, the items code finds in the message
    are the ones it must name."""
    if decision.action != Action.HANDOFF:
        return decision
    if decision.reading is not None:
        quotes = quotes_for(decision.reading, turn, knowledge)
    else:
        quotes = find(" ".join(e.text for e in turn.pending), knowledge).quotes
    found = summary.from_quotes(quotes)
    agreed = agreements(turn.history, knowledge) if knowledge.items else []
    wanted = summary.with_agreements(found, agreed, knowledge)
    fallback = summary.offline(decision.reason, turn, wanted, city=decision.facts.city)
    kept = summary.checked(decision.summary, fallback, found)
    return decision.model_copy(update={"summary": kept})


def item_for(wanted: WantedItem, knowledge: Knowledge) -> KnowledgeItem | None:
    """The one list item a reading's entry names: by SKU, else (a list without SKUs) by its
    exact name; None when none or several fit, so nothing is ever quoted on a guess."""
    key = " ".join(wanted.sku.split()).casefold()
    if not key:
        return None
    for field in ("sku", "name"):
        fits = [i for i in knowledge.items if " ".join(getattr(i, field).split()).casefold() == key]
        if fits:
            return fits[0] if len(fits) == 1 else None
    return None


def all_resolved(reading: Reading, knowledge: Knowledge) -> bool:
    """Every item of the reading is one list item: nothing is left to ask."""
    return bool(reading.items) and all(item_for(w, knowledge) for w in reading.items)


def quotes_for(reading: Reading, turn: TurnInput, knowledge: Knowledge) -> list[Quote]:
    """The reading's items that are in the list, once each, at a price a manager agreed in
    this chat where there is one (`reading.with_agreement`, as the catalogue assistant)."""
    agreed = agreements(turn.history, knowledge) if knowledge.items else []
    # Code reads quantities too: where the customer's own words give an item a quantity
    # ("30 мешков", "12 кв.м"), that is the quantity, whatever the model wrote.
    message = " ".join(entry.text for entry in turn.pending)
    counted = {q.item: q.qty for q in find(message, knowledge).quotes if q.qty != 1}
    quotes: list[Quote] = []
    for wanted in reading.items:
        item = item_for(wanted, knowledge)
        qty = _quantity(wanted.qty)
        if item is None or qty is None or item in [q.item for q in quotes]:
            continue
        quotes.append(with_agreement(Quote(item, counted.get(item, qty)), agreed, knowledge))
    return quotes


def composed_quote(
    quotes: list[Quote], turn: TurnInput, config: AssistantSettings, lang: str
) -> str:
    """The lines, total and (when asked with the total) the rules' fees for `{quote}`."""
    if not quotes:
        return ""
    message = " ".join(entry.text for entry in turn.pending)
    rules = config.business_rules or ""
    quotes = with_party(quotes, party_of(message), child_rates(rules))
    rule = rule_answer(message, rules, manager_statements(turn.history))
    if rule is None and applying_terms(message, rules):
        rule = NO_RULE  # no rule sentence, a discount or surcharge met
    if rule is None:
        return quote_lines(quotes, lang, with_availability=True)
    return order_with_charges(quotes, message, rule, lang, rules)


def handoff_reason(
    reading: Reading, quotes: list[Quote], codes: set[str], read_by_code: str = ""
) -> str:
    """The reason the turn goes to a person by the reading ("" for none): the first intent
    the customer did not deny and the business hands off for, the model's or the one code
    reads in the message (`intents.detect_intent`: a complaint is a handoff even when the
    model missed it); a manager's price given for another quantity, or an item marked
    "manager only", is special terms (as in the catalogue assistant)."""
    intents = {*reading.intents, read_by_code} - {""}
    for reason in HANDOFF_INTENTS:
        if reason in intents and reason not in reading.negated and reason in codes:
            return reason
    if HandoffReason.NON_STANDARD_TERMS in codes and any(
        agreed_for_another_quantity(q) or q.item.manager_only for q in quotes
    ):
        return HandoffReason.NON_STANDARD_TERMS
    return ""


def handed_off(
    decision: Decision, reason: str, quotes: list[Quote], composed: str, lang: str
) -> Decision:
    """A handoff for `reason`. The model's own handoff reply is kept (its `{quote}` filled);
    a reply written for another action is replaced by the business's handoff message, with
    the items' lines when the customer wants to buy them."""
    if decision.action == Action.HANDOFF and decision.reply_to_customer.strip():
        reply = _filled(decision.reply_to_customer, composed)
    else:
        reply = handoff_message(reason, lang)
        if quotes and reason == HandoffReason.READY_TO_BUY:
            reply += "\n" + quote_lines(quotes, lang)
    return decision.model_copy(
        update={"action": Action.HANDOFF, "reason": reason, "reply_to_customer": reply}
    )


def with_quote(decision: Decision, composed: str) -> Decision:
    """The reply with the composed lines where the model wrote `{quote}`; an answer without
    the placeholder gets them appended (unless it already has them word for word)."""
    reply = decision.reply_to_customer
    if QUOTE in reply:
        reply = _filled(reply, composed)
    elif composed and decision.action == Action.ANSWER and composed not in reply:
        reply = f"{reply.rstrip()}\n{composed}"
    return decision.model_copy(update={"reply_to_customer": reply})


def _answer(decision: Decision, composed: str) -> Decision:
    """An answer with the composed lines: in the model's reply where it left `{quote}`, else
    alone (its question, or its handoff message, was for another action)."""
    reply = decision.reply_to_customer
    answer = _filled(reply, composed) if QUOTE in reply else composed
    return decision.model_copy(
        update={"action": Action.ANSWER, "reason": "", "reply_to_customer": answer}
    )


def _items_answer_it(decision: Decision, reading: Reading, knowledge: Knowledge) -> bool:
    """A clarify whose items are each one list item, or a handoff for a reason the customer
    denied: the quote is the answer."""
    if decision.action == Action.CLARIFY:
        return all_resolved(reading, knowledge)
    return decision.action == Action.HANDOFF and decision.reason in reading.negated


def _nothing_to_quote(decision: Decision, codes: set[str], lang: str) -> Decision:
    """The reply was only `{quote}` and nothing the model named is in the list."""
    if decision.action == Action.HANDOFF:
        return decision  # escalation.normalise gives it the business's handoff message
    reason = HandoffReason.OUTSIDE_KNOWLEDGE_BASE
    if reason in codes:
        return decision.model_copy(
            update={
                "action": Action.HANDOFF,
                "reason": reason,
                "reply_to_customer": handoff_message(reason, lang),
            }
        )
    update = {
        "action": Action.CLARIFY,
        "reason": reason,
        "reply_to_customer": text("clarify.miss", lang),
    }
    return decision.model_copy(update=update)


def _filled(reply: str, composed: str) -> str:
    """`{quote}` replaced by the composed lines (once; a repeated placeholder is dropped)."""
    first, _, rest = reply.partition(QUOTE)
    filled = first + composed + rest.replace(QUOTE, "")
    lines = [line.rstrip() for line in filled.strip().splitlines()]
    return "\n".join(line for n, line in enumerate(lines) if line or (n and lines[n - 1]))


def _quantity(qty: float | None) -> Decimal | None:
    """The reading's quantity as a Decimal (1 when not given); None when it is no quantity."""
    if qty is None:
        return Decimal(1)
    if not 0 < qty < 1_000_000:
        return None
    value = Decimal(str(qty))
    return Decimal(int(value)) if value == value.to_integral_value() else value


def _with_facts(decision: Decision, quotes: list[Quote]) -> Decision:
    """The quoted items on the facts for the manager, where the model listed none."""
    if decision.facts.items or not quotes:
        return decision
    items = [Item(name=q.item.name, qty=float(q.qty)) for q in quotes]
    return decision.model_copy(update={"facts": decision.facts.model_copy(update={"items": items})})
