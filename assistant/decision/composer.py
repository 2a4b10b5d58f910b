"""The quote composer: every amount a reply states is computed here, in code, from what the
turn was read to ask for (`reading.Quote`: an item, its quantity in the item's own unit, a price
a manager agreed) and the business rules: each line (unit price × quantity = line total), the
order total, and the fees the rules define as fixed amounts (delivery, assembly, …; free above
the rules' threshold), the discounts and surcharges the rules give in percent that the
customer's message meets, and the prepayment asked about. A fee the rules give "from" or "per
floor" gives no total at all. Both
backends render their amounts through it; the guardrail checks the result as the last proof.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from assistant.decision.reading import Quote
from assistant.decision.replies import TEXTS, availability_phrase, text
from assistant.knowledge.fees import (
    ChildRate,
    NamedFee,
    PercentTerm,
    counter,
    fee_for,
    percent_terms,
    term_applies,
)
from assistant.knowledge.matching import (
    Family,
    Party,
    format_quantity,
    measure_of,
    normalise,
    stem,
    words,
)
from assistant.knowledge.money import format_money
from assistant.knowledge.rules import (
    CHARGED,
    Charge,
    RuleAnswer,
    charges,
    topic_clauses,
    topics,
)
from assistant.models import Availability

# A request for the total ("сколько всего?", "with delivery").
TOTAL_RE = re.compile(
    r"total|altogether|in all|all together|всего|итого|вместе|в сумме|барлығы|жалпы|бәрі|"
    r"\bwith (?:the )?(?:delivery|shipping|assembly|installation)|"
    r"\bс (?:доставкой|сборкой|установкой|подъемом)|\bплюс (?:доставка|сборка)"
)


def quote_lines(
    quotes: list[Quote],
    lang: str,
    with_availability: bool = False,
    terms: Sequence[PercentTerm] = (),
) -> str:
    """One line per quote and their total; `terms` (a discount or surcharge the rules give
    and the customer's message meets) change the lines they are about, or else the total.
    An item out of stock is no part of the total: its line comes after it."""
    counted, unavailable = _quote_parts(quotes, lang, with_availability, terms)
    return "\n".join(counted + unavailable)


def _quote_parts(
    quotes: list[Quote], lang: str, with_availability: bool, terms: Sequence[PercentTerm]
) -> tuple[list[str], list[str]]:
    """`quote_lines`' lines that count (with their total), and those of items out of stock."""
    quotes = sorted(quotes, key=_out_of_stock)  # stable: the order asked, unavailable last
    lines = []
    unavailable: list[str] = []
    totals: list[Decimal] = []
    on_lines = {id(t) for t in terms if any(_about(t, q) for q in quotes)}
    for quote in quotes:
        item = quote.item
        price = format_money(quote.unit_price, item.currency)
        total = format_money(quote.total, item.currency)
        name = item.name_in(lang)
        if quote.child is not None:
            age, rate = quote.child
            label = f"{name}, {text('answer.child', lang, age=str(age))}"
            free = text("charge.free", lang)
            line = (
                f"{label}: {free}"
                if rate.term is None
                else f"{label}: {price}, " + _term_label(rate.term, lang, total)
            )
        elif quote.qty != 1 and quote.total != quote.unit_price * quote.qty:
            line = f"{name}, {format_quantity(quote.qty)}: {total}"  # a total as agreed
        elif quote.qty != 1:
            line = f"{name}: {format_quantity(quote.qty)} × {price} = {total}"
        else:
            unit = f" / {item.unit}" if item.unit and item.unit.lower() not in PIECES else ""
            line = f"{name}: {price}{unit}"
        value = quote.total
        for term in terms:
            if quote.child is not None:
                break  # a child's rate is its own term
            if id(term) in on_lines and _about(term, quote) and not quote.agreed:
                value = term.applied(value)
                line += ", " + _term_label(term, lang, format_money(value, item.currency))
        totals.append(value)
        notes = [text("answer.agreed", lang)] if quote.agreed else []
        if quote.least is not None:
            least = f"{format_quantity(quote.least)} {item.unit}".strip()
            notes.append(text("answer.minimum", lang, least=least))
        if with_availability:
            phrase = availability_phrase(item.availability, item.availability_note, lang)
            notes += [phrase] if phrase else []
        if notes:
            line += f" ({'; '.join(notes)})"
        if _out_of_stock(quote) and len(quotes) > 1:
            unavailable.append(line)
            totals.pop()
            continue
        lines.append(line)
    counted = len(quotes) - len(unavailable)
    currencies = {q.item.currency for q in quotes}
    whole = [t for t in terms if id(t) not in on_lines and not t.target]
    if (len(quotes) > 1 or whole) and len(currencies) == 1:
        currency = currencies.pop()
        grand = sum(totals, Decimal(0))
        if counted > 1:
            lines.append(text("answer.total", lang, total=format_money(grand, currency)))
        for term in whole:
            grand = term.applied(grand)
            shown = format_money(grand, currency)
            lines.append(text("answer.total", lang, total=_term_label(term, lang, shown)))
    return lines, unavailable


def with_party(quotes: list[Quote], party: Party | None, rates: Sequence[ChildRate]) -> list[Quote]:
    """A thing priced per person for a party with children ("2 взрослых и ребёнок 8 лет"):
    the adults' line, and a line per child at the rate the rules give that age (free, or a
    discount); a child older than every rate pays as an adult. Unchanged when a child's age is
    not said or the rules give children no rate: the composer does not guess one."""
    if party is None or not party.children or not rates:
        return quotes
    ages = [age for age in party.children if age is not None]
    if len(ages) < len(party.children):
        return quotes
    out: list[Quote] = []
    for quote in quotes:
        measure = measure_of(quote.item.unit)
        if quote.agreed is not None or measure is None or measure.family is not Family.PERSON:
            out.append(quote)
            continue
        paying = (party.people or 0) + sum(not any(r.fits(a) for r in rates) for a in ages)
        if paying:
            out.append(Quote(quote.item, Decimal(paying)))
        out += [
            Quote(quote.item, Decimal(1), child=(age, rate))
            for age in ages
            if (rate := next((r for r in rates if r.fits(age)), None)) is not None
        ]
    return out


def _out_of_stock(quote: Quote) -> bool:
    return quote.item.availability == Availability.OUT_OF_STOCK


def _about(term: PercentTerm, quote: Quote) -> bool:
    """A term is about an item its clause names a word of: what it is "на"/"on" when it says
    ("скидка 50% на шиномонтаж": the fitting, not the tyres), else any word of the clause
    ("при оплате группового курса": the group course, not the textbook)."""
    named = {stem(w)[:5] for w in words(quote.item.name) if len(w) >= 4}
    return bool(named & {stem(w)[:5] for w in words(term.target or term.clause) if len(w) >= 4})


def _term_label(term: PercentTerm, lang: str, shown: str) -> str:
    return text(f"answer.{term.kind}", lang, share=f"{format_quantity(term.rate)}%: {shown}")


def prepayment_lines(quotes: list[Quote], message: str, rule: RuleAnswer, lang: str) -> list[str]:
    """The prepayment the rules ask, computed on the order, when the customer asks about it
    ("Какая предоплата за Медовик 3 кг?" → "Предоплата 50%: 12 750 KZT")."""
    currencies = {q.item.currency for q in quotes}
    if not quotes or len(currencies) != 1:
        return []
    currency = currencies.pop()
    for term in percent_terms("\n".join(rule.sentences)):
        if term.kind != "prepayment" or not term_applies(term, message):
            continue
        # "30% от стоимости меню": of the lines it is about, where the order has them.
        about = [q for q in quotes if term.target and _about(term, q)] or quotes
        if any(q.qty == 1 and _per_measure(q) for q in about):
            return []  # priced per person, kg, m²… and no amount read: no share of a guess
        share = term.of(sum((q.total for q in about), Decimal(0)))
        return [_term_label(term, lang, format_money(share, currency))]
    return []


def _per_measure(quote: Quote) -> bool:
    unit = (quote.item.unit or "").lower()
    return bool(unit) and unit not in PIECES


def applying_terms(message: str, rules: str) -> list[PercentTerm]:
    """The discounts and surcharges of the rules that the message meets."""
    return [t for t in percent_terms(rules) if t.kind != "prepayment" and term_applies(t, message)]


def order_with_charges(
    quotes: list[Quote],
    message: str,
    rule: RuleAnswer,
    lang: str,
    rules: str = "",
    extras: Sequence[NamedFee] = (),
) -> str:
    """The order's lines, and when the customer asks the total with delivery (assembly, …)
    the rules' charge for each as a line of its own, counted in the total (a fixed one, or
    one per bag, floor or km computed from the counts given); the rules' extras the customer
    named ("с надписью") likewise. When a charge cannot be computed ("from 2 500", a floor
    not given) there is no total at all."""
    # An item of the list that is itself a fee the rules charge ("Assembly", "Доставка по
    # Алматы"): the rules' charge stands for it, computed per order, item or km, never twice.
    fees = [q for q in quotes if topics(q.item.name) & rule.topics & CHARGED]
    if fees and len(fees) < len(quotes):
        goods = [q for q in quotes if q not in fees]
        priced = order_with_charges(goods, message, rule, lang, rules, extras)
        if any(_is_total_line(line, lang) for line in priced.splitlines()):
            return priced  # else no charge could be computed: the list's own fee line stands
    terms = applying_terms(message, rules)
    counted, unavailable = _quote_parts(quotes, lang, True, terms)
    lines = "\n".join(counted + unavailable)
    currencies = {q.item.currency for q in quotes}
    # A party's children at the rate the rules give answer the rules' question themselves:
    # their total stands.
    charged = rule.topics & CHARGED or not any(q.child for q in quotes)
    asks_total = TOTAL_RE.search(normalise(message))
    if terms or not ((asks_total and charged) or extras) or len(currencies) != 1:
        return "\n".join([lines, *prepayment_lines(quotes, message, rule, lang)])
    subtotal = sum((q.total for q in quotes if not _out_of_stock(q)), Decimal(0))
    found = charges(message, rule, subtotal, rules) if rule.topics else []
    if found is None and rules:
        found = per_unit_charges(rule.topics, message, rules, order_counts(quotes))
    currency = currencies.pop()
    kept = [line for line in counted if not _is_total_line(line, lang)]
    if found is None or not (found or extras):
        return "\n".join(kept + unavailable)
    kept += [charge_line(charge, currency, lang) for charge in found]
    kept += [f"{fee.label}: {format_money(fee.amount, currency)}" for fee in extras]
    grand = subtotal + sum((c.amount for c in found), Decimal(0))
    grand += sum((fee.amount for fee in extras), Decimal(0))
    kept.append(text("answer.total", lang, total=format_money(grand, currency)))
    return "\n".join(kept + unavailable)


def per_unit_charges(
    asked: frozenset[str], message: str, rules: str, order: dict[str, Decimal] | None = None
) -> list[Charge] | None:
    """The fee of each topic asked about that the rules charge per something ("150 тг за
    мешок за каждый этаж", "7 000 тг + 250 тг за км"), computed from the order and the counts
    the customer wrote; None when one of them cannot be computed (the sentence is quoted as
    written, with no total)."""
    count = counter(message, order)
    found: list[Charge] = []
    for topic in sorted(asked & CHARGED):
        fee = fee_for(topic_clauses(rules, topic), message, count)
        if fee is None:
            return None
        found.append(Charge(topic, fee[1], fee[0].clause))
    return found or None


def charge_line(charge: Charge, currency: str, lang: str) -> str:
    key = f"charge.{charge.topic}"
    label = text(key if key in TEXTS else "charge.default", lang)
    shown = format_money(charge.amount, currency) if charge.amount else text("charge.free", lang)
    return f"{label}: {shown}"


def order_counts(quotes: list[Quote]) -> dict[str, Decimal]:
    """How many of each unit the order holds (bags, sheets…): what a fee per bag counts."""
    counts: dict[str, Decimal] = {}
    for quote in quotes:
        measure = measure_of(quote.item.unit)
        family = measure.family.value if measure is not None else "piece"
        counts[family] = counts.get(family, Decimal(0)) + quote.qty
    return counts


def _is_total_line(line: str, lang: str) -> bool:
    return line.startswith(text("answer.total", lang, total="").strip())


PIECES = {"шт", "шт.", "pcs", "pc", "piece", "pieces", "unit", "units", "дана"}
