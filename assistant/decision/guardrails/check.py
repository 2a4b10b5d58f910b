"""The last check before a reply leaves: every number in it must be derived, or it is not sent.

    result = check(decision, turn)   # GuardrailResult(allowed, blocked=[...human-readable...])

The guardrail proves numbers rather than looking for suspicious ones (docs/guardrails.md). Each
amount of money in the reply (answer, clarify or handoff message alike; read by
`money.find_amounts`, so `40k`, `40 тыс`, `₸40 000`, `1,5 млн` count) must be one of:
- the list price of the item it is said about: the item named between the previous amount and
  this one, else in its sentence, else in the nearest earlier sentence that names one, else in
  the customer's messages, else the one named last in the chat (names across languages and
  scripts, SKUs and aliases: `Catalogue.resolve`). Only when nothing in the chat names an item
  the matcher can read must it merely be some item's price;
- that price × a quantity the customer stated FOR THAT ITEM ("4 chairs" backs 4 × the chair's
  price, not 4 × the table's); a written line "N × P = T" must also have T = N × P;
- a total: an amount after "total / итого / всего / барлығы …" (or one not backed otherwise)
  must equal the sum of the lines the reply listed before it, never "some price";
- an amount written in the business rules, said about what the rules charge it for (a delivery
  fee is not an item's price);
- a price a manager agreed in this chat (`knowledge.agreements`), bound to its item: after it,
  that item's list price is a contradiction.
Percentages, delivery and readiness deadlines, dates and clock times must be written in the
rules, item notes or names, or by a manager. Agreeing to terms the customer asked for and the
rules do not give (a discount, a custom price, a deadline, free delivery; "I can do that",
"договорились", "сделаем скидку", "келістік") is a promise only a manager makes, in English,
Russian and Kazakh; "free delivery" passes only where the rules make it free and the order
reaches their threshold. Business-specific forbidden promises are blocked too (an entry
starting with "re:" is a regex). Amounts in another currency than the list's price are not
backed by it. What cannot be proven is not sent: the turn hands the chat to a manager (reason
`guardrail`) with these findings on the handoff card.
"""

from __future__ import annotations

import bisect
import functools
import re
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from assistant.knowledge.agreements import Agreement, agreements
from assistant.knowledge.effective import (
    Knowledge,
    KnowledgeItem,
    assistant_settings,
    knowledge_for_channel,
)
from assistant.knowledge.matching import (
    Catalogue,
    ItemMatch,
    QueryToken,
    analyse,
    content_tokens,
    quantity_near,
    segments,
    stem,
    words,
)
from assistant.knowledge.money import Amount, find_amounts, find_percentages, format_money
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
    rules = _reference_text(knowledge, config)
    managers = [e.text for e in turn.history if e.speaker == "manager"]
    reference = "\n".join([rules, *managers])
    # Numbers in the list's own names ("Extended warranty 1 year", "Milk 2.5%") are the names'.
    named = "\n".join([reference, *(i.name for i in knowledge.items)])
    result: list[Finding] = []
    result += _unbacked_amounts(reply, turn, knowledge, rules, managers)
    result += _unbacked_percentages(reply, named)
    result += _unbacked_deadlines(reply, named)
    result += _unbacked_dates_and_times(reply, named)
    result += _agreements(reply, turn, knowledge, rules, managers)
    result += _forbidden_promises(reply, config)
    return list(dict.fromkeys(result))


# --- which items a text names, and the quantities the customer gave them --------------------


def _named(knowledge: Knowledge, text: str, strong: bool = False) -> set[int]:
    """The items a text names: each thing named resolves to the items that explain its words
    best ("oak table" to the oak tables, not to every table); SKUs name their item. `strong`
    keeps only things named by at least half their name (a stray "come" is not "Корея")."""
    if not text.strip() or not knowledge.items:
        return set()
    return {
        m.index
        for group in _resolve(knowledge, text)
        if not strong or any(m.by_sku or m.coverage >= 0.5 for m in group)
        for m in group
    }


def _stated_quantities(knowledge: Knowledge, texts: Sequence[str]) -> dict[int, set[int]]:
    """item index → the quantities the customer put next to it (`Catalogue.order_lines`: "4
    oak dining chairs" gives the chairs 4, not the table named before them). A number that
    reads as a count anywhere in the message goes to what it names ("the Lux chair for 40k if
    I take ten": ten; "7 жаста", a child's age, is not one); a message naming none ("4 of
    them") gives its numbers to the items named last. Amounts of money are not quantities."""
    stated: dict[int, set[int]] = {}
    last: set[int] = set()
    catalogue = knowledge.catalogue
    for raw in texts:
        text = NOT_A_COUNT.sub(
            lambda m: " " * len(m.group(0)), _blank_amounts(_mask_codes(raw, knowledge))
        )
        lines = catalogue.order_lines(text) if knowledge.items else []
        groups = _resolve(knowledge, text)
        in_names = {p for g in groups for m in g for p in m.number_positions}
        tokens = analyse(text)
        free = [
            t.number
            for t in tokens
            if t.number is not None
            and 0 < t.number < 1000
            and t.position not in in_names
            and _reads_as_a_count(tokens, t.position)
        ]
        if not lines:
            for index in last:
                stated.setdefault(index, set()).update(free)
            continue
        named_now: set[int] = set()
        for group, qty in [*lines, *_own_quantities(knowledge, text)]:
            for match in group:
                stated.setdefault(match.index, set()).add(qty)
                stated[match.index].update(free)
                named_now.add(match.index)
        last = named_now
    return stated


