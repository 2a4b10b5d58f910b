"""The catalogue assistant: a deterministic, offline backend. It is NOT a language model.

It answers exactly two kinds of question from the price list, prices and availability, by exact
and fuzzy matching of names and SKUs (quantity × price included: "2 office chairs" → 2 × 45 000
= 90 000 KZT); asks which one when several items fit equally; and hands everything else to a
person with the right reason, found by keyword rules in English and Russian (plus common Kazakh
words): asks for a person, wants to buy, discount or special terms, complaint. A question that
names nothing in the list gets one clarifying question; the second miss in a row is handed off
as outside_knowledge_base (the history shows whether the last bot message was that question).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from assistant.decision.replies import handoff_message, is_text, language_for, text
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.matching import analyse, content_tokens, normalise, quantity_near
from assistant.knowledge.money import format_money
from assistant.models import AssistantSettings, Availability
from assistant.schema import Action, Decision, Facts, HistoryEntry, Item, TurnInput

MAX_OPTIONS = 5

# Keyword rules, checked in this order (the first that fires decides the reason).
INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("complaint", (
        r"complain", r"\bbroken\b", r"\bbroke\b", r"damaged", r"defect", r"\brefund",
        r"\breturn (?:it|the|my|this)", r"terrible", r"awful", r"horrible", r"\bworst\b",
        r"disappoint", r"\bscam", r"\bangry\b", r"unacceptable", r"never (?:arrived|came)",
        r"still (?:not|hasn.?t|haven.?t|no)\b", r"\bwrong (?:item|order|size|colou?r)",
        r"жалоб", r"сломал", r"сломан", r"\bбрак", r"возврат", r"верните", r"ужасн",
        r"отвратительн", r"обман", r"недовол", r"хамств", r"безобраз", r"до сих пор не",
        r"так и не", r"не работает", r"не пришл", r"не привезли", r"вернуть", r"не подош",
        r"шағым",
    )),
    ("asks_for_human", (
        r"\bmanager", r"\bhuman\b", r"real person", r"\ba person\b", r"\boperator", r"call me",
        r"call back", r"speak (?:to|with)", r"talk (?:to|with)", r"менеджер", r"оператор",
        r"живо\w* человек", r"с человеком", r"позвоните", r"перезвоните", r"свяжитесь",
        r"связаться", r"консультант", r"адаммен", r"хабарлас", r"қоңырау",
    )),
    ("non_standard_terms", (
        r"discount", r"cheaper", r"\bdeal\b", r"bargain", r"wholesale", r"\bbulk\b",
        r"install?ment", r"\bcredit\b", r"\bloan\b", r"\bcustom", r"special (?:price|offer)",
        r"best price", r"negotia", r"\bpromo", r"скидк", r"дешевле", r"\bопт\w*", r"рассрочк",
        r"кредит", r"индивидуальн", r"на заказ\b", r"\bторг", r"уступит", r"промокод",
        r"жеңілдік", r"бөліп",
    )),
    ("ready_to_buy", (
        r"\bbuy\b", r"\bi.?ll take\b", r"\bwe.?ll take\b", r"\border\b", r"\bordering\b",
        r"purchase", r"\bpay\b", r"payment", r"checkout", r"invoice", r"\bbook\b", r"booking",
        r"appointment", r"reserve", r"sign (?:me )?up", r"\bкуп(?:лю|ить|им|ите)\b",
        r"\bберу\b", r"возьм(?:у|ем|ём)", r"заказ(?:ать|ываю|ала?|ем|ём)\b", r"\bоформ",
        r"оплат", r"\bсчет\b", r"\bсчёт\b", r"запиш", r"записат", r"\bзапись\b", r"бронир",
        r"сатып ал", r"\bалам\b", r"тапсырыс", r"жазыл",
    )),
)  # fmt: skip

# Phrases that look like an intent word but are an availability question ("on order").
NEUTRAL_PHRASES = (r"под заказ", r"on order", r"to order\?")
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
class Quote:
    item: KnowledgeItem
    qty: int

    @property
    def total(self) -> Decimal:
        return self.item.price * self.qty


def decide(turn: TurnInput, knowledge: Knowledge, config: AssistantSettings) -> Decision:
    """One turn's decision from the price list alone."""
    lang = language_for(turn)
    message = " ".join(entry.text for entry in turn.pending).strip()
    last_bot = _last_bot_message(turn.history)
    query = message
    if last_bot is not None and is_text(last_bot.text, "clarify.ambiguous"):
        # The customer answers "which one?": read it together with what they asked before.
        query = f"{_last_customer_before(turn.history, last_bot)} {message}".strip()
    quotes, ambiguous = _find(query, knowledge)
    facts = _facts(turn, quotes)
    intent = detect_intent(message)
    codes = set(config.reason_codes())

    if intent and intent in codes:
        reply = handoff_message(intent, lang)
        if quotes and intent == "ready_to_buy":
            reply += "\n" + _quote_lines(quotes, lang)
        return Decision(
            action=Action.HANDOFF,
            reason=intent,
            summary=_summary(intent, quotes, lang),
            reply_to_customer=reply,
            facts=facts,
        )
    if ambiguous:
        return Decision(
            action=Action.CLARIFY,
            reason="ambiguous",
            summary="",
            reply_to_customer=_options(ambiguous, lang),
            facts=facts,
        )
    if quotes:
        return Decision(
            action=Action.ANSWER,
            reason="",
            summary="",
            reply_to_customer=_quote_lines(quotes, lang, with_availability=True),
            facts=facts,
        )
    normalised = normalise(message)
    if GREETINGS.match(normalised) and not content_tokens(analyse(_strip_greeting(normalised))):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.greeting", lang))
    if THANKS.search(normalised) and not content_tokens(analyse(THANKS.sub(" ", normalised))):
        return Decision(action=Action.ANSWER, reply_to_customer=text("answer.thanks", lang))
    if (
        last_bot is not None
        and is_text(last_bot.text, "clarify.miss")
        and "outside_knowledge_base" in codes
    ):
        return Decision(
            action=Action.HANDOFF,
            reason="outside_knowledge_base",
            summary=_summary("outside_knowledge_base", quotes, lang, message),
            reply_to_customer=handoff_message("outside_knowledge_base", lang),
            facts=facts,
        )
    return Decision(
        action=Action.CLARIFY,
        reason="outside_knowledge_base",
        summary="",
        reply_to_customer=text("clarify.miss", lang),
        facts=facts,
    )


