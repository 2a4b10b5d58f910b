"""The catalogue assistant: a deterministic, offline backend. It is NOT a language model.

It answers from the price list (prices and availability, matched across languages and scripts,
each quantity with the item it stands next to: "a table and 4 chairs" → 1 × table + 4 × chair,
with a total) and from the business rules (the sentence that answers a question about delivery,
assembly, hours, payment…, quoted as written); asks which one when several items fit equally;
and hands everything else to a person with the right reason (`assistant.decision.intents`:
asks for a person, wants to buy, special terms, complaint; a denied phrase asks for nothing).
A price a manager agreed in this chat (`assistant.knowledge.agreements`) is quoted instead of
the list's. A question that names nothing gets one clarifying question; the second miss in a
row is handed off as outside_knowledge_base. A "which one?" question expires when the customer
asks about something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from assistant.decision.intents import INTENTS, detect_intent, mentions
from assistant.decision.replies import (
    availability_phrase,
    handoff_message,
    is_text,
    language_for,
    text,
)
from assistant.knowledge.agreements import Agreement, agreed_price, agreements, manager_statements
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.matching import analyse, content_tokens, normalise
from assistant.knowledge.money import format_money
from assistant.knowledge.rules import RuleAnswer, rule_answer, topics
from assistant.models import AssistantSettings
from assistant.schema import Action, Decision, Facts, HistoryEntry, Item, TurnInput

__all__ = ["INTENTS", "decide", "detect_intent"]

MAX_OPTIONS = 5
# How far back a follow-up without a product ("and the price?") looks for what was discussed.
CONTEXT_ENTRIES = 6

GREETINGS = re.compile(
    r"^(?:hi|hello|hey|good (?:morning|afternoon|evening)|здравствуйте|здравствуй|привет|"
    r"добрый (?:день|вечер)|доброе утро|салем|сәлем|сәлеметсіз бе|ассалаумағалейкум)\b"
)
THANKS = re.compile(r"\b(?:thanks|thank you|thx|спасибо|благодарю|рахмет)\b")
NAME_RE = re.compile(
    r"(?i:my name is|i am|i'm|меня зовут|это|менің атым)\s+([A-ZА-ЯЁӘҒҚҢӨҰҮҺІ][\w-]{1,30})"
)
# A follow-up that asks about price or stock without naming the product again.
PRICE_QUESTION = re.compile(
    r"price|how much|cost|in stock|available|total|цен|сколько|стоит|стоят|почем|налич|"
    r"итого|қанша|баға|бар ма"
)
ORDINALS: dict[str, int] = {
    "first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1, "первый": 0, "первая": 0,
    "первое": 0, "первую": 0, "второй": 1, "вторая": 1, "второе": 1, "вторую": 1,
    "третий": 2, "третья": 2, "третье": 2, "третью": 2, "последний": -1, "последнюю": -1,
    "бірінші": 0, "екінші": 1, "үшінші": 2,
}  # fmt: skip
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
class Quote:
    item: KnowledgeItem
    qty: int
    # The price a manager agreed for this item in this chat (None: the list price holds).
    agreed: Agreement | None = None

    @property
    def unit_price(self) -> Decimal:
        return self.agreed.unit_price if self.agreed else self.item.price

    @property
    def total(self) -> Decimal:
        return self.unit_price * self.qty


@dataclass(frozen=True)
class Found:
    quotes: list[Quote]
    ambiguous: list[KnowledgeItem]


def decide(turn: TurnInput, knowledge: Knowledge, config: AssistantSettings) -> Decision:
    """One turn's decision from the price list, the business rules and this chat alone."""
    lang = language_for(turn)
    message = " ".join(entry.text for entry in turn.pending).strip()
    last_bot = _last_bot_message(turn.history)
    codes = set(config.reason_codes())
    intent = detect_intent(message)
    found = _find_in_context(message, turn.history, last_bot, knowledge)
    agreed = agreements(turn.history, knowledge) if knowledge.items else []
    quotes = [_with_agreement(q, agreed, knowledge) for q in found.quotes]
    facts = _facts(turn, quotes)
    said = manager_statements(turn.history)
    rule = rule_answer(message, config.business_rules, said)

    if intent == "non_standard_terms" and rule and any(mentions(intent, s) for s in rule.sentences):
        intent = ""  # the rules already give these terms: quote them
    if intent and intent in codes:
        reply = handoff_message(intent, lang)
        if quotes and intent == "ready_to_buy":
            reply += "\n" + _quote_lines(quotes, lang)
        return _handoff(intent, reply, quotes, lang, facts)
    conditional = [q for q in quotes if _agreed_for_another_quantity(q)]
    if conditional and "non_standard_terms" in codes:
        # The manager's price was for another quantity: only a person can say what holds now.
        return _handoff(
            "non_standard_terms",
            handoff_message("non_standard_terms", lang),
            quotes,
            lang,
            facts,
            asked=message,
        )
    after_miss = last_bot is not None and is_text(last_bot.text, "clarify.miss")
    if (
        found.ambiguous
        and not quotes
        and after_miss
        and "outside_knowledge_base" in codes
        and _mostly_unknown(message, knowledge)
    ):
        # Asked again for something the list does not have ("swing chairs for the terrace"):
        # offering the chairs we do have would be a second miss.
        return _handoff(
            "outside_knowledge_base",
            handoff_message("outside_knowledge_base", lang),
            quotes,
            lang,
            facts,
            asked=message,
        )
    if found.ambiguous:
        return Decision(
            action=Action.CLARIFY,
            reason="ambiguous",
            summary="",
            reply_to_customer=_options(found.ambiguous, lang),
            facts=facts,
        )
    if quotes or rule:
        parts = [_quote_lines(quotes, lang, with_availability=True)] if quotes else []
        parts += _rule_lines(rule) if rule else []
        return Decision(
            action=Action.ANSWER,
            reason="",
            summary="",
            reply_to_customer="\n".join(parts),
            facts=facts,
        )
    normalised = normalise(message)
    if GREETINGS.match(normalised) and not content_tokens(analyse(_strip_greeting(normalised))):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.greeting", lang))
    if THANKS.search(normalised) and not content_tokens(analyse(THANKS.sub(" ", normalised))):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.thanks", lang))
    if after_miss and "outside_knowledge_base" in codes:
        return _handoff(
            "outside_knowledge_base",
            handoff_message("outside_knowledge_base", lang),
            quotes,
            lang,
            facts,
            asked=message,
        )
    return Decision(
        action=Action.CLARIFY,
        reason="outside_knowledge_base",
        summary="",
        reply_to_customer=text("clarify.miss", lang),
        facts=facts,
    )