# A number that is an age, a floor, a size or a time, not how many the customer wants.
NOT_A_COUNT = re.compile(
    r"(?<![\d.,])\d+\s*-?\s*(?:жас\w*|лет|год\w*|years?|yo\b|old|этаж\w*|floor\w*|қабат\w*|"
    r"дн\w*|день|days?|күн\w*|час\w*|hours?|сағат\w*|недел\w*|weeks?|месяц\w*|months?|"
    r"%|st\b|nd\b|rd\b|th\b)",
    re.IGNORECASE,
)
_BUYING = frozenset(
    [
        "take",
        "buy",
        "order",
        "need",
        "want",
        "get",
        "for",
        "x",
        "×",
        "возьму",
        "беру",
        "берём",
        "возьмём",
        "куплю",
        "купим",
        "нужно",
        "нужна",
        "нужен",
        "надо",
        "хочу",
        "закажу",
        "заказать",
        "аламын",
        "аламыз",
        "керек",
        "алам",
    ]
)
_PIECES = frozenset(
    [
        "шт",
        "штук",
        "штуки",
        "штука",
        "pcs",
        "pieces",
        "piece",
        "units",
        "unit",
        "дана",
        "of",
        "канистр",
        "канистры",
    ]
)


def _reads_as_a_count(tokens: Sequence[QueryToken], position: int) -> bool:
    """Whether a number stands where a count stands: after "take/need/возьму/аламын" or before
    "pcs/шт/дана" ("if I take ten", "12 канистр"), not any number of a message."""
    by_position = {t.position: t for t in tokens}
    before = {by_position[p].word for p in (position - 1, position - 2) if p in by_position}
    after = by_position.get(position + 1)
    return bool(before & _BUYING) or (after is not None and after.word in _PIECES)


def _own_quantities(knowledge: Knowledge, text: str) -> list[tuple[list[ItemMatch], int]]:
    """The quantity next to each thing named, part by part, where only the thing's own name
    numbers are not quantities: `order_lines` also sets aside numbers another, weaker match
    took ("4 × Масляный фильтр" loses its 4 to "Масло … 4л")."""
    found = []
    for part in segments(text):
        tokens = analyse(part)
        letters = {t.position for t in tokens if len(t.word) == 1 and not t.word.isdigit()}
        for group in _resolve(knowledge, part):
            words_at = set(group[0].positions) - set(group[0].number_positions)
            if not words_at:
                continue
            first = min(words_at)
            # A name's numbers follow its words ("Масло … 4л"): a number before them is a
            # quantity even when it equals one ("4 Масло моторное … 4л").
            own = {p for p in group[0].number_positions if p > first}
            positions = words_at | own
            while max(positions) + 1 in letters:  # "4л", "0W-20": the unit letter
                positions.add(max(positions) + 1)
            found.append((group, quantity_near(tokens, frozenset(positions), own)))
    return found


def _blank_amounts(text: str) -> str:
    for amount in find_amounts(text):
        text = text[: amount.start] + " " * (amount.end - amount.start) + text[amount.end :]
    return text


# --- amounts --------------------------------------------------------------------------------

TOTAL_RE = re.compile(
    r"\b(?:total|totals|in all|altogether|together|overall|sum|subtotal|grand total|"
    r"итого|итог|всего|в сумме|вместе|общая сумма|общая стоимость|на сумму|сумма|"
    r"барлығы|жалпы|жиыны|бәрі)\b",
    re.IGNORECASE,
)
# "4 × 45 000", "4 шт × 45 000", "4 pcs x 45 000" just before a price; "45 000 × 4" after it.
_QTY_BEFORE = re.compile(
    r"(?<![\d.,])(\d{1,4})\s*(?:шт\.?|pcs\.?|pieces|units|штук\w*|дана)?\s*[×xх*]\s*$", re.I
)
_QTY_AFTER = re.compile(r"^\s*[×xх*]\s*(\d{1,4})(?![\d.,]|\s\d{3})", re.IGNORECASE)
_EQUALS = re.compile(r"^\s*=\s*$")
SENTENCE_END_RE = re.compile(r"[.!?;…]+(?=\s)|\n+")
# Words that tie an amount to what the business rules charge for (a fee, not an item's price).
SERVICE_WORDS = re.compile(
    r"deliver|shipping|courier|assembl|install|fee|card|доставк|доставим|доставят|курьер|"
    r"сборк|собер|установк|монтаж|открытк|услуг|жеткіз|құрастыр|орнат",
    re.IGNORECASE,
)


@dataclass
class _Line:
    """An amount the reply lists and a total may add up."""

    value: Decimal
    scaled: Decimal  # × the customer's quantity when the line is a unit price
    from_rules: bool = False


