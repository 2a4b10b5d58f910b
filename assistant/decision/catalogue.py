"""The catalogue assistant: a deterministic, offline backend. It is NOT a language model.

It answers from the price list (prices and availability, matched across languages and scripts,
each quantity with the item it stands next to: "a table and 4 chairs" → 1 × table + 4 × chair,
with a total) and from the business rules (the sentence that answers a question about delivery,
assembly, hours, payment…, quoted as written); asks which one when several items fit equally;
and hands everything else to a person with the right reason (`assistant.decision.intents`:
asks for a person, wants to buy, special terms, complaint; a denied phrase asks for nothing).
A price a manager agreed in this chat (`assistant.knowledge.agreements`) is quoted instead of
the list's. A question that names nothing gets one clarifying question; the second miss in a
row is handed off as outside_knowledge_base. What the message is about, read with the
conversation (the answer to "which one?", a follow-up, an agreed item), is found by
`assistant.decision.reading`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from assistant.decision import summary
from assistant.decision.composer import (
    TOTAL_RE,
    applying_terms,
    charge_line,
    order_counts,
    order_with_charges,
    per_unit_charges,
    quote_lines,
    with_party,
)
from assistant.decision.intents import INTENTS, detect_intent, rules_give_the_terms
from assistant.decision.reading import (
    Found,
    Quote,
    about_agreed,
    agreed_for_another_quantity,
    asked_back,
    find_in_context,
    last_bot_message,
    mostly_unknown,
    with_agreement,
    with_rule_terms,
)
from assistant.decision.replies import (
    handoff_message,
    language_for,
    text,
)
from assistant.knowledge.agreements import Agreement, agreements, manager_statements
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.fees import NamedFee, child_rates, named_fees
from assistant.knowledge.matching import (
    analyse,
    content_tokens,
    normalise,
    party_of,
    segments,
)
from assistant.knowledge.rules import NO_RULE, RuleAnswer, rule_answer, rule_by_words, topics
from assistant.models import AssistantSettings
from assistant.schema import Action, Decision, Facts, HistoryEntry, Item, TurnInput
from inbox.conversations.models import HandoffReason

__all__ = ["INTENTS", "decide", "detect_intent"]

MAX_OPTIONS = 5

GREETINGS = re.compile(
    r"^(?:hi|hello|hey|good (?:morning|afternoon|evening)|здравствуйте|здравствуй|привет|"
    r"добрый (?:день|вечер)|доброе утро|салем|сәлем|сәлеметсіз бе|ассалаумағалейкум)\b"
)
THANKS = re.compile(r"\b(?:thanks|thank you|thx|спасибо|благодарю|рахмет)\b")
NAME_RE = re.compile(
    r"(?i:my name is|i am|i'm|меня зовут|это|менің атым)\s+([A-ZА-ЯЁӘҒҚҢӨҰҮҺІ][\w-]{1,30})"
)
CITIES = {
    "almaty": "Almaty", "алматы": "Almaty", "алма-ата": "Almaty", "astana": "Astana",
    "астана": "Astana", "shymkent": "Shymkent", "шымкент": "Shymkent", "karaganda": "Karaganda",
    "караганда": "Karaganda", "қарағанды": "Karaganda", "aktobe": "Aktobe", "актобе": "Aktobe",
    "atyrau": "Atyrau", "атырау": "Atyrau", "pavlodar": "Pavlodar", "павлодар": "Pavlodar",
    "kostanay": "Kostanay", "костанай": "Kostanay", "taraz": "Taraz", "тараз": "Taraz",
    "semey": "Semey", "семей": "Semey", "moscow": "Moscow", "москва": "Moscow",
    "москве": "Moscow", "bishkek": "Bishkek", "бишкек": "Bishkek", "tashkent": "Tashkent",
    "ташкент": "Tashkent",
}  # fmt: skip


@dataclass(frozen=True)
class _Reading:
    """What `decide` reads from one turn before it decides: the message, what it asks for, the
    rule sentences and items it is about, and what the business lets the assistant hand off."""

    turn: TurnInput
    lang: str
    message: str
    last_bot: HistoryEntry | None
    codes: set[str]
    intent: str
    rule: RuleAnswer | None
    rules: str  # the business rules as written
    agreed: list[Agreement]
    found: Found
    quotes: list[Quote]
    facts: Facts
    knowledge: Knowledge


def decide(turn: TurnInput, knowledge: Knowledge, config: AssistantSettings) -> Decision:
    """One turn's decision from the price list, the business rules and this chat alone: the
    first of `STEPS` that decides, else a clarifying question."""
    reading = _read(turn, knowledge, config)
    for step in STEPS:
        decision = step(reading)
        if decision is not None:
            return decision
    return _ask_what_is_meant(reading)


def quotes_read(turn: TurnInput, knowledge: Knowledge, config: AssistantSettings) -> list[Quote]:
    """The items, quantities and agreed prices `decide` reads in this turn (what it quotes)."""
    return _read(turn, knowledge, config).quotes


def _read(turn: TurnInput, knowledge: Knowledge, config: AssistantSettings) -> _Reading:
    """The message, its intent, the rule that answers it and the items it is about, read
    with the conversation (the answer to "which one?", a follow-up, an agreed price)."""
    message = " ".join(entry.text for entry in turn.pending).strip()
    last_bot = last_bot_message(turn.history)
    rule = rule_answer(message, config.business_rules, manager_statements(turn.history))
    agreed = agreements(turn.history, knowledge) if knowledge.items else []
    # A terms question leans on the product named before only when it asks a total with it
    # ("сколько тогда с доставкой?").
    leaning = rule is None or bool(TOTAL_RE.search(normalise(message)))
    read_as = with_rule_terms(message, config.business_rules or "", knowledge)
    found = find_in_context(read_as, turn.history, last_bot, knowledge, leaning=leaning)
    found = about_agreed(found, message, agreed, knowledge)
    if rule is None and not found.quotes and not found.ambiguous:
        # Nothing listed is named: a sentence of the rules may still answer in its own words.
        rule = rule_by_words(message, config.business_rules or "")
    quotes = [with_agreement(q, agreed, knowledge) for q in found.quotes]
    quotes = with_party(quotes, party_of(message), child_rates(config.business_rules or ""))
    intent = detect_intent(message, knowledge.catalogue.name_words)
    if intent == HandoffReason.NON_STANDARD_TERMS and rule and rules_give_the_terms(message, rule):
        intent = ""  # the rules already give these terms: quote them
    return _Reading(
        turn=turn,
        lang=language_for(turn),
        message=message,
        last_bot=last_bot,
        codes=set(config.reason_codes()),
        intent=intent,
        rule=rule,
        rules=config.business_rules or "",
        agreed=agreed,
        found=found,
        quotes=quotes,
        facts=_facts(turn, quotes),
        knowledge=knowledge,
    )


def _order_status(r: _Reading) -> Decision | None:
    """Where a placed order is: the list and the rules cannot know, a person can."""
    if r.intent or not ORDER_STATUS_RE.search(normalise(r.message)):
        return None
    return _handoff_asked(r, HandoffReason.OUTSIDE_KNOWLEDGE_BASE)


def _intent(r: _Reading) -> Decision | None:
    """A person asked for, a purchase, special terms, a complaint: handed off, with the items
    quoted when the customer wants to buy them."""
    if not r.intent or r.intent not in r.codes:
        return None
    reply = handoff_message(r.intent, r.lang)
    if r.quotes and r.intent == HandoffReason.READY_TO_BUY:
        lines = [quote_lines([q], r.lang) for q in r.quotes] if _options_named(r) else []
        reply += "\n" + ("\n".join(lines) or quote_lines(r.quotes, r.lang))
    return _handoff(r, r.intent, reply)


def _manager_only(r: _Reading) -> Decision | None:
    """An item marked "manager only" in the price list: a person answers, whatever was asked."""
    held = [q for q in r.quotes if q.item.manager_only]
    if not held or HandoffReason.NON_STANDARD_TERMS not in r.codes:
        return None
    reason = HandoffReason.NON_STANDARD_TERMS
    decision = _handoff(r, reason, handoff_message(reason, r.lang))
    names = ", ".join(q.item.name for q in held)
    only = "Only a manager answers about" if r.lang == "en" else "Отвечает только менеджер"
    return decision.model_copy(update={"summary": f"{only}: {names}. {decision.summary}"})


def _agreed_for_another_quantity(r: _Reading) -> Decision | None:
    """The manager's price was for another quantity: only a person can say what holds now."""
    if not any(agreed_for_another_quantity(q) for q in r.quotes):
        return None
    return _handoff_asked(r, HandoffReason.NON_STANDARD_TERMS)