def _handoff(
    reason: str, reply: str, quotes: list[Quote], lang: str, facts: Facts, asked: str = ""
) -> Decision:
    return Decision(
        action=Action.HANDOFF,
        reason=reason,
        summary=_summary(reason, quotes, lang, asked),
        reply_to_customer=reply,
        facts=facts,
    )


def _find(query: str, knowledge: Knowledge) -> Found:
    """Clear matches with their own quantities, and the first ambiguous group (if any)."""
    if not knowledge.items or not query:
        return Found([], [])
    quotes: list[Quote] = []
    ambiguous: list[KnowledgeItem] = []
    for group, qty in knowledge.catalogue.order_lines(query):
        if len(group) == 1:
            quotes.append(Quote(knowledge.items[group[0].index], qty))
        elif not ambiguous:
            ambiguous = [knowledge.items[m.index] for m in group]
    return Found(quotes, ambiguous)


def _find_in_context(
    message: str, history: list[HistoryEntry], last_bot: HistoryEntry | None, knowledge: Knowledge
) -> Found:
    """What the message is about, read with the conversation where it leans on it: the answer
    to "which one?", or "and the price?" after a product was named."""
    own = _find(message, knowledge)
    if last_bot is not None and is_text(last_bot.text, "clarify.ambiguous"):
        asked = _last_customer_before(history, last_bot)
        options = [i for i in knowledge.items if i.name in last_bot.text]
        picked = _ordinal(message, options)
        if picked is not None:
            return _find(f"{asked} {picked.name}", knowledge)
        named = {q.item.key for q in own.quotes} | {i.key for i in own.ambiguous}
        within = named <= {i.key for i in options}
        # The clarifying question expires when the customer asks about something else.
        if within and not topics(message):
            glued = _find(f"{asked} {message}".strip(), knowledge)
            if glued.quotes or glued.ambiguous:
                return glued
        return own
    if own.quotes or own.ambiguous or not PRICE_QUESTION.search(normalise(message)):
        return own
    for entry in reversed(history[-CONTEXT_ENTRIES:]):
        if entry.speaker != "customer":
            continue
        earlier = _find(entry.text, knowledge)
        if earlier.quotes or earlier.ambiguous:
            return earlier
    return own


def _mostly_unknown(message: str, knowledge: Knowledge) -> bool:
    unknown = knowledge.catalogue.unknown_words(message)
    named = content_tokens(analyse(message))
    return len(unknown) >= 2 and len(unknown) * 2 >= len(named)


def _ordinal(message: str, options: list[KnowledgeItem]) -> KnowledgeItem | None:
    if not options:
        return None
    for word in re.findall(r"\w+", normalise(message)):
        if word in ORDINALS:
            index = ORDINALS[word]
            if -len(options) <= index < len(options):
                return options[index]
    return None


