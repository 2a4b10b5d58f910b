"""Fees the business rules charge per something, read so that code, not words, computes them:
"150 тг за мешок за каждый этаж", "250 тг за каждый км", "7 000 тг + 250 тг за каждый км от
границы города", "200 тг за один рез", "1 000 KZT per floor".

    fee = fee_in("мешки — 150 тг за мешок за каждый этаж")   # Fee(150, per=("мешок", "этаж"))
    fee_total(fee, counts)                                   # 150 × bags × floors, or None

A fee is computed only when every thing it is charged per has a count: the bags of the order,
the floor or the kilometres the customer wrote ("на 4 этаж", "км 20"). Otherwise there is no
amount at all, and the sentence is quoted as written.

Percentages are read too (`percent_terms`): "скидка 10% при оплате сразу за 3 месяца", "+50%
к стоимости заказа", "предоплата 30% от стоимости меню", each with what it is on and, as far as
words tell, whether a message meets its condition (`term_applies`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from assistant.knowledge.matching import analyse, is_stopword, party_of, stem, word_key, words
from assistant.knowledge.matching.quantities import names_a_child
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


# Floors counted from the second ("за каждый этаж выше первого", "above the first floor").
_ABOVE_FIRST_RE = re.compile(
    r"выше первого|above the first|со второго|from the second|кроме первого|"
    r"бірінші қабаттан жоғары",
    re.IGNORECASE,
)
_FLOOR_RE = re.compile(r"этаж|floor|қабат", re.IGNORECASE)


def fee_total(fee: Fee, count: Callable[[str], Decimal | None]) -> Decimal | None:
    """The fee for this order: the amount × the count of each thing it is per (+ its fixed
    part); None when a count is missing."""
    total = fee.amount
    for word in fee.per:
        n = count(word)
        if n is None:
            return None
        if _FLOOR_RE.match(word) and _ABOVE_FIRST_RE.search(fee.clause):
            n = max(n - 1, Decimal(0))  # "за каждый этаж выше первого": the 5th floor is 4
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


# --- percentages: a discount, a surcharge or a prepayment the rules state ------------------

_PERCENT_RE = re.compile(r"(\+\s*)?(?<![\d.,])(\d{1,2}(?:[.,]\d+)?)\s*%")
_DISCOUNT_RE = re.compile(r"скидк|discount|\boff\b|жеңілдік", re.IGNORECASE)
_PREPAY_RE = re.compile(r"предоплат|prepay|аванс|задат|deposit|алдын ала", re.IGNORECASE)
_SURCHARGE_RE = re.compile(
    r"наценк|надбавк|доплат|обслуживан|service|surcharge|сверху|добавля|к стоимости|к сумме",
    re.IGNORECASE,
)
_HUNDRED = Decimal(100)
# What a percentage is on, up to where its condition starts: "на комплексный шиномонтаж",
# "off the assembly", "к стоимости заказа" (the whole order: no target).
_TARGET_RE = re.compile(
    r"\s*(?:на|on|off(?: the)?|for|от(?: стоимости)?|of(?: the)?(?: (?:cost|price) of)?)\s+"
    r"(?!заказ|order|всё|все|all\b|весь|сумм|total|стоимост)"
    r"((?:(?!\b(?:при|если|когда|if|when|with|для|for|over|from|свыше|от)\b)[^\W\d][\w-]*\s*)"
    r"{1,4})",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class PercentTerm:
    """ "Скидка 10% при оплате сразу за 3 месяца": kind "discount", rate 10, the clause."""

    kind: str  # "discount", "surcharge" or "prepayment"
    rate: Decimal
    clause: str
    target: str = ""  # what it is on, where the clause says: "на шиномонтаж" → "шиномонтаж"

    def of(self, amount: Decimal) -> Decimal:
        """The share itself (a prepayment), in whole units of the currency."""
        return _whole(amount * self.rate / _HUNDRED)

    def applied(self, amount: Decimal) -> Decimal:
        """The amount after the term: less a discount, plus a surcharge."""
        sign = -1 if self.kind == "discount" else 1
        return _whole(amount * (_HUNDRED + sign * self.rate) / _HUNDRED)


def _whole(amount: Decimal) -> Decimal:
    return amount.quantize(Decimal(1), rounding="ROUND_HALF_UP")


def percent_terms(rules: str) -> list[PercentTerm]:
    """Every percentage the rules state with what it is: a discount, a surcharge ("+50% к
    стоимости", "обслуживание 10%") or a prepayment. A percentage that is none of these (a
    fabric's "100% хлопок") is no term."""
    found: list[PercentTerm] = []
    for clause in rule_clauses(rules):
        for match in _PERCENT_RE.finditer(clause):
            rate = Decimal(match.group(2).replace(",", "."))
            if _PREPAY_RE.search(clause):
                kind = "prepayment"
            elif _DISCOUNT_RE.search(clause):
                kind = "discount"
            elif match.group(1) or _SURCHARGE_RE.search(clause):
                kind = "surcharge"
            else:
                continue
            if 0 < rate < _HUNDRED:
                on = _TARGET_RE.match(clause[match.end() :])
                found.append(PercentTerm(kind, rate, clause, on.group(1).strip() if on else ""))
    return found


# A party size a term holds from: "от 10 человек", "from 8 people", "10 адамнан бастап".
_PEOPLE_FROM_RE = re.compile(
    r"(?:от|from|свыше|over|более|больше)\s*(\d{1,3})\s*(?:человек|чел|people|persons|guests|"
    r"гост|адам|кісі)|(\d{1,3})\s*(?:адам|кісі)\w*\s*(?:бастап|асса)",
    re.IGNORECASE,
)


def term_applies(term: PercentTerm, message: str) -> bool:
    """Whether the customer's message meets a term's condition, as far as words can tell: a
    prepayment when they ask about it; a discount or surcharge when every number of its
    condition is one the customer wrote ("сразу за 3 месяца") and at least two of its
    distinctive words (its one word: "Пенсионерам") are theirs too. A condition the message
    does not speak of (a birthday, the fourth order) is left to the sentence, as written."""
    if term.kind == "prepayment":
        return bool(_PREPAY_RE.search(message))
    threshold = _PEOPLE_FROM_RE.search(term.clause)
    if threshold is not None:
        # "Группам от 10 человек скидка 10%": a party of that size or more ("нас 12 человек").
        party = party_of(message)
        size = (party.people or 0) + len(party.children) if party is not None else 0
        return size >= int(threshold.group(1) or threshold.group(2))
    condition = _PERCENT_RE.sub(" ", term.clause)
    for amount in find_amounts(condition):
        condition = condition[: amount.start] + " " * len(amount.text) + condition[amount.end :]
    wanted = {int(n) for n in re.findall(r"(?<![\d.,])\d{1,3}(?![\d]|[.,]\d)", condition)}
    written = {t.number for t in analyse(message) if t.number is not None}
    if not wanted <= written:
        return False
    kind_words = _DISCOUNT_RE if term.kind == "discount" else _SURCHARGE_RE
    # What the term is on ("на мужские стрижки") is no condition: "Пенсионерам" is.
    target = {stem(w)[:5] for w in words(term.target)}
    own = {
        stem(w)[:5]
        for w in words(condition)
        if len(w) >= 4 and not is_stopword(w) and not kind_words.search(w)
    } - target
    said = {stem(w)[:5] for w in words(message) if len(w) >= 4}
    shared = (own & said) - _GENERAL
    return bool(shared) and len(shared) >= min(2, len(own - _GENERAL))


# A child's rate the rules give: "Дети до 5 лет бесплатно", "дети 5–12 лет — скидка 30%",
# "children under 5 free", "5 жасқа дейінгі балалар тегін".
_FREE_RE = re.compile(r"бесплатн|free|тегін", re.IGNORECASE)
_UNDER_RE = re.compile(r"(?:до|under|younger than|below)\s*(\d{1,2})|(\d{1,2})\s*жас\w*\s*дейін")
_BETWEEN_RE = re.compile(
    r"(?:от|from)?\s*(\d{1,2})\s*(?:[–—-]|до|to)\s*(\d{1,2})\s*(?:лет|год|years|жас)"
)


@dataclass(frozen=True)
class ChildRate:
    """A child's price by age, as the rules give it: free, or a percentage off."""

    youngest: int
    oldest: int
    term: PercentTerm | None  # the discount; None: free
    clause: str

    def fits(self, age: int) -> bool:
        return self.youngest <= age <= self.oldest


def child_rates(rules: str) -> list[ChildRate]:
    """The children's rates the rules state with the ages they are for; a clause about children
    that gives no age range or no rate ("Детей принимаем с 3 лет") is none."""
    found: list[ChildRate] = []
    for clause in rule_clauses(rules):
        if not any(names_a_child(w) for w in words(clause)):
            continue
        between = _BETWEEN_RE.search(clause)
        under = _UNDER_RE.search(clause)
        if between is not None:
            ages = (int(between.group(1)), int(between.group(2)))
        elif under is not None:
            ages = (0, int(under.group(1) or under.group(2)) - 1)
        else:
            continue
        terms = [t for t in percent_terms(clause) if t.kind == "discount"]
        if terms:
            found.append(ChildRate(*ages, terms[0], clause))
        elif _FREE_RE.search(clause):
            found.append(ChildRate(*ages, None, clause))
    return found