def _rules_answer(r: _Reading) -> Decision | None:
    """A question about the terms: the rule sentences that answer it. The products it is about
    are quoted only when the customer also asks their price ("the bed and delivery, how much
    altogether?")."""
    if r.rule is None:
        return None
    shown = [q for q in r.quotes if _asked_price_of(q, r.message, r.knowledge)]
    extras = _named_fees(r) if shown else []
    if r.found.unread and shown:
        parts = _each_without_total(r, shown)
    elif shown:
        parts = [order_with_charges(shown, r.message, r.rule, r.lang, r.rules, extras)]
    else:
        parts = []
    asks_total = bool(shown) and bool(TOTAL_RE.search(normalise(r.message)))
    if not asks_total and HOW_MUCH_RE.search(normalise(r.message)):
        # "20 мешков на 4 этаж, сколько за подъём?": the fee the rules charge per bag and
        # floor, computed, above the sentence that says so (a total already counts it).
        fees = per_unit_charges(r.rule.topics, r.message, r.rules, order_counts(r.quotes)) or []
        currency = r.knowledge.default_currency
        parts += [charge_line(charge, currency, r.lang) for charge in fees]
    parts += list(r.rule.sentences)
    return Decision(action=Action.ANSWER, reply_to_customer="\n".join(parts), facts=r.facts)