def _with_agreement(quote: Quote, found: list[Agreement], knowledge: Knowledge) -> Quote:
    index = knowledge.items.index(quote.item)
    agreed = agreed_price(found, index)
    if agreed is None:
        return quote
    qty = quote.qty
    if qty == 1 and agreed.quantity and agreed.quantity > 1:
        qty = agreed.quantity  # "how much is it then?" about the manager's offer for N
    return Quote(quote.item, qty, agreed)


def _agreed_for_another_quantity(quote: Quote) -> bool:
    agreed = quote.agreed
    return bool(agreed and agreed.quantity and agreed.quantity > 1 and quote.qty != agreed.quantity)


def _quote_lines(quotes: list[Quote], lang: str, with_availability: bool = False) -> str:
    lines = []
    for quote in quotes:
        item = quote.item
        price = format_money(quote.unit_price, item.currency)
        if quote.qty > 1:
            total = format_money(quote.total, item.currency)
            line = f"{item.name}: {quote.qty} × {price} = {total}"
        else:
            unit = f" / {item.unit}" if item.unit and item.unit.lower() not in PIECES else ""
            line = f"{item.name}: {price}{unit}"
        notes = [text("answer.agreed", lang)] if quote.agreed else []
        if with_availability:
            phrase = availability_phrase(item.availability, item.availability_note, lang)
            notes += [phrase] if phrase else []
        if notes:
            line += f" ({'; '.join(notes)})"
        lines.append(line)
    currencies = {q.item.currency for q in quotes}
    if len(quotes) > 1 and len(currencies) == 1:
        grand = sum((q.total for q in quotes), Decimal(0))
        lines.append(text("answer.total", lang, total=format_money(grand, currencies.pop())))
    return "\n".join(lines)


def _rule_lines(rule: RuleAnswer) -> list[str]:
    return list(rule.sentences)


PIECES = {"шт", "шт.", "pcs", "pc", "piece", "pieces", "unit", "units", "дана"}


def _options(items: list[KnowledgeItem], lang: str) -> str:
    shown = [f"{i.name} ({format_money(i.price, i.currency)})" for i in items[:MAX_OPTIONS]]
    if len(items) > MAX_OPTIONS:
        shown.append(text("answer.more", lang, count=str(len(items) - MAX_OPTIONS)))
    joined = ", ".join(shown[:-1]) + f" {text('word.or', lang)} " + shown[-1]
    return text("clarify.ambiguous", lang, options=joined)


def _summary(reason: str, quotes: list[Quote], lang: str, asked: str = "") -> str:
    parts = {
        "en": {
            "asks_for_human": "The customer asks for a manager.",
            "ready_to_buy": "The customer wants to buy.",
            "non_standard_terms": "The customer asks about special terms (discount, credit, "
            "wholesale or custom).",
            "complaint": "The customer complains or is unhappy.",
            "outside_knowledge_base": "The question is not answered by the price list.",
        },
        "ru": {
            "asks_for_human": "Клиент просит менеджера.",
            "ready_to_buy": "Клиент хочет купить.",
            "non_standard_terms": "Клиент спрашивает об особых условиях (скидка, рассрочка, "
            "опт или заказ).",
            "complaint": "Клиент жалуется или недоволен.",
            "outside_knowledge_base": "На вопрос нет ответа в прайс-листе.",
        },
    }[lang if lang in ("en", "ru") else "en"]
    summary = parts.get(reason, "")
    if quotes:
        summary += " " + "; ".join(f"{q.qty} × {q.item.name}" for q in quotes) + "."
        summary += "".join(f" «{q.agreed.words[:200]}»" for q in quotes if q.agreed)
    if asked:
        summary += f" «{asked[:300]}»"
    return summary.strip()


def _facts(turn: TurnInput, quotes: list[Quote]) -> Facts:
    everything = " ".join(e.text for e in [*turn.history, *turn.pending] if e.speaker == "customer")
    name_match = NAME_RE.search(everything)
    city = next(
        (CITIES[w] for w in re.findall(r"[\w-]+", normalise(everything)) if w in CITIES), None
    )
    return Facts(
        name=name_match.group(1) if name_match else None,
        city=city,
        items=[Item(name=q.item.name, qty=q.qty) for q in quotes],
    )


def _last_bot_message(history: list[HistoryEntry]) -> HistoryEntry | None:
    for entry in reversed(history):
        if entry.speaker in ("bot", "manager"):
            return entry if entry.speaker == "bot" else None
    return None


def _last_customer_before(history: list[HistoryEntry], bot: HistoryEntry) -> str:
    index = history.index(bot)
    texts: list[str] = []
    for entry in reversed(history[:index]):
        if entry.speaker != "customer":
            break
        texts.insert(0, entry.text)
    return " ".join(texts)


def _strip_greeting(text: str) -> str:
    return GREETINGS.sub(" ", text)
