"""The quote composer: every amount a reply states is computed here, in code, from what the
turn was read to ask for (`reading.Quote`: an item, its quantity in the item's own unit, a price
a manager agreed) and the business rules: each line (unit price × quantity = line total), the
order total, and the fees the rules define as fixed amounts (delivery, assembly, …; free above
the rules' threshold). A fee the rules give "from" or "per floor" gives no total at all. Both
backends render their amounts through it; the guardrail checks the result as the last proof.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from assistant.decision.reading import Quote
from assistant.decision.replies import TEXTS, availability_phrase, text
from assistant.knowledge.fees import NamedFee, counter, fee_for
from assistant.knowledge.matching import format_quantity, measure_of, normalise
from assistant.knowledge.money import format_money
from assistant.knowledge.rules import CHARGED, Charge, RuleAnswer, charges, topic_clauses

# A request for the total ("сколько всего?", "with delivery").
TOTAL_RE = re.compile(
    r"total|altogether|in all|all together|всего|итого|вместе|в сумме|барлығы|жалпы|бәрі|"
    r"\bwith (?:the )?(?:delivery|shipping|assembly|installation)|"
    r"\bс (?:доставкой|сборкой|установкой|подъемом)|\bплюс (?:доставка|сборка)"
)


def quote_lines(quotes: list[Quote], lang: str, with_availability: bool = False) -> str:
    lines = []
    for quote in quotes:
        item = quote.item
        price = format_money(quote.unit_price, item.currency)
        total = format_money(quote.total, item.currency)
        if quote.qty != 1 and quote.total != quote.unit_price * quote.qty:
            line = f"{item.name}, {format_quantity(quote.qty)}: {total}"  # a total as agreed
        elif quote.qty != 1:
            line = f"{item.name}: {format_quantity(quote.qty)} × {price} = {total}"
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
    lines = quote_lines(quotes, lang, with_availability=True)
    currencies = {q.item.currency for q in quotes}
    if not (TOTAL_RE.search(normalise(message)) or extras) or len(currencies) != 1:
        return lines
    subtotal = sum((q.total for q in quotes), Decimal(0))
    found = charges(message, rule, subtotal, rules) if rule.topics else []
    if found is None and rules:
        found = per_unit_charges(rule.topics, message, rules, order_counts(quotes))
    currency = currencies.pop()
    kept = [line for line in lines.splitlines() if not _is_total_line(line, lang)]
    if found is None or not (found or extras):
        return "\n".join(kept)
    kept += [charge_line(charge, currency, lang) for charge in found]
    kept += [f"{fee.label}: {format_money(fee.amount, currency)}" for fee in extras]
    grand = subtotal + sum((c.amount for c in found), Decimal(0))
    grand += sum((fee.amount for fee in extras), Decimal(0))
    kept.append(text("answer.total", lang, total=format_money(grand, currency)))
    return "\n".join(kept)


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