def _several_fit(r: _Reading) -> Decision | None:
    """Several items fit equally: each price when the customer asks for them all ("both"),
    else which one? Words the list mostly does not know are a miss, not a choice."""
    ambiguous = r.found.ambiguous
    if not ambiguous or (not r.quotes and mostly_unknown(r.message, r.knowledge)):
        return None
    if _wants_every_option(r.message, ambiguous):
        # Compared, not ordered together: each price, no total.
        every = [Quote(item, Decimal(1)) for item in ambiguous]
        compared = [with_agreement(q, r.agreed, r.knowledge) for q in [*r.quotes, *every]]
        lines = [quote_lines([q], r.lang, with_availability=True) for q in compared]
        return Decision(action=Action.ANSWER, reply_to_customer="\n".join(lines), facts=r.facts)
    return Decision(
        action=Action.CLARIFY,
        reason=HandoffReason.AMBIGUOUS,
        summary="",
        reply_to_customer=_options(ambiguous, r.lang),
        facts=r.facts,
    )


def _quoted(r: _Reading) -> Decision | None:
    """The items the message is about, each with its price, quantity and availability."""
    if not r.quotes:
        return None
    extras = _named_fees(r)
    if r.found.unread:
        reply = "\n".join(_each_without_total(r, r.quotes))
        return Decision(action=Action.ANSWER, reply_to_customer=reply, facts=r.facts)
    if _asks_each(r.message, r.quotes) or _options_named(r):
        # "сколько стоит одна и сколько пакет из 10?": two prices compared, no order to total.
        each = [quote_lines([q], r.lang, with_availability=True) for q in r.quotes]
        return Decision(action=Action.ANSWER, reply_to_customer="\n".join(each), facts=r.facts)
    reply = (
        order_with_charges(r.quotes, r.message, NO_RULE, r.lang, r.rules, extras)
        if extras or applying_terms(r.message, r.rules)
        else quote_lines(r.quotes, r.lang, with_availability=True)
    )
    return Decision(action=Action.ANSWER, reply_to_customer=reply, facts=r.facts)