@dataclass
class _Amounts:
    reply: str
    knowledge: Knowledge
    rule_amounts: list[tuple[Amount, str]]  # (amount, the rules sentence it stands in)
    manager_amounts: list[Amount]  # what a manager agreed without naming an item
    agreed: dict[int, Agreement]  # item index → the price a manager agreed for it (latest)
    stated: dict[int, set[int]]
    asked: str  # the customer's messages of this turn
    context: set[int]  # items the customer's messages (or the chat) named
    sentences: list[tuple[int, int]] = field(default_factory=list)
    sentence_items: list[set[int]] = field(default_factory=list)
    found: list[Finding] = field(default_factory=list)
    lines: list[_Line] = field(default_factory=list)

    def items_for(self, amount: Amount, window_start: int) -> set[int]:
        """The item(s) an amount is said about."""
        window = _named(self.knowledge, self.reply[window_start : amount.start], strong=True)
        if window:
            return window
        index = self.sentence_of(amount.start)
        for i in range(index, -1, -1):
            if self.sentence_items[i]:
                return self.sentence_items[i]
        return self.context

    def sentence_of(self, position: int) -> int:
        return next(
            (i for i, (a, b) in enumerate(self.sentences) if a <= position < b),
            len(self.sentences) - 1,
        )

    def unit_prices(self, index: int, currency: str) -> set[Decimal]:
        """The price of one unit of an item in this chat: the one a manager agreed, else the
        list's (in the amount's currency, or written without one)."""
        if index in self.agreed:
            # Both readings: agreements may take a number near the amount for a quantity.
            return {self.agreed[index].unit_price, self.agreed[index].amount.value}
        item = self.knowledge.items[index]
        return (
            {item.price}
            if not currency or not item.currency or currency == item.currency
            else set()
        )

    def qty_for(self, index: int) -> set[int]:
        return {1} | self.stated.get(index, set())


def _unbacked_amounts(
    reply: str, turn: TurnInput, knowledge: Knowledge, rules: str, managers: list[str]
) -> list[Finding]:
    masked = _mask_codes(reply, knowledge)
    amounts = find_amounts(masked)
    if not amounts:
        return []
    customer = [e.text for e in [*turn.history, *turn.pending] if e.speaker == "customer"]
    context: set[int] = set()
    for message in reversed([e for e in [*turn.history, *turn.pending] if e.speaker != "system"]):
        context = _named(knowledge, message.text)
        if context:
            break
    pending_named = set().union(*(_named(knowledge, e.text) for e in turn.pending))
    agreed = agreements(turn.history, knowledge) if managers else []
    state = _Amounts(
        reply=masked,
        knowledge=knowledge,
        rule_amounts=[
            (a, _sentence_text(rules, a.start)) for a in find_amounts(_mask_codes(rules, knowledge))
        ],
        manager_amounts=[a.amount for a in agreed if a.item_index is None],
        agreed={a.item_index: a for a in agreed if a.item_index is not None},
        stated=_stated_quantities(knowledge, customer),
        asked="\n".join(e.text for e in turn.pending),
        # Nothing named anywhere (a name the matcher cannot read, "teeth whitening" on a Russian
        # list): the amount must at least be some item's price. docs/guardrails.md says so.
        context=pending_named or context or set(range(len(knowledge.items))),
    )
    state.sentences = _sentences(masked)
    state.sentence_items = [_named(knowledge, masked[a:b]) for a, b in state.sentences]

    consumed: set[int] = set()  # amounts already judged as part of an "N × P = T" line
    previous_end = 0
    for position, amount in enumerate(amounts):
        sentence_start = state.sentences[state.sentence_of(amount.start)][0]
        window_start = max(previous_end, sentence_start)
        previous_end = amount.end
        if position in consumed:
            continue
        before = masked[window_start : amount.start]
        qty_match = _QTY_BEFORE.search(before)
        after = masked[amount.end : amount.end + 12]
        qty_after = None if qty_match else _QTY_AFTER.match(after)
        if qty_match or qty_after:
            qty = int((qty_match or qty_after).group(1))  # type: ignore[union-attr]
            result = amounts[position + 1] if position + 1 < len(amounts) else None
            tail_start = amount.end + (qty_after.end() if qty_after else 0)
            if result is not None and _EQUALS.match(
                _strip_currency(masked[tail_start : result.start])
            ):
                consumed.add(position + 1)
            else:
                result = None
            _judge_product(state, amount, qty, result, window_start)
            continue
        if TOTAL_RE.search(before + amount.text) and state.lines:
            _judge_total(state, amount)
            continue
        _judge_single(state, amount, window_start)
    return state.found


