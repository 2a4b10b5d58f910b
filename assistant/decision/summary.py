"""The handoff summary a manager reads on the card: what the customer asked for, kept.

A fixed sentence per reason lost the request ("the customer asks about special terms" for
"скидка 20% на 3 дивана"), so the summary is built from the reading of the turn, for every
handoff reason, in the customer's language (`assistant.language`, through
`replies.language_for`), one to three sentences and nothing the conversation does not say:

1. why it is handed over, with the request: the items and quantities (with their unit), and
   the terms asked (a discount and its size, installments, a date or time, an address or city,
   payment, pickup, a refund);
2. the customer's own words, shortened;
3. what the bot already answered (the amounts of its last quote), when it did.

On the model path the model writes the summary (`prompts/v1/system.txt`, rule 8); `checked`
keeps it only when it names every item the reading found, else appends the offline request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from assistant.decision.reading import Quote
from assistant.decision.replies import language_for
from assistant.knowledge.agreements import Agreement
from assistant.knowledge.effective import Knowledge
from assistant.knowledge.matching import format_quantity
from assistant.language import supported
from assistant.schema import Facts, TurnInput
from inbox.conversations.models import HandoffReason

MAX_WORDS = 200  # characters of the customer's words kept
MAX_ANSWER = 160  # characters of the bot's last quote kept

# Why it is handed over, as the card's first words.
LEADS: dict[str, dict[str, str]] = {
    "en": {
        HandoffReason.ASKS_FOR_HUMAN: "The customer asks for a manager",
        HandoffReason.READY_TO_BUY: "The customer wants to buy",
        HandoffReason.NON_STANDARD_TERMS: "The customer asks for special terms",
        HandoffReason.COMPLAINT: "Complaint",
        HandoffReason.OUTSIDE_KNOWLEDGE_BASE: "Not answered by the price list",
        HandoffReason.VOICE_UNCLEAR: "The voice message was not understood twice",
        "": "Handed to a manager",
    },
    "ru": {
        HandoffReason.ASKS_FOR_HUMAN: "Клиент просит менеджера",
        HandoffReason.READY_TO_BUY: "Клиент хочет купить",
        HandoffReason.NON_STANDARD_TERMS: "Клиент просит особые условия",
        HandoffReason.COMPLAINT: "Жалоба",
        HandoffReason.OUTSIDE_KNOWLEDGE_BASE: "Вопроса нет в прайс-листе",
        HandoffReason.VOICE_UNCLEAR: "Голосовое сообщение не разобрано дважды",
        "": "Передано менеджеру",
    },
}
WORDS = {"en": "The customer writes", "ru": "Клиент пишет"}
REQUEST = {"en": "Request", "ru": "Запрос"}
ANSWERED = {"en": "The bot already answered", "ru": "Бот уже ответил"}
AGREED = {"en": "agreed with the manager", "ru": "договорились с менеджером"}
LABELS: dict[str, dict[str, str]] = {
    "en": {
        "discount": "discount",
        "installments": "installments",
        "months": "months",
        "wholesale": "wholesale",
        "when": "when",
        "address": "address",
        "city": "city",
        "payment": "payment",
        "pickup": "pickup",
        "refund": "wants a refund or return",
    },
    "ru": {
        "discount": "скидка",
        "installments": "рассрочка",
        "months": "мес.",
        "wholesale": "опт",
        "when": "когда",
        "address": "адрес",
        "city": "город",
        "payment": "оплата",
        "pickup": "самовывоз",
        "refund": "хочет возврат",
    },
}

DISCOUNT_RE = re.compile(
    r"скидк|скин[уеь]|сбрось|дешевле|уступ|discount|\d+\s*%\s*off|cheaper|жеңілдік",
    re.IGNORECASE,
)
PERCENT_RE = re.compile(r"(\d+(?:[.,]\d+)?)\s*%")
THOUSANDS_RE = re.compile(r"(?:тысяч\w*|тыс\.?)\s*(\d+)|(\d+)\s*(?:тысяч\w*|тыс\.?|k)\b", re.I)
INSTALLMENTS_RE = re.compile(
    r"рассрочк|install?ments?|monthly payments?|частями|бөліп|несие|кредит|credit", re.I
)
MONTHS_RE = re.compile(r"(\d+)\s*(?:мес|month|ай\b|monthly)", re.IGNORECASE)
WHOLESALE_RE = re.compile(r"\bопт\w*|wholesale|\bbulk\b", re.IGNORECASE)
WHEN_RE = re.compile(
    r"\b(?:сегодня|завтра|послезавтра|today|tonight|tomorrow|бүгін|ертең\w*|"
    r"(?:(?:в|на|к|до)\s+)?(?:понедельник|вторник|сред[ау]|четверг|пятниц[уаы]|суббот[уаы]|"
    r"воскресенье)|(?:(?:on|by|this|next)\s+)?(?:monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)|\d{1,2}\s+(?:январ|феврал|март|апрел|ма[яй]|июн|июл|август|сентябр|"
    r"октябр|ноябр|декабр)\w*|(?:к|до|в|на)\s+\d{1,2}(?::\d\d)?\s*(?:утра|вечера|часам|ч)\b|"
    r"(?:by|at|before)\s+\d{1,2}(?::\d\d)?\s*(?:am|pm)?|\d{1,2}\s*(?:am|pm)|"
    r"сағат\s+\d{1,2}\w*|(?:через|within|in)\s+\d+\s+(?:дн\w*|недел\w*|days?|weeks?))",
    re.IGNORECASE,
)
# An address as written: after "адрес"/"address"/"мекенжай" up to its house number, before
# Kazakh "мекенжайына", or after "deliver to" / "I'm on" up to a time or the clause's end.
ADDRESS_RES = (
    re.compile(
        r"(?:адрес\w*|address|мекенжай)\s*:?\s*([^\d,.;!?\n]{1,30}\d+[\w/-]*)", re.IGNORECASE
    ),
    re.compile(r"([A-ZА-ЯЁӘҒҚҢӨҰҮҺІ][\w-]+(?:\s[\w-]+)?\s\d+\w?)\s+мекенжай"),
    re.compile(
        r"(?:deliver(?:ed)?\s+(?:it\s+)?to|bring\s+(?:it\s+)?to|i.?m\s+on|i\s+am\s+on)\s+"
        r"([^,.;!?\n]{2,40}?)(?=\s+(?:by|at|before|today|tomorrow|on|tonight)\b|[,.;!?\n]|$)",
        re.IGNORECASE,
    ),
)
PAYMENT_RE = re.compile(
    r"каспи|kaspi|картой|по карте|\bcard\b|наличн\w*|\bcash\b|счет\w*|сч[её]т на оплату|"
    r"invoice|перевод\w*|юрлиц\w*|postpay|постоплат\w*",
    re.IGNORECASE,
)
PICKUP_RE = re.compile(r"самовывоз|pick ?up|забер[уё]м? сам", re.IGNORECASE)
REFUND_RE = re.compile(
    r"возврат|верн(?:ите|уть)|refund|money back|\breturn\b|ақшамды қайтар|компенс|compensat",
    re.IGNORECASE,
)
# "без каспи", "not by card": the payment the customer does not want.
DENIED_RE = re.compile(r"(?:\bбез|\bне|\bnot|\bno|\bwithout)\s+(?:\w+\s+)?$", re.IGNORECASE)
AMOUNT_RE = re.compile(r"\d{1,3}(?:[ \u00a0]\d{3})+|\d{3,}")
TOTAL_LINE_RE = re.compile(r"итого|total|барлығы|жалпы", re.IGNORECASE)


@dataclass(frozen=True)
class Wanted:
    """One item the customer asked about, as the summary names it."""

    name: str
    qty: Decimal | None = None
    unit: str = ""
    sku: str = ""
    agreed: str = ""  # the manager's words where they agreed a price for it

    def text(self) -> str:
        count = format_quantity(self.qty) if self.qty is not None else ""
        unit = f" {self.unit}" if count and self.unit else ""
        return f"{count}{unit} × {self.name}" if count else self.name


def from_quotes(quotes: Iterable[Quote]) -> list[Wanted]:
    """The reading's items, each once, with their quantity and the item's unit."""
    wanted: dict[str, Wanted] = {}
    for q in quotes:
        words = q.agreed.words[:120] if q.agreed else ""
        wanted.setdefault(q.item.key, Wanted(q.item.name, q.qty, q.item.unit, q.item.sku, words))
    return list(wanted.values())


def with_agreements(
    wanted: list[Wanted], agreed: Iterable[Agreement], knowledge: Knowledge
) -> list[Wanted]:
    """`wanted` and the items a manager agreed a price for in this chat that it lacks ("беру
    за 84 990" names no item: the agreed one is what the customer takes), the latest each."""
    latest = {a.item_index: a for a in agreed if a.item_index is not None}
    named = {w.name for w in wanted}
    extra = []
    for index, agreement in latest.items():
        item = knowledge.items[index]
        if item.name in named:
            continue
        qty = Decimal(agreement.quantity) if agreement.quantity else None
        extra.append(Wanted(item.name, qty, item.unit, item.sku, agreement.words[:120]))
    return [*wanted, *extra]


def from_facts(facts: Facts) -> list[Wanted]:
    """The items a decision's facts list (a backend's own), for a handoff the system makes."""
    return [Wanted(i.name, Decimal(str(i.qty)) if i.qty is not None else None) for i in facts.items]


def terms(message: str, lang: str, city: str | None = None) -> list[str]:
    """The terms the customer asks for, in the words they used where a label cannot say it:
    "скидка 20%", "рассрочка 24 мес.", "когда: в четверг", "адрес: Сатпаева 30"."""
    label = LABELS[lang]
    found: list[str] = []
    if DISCOUNT_RE.search(message):
        size = PERCENT_RE.search(message)
        thousands = THOUSANDS_RE.search(message)
        if size:
            found.append(f"{label['discount']} {size.group(1)}%")
        elif thousands:
            found.append(f"{label['discount']} {thousands.group(0).strip()}")
        else:
            found.append(label["discount"])
    if INSTALLMENTS_RE.search(message):
        months = MONTHS_RE.search(message)
        found.append(
            f"{label['installments']} {months.group(1)} {label['months']}"
            if months
            else label["installments"]
        )
    if WHOLESALE_RE.search(message):
        found.append(label["wholesale"])
    when = list(dict.fromkeys(m.group(0).strip() for m in WHEN_RE.finditer(message)))
    if when:
        found.append(f"{label['when']}: {', '.join(when[:3])}")
    address = next((m.group(1).strip() for r in ADDRESS_RES if (m := r.search(message))), "")
    if address:
        found.append(f"{label['address']}: {address}")
    elif city:
        found.append(f"{label['city']}: {city}")
    payment = list(
        dict.fromkeys(
            m.group(0).lower()
            for m in PAYMENT_RE.finditer(message)
            if not DENIED_RE.search(message[: m.start()])
        )
    )
    if payment:
        found.append(f"{label['payment']}: {', '.join(payment[:2])}")
    if PICKUP_RE.search(message):
        found.append(label["pickup"])
    if REFUND_RE.search(message):
        found.append(label["refund"])
    return found


def offline(
    reason: str,
    turn: TurnInput,
    wanted: Sequence[Wanted] = (),
    *,
    city: str | None = None,
    detail: str = "",
) -> str:
    """The summary from the reading: why and what (items, terms), the customer's words, and
    the bot's last quote. `detail` is a system reason's own sentence (how late, which error),
    kept first."""
    lang = _lang(turn)
    message = " ".join(" ".join(e.text for e in turn.pending).split())
    first = request(reason, turn, wanted, city=city, detail=detail)
    sentences = [first]
    if message:
        shown = message if len(message) <= MAX_WORDS else message[: MAX_WORDS - 1] + "…"
        sentences.append(f"{WORDS[lang]}: «{shown}».")
    answered = last_quote(turn)
    if answered:
        sentences.append(f"{ANSWERED[lang]}: «{answered}».")
    return " ".join(s for s in sentences if s)


def request(
    reason: str,
    turn: TurnInput,
    wanted: Sequence[Wanted] = (),
    *,
    city: str | None = None,
    detail: str = "",
) -> str:
    """The first sentence: why it is handed over and the request's facts."""
    lang = _lang(turn)
    message = " ".join(e.text for e in turn.pending)
    wanted = [_without_percent_count(w, message) for w in wanted]
    parts = [w.text() + (f" ({AGREED[lang]}: «{w.agreed}»)" if w.agreed else "") for w in wanted]
    parts += terms(message, lang, city)
    facts = "; ".join(parts)
    if detail:
        head = detail.strip()
        return f"{head} {REQUEST[lang]}: {facts.rstrip('.')}." if facts else head
    lead = LEADS[lang].get(reason, LEADS[lang][""])
    return f"{lead}: {facts.rstrip('.')}." if facts else f"{lead}."


def _without_percent_count(wanted: Wanted, message: str) -> Wanted:
    """A quantity the message writes only as a percentage ("скидка 20% на диван" read as 20
    sofas) is no quantity the customer gave: the card names the item without it."""
    if wanted.qty is None or wanted.qty == 1:
        return wanted
    number = re.escape(format_quantity(wanted.qty))
    as_percent = re.search(rf"(?<![\d.,]){number}\s*%", message)
    as_count = re.search(rf"(?<![\d.,]){number}(?![\d.,]*\s*%|\d)", message)
    if as_percent and not as_count:
        return Wanted(wanted.name, None, wanted.unit, wanted.sku, wanted.agreed)
    return wanted


def last_quote(turn: TurnInput) -> str:
    """The amounts of the bot's last message that stated any (its total line where it has
    one), shortened; "" when the bot quoted nothing since a manager last wrote."""
    for entry in reversed(turn.history):
        if entry.speaker == "manager":
            return ""
        if entry.speaker != "bot" or not AMOUNT_RE.search(entry.text):
            continue
        lines = [line.strip() for line in entry.text.splitlines() if line.strip()]
        total = [line for line in lines if TOTAL_LINE_RE.search(line)]
        priced = [line for line in lines if AMOUNT_RE.search(line)]
        shown = "; ".join((priced[:2] + total[-1:]) if total else priced[:3])
        return shown if len(shown) <= MAX_ANSWER else shown[: MAX_ANSWER - 1] + "…"
    return ""


def checked(model_summary: str, fallback: str, required: Sequence[Wanted]) -> str:
    """The model's summary when it names every item the reading found (`required`, by SKU or
    name), else the offline request appended to it; the offline summary when it is empty."""
    written = model_summary.strip()
    if not written:
        return fallback
    if all(_names(written, w) for w in required):
        return written
    return f"{written} {_first_sentence(fallback)}".strip()[:2000]


def _names(summary: str, wanted: Wanted) -> bool:
    text = summary.casefold()
    return any(key and key.casefold() in text for key in (wanted.sku, wanted.name))


def _first_sentence(summary: str) -> str:
    """The offline summary's request sentence (its customer's words end with «…».)."""
    for marker in (f" {WORDS['en']}: «", f" {WORDS['ru']}: «"):
        if marker in summary:
            return summary.split(marker, 1)[0]
    return summary


BLOCKED = {
    "en": "The assistant's reply was blocked by a guardrail.",
    "ru": "Ответ ассистента остановлен проверкой: он не отправлен.",
}


def blocked_line(turn: TurnInput) -> str:
    """The card's first sentence when a guardrail held the reply back, in the card's language."""
    return BLOCKED[_lang(turn)]


def _lang(turn: TurnInput) -> str:
    """The card's language: the team's where it works in Russian or Kazakh (it reads Russian
    about an English-speaking customer), else the customer's, as for a team left at the default
    English; Russian for Kazakh (the card has no Kazakh wording)."""
    team = supported(turn.team_language) if turn.team_language else ""
    lang = team if team in ("ru", "kk") else language_for(turn)
    lang = "ru" if lang == "kk" else lang
    return lang if lang in LEADS else "en"
