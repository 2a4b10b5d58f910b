"""The last check before a reply leaves: nothing the price list does not back goes out.

    result = check(decision, turn)   # GuardrailResult(allowed, blocked=[...human-readable...])

Blocked when the reply (answer, clarify or handoff message alike) contains
- an amount of money that is not a list price of this channel, nor list price × a quantity
  mentioned in the chat, nor the sum of other backed amounts in the same reply (an order total),
  nor an amount written in the business rules or item descriptions, nor one a manager wrote in
  this chat (a human already committed to it). When the sentence that holds the amount names
  products, only their prices back it: "the oak table is 54 000" is blocked when 54 000 is the
  coffee table's price;
- a percentage (a discount) not written in the business rules or item descriptions;
- a delivery or readiness deadline ("tomorrow", "in 2 days", "до пятницы") not written there;
- a phrase from the business's forbidden promises (an entry starting with "re:" is a regex).
Amounts in another currency than the list's price are not backed by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from itertools import combinations

from assistant.knowledge.effective import Knowledge, assistant_settings, knowledge_for_channel
from assistant.knowledge.matching import NUMBER_WORDS, words
from assistant.knowledge.money import Amount, find_amounts, format_money
from assistant.models import AssistantSettings
from assistant.schema import Decision, TurnInput


@dataclass(frozen=True)
class GuardrailResult:
    allowed: bool
    blocked: list[str]


@dataclass(frozen=True)
class Finding:
    kind: str  # "price" | "percentage" | "deadline" | "promise"
    text: str


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
    reference = _reference_text(knowledge, config)
    result: list[Finding] = []
    result += _unbacked_amounts(reply, turn, knowledge, reference)
    result += _unbacked_percentages(reply, reference)
    result += _unbacked_deadlines(reply, reference)
    result += _forbidden_promises(reply, config)
    return result


# --- amounts --------------------------------------------------------------------------------


def _quantities(texts: list[str]) -> set[int]:
    numbers = {1}
    for text in texts:
        for raw in re.findall(r"(?<![\d.,])\d{1,3}(?![\d])", text):
            value = int(raw)
            if 0 < value <= 1000:
                numbers.add(value)
    for text in texts:
        numbers.update(NUMBER_WORDS[w] for w in words(text) if w in NUMBER_WORDS)
    return numbers


def _unbacked_amounts(
    reply: str, turn: TurnInput, knowledge: Knowledge, reference: str
) -> list[Finding]:
    amounts = find_amounts(reply)
    if not amounts:
        return []
    conversation = [e.text for e in [*turn.history, *turn.pending]]
    quantities = _quantities([*conversation, reply])
    agreed = [
        *find_amounts(reference),
        *(a for e in turn.history if e.speaker == "manager" for a in find_amounts(e.text)),
    ]
    every_item = range(len(knowledge.items))
    sentences = _sentences(reply)
    named_in: dict[str, set[int]] = {}

    def is_backed(amount: Amount) -> bool:
        if any(_same_money(amount, a.value, a.currency) for a in agreed):
            return True
        sentence = _sentence_at(sentences, reply, amount.start)
        if sentence not in named_in:
            named_in[sentence] = _named_items(knowledge, sentence)
        named = named_in[sentence]
        items = [knowledge.items[i] for i in (named or every_item)]
        prices = {(item.price, item.currency) for item in items}
        return any(
            _is_list_price(amount.value / qty, amount.currency, prices) for qty in quantities
        )

    ok = [a for a in amounts if is_backed(a)]
    result = []
    for amount in amounts:
        if amount in ok or _is_sum_of(amount, ok):
            continue
        shown = format_money(amount.value, amount.currency)
        result.append(Finding("price", f"price {shown} not in the price list"))
    return result


SENTENCE_END_RE = re.compile(r"[.!?;]+(?=\s)|\n+")


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line; a decimal point is not an end."""
    spans, start = [], 0
    for match in SENTENCE_END_RE.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


