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

from assistant.decision.intents import INTENTS, detect_intent, shared_terms
from assistant.decision.replies import (
    TEXTS,
    availability_phrase,
    handoff_message,
    is_text,
    language_for,
    text,
)
from assistant.knowledge.agreements import Agreement, agreed_price, agreements, manager_statements
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.matching import (
    MEASURE_WORDS,
    analyse,
    content_tokens,
    normalise,
    quantity_of_unit,
    segments,
)
from assistant.knowledge.money import format_money
from assistant.knowledge.rules import RuleAnswer, charges, rule_answer, topics
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
        if self.agreed is None:
            return self.item.price
        _exact, minimum = _agreed_quantity(self.agreed)
        # "21 000 за канистру при заказе от 10": a price per unit, not a total for ten.
        return self.agreed.amount.value if minimum else self.agreed.unit_price

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
    said = manager_statements(turn.history)
    rule = rule_answer(message, config.business_rules, said)
    agreed = agreements(turn.history, knowledge) if knowledge.items else []
    # A terms question leans on the product named before only when it asks a total with it
    # ("сколько тогда с доставкой?").
    leaning = rule is None or bool(TOTAL_RE.search(normalise(message)))
    found = _find_in_context(message, turn.history, last_bot, knowledge, leaning=leaning)
    found = _about_agreed(found, message, agreed, knowledge)
    quotes = [_with_agreement(q, agreed, knowledge) for q in found.quotes]
    facts = _facts(turn, quotes)

    if intent == "non_standard_terms" and rule and _rules_give_the_terms(message, rule):
        intent = ""  # the rules already give these terms: quote them
    if (
        not intent
        and ORDER_STATUS_RE.search(normalise(message))
        and "outside_knowledge_base" in codes
    ):
        # Where a placed order is: the list and the rules cannot know, a person can.
        return _handoff(
            "outside_knowledge_base",
            handoff_message("outside_knowledge_base", lang),
            quotes,
            lang,
            facts,
            asked=message,
        )
    if intent and intent in codes:
        reply = handoff_message(intent, lang)
        if quotes and intent == "ready_to_buy":
            reply += "\n" + _quote_lines(quotes, lang)
        return _handoff(intent, reply, quotes, lang, facts)
    if any(_agreed_for_another_quantity(q) for q in quotes) and "non_standard_terms" in codes:
        # The manager's price was for another quantity: only a person can say what holds now.
        return _handoff(
            "non_standard_terms",
            handoff_message("non_standard_terms", lang),
            quotes,
            lang,
            facts,
            asked=message,
        )
    if rule is not None:
        # A question about the terms: the products it is about are quoted only when the
        # customer also asks their price ("the bed and delivery, how much altogether?").
        shown = [q for q in quotes if _asked_price_of(q, message, knowledge)]
        parts = [_order_with_charges(shown, message, rule, lang)] if shown else []
        parts += list(rule.sentences)
        return Decision(action=Action.ANSWER, reply_to_customer="\n".join(parts), facts=facts)
    missed_before = _asked_back(last_bot)
    unknown = not quotes and found.ambiguous and _mostly_unknown(message, knowledge)
    if found.ambiguous and not unknown:
        if _wants_every_option(message, found.ambiguous):
            # Compared, not ordered together: each price, no total.
            every = [Quote(item, 1) for item in found.ambiguous]
            compared = [_with_agreement(q, agreed, knowledge) for q in [*quotes, *every]]
            lines = [_quote_lines([q], lang, with_availability=True) for q in compared]
            return Decision(action=Action.ANSWER, reply_to_customer="\n".join(lines), facts=facts)
        else:
            return Decision(
                action=Action.CLARIFY,
                reason="ambiguous",
                summary="",
                reply_to_customer=_options(found.ambiguous, lang),
                facts=facts,
            )
    if quotes:
        return Decision(
            action=Action.ANSWER,
            reply_to_customer=_quote_lines(quotes, lang, with_availability=True),
            facts=facts,
        )
    normalised = normalise(message)
    if GREETINGS.match(normalised) and not content_tokens(analyse(_strip_greeting(normalised))):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.greeting", lang))
    if THANKS.search(normalised) and _only_closing(THANKS.sub(" ", normalised)):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.thanks", lang))
    if missed_before and "outside_knowledge_base" in codes:
        # Asked back once already and still nothing in the list ("swing chairs for a terrace").
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
TOTAL_RE = re.compile(
    r"total|altogether|in all|all together|всего|итого|вместе|в сумме|барлығы|жалпы|бәрі|"
    r"\bwith (?:the )?(?:delivery|shipping|assembly|installation)|"
    r"\bс (?:доставкой|сборкой|установкой|подъемом)|\bплюс (?:доставка|сборка)"
)
EVERY_OPTION_RE = re.compile(
    r"\bboth\b|\bthe (?:two|three|four)\b|\ball (?:of )?(?:the|them|your)\b|\bоба\b|"
    r"\bобе\b|\bобоих\b|\bвсе (?:\w+ )?(?:варианты|модели|виды)\b|екеуі|екеуін"
)
# Payment words that look like a product ("by card" is not a greeting card).
PAYMENT_PHRASES = re.compile(
    r"\b(?:by|with|via) (?:credit |debit |bank )?card\b|\bcard payment\b|картой|карточкой|"
    r"по карте|на карту|банковская карта|картамен",
    re.IGNORECASE,
)


