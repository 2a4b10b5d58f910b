"""Every amount of money in a reply must be derived (the rules are in the package docstring):
an item's list price, that price × a quantity the customer gave that item, a written line
"N × P = T" with T = N × P, a total that is the sum of the lines above it, an amount the
business rules charge for what the sentence speaks of, or a price a manager agreed in the chat.
`unbacked_amounts` walks the reply's amounts in order and returns a `Finding` for each that is
none of these; `amount_proofs` the same walk's `Proof` of each that is."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.utils.translation import gettext

from assistant.decision.guardrails.finding import Finding, Proof
from assistant.decision.guardrails.items import items_named, mask_codes, stated_quantities
from assistant.decision.guardrails.sentences import (
    blank_amounts,
    sentence_spans,
    sentence_text,
    strip_currency,
)
from assistant.knowledge.agreements import Agreement, agreements
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.fees import Fee, PercentTerm, fee_in, percent_terms
from assistant.knowledge.matching import format_quantity, stem, words
from assistant.knowledge.money import Amount, find_amounts, format_money
from assistant.knowledge.rules import rule_clauses
from assistant.schema import TurnInput

TOTAL_RE = re.compile(
    r"\b(?:total|totals|in all|altogether|together|overall|sum|subtotal|grand total|"
    r"итого|итог|всего|в сумме|вместе|общая сумма|общая стоимость|на сумму|сумма|"
    r"барлығы|жалпы|жиыны|бәрі)\b",
    re.IGNORECASE,
)
# "4 × 45 000", "4 шт × 45 000", "4 pcs x 45 000" just before a price; "45 000 × 4" after it.
_QTY = r"\d{1,4}(?:[.,]\d{1,3})?"
_QTY_BEFORE = re.compile(
    rf"(?<![\d.,])({_QTY})\s*(?:[^\W\d_]{{1,8}}\.?|м²|m²)?\s*[×xх*]\s*$", re.IGNORECASE
)
_QTY_AFTER = re.compile(rf"^\s*[×xх*]\s*({_QTY})(?![\d.,]|\s\d{{3}})", re.IGNORECASE)
_EQUALS = re.compile(r"^\s*=\s*$")
# Words that tie an amount to what the business rules charge for (a fee, not an item's price).
SERVICE_WORDS = re.compile(
    r"deliver|shipping|courier|assembl|install|fee|card|доставк|доставим|доставят|курьер|"
    r"сборк|собер|установк|монтаж|открытк|услуг|жеткіз|құрастыр|орнат|қызмет",
    re.IGNORECASE,
)


@dataclass
class _Line:
    """An amount the reply lists and a total may add up."""

    value: Decimal
    scaled: Decimal  # × the customer's quantity when the line is a unit price
    from_rules: bool = False
    # A unit price of an item the customer gave a quantity for in this turn: a total counts
    # it at that quantity, never as one ("30 bags" and "15 sheets" do not total one of each).
    must_scale: bool = False


@dataclass
class _Amounts:
    reply: str
    knowledge: Knowledge
    rule_amounts: list[tuple[Amount, str]]  # (amount, the rules sentence it stands in)
    manager_amounts: list[Amount]  # what a manager agreed without naming an item
    agreed: dict[int, Agreement]  # item index → the price a manager agreed for it (latest)
    stated: dict[int, set[Decimal]]
    # The quantities this turn's messages gave (a line or total must use them).
    stated_now: dict[int, set[Decimal]]
    per_unit_fees: list[Fee]  # what the rules charge per bag, floor, km…
    percents: list[PercentTerm]  # the discounts, surcharges and prepayments the rules state
    asked: str  # the customer's messages of this turn
    context: set[int]  # items the customer's messages (or the chat) named
    sentences: list[tuple[int, int]] = field(default_factory=list)
    sentence_items: list[set[int]] = field(default_factory=list)
    found: list[Finding] = field(default_factory=list)
    proofs: list[Proof] = field(default_factory=list)
    lines: list[_Line] = field(default_factory=list)

    def proven(self, amount: Amount, basis: str) -> None:
        self.proofs.append(Proof(format_money(amount.value, amount.currency), basis))

    def items_for(self, amount: Amount, window_start: int) -> set[int]:
        """The item(s) an amount is said about."""
        window = items_named(self.knowledge, self.reply[window_start : amount.start], strong=True)
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

    def qty_for(self, index: int) -> set[Decimal]:
        return self._at_least({Decimal(1)} | self.stated.get(index, set()), index)

    def qty_now(self, index: int) -> set[Decimal]:
        """The quantities this turn's messages clearly gave an item: {} when they gave none, or
        also read a 1 ("the 160 table": a name's number, maybe a count)."""
        now = self.stated_now.get(index, set())
        return set() if Decimal(1) in now else self._at_least(now, index)

    def _at_least(self, quantities: set[Decimal], index: int) -> set[Decimal]:
        """With the least quantity the list sells the item in ("Минимум 4 часа"), where the
        customer asked less: the composer counts that."""
        least = self.knowledge.catalogue.minimums[index]
        if least is not None and quantities and min(quantities) < least:
            return quantities | {least}
        return quantities


def unbacked_amounts(
    reply: str, turn: TurnInput, knowledge: Knowledge, rules: str, managers: list[str]
) -> list[Finding]:
    state = _walk(reply, turn, knowledge, rules, managers)
    return state.found if state is not None else []


def amount_proofs(
    reply: str, turn: TurnInput, knowledge: Knowledge, rules: str, managers: list[str]
) -> list[Proof]:
    """What backs each amount the reply states, in order (an unproven one has a `Finding`)."""
    state = _walk(reply, turn, knowledge, rules, managers)
    return state.proofs if state is not None else []


def _walk(
    reply: str, turn: TurnInput, knowledge: Knowledge, rules: str, managers: list[str]
) -> _Amounts | None:
    """The reply's amounts judged in order; None when it states none."""
    masked = mask_codes(reply, knowledge)
    amounts = find_amounts(masked)
    if not amounts:
        return None
    customer = [e.text for e in [*turn.history, *turn.pending] if e.speaker == "customer"]
    context: set[int] = set()
    for message in reversed([e for e in [*turn.history, *turn.pending] if e.speaker != "system"]):
        context = items_named(knowledge, message.text)
        if context:
            break
    pending_named = set().union(*(items_named(knowledge, e.text) for e in turn.pending))
    agreed = agreements(turn.history, knowledge) if managers else []
    state = _Amounts(
        reply=masked,
        knowledge=knowledge,
        rule_amounts=[
            (a, sentence_text(rules, a.start)) for a in find_amounts(mask_codes(rules, knowledge))
        ],
        manager_amounts=[a.amount for a in agreed if a.item_index is None],
        agreed={a.item_index: a for a in agreed if a.item_index is not None},
        stated=stated_quantities(knowledge, customer),
        stated_now=stated_quantities(knowledge, [e.text for e in turn.pending]),
        per_unit_fees=[
            fee for clause in rule_clauses(rules) if (fee := fee_in(clause)) is not None
        ],
        percents=percent_terms(rules),
        asked="\n".join(e.text for e in turn.pending),
        # Nothing named anywhere (a name the matcher cannot read, "teeth whitening" on a Russian
        # list): the amount must at least be some item's price. docs/guardrails.md says so.
        context=pending_named or context or set(range(len(knowledge.items))),
    )
    state.sentences = sentence_spans(masked)
    state.sentence_items = [items_named(knowledge, masked[a:b]) for a, b in state.sentences]

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
            written = (qty_match or qty_after).group(1)  # type: ignore[union-attr]
            qty = Decimal(written.replace(",", "."))
            result = amounts[position + 1] if position + 1 < len(amounts) else None
            tail_start = amount.end + (qty_after.end() if qty_after else 0)
            if result is not None and _EQUALS.match(
                strip_currency(masked[tail_start : result.start])
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
    return state


def _judge_product(
    state: _Amounts, unit: Amount, qty: Decimal, result: Amount | None, window_start: int
) -> None:
    """A written line "N × P (= T)": P the price of the item it is about, N a quantity the
    customer gave that item, T = N × P."""
    items = state.items_for(unit, window_start)
    before = len(state.found)
    priced = [i for i in items if unit.value in state.unit_prices(i, unit.currency)]
    by_manager = _by_manager(state, unit)
    shown = format_money(unit.value, unit.currency)
    count = format_quantity(qty)
    if not priced and not by_manager:
        state.found.append(_not_the_price(state, unit, items))
    elif priced and not any(qty in (state.qty_now(i) or state.qty_for(i)) for i in priced):
        names = ", ".join(state.knowledge.items[i].name for i in priced)
        state.found.append(
            Finding(
                "price",
                gettext("%(count)s × %(price)s: the customer did not ask for %(count)s × %(names)s")
                % {"count": count, "price": shown, "names": names},
            )
        )
    elif by_manager and not priced and qty not in set().union({1}, *state.stated.values()):
        state.found.append(
            Finding(
                "price",
                gettext("%(count)s × %(price)s: the customer did not ask for %(count)s")
                % {"count": count, "price": shown},
            )
        )
    product = unit.value * qty
    if priced and len(state.found) == before:
        names = ", ".join(state.knowledge.items[i].name for i in priced)
        if any(i in state.agreed for i in priced):
            basis = gettext(
                "the price a manager agreed for %(names)s, × %(count)s as the customer asked"
            )
        else:
            basis = gettext("the price of %(names)s, × %(count)s as the customer asked")
        state.proven(unit, basis % {"names": names, "count": count})
    elif by_manager and len(state.found) == before:
        state.proven(
            unit, gettext("a price a manager gave in this chat, × %(count)s") % {"count": count}
        )
    if result is not None and result.value != product:
        state.found.append(
            Finding(
                "price",
                gettext("%(count)s × %(price)s is %(product)s, not %(written)s")
                % {
                    "count": qty,
                    "price": shown,
                    "product": format_money(product, unit.currency),
                    "written": format_money(result.value, result.currency or unit.currency),
                },
            )
        )
    if result is not None and result.value == product:
        state.proven(result, gettext("%(count)s × %(price)s") % {"count": count, "price": shown})
    value = result.value if result is not None else product
    state.lines.append(_Line(value, value))


def _judge_total(state: _Amounts, amount: Amount) -> None:
    """A total must be the sum of the lines listed before it (with or without the rules' fees,
    unit prices counted at the customer's quantity or not)."""
    sums = _sums(state.lines)
    # Or that sum after a discount or surcharge the rules state ("Итого со скидкой 10%").
    adjusted = {t.applied(s) for s in sums for t in state.percents if t.kind != "prepayment"}
    if amount.value not in sums | adjusted:
        shown = format_money(amount.value, amount.currency)
        expected = format_money(min(sums, key=lambda s: abs(s - amount.value)), amount.currency)
        state.found.append(
            Finding(
                "price",
                gettext("total %(total)s is not the sum of the lines above (%(expected)s)")
                % {"total": shown, "expected": expected},
            )
        )
    else:
        state.proven(amount, gettext("the sum of the lines above"))
    state.lines = [_Line(amount.value, amount.value)]


def _sums(lines: list[_Line]) -> set[Decimal]:
    """What the lines may add up to: with or without the rules' fees, each unit price at the
    customer's quantity, or as written where this turn gave the item no quantity."""
    zero = Decimal(0)
    every = [lines, [line for line in lines if not line.from_rules]]
    return {
        sum(
            (line.scaled if scaled or line.must_scale else line.value for line in ls),
            zero,
        )
        for ls in every
        for scaled in (False, True)
    }


def _judge_single(state: _Amounts, amount: Amount, window_start: int) -> None:
    knowledge = state.knowledge
    window_items = items_named(knowledge, state.reply[window_start : amount.start], strong=True)
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
                state.proven(
                    amount,
                    gettext("the price a manager agreed for %(name)s") % {"name": item.name},
                )
                return
            if _is_price(amount, item):
                shown = format_money(amount.value, amount.currency)
                state.found.append(
                    Finding(
                        "price",
                        gettext(
                            "price %(price)s for %(name)s contradicts the %(agreed)s"
                            " a manager agreed"
                        )
                        % {
                            "price": shown,
                            "name": item.name,
                            "agreed": format_money(agreed.amount.value, item.currency),
                        },
                    )
                )
                return
            continue
        if _is_price(amount, item):
            now = state.qty_now(index)
            qtys = now or state.stated.get(index, set())
            scaled = amount.value * max(qtys) if len(qtys) == 1 else amount.value
            state.lines.append(_Line(amount.value, scaled, must_scale=len(now) == 1))
            state.proven(amount, gettext("the list price of %(name)s") % {"name": item.name})
            return
        for qty in state.qty_for(index) - {1}:
            if _same_money(amount, item.price * qty, item.currency):
                state.lines.append(_Line(amount.value, amount.value))
                state.proven(
                    amount,
                    gettext("%(count)s × the list price of %(name)s")
                    % {"count": format_quantity(qty), "name": item.name},
                )
                return
    if _by_manager(state, amount):
        state.lines.append(_Line(amount.value, amount.value))
        state.proven(amount, gettext("an amount a manager gave in this chat"))
        return
    for rule_amount, sentence in state.rule_amounts:
        if _same_money(amount, rule_amount.value, rule_amount.currency) and _tied_to_rule(
            state, amount, sentence, bool(window_items)
        ):
            state.lines.append(_Line(amount.value, amount.value, from_rules=True))
            state.proven(
                amount,
                gettext("the business rules: %(sentence)s") % {"sentence": sentence.strip()[:200]},
            )
            return
    if _fee_from_rules(state, amount):
        state.lines.append(_Line(amount.value, amount.value, from_rules=True))
        state.proven(
            amount,
            gettext("a fee the business rules charge per unit, at the customer's counts"),
        )
        return
    if _by_percent(state, amount):
        state.proven(amount, "a discount, surcharge or prepayment the business rules give")
        return
    if len(state.lines) >= 2 and amount.value in _sums(state.lines):
        state.lines = [_Line(amount.value, amount.value)]  # an unlabelled total
        state.proven(amount, gettext("the sum of the lines above"))
        return
    state.found.append(_not_the_price(state, amount, items))


def _fee_from_rules(state: _Amounts, amount: Amount) -> bool:
    """A fee the rules charge per something (`assistant.knowledge.fees`), at counts this turn
    gave: "150 тг за мешок за каждый этаж" × 20 bags × the 4th floor = 12 000; "7 000 тг +
    250 тг за каждый км" for 20 km = 12 000. Each thing it is per takes one of the
    customer's numbers; the sentence must speak of the fee, not of an item."""
    if not state.per_unit_fees:
        return False
    counts = {
        Decimal(n)
        for n in re.findall(r"(?<![\d.,])\d{1,4}(?![\d]|[.,]\d)", blank_amounts(state.asked))
        if int(n) > 0
    }
    counts |= {q for qs in state.stated_now.values() for q in qs}
    for fee in state.per_unit_fees:
        products = {Decimal(1)}
        for _word in fee.per:
            products = {p * c for p in products for c in counts}
        if any(amount.value == fee.amount * p + fee.base for p in products):
            return not items_named(state.knowledge, _sentence_around(state, amount), strong=True)
    return False


def _by_percent(state: _Amounts, amount: Amount) -> bool:
    """A line's amount after a discount or surcharge the rules state ("84 000, со скидкой 10%:
    75 600"), which it then stands for; or the prepayment the rules ask, of the lines' sum."""
    if not state.lines:
        return False
    last = state.lines[-1]
    for term in state.percents:
        if term.kind != "prepayment" and amount.value == term.applied(last.value):
            state.lines[-1] = _Line(amount.value, amount.value)
            return True
        if term.kind == "prepayment" and amount.value in {term.of(s) for s in _sums(state.lines)}:
            return True
    return False


def _sentence_around(state: _Amounts, amount: Amount) -> str:
    a, b = state.sentences[state.sentence_of(amount.start)]
    return state.reply[a:b]


def _not_the_price(state: _Amounts, amount: Amount, items: Iterable[int]) -> Finding:
    shown = format_money(amount.value, amount.currency)
    names = [state.knowledge.items[i].name for i in sorted(items)][:3]
    if names and any(_is_price(amount, i) for i in state.knowledge.items):
        return Finding(
            "price",
            gettext("price %(price)s is not the price of %(names)s")
            % {"price": shown, "names": " / ".join(names)},
        )
    return Finding("price", gettext("price %(price)s not in the price list") % {"price": shown})


def _tied_to_rule(state: _Amounts, amount: Amount, rule_sentence: str, names_item: bool) -> bool:
    """Whether the words around an amount (its sentence, else the customer's question) say it
    is what the rules charge it for: "delivery 3 000" is the fee, "It costs 500" after "the
    peonies?" is not the card the rules price at 500."""
    a, b = state.sentences[state.sentence_of(amount.start)]
    around = state.reply[max(a, amount.start - 60) : min(b, amount.end + 30)]
    texts = [around] if names_item else [around, state.asked]
    if any(SERVICE_WORDS.search(t) for t in texts):
        return True
    if _labelled_as_in_rules(around, rule_sentence, amount):
        return True
    if names_item:
        return False
    rule_stems = {stem(w) for w in words(rule_sentence) if len(w) > 3}
    return any(stem(w) in rule_stems for t in texts for w in words(t) if len(w) > 3)


def _labelled_as_in_rules(around: str, rule_sentence: str, amount: Amount) -> bool:
    """Whether the reply names the amount with the rules' own words for it ("Надпись на
    торте: 1 000" for "Надпись на торте — 1000 тг"): the two or more words before the
    amount in the rules, found before it in the reply."""
    for found in find_amounts(rule_sentence):
        if found.value != amount.value:
            continue
        label = words(rule_sentence[: found.start])[-3:]
        if len(label) >= 2 and " ".join(label) in " ".join(words(around)):
            return True
    return False


def _by_manager(state: _Amounts, amount: Amount) -> bool:
    return any(_same_money(amount, a.value, a.currency) for a in state.manager_amounts)


def _is_price(amount: Amount, item: KnowledgeItem) -> bool:
    return _same_money(amount, item.price, item.currency)


def _same_money(amount: Amount, value: Decimal, currency: str) -> bool:
    """Equal values; a missing currency on either side matches any."""
    return value == amount.value and (
        not amount.currency or not currency or currency == amount.currency
    )