def _sentence_at(spans: list[tuple[int, int]], text: str, position: int) -> str:
    return next((text[a:b] for a, b in spans if a <= position < b), text)


def _named_items(knowledge: Knowledge, sentence: str) -> set[int]:
    """The items a sentence names: each thing named resolves to the items that explain its
    words best ("oak table" to the oak tables, not to every table)."""
    return {match.index for group in knowledge.catalogue.resolve(sentence) for match in group}


def _same_money(amount: Amount, value: Decimal, currency: str) -> bool:
    """Equal values; a missing currency on either side matches any."""
    return value == amount.value and (
        not amount.currency or not currency or currency == amount.currency
    )


def _is_list_price(unit: Decimal, currency: str, prices: set[tuple[Decimal, str]]) -> bool:
    """Whether `unit` (an amount divided by a quantity) is the price of one of these items."""
    if currency:
        return (unit, currency) in prices or (unit, "") in prices
    return any(price == unit for price, _ in prices)


def _is_sum_of(amount: Amount, parts: list[Amount]) -> bool:
    values = [p.value for p in parts if p.value != amount.value][:12]
    for size in range(2, len(values) + 1):
        for combo in combinations(values, size):
            if sum(combo, Decimal(0)) == amount.value:
                return True
    return False


# --- percentages ----------------------------------------------------------------------------

PERCENT_RE = re.compile(r"(\d+(?:[.,]\d+)?)\s*(?:%|процент\w*|percent|pct)", re.IGNORECASE)
DISCOUNT_WORDS = re.compile(r"скидк|discount|\boff\b|дешевле|cheaper|жеңілдік", re.IGNORECASE)


def _unbacked_percentages(reply: str, reference: str) -> list[Finding]:
    allowed = {_percent_value(m.group(1)) for m in PERCENT_RE.finditer(reference)}
    result = []
    for match in PERCENT_RE.finditer(reply):
        value = _percent_value(match.group(1))
        if value in allowed:
            continue
        window = reply[max(0, match.start() - 40) : match.end() + 40]
        label = "discount" if DISCOUNT_WORDS.search(window) else "percentage"
        result.append(Finding("percentage", f"{label} {match.group(1)}% not in the price list"))
    return result


def _percent_value(raw: str) -> Decimal:
    return Decimal(raw.replace(",", "."))


# --- deadlines ------------------------------------------------------------------------------

_UNITS = {
    "hour": "hour", "hours": "hour", "hr": "hour", "hrs": "hour", "час": "hour", "часа": "hour",
    "часов": "hour", "сағат": "hour",
    "day": "day", "days": "day", "день": "day", "дня": "day", "дней": "day", "сутки": "day",
    "суток": "day", "күн": "day", "working day": "day", "business day": "day",
    "рабочих дня": "day", "рабочих дней": "day", "рабочий день": "day",
    "week": "week", "weeks": "week", "неделю": "week", "недели": "week", "недель": "week",
    "неделя": "week", "апта": "week",
    "month": "month", "months": "month", "месяц": "month", "месяца": "month",
    "месяцев": "month", "ай": "month",
}  # fmt: skip
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "a": 1, "an": 1, "один": 1, "одну": 1,
                 "два": 2, "две": 2, "три": 3, "пару": 2, "couple of": 2, "few": 3,
                 "нескольк": 3}  # fmt: skip