def _only_closing(text: str) -> bool:
    return all(t.word in CLOSING_WORDS for t in content_tokens(analyse(text)))


def _rules_give_the_terms(message: str, rule: RuleAnswer) -> bool:
    """Whether the rule sentences speak of the terms asked for and of every number in the
    request ("рассрочка на 24 месяца" is not answered by "рассрочка 0-0-12")."""
    if not any(shared_terms("non_standard_terms", message, s) for s in rule.sentences):
        return False
    numbers = set(re.findall(r"\d+", message))
    written = {n for s in rule.sentences for n in re.findall(r"\d+", s)}
    return numbers <= written


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


def _wants_every_option(message: str, options: list[KnowledgeItem]) -> bool:
    found = EVERY_OPTION_RE.search(normalise(message))
    if not found:
        return False
    count = {"two": 2, "three": 3, "four": 4}.get(found.group(0).split()[-1], len(options))
    return count == len(options) and len(options) <= MAX_OPTIONS


def _asked_back(last_bot: HistoryEntry | None) -> bool:
    """Whether the bot's last message asked the customer back what they want: our "which
    product?", or any other question of the bot's that is not "which one?" or small talk."""
    if last_bot is None:
        return False
    if is_text(last_bot.text, "clarify.miss"):
        return True
    own = ("clarify.ambiguous", "answer.greeting", "answer.thanks")
    return last_bot.text.rstrip().endswith("?") and not any(is_text(last_bot.text, k) for k in own)


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
    query = PAYMENT_PHRASES.sub(" ", query)
    if not knowledge.items or not query.strip():
        return Found([], [])
    quotes: list[Quote] = []
    ambiguous: list[KnowledgeItem] = []
    for group, qty in knowledge.catalogue.order_lines(query):
        if len(group) == 1:
            item = knowledge.items[group[0].index]
            if qty == 1 and item.unit:
                qty = quantity_of_unit(query, item.unit) or 1
            quotes.append(Quote(item, qty))
        elif not ambiguous:
            ambiguous = [knowledge.items[m.index] for m in group]
    return Found(quotes, ambiguous)


def _find_in_context(
    message: str,
    history: list[HistoryEntry],
    last_bot: HistoryEntry | None,
    knowledge: Knowledge,
    leaning: bool = True,
) -> Found:
    """What the message is about, read with the conversation where it leans on it: the answer
    to "which one?", or "and the price?" after a product was named."""
    own = _find(message, knowledge)
    if last_bot is not None and is_text(last_bot.text, "clarify.ambiguous"):
        # One question with the answer to "which one?": no sentence break between them.
        asked = re.sub(r"(?<!\d)[?!.]|[?!.](?!\d)", " ", _last_customer_before(history, last_bot))
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
    if not leaning or own.quotes or own.ambiguous or not PRICE_QUESTION.search(normalise(message)):
        return own
    for entry in reversed(history[-CONTEXT_ENTRIES:]):
        if entry.speaker != "customer":
            continue
        earlier = _find(entry.text, knowledge)
        count = _bare_count(message)
        if count and len(earlier.quotes) == 1 and not earlier.ambiguous:
            return Found([Quote(earlier.quotes[0].item, count)], [])  # "and for 12?"
        if earlier.quotes or earlier.ambiguous:
            return earlier
    return own