def _judge_product(
    state: _Amounts, unit: Amount, qty: int, result: Amount | None, window_start: int
) -> None:
    """A written line "N × P (= T)": P the price of the item it is about, N a quantity the
    customer gave that item, T = N × P."""
    items = state.items_for(unit, window_start)
    priced = [i for i in items if unit.value in state.unit_prices(i, unit.currency)]
    by_manager = _by_manager(state, unit)
    shown = format_money(unit.value, unit.currency)
    if not priced and not by_manager:
        state.found.append(_not_the_price(state, unit, items))
    elif priced and not any(qty in state.qty_for(i) for i in priced):
        names = ", ".join(state.knowledge.items[i].name for i in priced)
        state.found.append(
            Finding("price", f"{qty} × {shown}: the customer did not ask for {qty} × {names}")
        )
    elif by_manager and not priced and qty not in set().union({1}, *state.stated.values()):
        state.found.append(Finding("price", f"{qty} × {shown}: the customer did not ask for {qty}"))
    product = unit.value * qty
    if result is not None and result.value != product:
        state.found.append(
            Finding(
                "price",
                f"{qty} × {shown} is {format_money(product, unit.currency)}, "
                f"not {format_money(result.value, result.currency or unit.currency)}",
            )
        )
    value = result.value if result is not None else product
    state.lines.append(_Line(value, value))


def _judge_total(state: _Amounts, amount: Amount) -> None:
    """A total must be the sum of the lines listed before it (with or without the rules' fees,
    unit prices counted at the customer's quantity or not)."""
    sums = _sums(state.lines)
    if amount.value not in sums:
        shown = format_money(amount.value, amount.currency)
        expected = format_money(min(sums, key=lambda s: abs(s - amount.value)), amount.currency)
        state.found.append(
            Finding("price", f"total {shown} is not the sum of the lines above ({expected})")
        )
    state.lines = [_Line(amount.value, amount.value)]


def _sums(lines: list[_Line]) -> set[Decimal]:
    zero = Decimal(0)
    every = [lines, [line for line in lines if not line.from_rules]]
    return {
        sum((getattr(line, k) for line in ls), zero) for ls in every for k in ("value", "scaled")
    }


def _judge_single(state: _Amounts, amount: Amount, window_start: int) -> None:
    knowledge = state.knowledge
    window_items = _named(knowledge, state.reply[window_start : amount.start], strong=True)
    items = state.items_for(amount, window_start)
    for index in items:
        item = knowledge.items[index]
        agreed = state.agreed.get(index)
        if agreed is not None:
            quantities = state.qty_for(index) | {agreed.quantity or 1}
            if any(
                amount.value == unit * q
                for unit in state.unit_prices(index, amount.currency)
                for q in quantities
            ):
                state.lines.append(_Line(amount.value, amount.value))
                return
            if _is_price(amount, item):
                shown = format_money(amount.value, amount.currency)
                state.found.append(
                    Finding(
                        "price",
                        f"price {shown} for {item.name} contradicts the "
                        f"{format_money(agreed.amount.value, item.currency)} a manager agreed",
                    )
                )
                return
            continue
        if _is_price(amount, item):
            qtys = state.stated.get(index, set())
            scaled = amount.value * max(qtys) if len(qtys) == 1 else amount.value
            state.lines.append(_Line(amount.value, scaled))
            return
        for qty in state.qty_for(index) - {1}:
            if _same_money(amount, item.price * qty, item.currency):
                state.lines.append(_Line(amount.value, amount.value))
                return
    if _by_manager(state, amount):
        state.lines.append(_Line(amount.value, amount.value))
        return
    for rule_amount, sentence in state.rule_amounts:
        if _same_money(amount, rule_amount.value, rule_amount.currency) and _tied_to_rule(
            state, amount, sentence, bool(window_items)
        ):
            state.lines.append(_Line(amount.value, amount.value, from_rules=True))
            return
    if len(state.lines) >= 2 and amount.value in _sums(state.lines):
        state.lines = [_Line(amount.value, amount.value)]  # an unlabelled total
        return
    state.found.append(_not_the_price(state, amount, items))


def _not_the_price(state: _Amounts, amount: Amount, items: Iterable[int]) -> Finding:
    shown = format_money(amount.value, amount.currency)
    names = [state.knowledge.items[i].name for i in sorted(items)][:3]
    if names and any(_is_price(amount, i) for i in state.knowledge.items):
        return Finding("price", f"price {shown} is not the price of {' / '.join(names)}")
    return Finding("price", f"price {shown} not in the price list")


def _tied_to_rule(state: _Amounts, amount: Amount, rule_sentence: str, names_item: bool) -> bool:
    """Whether the words around an amount (its sentence, else the customer's question) say it
    is what the rules charge it for: "delivery 3 000" is the fee, "It costs 500" after "the
    peonies?" is not the card the rules price at 500."""
    a, b = state.sentences[state.sentence_of(amount.start)]
    around = state.reply[max(a, amount.start - 60) : min(b, amount.end + 30)]
    texts = [around] if names_item else [around, state.asked]
    if any(SERVICE_WORDS.search(t) for t in texts):
        return True
    if names_item:
        return False
    rule_stems = {stem(w) for w in words(rule_sentence) if len(w) > 3}
    return any(stem(w) in rule_stems for t in texts for w in words(t) if len(w) > 3)


def _by_manager(state: _Amounts, amount: Amount) -> bool:
    return any(_same_money(amount, a.value, a.currency) for a in state.manager_amounts)


def _is_price(amount: Amount, item: KnowledgeItem) -> bool:
    return _same_money(amount, item.price, item.currency)