DEADLINE_RE = re.compile(
    r"(?P<word>\btomorrow\b|\btoday\b|\btonight\b|day after tomorrow|\bзавтра\b|послезавтра|"
    r"\bсегодня\b|\bертең\b|\bбүгін\b|next week|на следующей неделе|this week|на этой неделе)"
    r"|(?P<weekday>(?:by|on|until|before|до|в|во|к)\s+(?:monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|понедельник\w*|вторник\w*|сред\w*|четверг\w*|пятниц\w*|"
    r"суббот\w*|воскресень\w*))"
    rf"|(?P<span>(?:(?P<lo>\d+)\s*(?:[-–—]|to|до|или)\s*)?(?P<n>\d+|one|two|three|a|an|один|одну"
    rf"|два|две|три|пару|couple of|few|нескольк\w*)?\s*(?P<unit>{_UNIT_RE})\b)",
    re.IGNORECASE,
)
# A span of time only counts as a deadline next to delivery/readiness words.
DEADLINE_CONTEXT = re.compile(
    r"deliver|ship|arriv|ready|make|produc|within|in\s+\d|receive|get it|bring|send|dispatch|"
    r"install|в течение|через|за\s+\d|доставк|доставим|привез|будет готов|готов|изготов|"
    r"сделаем|получите|отправ|установ|соберем|жеткіз|дайын",
    re.IGNORECASE,
)


def deadlines(text: str) -> list[tuple[str, str]]:
    """(canonical form, as written) of every deadline in a text."""
    found = []
    for match in DEADLINE_RE.finditer(text):
        window = text[max(0, match.start() - 40) : match.end() + 40]
        if match.group("word"):
            if not DEADLINE_CONTEXT.search(window):
                continue
            word = match.group("word").lower()
            canonical = {
                "завтра": "tomorrow", "ертең": "tomorrow", "сегодня": "today", "бүгін": "today",
                "tonight": "today", "послезавтра": "day after tomorrow",
                "на следующей неделе": "next week", "на этой неделе": "this week",
            }.get(word, word)  # fmt: skip
            found.append((canonical, match.group(0)))
        elif match.group("weekday"):
            day = match.group("weekday").split()[-1].lower()[:4]
            found.append((f"weekday:{day}", match.group(0)))
        elif match.group("unit"):
            if not DEADLINE_CONTEXT.search(text[max(0, match.start() - 30) : match.end() + 5]):
                continue
            unit = _UNITS.get(match.group("unit").lower(), match.group("unit").lower())
            raw_n = (match.group("n") or "1").lower()
            n = int(raw_n) if raw_n.isdigit() else _WORD_NUMBERS.get(raw_n[:8], 1)
            lo = int(match.group("lo")) if match.group("lo") else n
            found.append((f"{unit}:{lo}-{n}", match.group(0).strip()))
    return found


def _unbacked_deadlines(reply: str, reference: str) -> list[Finding]:
    allowed = {c for c, _ in deadlines(reference)}
    spans = [_span(c) for c in allowed if c.count(":") == 1 and "-" in c]
    result = []
    for canonical, written in deadlines(reply):
        if canonical in allowed:
            continue
        span = _span(canonical)
        if span and any(
            s and s[0] == span[0] and s[1] <= span[1] <= span[2] <= s[2] for s in spans
        ):
            continue
        result.append(Finding("deadline", f"delivery deadline '{written}'"))
    return result


def _span(canonical: str) -> tuple[str, int, int] | None:
    unit, _, rest = canonical.partition(":")
    lo, _, hi = rest.partition("-")
    if not (lo.isdigit() and hi.isdigit()):
        return None
    return unit, int(lo), int(hi)


# --- forbidden promises ---------------------------------------------------------------------


def _forbidden_promises(reply: str, config: AssistantSettings) -> list[Finding]:
    text = _normalise(reply)
    result = []
    for promise in config.promises():
        if promise.lower().startswith("re:"):
            try:
                hit = re.search(promise[3:].strip(), reply, re.IGNORECASE) is not None
            except re.error:
                hit = False
        else:
            needle = _normalise(promise)
            hit = bool(needle) and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text) is not None
        if hit:
            result.append(Finding("promise", f"forbidden promise: '{promise}'"))
    return result


def _normalise(text: str) -> str:
    return " ".join(text.lower().replace("ё", "е").split())


def _reference_text(knowledge: Knowledge, config: AssistantSettings) -> str:
    """Everything the business wrote down: rules, descriptions, availability notes."""
    parts = [config.business_rules or ""]
    for item in knowledge.items:
        parts.append(item.description)
        parts.append(item.availability_note)
    return "\n".join(p for p in parts if p)