def detect_intent(message: str) -> str:
    """The handoff reason a keyword rule finds in the message, or ""."""
    low = normalise(message)
    for phrase in NEUTRAL_PHRASES:
        low = re.sub(phrase, " ", low)
    for reason, patterns in INTENTS:
        if any(re.search(pattern, low) for pattern in patterns):
            return reason
    return ""


def _find(query: str, knowledge: Knowledge) -> tuple[list[Quote], list[KnowledgeItem]]:
    """Clear matches with their quantities, and the first ambiguous group (if any)."""
    if not knowledge.items or not query:
        return [], []
    groups = knowledge.catalogue.resolve(query)
    tokens = analyse(query)
    taken: set[int] = set()
    for group in groups:
        for match in group:
            taken |= set(match.number_positions)
            if match.by_sku:
                taken |= set(match.positions)
    quotes: list[Quote] = []
    ambiguous: list[KnowledgeItem] = []
    for group in groups:
        if len(group) == 1:
            match = group[0]
            qty = quantity_near(tokens, match.positions, taken)
            quotes.append(Quote(knowledge.items[match.index], qty))
        elif not ambiguous:
            ambiguous = [knowledge.items[m.index] for m in group]
    return quotes, ambiguous


def _quote_lines(quotes: list[Quote], lang: str, with_availability: bool = False) -> str:
    lines = []
    for quote in quotes:
        item = quote.item
        price = format_money(item.price, item.currency)
        if quote.qty > 1:
            total = format_money(quote.total, item.currency)
            line = f"{item.name}: {quote.qty} × {price} = {total}"
        else:
            unit = f" / {item.unit}" if item.unit and item.unit.lower() not in PIECES else ""
            line = f"{item.name}: {price}{unit}"
        if with_availability:
            status = text(f"availability.{Availability(item.availability).value}", lang)
            if status:
                note = f", {item.availability_note}" if item.availability_note else ""
                line += f" ({status}{note})"
        lines.append(line)
    currencies = {q.item.currency for q in quotes}
    if len(quotes) > 1 and len(currencies) == 1:
        grand = sum((q.total for q in quotes), Decimal(0))
        lines.append(text("answer.total", lang, total=format_money(grand, currencies.pop())))
    return "\n".join(lines)


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