def _same_money(amount: Amount, value: Decimal, currency: str) -> bool:
    """Equal values; a missing currency on either side matches any."""
    return value == amount.value and (
        not amount.currency or not currency or currency == amount.currency
    )


_CODE_RE = re.compile(r"[^\s,;:()\[\]]+")


def _mask_codes(text: str, knowledge: Knowledge) -> str:
    """The text with the list's SKUs blanked, so "04465-33471" is never read as money. One pass
    over the text's words, whatever the size of the list."""
    skus = _skus(knowledge)
    if not skus:
        return text

    def blank(match: re.Match[str]) -> str:
        word = match.group(0)
        core = word.rstrip(".!?…").lower()
        return " " * len(core) + word[len(core) :] if core in skus else word

    return _CODE_RE.sub(blank, text)


_SKU_CACHE: weakref.WeakKeyDictionary[Catalogue, frozenset[str]] = weakref.WeakKeyDictionary()
_RESOLVED: weakref.WeakKeyDictionary[Catalogue, dict[str, list[list[ItemMatch]]]] = (
    weakref.WeakKeyDictionary()
)


def _skus(knowledge: Knowledge) -> frozenset[str]:
    """The list's SKUs that hold a digit (the only ones a number could be read from)."""
    found = _SKU_CACHE.get(knowledge.catalogue)
    if found is None:
        found = frozenset(
            i.sku.lower() for i in knowledge.items if i.sku and any(c.isdigit() for c in i.sku)
        )
        _SKU_CACHE[knowledge.catalogue] = found
    return found


def _resolve(knowledge: Knowledge, text: str) -> list[list[ItemMatch]]:
    """`Catalogue.resolve`, remembered per list for the texts of recent turns (a reply's
    sentences and the chat's messages are read several times per check)."""
    if not knowledge.items or (not content_tokens(analyse(text)) and not re.search(r"\d", text)):
        return []
    cache = _RESOLVED.setdefault(knowledge.catalogue, {})
    groups = cache.get(text)
    if groups is None:
        if len(cache) > 512:
            cache.clear()
        groups = cache[text] = knowledge.catalogue.resolve(text)
    return groups