def _options_named(r: _Reading) -> bool:
    """Several items fit what one part of the message named, with no count and no total
    asked ("How much is the Charyn day trip?"): each price, not the sum of the options."""
    return r.found.options and not TOTAL_RE.search(normalise(r.message))


def _each_without_total(r: _Reading, quotes: list[Quote]) -> list[str]:
    """Each line on its own, and what the list does not name: a total without a part the
    customer counted ("фумленту 3 шт") would be wrong."""
    each = [quote_lines([q], r.lang, with_availability=True) for q in quotes]
    parts = ", ".join(f"«{part}»" for part in r.found.unread)
    return [*each, text("answer.unread", r.lang, parts=parts)]


def _named_fees(r: _Reading) -> list[NamedFee]:
    """The rules' fixed extras the customer asks the price with ("торт 2 кг с надписью,
    сколько?"): counted in the total by the composer."""
    if not HOW_MUCH_RE.search(normalise(r.message)) and not TOTAL_RE.search(normalise(r.message)):
        return []
    return named_fees(r.message, r.rules, r.knowledge.catalogue.name_words)


def _small_talk(r: _Reading) -> Decision | None:
    """A greeting or a thank-you that asks nothing more."""
    normalised = normalise(r.message)
    if GREETINGS.match(normalised) and not content_tokens(analyse(_strip_greeting(normalised))):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.greeting", r.lang))
    if THANKS.search(normalised) and _only_closing(THANKS.sub(" ", normalised)):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.thanks", r.lang))
    return None


def _missed_twice(r: _Reading) -> Decision | None:
    """Asked back once already and still nothing in the list ("swing chairs for a terrace")."""
    if not asked_back(r.last_bot):
        return None
    return _handoff_asked(r, HandoffReason.OUTSIDE_KNOWLEDGE_BASE)


def _ask_what_is_meant(r: _Reading) -> Decision:
    """Nothing in the list or the rules answers it yet: one clarifying question."""
    return Decision(
        action=Action.CLARIFY,
        reason=HandoffReason.OUTSIDE_KNOWLEDGE_BASE,
        summary="",
        reply_to_customer=text("clarify.miss", r.lang),
        facts=r.facts,
    )


# `decide`'s steps in order: each decides the turn or leaves it (None) to the next.
STEPS: tuple[Callable[[_Reading], Decision | None], ...] = (
    _order_status,
    _intent,
    _manager_only,
    _agreed_for_another_quantity,
    _rules_answer,
    _several_fit,
    _quoted,
    _small_talk,
    _missed_twice,
)


def _handoff_asked(r: _Reading, reason: str) -> Decision | None:
    """A handoff with the business's own reply for `reason`, the customer's words on the card;
    None where the business does not hand off for `reason`."""
    if reason not in r.codes:
        return None
    reply = handoff_message(reason, r.lang)
    return _handoff(r, reason, reply)


