"""Fees the business rules charge per something, read so that code, not words, computes them:
"150 тг за мешок за каждый этаж", "250 тг за каждый км", "7 000 тг + 250 тг за каждый км от
границы города", "200 тг за один рез", "1 000 KZT per floor".

    fee = fee_in("мешки — 150 тг за мешок за каждый этаж")   # Fee(150, per=("мешок", "этаж"))
    fee_total(fee, counts)                                   # 150 × bags × floors, or None

A fee is computed only when every thing it is charged per has a count: the bags of the order,
the floor or the kilometres the customer wrote ("на 4 этаж", "км 20"). Otherwise there is no
amount at all, and the sentence is quoted as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from assistant.knowledge.matching import is_stopword, stem, word_key, words
from assistant.knowledge.matching.units import Measure, family_of, quantity_in
from assistant.knowledge.money import find_amounts
from assistant.knowledge.rules import CHARGED, rule_clauses, topic_clauses

# After an amount: "тг за мешок", "за каждый этаж", "per floor", "/км".
_PER_RE = re.compile(
    r"^\s*(?:тг|тенге|kzt|₸)?\.?\s*(?:за|per|a|/)\s*"
    r"(?:(?:кажд\w*|один|одну|одно|each|every)\s+)?([^\W\d_]+)",
    re.IGNORECASE,
)
# Words a fee is never "per" in the sense of a count ("за заказ", "за рейс": once per order).
_ONCE = re.compile(r"^(?:заказ|order|рейс|trip|выезд|поездк|визит|visit)", re.IGNORECASE)
_PLUS_RE = re.compile(r"\+\s*$")


@dataclass(frozen=True)
class Fee:
    amount: Decimal
    per: tuple[str, ...]  # what it is charged per, as written ("мешок", "этаж")
    base: Decimal = Decimal(0)  # a fixed part charged with it ("7 000 тг + 250 тг за км")
    clause: str = ""


def fee_in(clause: str) -> Fee | None:
    """The per-unit fee a clause of the rules states, or None (a fixed amount, or none)."""
    amounts = find_amounts(clause)
    for number, amount in enumerate(amounts):
        per: list[str] = []
        rest = clause[amount.end :]
        while (found := _PER_RE.match(rest)) is not None and not _ONCE.match(found.group(1)):
            per.append(found.group(1).lower())
            rest = rest[found.end() :]
        if not per:
            continue
        base = Decimal(0)
        if number and _PLUS_RE.search(clause[amounts[number - 1].end : amount.start]):
            base = amounts[number - 1].value
        return Fee(amount.value, tuple(per), base, clause)
    return None


def fee_total(fee: Fee, count: Callable[[str], Decimal | None]) -> Decimal | None:
    """The fee for this order: the amount × the count of each thing it is per (+ its fixed
    part); None when a count is missing."""
    total = fee.amount
    for word in fee.per:
        n = count(word)
        if n is None:
            return None
        total *= n
    return total + fee.base


def counter(
    message: str, order: dict[str, Decimal] | None = None
) -> Callable[[str], Decimal | None]:
    """How many of a thing a fee is per, from the order (bags, sheets: by unit family) and the
    customer's words: a count in that unit ("20 мешков"), or a number beside the word ("на 4
    этаж", "4-й этаж", "км 20", "20 km")."""
    tokens = words(message)

    def count(word: str) -> Decimal | None:
        named = family_of(word)
        if named is not None:
            family = named[0].value
            if order and family in order:
                return order[family]
            in_unit = quantity_in(message, Measure(named[0]))
            if in_unit is not None:
                return in_unit
        key = stem(word)[:4]
        for i, token in enumerate(tokens):
            if not stem(token).startswith(key):
                continue
            for j in (i - 1, i - 2, i + 1):
                if 0 <= j < len(tokens) and tokens[j].isdigit() and 0 < int(tokens[j]) < 1000:
                    return Decimal(tokens[j])
        return None

    return count


def fee_for(
    clauses: list[str], message: str, count: Callable[[str], Decimal | None]
) -> tuple[Fee, Decimal] | None:
    """The per-unit fee of the rules' clauses that this message asks about, with its amount:
    of the fees every count is known for, the one whose clause agrees with the message on
    what it says with or without ("лифта нет" is the clause "без лифта", not "с лифтом") and
    shares most words with it. None when no such fee can be computed."""
    asked = _said(message)
    best: tuple[int, Fee, Decimal] | None = None
    for clause in clauses:
        fee = fee_in(clause)
        if fee is None:
            continue
        total = fee_total(fee, count)
        if total is None:
            continue
        said = _said(clause)
        if any(key in asked and asked[key] != denied for key, denied in said.items()):
            continue  # "с лифтом" when the customer has none
        score = len(set(said) & set(asked))
        if best is None or score > best[0]:
            best = (score, fee, total)
    return (best[1], best[2]) if best else None


_DENY_BEFORE = frozenset({"без", "without", "no", "не", "нет"})
_DENY_AFTER = frozenset({"нет", "no", "жоқ", "none"})


def _said(text: str) -> dict[str, bool]:
    """The text's words (stems of four letters or more) and whether each is denied: "без
    лифта", "лифта нет", "no lift" deny the lift."""
    tokens = words(text)
    said: dict[str, bool] = {}
    for i, token in enumerate(tokens):
        if len(token) < 4 or token.isdigit():
            continue
        denied = (i > 0 and tokens[i - 1] in _DENY_BEFORE) or (
            i + 1 < len(tokens) and tokens[i + 1] in _DENY_AFTER
        )
        said[stem(token)[:5]] = denied
    return said


@dataclass(frozen=True)
class NamedFee:
    """A fixed amount the rules charge for something the customer asked for by name
    ("Надпись на торте — 1 000 тг" for "и чтобы надпись была")."""

    label: str
    amount: Decimal
    clause: str


def named_fees(message: str, rules: str, list_words: frozenset[str]) -> list[NamedFee]:
    """The rules' fixed extras the message names by a word of their own: a clause with one
    amount (not "from", not a threshold, not per something) sharing a distinctive word with
    the message that is not a word of the price list's names (a cake rule is not named by
    "торт")."""
    asked = {stem(w)[:5] for w in words(message) if len(w) >= 5}
    # Delivery, assembly, lifting… are the charges' own (`rules.charges`), clauses that go
    # on about them ("за город 4 000 тг") included.
    charged = {clause for topic in CHARGED for clause in topic_clauses(rules, topic)}
    found: list[NamedFee] = []
    for clause in rule_clauses(rules):
        amounts = find_amounts(clause)
        if len(amounts) != 1 or fee_in(clause) is not None or clause in charged:
            continue
        amount = amounts[0]
        before = clause[: amount.start]
        if _FREE_OR_FROM.search(clause) or "%" in clause[amount.end : amount.end + 3]:
            continue
        own = {
            stem(w)[:5]
            for w in words(before)
            if len(w) >= 5 and word_key(w) not in list_words and not is_stopword(w)
        }
        if own & asked - _GENERAL:
            label = re.split(r"\s[—–-]\s|:\s", before.strip(" .,;:—–-"))[0].strip()
            found.append(NamedFee(label[:80] or clause[:40], amount.value, clause))
    return found


_FREE_OR_FROM = re.compile(
    r"бесплатн|free|тегін|(?:\bот|\bfrom|свыше|не менее|at least|минимал\w*)\s*\d", re.IGNORECASE
)
# Words of rules that name no extra ("стоимость", "оплата", "заказ").
_GENERAL = frozenset(
    {"стоим", "оплат", "заказ", "сумма", "услуг", "цена", "работ", "клиен", "price", "order"}
)