def _strip_currency(text: str) -> str:
    from assistant.knowledge.money import CURRENCY_RE

    return CURRENCY_RE.sub("", text)


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line; a decimal point is not an end."""
    spans, start = [], 0
    for match in SENTENCE_END_RE.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


@functools.lru_cache(maxsize=64)
def _sentence_starts(text: str) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    # Every deadline or amount in a long reference text asks for its sentence: split it once.
    spans = tuple(_sentences(text))
    return tuple(a for a, _ in spans), spans


def _sentence_text(text: str, position: int) -> str:
    starts, spans = _sentence_starts(text)
    a, b = spans[max(0, bisect.bisect_right(starts, position) - 1)]
    return text[a:b] if a <= position < b else text


# --- percentages ----------------------------------------------------------------------------

DISCOUNT_WORDS = re.compile(r"скидк|discount|\boff\b|дешевле|cheaper|жеңілдік", re.IGNORECASE)


def _unbacked_percentages(reply: str, reference: str) -> list[Finding]:
    allowed = {p.value for p in find_percentages(reference)}
    result = []
    for found in find_percentages(reply):
        if found.value in allowed:
            continue
        window = reply[max(0, found.start - 40) : found.start + len(found.text) + 40]
        label = "discount" if DISCOUNT_WORDS.search(window) else "percentage"
        shown = found.text.split("%")[0].strip()
        number = re.match(r"[\d.,]+", shown)
        result.append(
            Finding(
                "percentage",
                f"{label} {number.group(0) if number else shown}% not in the price list",
            )
        )
    return result


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
    "year": "year", "years": "year", "год": "year", "года": "year", "лет": "year", "жыл": "year",
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
    r"сделаем|получите|отправ|установ|соберем|жеткіз|дайын|guarantee|warrant|гарант|кепілдік",
    re.IGNORECASE,
)


def deadlines(text: str) -> list[tuple[str, str]]:
    """(canonical form, as written) of every deadline in a text."""
    return list(_deadlines(text))


@functools.lru_cache(maxsize=64)
def _deadlines(text: str) -> tuple[tuple[str, str], ...]:
    # A function of the text alone; the reference (rules, price notes) is the same long text
    # for every turn of a channel, so it is scanned once, not once per reply.
    found = []
    for match in DEADLINE_RE.finditer(text):
        window = _sentence_text(text, match.start())
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
    return tuple(found)


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


# --- dates and clock times -----------------------------------------------------------------

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "oct": 10, "nov": 11, "dec": 12, "янв": 1, "фев": 2, "мар": 3, "апр": 4, "мая": 5, "май": 5,
    "июн": 6, "июл": 7, "авг": 8, "сен": 9, "окт": 10, "ноя": 11, "дек": 12, "қаң": 1, "ақп": 2,
    "нау": 3, "сәу": 4, "мам": 5, "мау": 6, "шіл": 7, "там": 8, "қыр": 9, "қаз": 10, "қар": 11,
    "жел": 12,
}  # fmt: skip
_MONTH_RE = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|января|февраля|марта|апреля|"
    r"мая|июня|июля|августа|сентября|октября|ноября|декабря|қаңтар\w*|ақпан\w*|наурыз\w*|"
    r"сәуір\w*|мамыр\w*|маусым\w*|шілде\w*|тамыз\w*|қыркүйек\w*|қазан\w*|қараша\w*|"
    r"желтоқсан\w*)"
)
DATE_RE = re.compile(
    r"(?<![\d.,:])(?P<d1>[0-3]?\d)[./](?P<m1>[01]?\d)(?:[./](?:\d{4}|\d{2}))?(?![\d]|[.,]\d)"
    rf"|(?<!\d)(?P<d2>[0-3]?\d)(?:st|nd|rd|th|-?го|-?е)?\s+(?:of\s+)?(?P<m2>{_MONTH_RE})\b"
    rf"|\b(?P<m3>{_MONTH_RE})\s+(?P<d3>[0-3]?\d)(?:st|nd|rd|th)?\b"
    r"|\b(?:the|by the|on the)\s+(?P<d4>[0-3]?\d)(?:st|nd|rd|th)\b",
    re.IGNORECASE,
)
TIME_RE = re.compile(r"(?<![\d:.,])(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?![\d:]|[.,]\d)")


def dates(text: str) -> list[tuple[str, str]]:
    """(canonical "date:D.M", as written) of every calendar date in a text."""
    return list(_dates(text))


@functools.lru_cache(maxsize=64)
def _dates(text: str) -> tuple[tuple[str, str], ...]:
    found = []
    for match in DATE_RE.finditer(text):
        g = match.groupdict()
        day = int(g["d1"] or g["d2"] or g["d3"] or g["d4"])
        month_raw = g["m1"] or g["m2"] or g["m3"] or ""
        month = int(month_raw) if month_raw.isdigit() else _MONTHS.get(month_raw.lower()[:3], 0)
        if g["d1"] and ":" in text[max(0, match.start() - 1) : match.start()]:
            continue
        if not 1 <= day <= 31 or (month_raw and not 1 <= month <= 12):
            continue
        found.append((f"date:{day}.{month}", match.group(0)))
    return tuple(found)


def times(text: str) -> list[tuple[str, str]]:
    """(canonical "time:H:MM", as written) of every clock time ("10:00", "9:30")."""
    return list(_times(text))


@functools.lru_cache(maxsize=64)
def _times(text: str) -> tuple[tuple[str, str], ...]:
    found = []
    for match in TIME_RE.finditer(text):
        found.append((f"time:{int(match.group('h'))}:{match.group('m')}", match.group(0)))
    return tuple(found)


def _unbacked_dates_and_times(reply: str, reference: str) -> list[Finding]:
    allowed = {c for c, _ in [*dates(reference), *times(reference)]}
    masked = find_amounts_free(reply)
    result = []
    for canonical, written in dates(masked):
        if canonical not in allowed:
            result.append(Finding("deadline", f"date '{written}' not in the business rules"))
    for canonical, written in times(masked):
        if canonical not in allowed:
            result.append(Finding("deadline", f"time '{written}' not in the business rules"))
    return result


def find_amounts_free(text: str) -> str:
    """The text with amounts of money blanked (a price "1.500" is not a date or a time)."""
    for amount in find_amounts(text):
        if any(c in amount.text for c in ".:"):
            text = text[: amount.start] + " " * (amount.end - amount.start) + text[amount.end :]
    return text


# --- agreeing to the customer's terms -------------------------------------------------------

# What a customer asks for that only a manager can give.
ASKS_DISCOUNT = re.compile(
    r"скидк|discount|cheaper|дешевле|подешевле|уступ|торг|жеңілдік|арзан|lower (?:the )?price|"
    r"best price|special price|особ\w* цен|спец\w* цен|reduce|knock|deal\b|bargain|sale\b",
    re.IGNORECASE,
)
ASKS_FREE = re.compile(
    r"\bfree\b|бесплатн|даром|тегін|no charge|for nothing|без оплаты", re.IGNORECASE
)
ASKS_DEADLINE = re.compile(
    r"\b(?:tomorrow|today|tonight|завтра|сегодня|послезавтра|ертең|бүгін)\b|"
    r"urgent|asap|as soon as|срочно|побыстрее|быстрее|шұғыл|тез арада|by (?:the )?\d|"
    r"by (?:tomorrow|tonight|today|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"к (?:завтра|понедельник|вторник|среде|четвергу|пятнице|субботе|воскресенью)|"
    r"до (?:завтра|понедельника|вторника|среды|четверга|пятницы|субботы|воскресенья)",
    re.IGNORECASE,
)
ASKS_PRICE_FOR = re.compile(
    r"\bfor\b|\bat\b|\bза\b|отдадите|отдашь|сделаете|уступите|would you take|can you do|"
    r"could you do|if i take|если возьму|беремін|алсам",
    re.IGNORECASE,
)
# The reply saying yes to it. Strong forms agree whatever follows; "sure/да/иә" at the start of
# a reply agree when the customer asked for terms and the reply neither refuses nor defers.
AGREES = re.compile(
    r"\b(?:i|we) can do (?:that|it|this)\b|\bcan do\b|\b(?:it'?s a )?deal\b|(?<!as )\bagreed\b|"
    r"\byou(?:'ve)? got it\b|\bno problem\b|\bwe'?ll (?:do|make) (?:it|that)\b|"
    r"\b(?:i|we) (?:can|will|'ll) (?:give|offer|make|do) (?:you )?(?:a |an |the )?"
    r"(?:discount|special price|better price|price of|it for|them for)|"
    r"\bfor you\b[^.!?\n]{0,20}\b(?:only|special)|"
    r"(?<!как )(?<!как мы )(?<!уже )договорились|по рукам|\bидёт\b|\bидет\b|без проблем|"
    r"сделаем(?! заказ)|можем сделать|"
    r"можем (?:дать|предложить|уступить|отдать)|отдадим|уступим|дадим скидку|"
    r"предоставим скидку|согласн\w*|"
    r"келістік|келісемін|жасаймыз|жасай аламыз|береміз|болады|мақұл",
    re.IGNORECASE,
)
# Closing a deal is a manager's word whatever was asked.
CLOSES = re.compile(
    r"(?<!как )(?<!как мы )(?<!уже )договорились|по рукам|келістік|\bit'?s a deal\b", re.IGNORECASE
)
WEAK_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|sure|of course|ok|okay|certainly|absolutely|да|конечно|хорошо|ладно|"
    r"разумеется|иә|әрине|жарайды|жақсы)\b",
    re.IGNORECASE,
)
REFUSES = re.compile(
    r"can'?t|cannot|can not|unable|not able|unfortunately|sorry|not possible|won'?t|fixed|"
    r"only (?:at )?the list|к сожалению|не можем|не могу|не получится|нет возможности|"
    r"невозможно|не предусмотрен|фиксирован|өкінішке|мүмкін емес|алмаймыз|болмайды|жоқ",
    re.IGNORECASE,
)
DEFERS = re.compile(
    r"manager|colleague|менеджер|коллег|передам|передал|уточн|менеджерге|маман|"
    r"check with|ask (?:our|the|a)",
    re.IGNORECASE,
)
# Promises that need no question to be promises: a discount, free delivery, a special price.
PROMISES = (
    ("a discount", re.compile(
        r"(?:give|offer|make|do|get)\s+(?:you\s+)?(?:a\s+)?(?:\d+\s*%\s*)?discount|"
        r"discount for you|сделаем\s+(?:вам\s+)?скидк|дадим\s+(?:вам\s+)?скидк|"
        r"предоставим\s+(?:вам\s+)?скидк|скидк\w* для вас|со скидкой|"
        r"жеңілдік\s+(?:жасаймыз|береміз|жасай аламыз)", re.IGNORECASE), DISCOUNT_WORDS),
    ("free delivery", re.compile(
        r"free (?:delivery|shipping|assembly|installation)|(?:deliver|ship)\w* (?:it |them )?"
        r"(?:for )?free|бесплатн\w* (?:доставк|сборк|установк)|(?:доставим|соберем|соберём|"
        r"привезем|привезём) бесплатно|тегін жеткіз|жеткізу тегін|at no (?:extra )?cost|"
        r"for free|бесплатн\w*|тегін|(?<!feel )\bfree\b(?! to\b)", re.IGNORECASE), ASKS_FREE),
    ("a price cut", re.compile(
        r"half price|half off|50/50|two for one|2 for 1|buy one,? get one|полцены|"
        r"пол цены|за полцены|два по цене одного|1\+1|жарты бағасына|екеуі бірдің бағасына",
        re.IGNORECASE), re.compile(r"half|полцен|1\+1|жарты", re.IGNORECASE)),
    ("a special price", re.compile(
        r"special price|price just for you|особ\w* цен|спец\w* цен|персональн\w* цен|"
        r"только для вас|арнайы баға", re.IGNORECASE),
        re.compile(r"special|особ|спец|арнайы", re.IGNORECASE)),
)  # fmt: skip


def _agreements(
    reply: str, turn: TurnInput, knowledge: Knowledge, rules: str, managers: list[str]
) -> list[Finding]:
    """Agreeing to terms the rules do not give, whether or not a number is written."""
    result = []
    for label, pattern, allowed_by in PROMISES:
        for match in pattern.finditer(reply):
            if _negated(reply, match.start()):
                continue
            if label == "free delivery":
                # A manager may have given it in this chat ("доставка для вас бесплатно").
                refused = _free_refused(
                    reply, match, turn, knowledge, "\n".join([rules, *managers])
                )
                if refused:
                    result.append(Finding("promise", refused))
                    break
                continue
            if any(allowed_by.search(c) for c in _granting_clauses(rules)) or any(
                pattern.search(m) for m in managers
            ):
                continue
            result.append(Finding("promise", f"promises {label}: '{match.group(0).strip()}'"))
            break
    closing = CLOSES.search(reply)
    if closing and not _negated(reply, closing.start()):
        result.append(Finding("promise", f"closes a deal: '{closing.group(0).strip()}'"))
    asked = _asked_terms(turn, knowledge, rules)
    if not asked:
        return result
    refuses = REFUSES.search(reply)
    for match in AGREES.finditer(reply):
        if not _negated(reply, match.start()):
            result.append(Finding("promise", f"agrees to {asked}: '{match.group(0).strip()}'"))
            return result
    weak = WEAK_YES.search(reply)
    if weak and not refuses and not DEFERS.search(reply):
        result.append(Finding("promise", f"agrees to {asked}: '{weak.group(0).strip()}'"))
    return result


FREE_WORDS = re.compile(r"\bfree\b|бесплатн|тегін|no charge|at no (?:extra )?cost", re.I)
_SUBJECTS = (
    ("assembly", re.compile(r"assembl|сборк|собер|соберём|құрастыр", re.IGNORECASE)),
    ("installation", re.compile(r"install|установ|монтаж|орнат", re.IGNORECASE)),
    ("delivery", re.compile(r"deliver|shipping|ship\b|доставк|доставим|привез|жеткіз", re.I)),
)
_FROM = re.compile(r"(?:from|over|above|at least|от|свыше|более|бастап)\s*$", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:no|not|none|нет|не|без|жоқ|емес)\b", re.IGNORECASE)


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[.;\n]+", text) if c.strip()]


def _granting_clauses(rules: str) -> list[str]:
    """Clauses of the rules that give something ("скидка 5% от 3 предметов"), not the ones that
    deny it ("Других скидок нет", "No other discounts")."""
    return [c for c in _clauses(rules) if not _NEGATION.search(c)]


def _subject(text: str) -> str:
    return next((name for name, pattern in _SUBJECTS if pattern.search(text)), "")


def _free_refused(
    reply: str, match: re.Match[str], turn: TurnInput, knowledge: Knowledge, rules: str
) -> str:
    """Why a "free …" in the reply is not what the rules give ("" when it is): the rules must
    make the same thing free, and the order must reach the rules' threshold ("free for orders
    from 300 000 KZT")."""
    sentence = _sentence_text(reply, match.start())
    subject = _subject(match.group(0)) or _subject(sentence)
    said = match.group(0).strip()
    lowest: Decimal | None = None
    for clause in _granting_clauses(rules):
        if not FREE_WORDS.search(clause) or _subject(clause) != subject:
            continue
        if not subject and not {stem(w) for w in words(sentence) if len(w) > 3} & {
            stem(w) for w in words(clause) if len(w) > 3
        }:
            continue
        thresholds = [a.value for a in find_amounts(clause) if _FROM.search(clause[: a.start])]
        if not thresholds or _order_value(reply, turn, knowledge) >= min(thresholds):
            return ""
        lowest = min(thresholds) if lowest is None else min(lowest, *thresholds)
    if lowest is not None:
        shown = format_money(lowest, knowledge.default_currency)
        return f"promises {subject or 'it'} free: '{said}' (the rules give it from {shown})"
    return f"promises free {subject or 'terms'}: '{said}'"