# A question about an order already placed ("когда привезут мой шкаф?", "order status").
ORDER_STATUS_RE = re.compile(
    r"\bmy (?:order|delivery|parcel|package)\b|order status|tracking|track(?:ing)? number|"
    r"\bмо(?:й|его|ю|и|ем) (?:заказ|шкаф|диван|стол|посылк|товар|доставк)|статус заказа|"
    r"\bтрек|когда привез[уё]т мо|менің тапсырыс"
)
# Words that end a conversation politely without asking anything ("спасибо, подумаю").
CLOSING_WORDS = frozenset(
    [
        "great",
        "perfect",
        "cool",
        "awesome",
        "nice",
        "good",
        "fine",
        "super",
        "got",
        "it",
        "will",
        "think",
        "about",
        "later",
        "bye",
        "see",
        "отлично",
        "супер",
        "класс",
        "хорошо",
        "понятно",
        "ясно",
        "подумаю",
        "думать",
        "буду",
        "подумать",
        "позже",
        "пока",
        "большое",
        "огромное",
        "всё",
        "все",
        "ладно",
        "керемет",
        "жақсы",
        "түсінікті",
        "ойланамын",
        "сау",
        "болыңыз",
        "көп",
    ]
)
# A question about an amount: "сколько", "how much", "қанша", "почём".
HOW_MUCH_RE = re.compile(r"сколько|скока|почем|how much|what.{0,10}cost|қанша|стоимость|цена")
EVERY_OPTION_RE = re.compile(
    r"\bboth\b|\bthe (?:two|three|four)\b|\ball (?:of )?(?:the|them|your)\b|\bоба\b|"
    r"\bобе\b|\bобоих\b|\bвсе (?:\w+ )?(?:варианты|модели|виды)\b|екеуі|екеуін"
)


def _only_closing(text: str) -> bool:
    return all(t.word in CLOSING_WORDS for t in content_tokens(analyse(text)))


def _asked_price_of(quote: Quote, message: str, knowledge: Knowledge) -> bool:
    """Whether the customer asks this item's price, not only a term about it: named apart
    from the term's words, or with a quantity, or in a request for the total."""
    if TOTAL_RE.search(normalise(message)) or quote.qty > 1:
        return True
    index = knowledge.items.index(quote.item)
    return any(
        index in {m.index for group, _qty in knowledge.catalogue.order_lines(part) for m in group}
        for part in segments(message)
        if not topics(part)
    )


def _asks_each(message: str, quotes: list[Quote]) -> bool:
    """Whether the message asks a price once per item, none of them a total: each is quoted on
    its own ("how much is one, and how much the pack of 10?")."""
    low = normalise(message)
    asked = len(HOW_MUCH_RE.findall(low))
    return len(quotes) > 1 and asked >= len(quotes) and not TOTAL_RE.search(low)


def _wants_every_option(message: str, options: list[KnowledgeItem]) -> bool:
    found = EVERY_OPTION_RE.search(normalise(message))
    if not found:
        return False
    count = {"two": 2, "three": 3, "four": 4}.get(found.group(0).split()[-1], len(options))
    return count == len(options) and len(options) <= MAX_OPTIONS


def _handoff(r: _Reading, reason: str, reply: str) -> Decision:
    """A handoff whose card keeps the request (`assistant.decision.summary`)."""
    wanted = summary.with_agreements(summary.from_quotes(r.quotes), r.agreed, r.knowledge)
    return Decision(
        action=Action.HANDOFF,
        reason=reason,
        summary=summary.offline(reason, r.turn, wanted, city=r.facts.city),
        reply_to_customer=reply,
        facts=r.facts,
    )


def _options(items: list[KnowledgeItem], lang: str) -> str:
    """Which one? by name only: the price comes with the answer, and a price of an item the
    customer did not mean is a price they were not asked about."""
    shown = [i.name_in(lang) for i in items[:MAX_OPTIONS]]
    if len(items) > MAX_OPTIONS:
        shown.append(text("answer.more", lang, count=str(len(items) - MAX_OPTIONS)))
    joined = ", ".join(shown[:-1]) + f" {text('word.or', lang)} " + shown[-1]
    return text("clarify.ambiguous", lang, options=joined)


def _facts(turn: TurnInput, quotes: list[Quote]) -> Facts:
    everything = " ".join(e.text for e in [*turn.history, *turn.pending] if e.speaker == "customer")
    name_match = NAME_RE.search(everything)
    city = next(
        (CITIES[w] for w in re.findall(r"[\w-]+", normalise(everything)) if w in CITIES), None
    )
    return Facts(
        name=name_match.group(1) if name_match else None,
        city=city,
        items=[Item(name=q.item.name, qty=float(q.qty)) for q in quotes],
    )


def _strip_greeting(text: str) -> str:
    return GREETINGS.sub(" ", text)