def _mostly_unknown(message: str, knowledge: Knowledge) -> bool:
    """The words around what fits match nothing in the list ("колодки на хюндай туксон",
    "outdoor chairs for a terrace"): what fits is only the general word, not the thing asked
    for."""
    unknown = set(knowledge.catalogue.unknown_words(message))
    for part in segments(message):
        tokens = analyse(part)
        for group, _qty in knowledge.catalogue.order_lines(part):
            near = {
                t.word
                for t in content_tokens(tokens)
                if t.word in unknown and min(abs(t.position - p) for p in group[0].positions) <= 3
            }
            if len(near) >= 2:
                return True
    return False


def _bare_count(message: str) -> int:
    """The one count a message gives without naming a product ("а если 12 канистр?")."""
    tokens = analyse(message)
    counts = [t for t in tokens if t.number is not None and 1 < t.number < 1000]
    if len(counts) != 1:
        return 0
    after = next((t for t in tokens if t.position == counts[0].position + 1), None)
    return 0 if after is not None and after.word in MEASURE_WORDS else counts[0].number or 0


def _ordinal(message: str, options: list[KnowledgeItem]) -> KnowledgeItem | None:
    if not options:
        return None
    for word in re.findall(r"\w+", normalise(message)):
        if word in ORDINALS:
            index = ORDINALS[word]
            if -len(options) <= index < len(options):
                return options[index]
    return None


def _about_agreed(
    found: Found, message: str, agreed: list[Agreement], knowledge: Knowledge
) -> Found:
    """An item a manager agreed a price for in this chat is the one the customer means when
    their words fit it ("the office chair" after the executive chair was agreed)."""
    items = {a.item_index for a in agreed if a.item_index is not None}
    if len(items) != 1:
        return found
    index = items.pop()
    item = knowledge.items[index]
    if item in [q.item for q in found.quotes]:
        return found
    if index not in {m.index for m in knowledge.catalogue.match(message)}:
        return found
    if found.ambiguous and item in found.ambiguous:
        return Found([*found.quotes, Quote(item, 1)], [])
    if len(found.quotes) == 1 and not found.ambiguous:
        return Found([Quote(item, found.quotes[0].qty)], [])
    return found


def _with_agreement(quote: Quote, found: list[Agreement], knowledge: Knowledge) -> Quote:
    index = knowledge.items.index(quote.item)
    agreed = agreed_price(found, index)
    if agreed is None:
        return quote
    qty = quote.qty
    exact, minimum = _agreed_quantity(agreed)
    if qty == 1 and (exact or minimum):
        qty = exact or minimum  # "how much is it then?" about the manager's offer for N
    return Quote(quote.item, qty, agreed)


def _agreed_quantity(agreed: Agreement) -> tuple[int, int]:
    """(exact, minimum) quantity the manager's price was given for; 0 when none."""
    if not agreed.quantity or agreed.quantity <= 1:
        return 0, 0
    if re.search(
        rf"(?:от|from|at least|min\w*|не менее|кемінде)\s*{agreed.quantity}", agreed.words
    ):
        return 0, agreed.quantity
    return agreed.quantity, 0


def _agreed_for_another_quantity(quote: Quote) -> bool:
    if quote.agreed is None:
        return False
    exact, minimum = _agreed_quantity(quote.agreed)
    return bool((exact and quote.qty != exact) or (minimum and quote.qty < minimum))


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


def _order_with_charges(quotes: list[Quote], message: str, rule: RuleAnswer, lang: str) -> str:
    """The order's lines, and when the customer asks the total with delivery (assembly, …)
    the rules' fixed charge for each as a line of its own, counted in the total. When a
    charge is not a fixed amount ("from 2 500", "per floor") there is no total at all."""
    lines = _quote_lines(quotes, lang, with_availability=True)
    currencies = {q.item.currency for q in quotes}
    if not TOTAL_RE.search(normalise(message)) or len(currencies) != 1:
        return lines
    subtotal = sum((q.total for q in quotes), Decimal(0))
    found = charges(message, rule, subtotal)
    currency = currencies.pop()
    kept = [line for line in lines.splitlines() if not _is_total_line(line, lang)]
    if not found:
        return "\n".join(kept)
    for charge in found:
        key = f"charge.{charge.topic}"
        label = text(key if key in TEXTS else "charge.default", lang)
        shown = (
            format_money(charge.amount, currency) if charge.amount else text("charge.free", lang)
        )
        kept.append(f"{label}: {shown}")
    grand = subtotal + sum((c.amount for c in found), Decimal(0))
    kept.append(text("answer.total", lang, total=format_money(grand, currency)))
    return "\n".join(kept)


def _is_total_line(line: str, lang: str) -> bool:
    return line.startswith(text("answer.total", lang, total="").strip())


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