def _order_value(reply: str, turn: TurnInput, knowledge: Knowledge) -> Decimal:
    """What the order is worth: the largest amount the reply writes, else the customer's
    items at their quantities."""
    amounts = [a.value for a in find_amounts(_mask_codes(reply, knowledge))]
    if amounts:
        return max(amounts)
    customer = [e.text for e in [*turn.history, *turn.pending] if e.speaker == "customer"]
    stated = _stated_quantities(knowledge, customer)
    return sum((knowledge.items[i].price * max(q) for i, q in stated.items()), Decimal(0))


def _asked_terms(turn: TurnInput, knowledge: Knowledge, rules: str) -> str:
    """What the customer's latest messages ask for beyond the list and the rules."""
    text = "\n".join(e.text for e in turn.pending if e.speaker == "customer")
    if not text.strip():
        return ""
    if ASKS_DISCOUNT.search(text):
        return "a discount the rules do not give"
    if ASKS_FREE.search(text) and not any(FREE_WORDS.search(c) for c in _granting_clauses(rules)):
        return "free terms the rules do not give"
    named = _named(knowledge, text)
    prices = {i.price for n, i in enumerate(knowledge.items) if not named or n in named}
    if not named:
        prices |= {a.value for a in find_amounts(rules)}
    custom = [a for a in find_amounts(_mask_codes(text, knowledge)) if a.value not in prices]
    if custom and ASKS_PRICE_FOR.search(text):
        return f"the customer's price {format_money(custom[0].value, custom[0].currency)}"
    asked_deadline = [c for c, _ in deadlines(text)] + [c for c, _ in dates(text)]
    written = "\n".join([rules, *(i.name for i in knowledge.items)])
    allowed = {c for c, _ in deadlines(written)} | {c for c, _ in dates(written)}
    if (asked_deadline and not set(asked_deadline) <= allowed) or ASKS_DEADLINE.search(text):
        return "the customer's deadline"
    return ""


def _negated(text: str, position: int) -> bool:
    before = text[max(0, position - 25) : position].lower()
    return (
        re.search(r"\b(?:not|no|never|нет|не|емес|жоқ)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+)?$", before)
        is not None
    )


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
