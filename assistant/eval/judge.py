"""The eval's own judge of amounts in a reply: which amounts a reply states, and which of them
a right reply for this case could not contain.

Deliberately independent of `assistant.decision.guardrails` and `assistant.knowledge.money`:
a metric that reuses the guardrail's reader cannot see the guardrail's blind spots (the issue
that introduced this judge found replies with "40K" and wrong totals passing both). The
allowed amounts come from the golden case, computed when it was written (list prices of the
items asked about, quantity × price lines, order totals, amounts in the business rules,
amounts a manager agreed in the chat), not from anything the assistant derives at run time.

What counts as an amount in a reply:

- a number of 100 or more, written with or without grouping (`45000`, `45 000`, `45,000`,
  `45.000`), a multiplier (`40k`, `40K`, `40 тыс`, `40 тысяч`, `1.5 млн`) or a currency
  mark before or after it (`₸40 000`, `40 000 тг`, `KZT`, `тенге`, `руб`, `$`);
- any percentage (`15%`, `15 %`, `15 процентов`, `15 percent`).

Not amounts: times (`10:00`), phone numbers, numbers glued to letters or other numbers (SKUs
such as `CH-101`, sizes such as `215/60 R16`, `600мм`, `75Ah`, `160x200`), numbers followed by
a unit (`101 роза`, `160 см`, `3 дня`), and bare numbers that are part of the business's item
names (the `160` of "Oak dining table 160") when written without a currency mark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

MIN_AMOUNT = Decimal(100)

_CURRENCY = r"₸|\$|₽|€|kzt|тг\.?|тенге|теңге|tenge|tg|руб\.?|рублей|рубля|рубль|rub|usd|eur|евро"
# "k"/"к" only glued to the number ("40k"): "45 000 к оплате" is not 45 million.
_MULTIPLIER = r"тыс\.?|тысяч[аи]?|thousand|млн\.?|миллион(?:а|ов)?|million|mln"
_PERCENT = r"%|процент(?:а|ов)?|percent|per\s?cent|пайыз"
_UNIT = (
    r"мм|mm|см|cm|м|m|метр\w*|л|l|литр\w*|кг|kg|г|g|гр|грамм\w*|шт\.?|pcs|pieces?|штук\w*|"
    r"ah|ач|вт|w|квт|kw|зуб\w*|роз\w*|rose?s?|тюльпан\w*|tulips?|пион\w*|стебл\w*|"
    r"дн\w*|день|days?|час\w*|hours?|h|мин\w*|minutes?|сек\w*|лет|год\w*|years?|"
    r"мес\w*|months?|недел\w*|weeks?|этаж\w*|floors?|км|km|раз\w*|times|человек\w*|"
    r"people|persons?"
)
_INTEGER = r"\d{1,3}(?:[ \u00a0\u202f\u2009,.'’]\d{3})+(?!\d)|\d+"
AMOUNT_RE = re.compile(
    rf"(?:(?<![\w])(?P<pre>{_CURRENCY})\s?)?"
    rf"(?<![\w\-/.,:+#№])(?P<int>{_INTEGER})(?:[.,](?P<frac>\d{{1,2}})(?!\d))?"
    rf"(?P<post>(?:(?P<km>[kк])(?![\w])|\s?(?P<mult>{_MULTIPLIER})(?![\w]))?\s?"
    rf"(?:(?P<cur>{_CURRENCY})(?![\w])|(?P<pct>{_PERCENT})|(?P<unit>{_UNIT})(?![\w]))?)",
    re.IGNORECASE,
)
# After the number: anything glued to it that is not a multiplier, currency or percent sign
# makes it part of a code or size ("75Ah" is read above as a unit; "0W-20", "R16" here).
_GLUED_AFTER = re.compile(r"[\w\-/:]")
_PHONE_RE = re.compile(r"(?<!\d)(?:\+7|8)[\s\-(]*\d{3}[\s\-)]*\d{3}[\s\-]*\d{2}[\s\-]*\d{2}(?!\d)")
# "3 000-5 000": a range of grouped amounts, not a code like "04465-33471".
_RANGE_RE = re.compile(r"(\d{1,3}(?:[ \u00a0]\d{3})+)\s?-\s?(?=\d)")
_NAME_NUMBER_RE = re.compile(r"\d+")

_MULTIPLIERS = {
    "k": 1000, "к": 1000, "тыс": 1000, "тыс.": 1000, "тысяч": 1000, "тысяча": 1000,
    "тысячи": 1000, "thousand": 1000, "млн": 1_000_000, "млн.": 1_000_000,
    "миллион": 1_000_000, "миллиона": 1_000_000, "миллионов": 1_000_000,
    "million": 1_000_000, "mln": 1_000_000,
}  # fmt: skip


@dataclass(frozen=True)
class Amount:
    """One amount as written in a reply."""

    value: Decimal
    text: str
    percent: bool = False

    @property
    def key(self) -> str:
        """The amount as golden files write allowed amounts: "45000", "12.5", "10%"."""
        return _key(self.value, self.percent)


def _key(value: Decimal, percent: bool) -> str:
    text = format(value.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%" if percent else text


def parse_allowed(raw: str | int | float | Decimal) -> str:
    """A golden file's amount ("45000", "45 000", "10%") in the judge's key form."""
    text = str(raw).strip().replace(" ", "").replace("\u00a0", "")
    percent = text.endswith("%")
    try:
        value = Decimal(text.rstrip("%"))
    except InvalidOperation as exc:
        raise ValueError(f"not an amount: {raw!r}") from exc
    return _key(value, percent)


def name_numbers(names: Iterable[str]) -> frozenset[Decimal]:
    """Numbers that are part of item names and SKUs ("Oak dining table 160" → 160)."""
    return frozenset(Decimal(n) for name in names for n in _NAME_NUMBER_RE.findall(name))


def read_amounts(text: str, ignore_bare: frozenset[Decimal] = frozenset()) -> list[Amount]:
    """Every amount in `text` (see the module docstring for what counts). A bare number
    (no currency, no multiplier) whose value is in `ignore_bare` is taken for part of a name."""
    text = _RANGE_RE.sub(r"\1 – ", _PHONE_RE.sub(" ", text))
    found: list[Amount] = []
    for match in AMOUNT_RE.finditer(text):
        if match.group("unit"):
            continue
        end = match.end()
        if not match.group("post") and end < len(text) and _GLUED_AFTER.match(text[end]):
            continue  # "0W-20", "R16", "12:30": part of a code, size or time
        value = _value(match.group("int"), match.group("frac"))
        if value is None:
            continue
        mult = (match.group("km") or match.group("mult") or "").lower()
        if mult:
            value *= _MULTIPLIERS.get(mult.rstrip("."), _MULTIPLIERS.get(mult, 1))
        if match.group("pct"):
            found.append(Amount(value, match.group(0).strip(), percent=True))
            continue
        marked = bool(mult or match.group("cur") or match.group("pre"))
        if value < MIN_AMOUNT or (not marked and value in ignore_bare):
            continue
        found.append(Amount(value, match.group(0).strip()))
    return found


def _value(integer: str, fraction: str | None) -> Decimal | None:
    digits = re.sub(r"\D", "", integer)
    try:
        return Decimal(f"{digits}.{fraction}" if fraction else digits)
    except InvalidOperation:
        return None


@dataclass(frozen=True)
class Verdict:
    """What the judge found in one reply."""

    amounts: tuple[Amount, ...]
    wrong: tuple[Amount, ...]  # amounts a right reply for this case could not contain
    missing: tuple[str, ...]  # required amounts the reply does not state

    @property
    def has_wrong(self) -> bool:
        return bool(self.wrong)


def judge(
    reply: str,
    required: Iterable[str],
    allowed: Iterable[str],
    ignore_bare: frozenset[Decimal] = frozenset(),
) -> Verdict:
    """Reads `reply`; `required` and `allowed` are amounts in key form (`parse_allowed`).
    Required amounts are allowed too."""
    required_keys = tuple(required)
    ok = set(required_keys) | set(allowed)
    amounts = tuple(read_amounts(reply, ignore_bare))
    present = {a.key for a in amounts}
    wrong = tuple(a for a in amounts if a.key not in ok)
    missing = tuple(k for k in required_keys if k not in present)
    return Verdict(amounts, wrong, missing)


# A number in a summary or a fact, grouped or not ("84 990", "84990", "2.5", "10%").
_NUMBER_RE = re.compile(r"\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)(?:[.,]\d+)?|\d+(?:[.,]\d+)?")


def _numbers(text: str) -> set[Decimal]:
    found = set()
    for raw in _NUMBER_RE.findall(text):
        digits = re.sub(r"[ \u00a0\u202f]", "", raw).replace(",", ".")
        try:
            found.add(Decimal(digits).normalize())
        except InvalidOperation:
            continue
    return found


def _folded(text: str) -> str:
    return " ".join(text.casefold().replace("ё", "е").split())


def summary_misses(summary: str, facts: Iterable[str]) -> list[str]:
    """The facts a handoff summary does not carry: a fact is found case-insensitively as
    written, and its numbers by value ("84 990" is 84990; "10%" needs 10 and the sign)."""
    text = _folded(summary)
    numbers = _numbers(summary)
    missing = []
    for fact in facts:
        wanted = _numbers(fact)
        words = _folded(_NUMBER_RE.sub(" ", fact).replace("%", " "))
        if wanted:
            ok = wanted <= numbers and ("%" not in fact or "%" in summary)
            ok = ok and all(w in text for w in words.split())
        else:
            ok = words in text
        if not ok:
            missing.append(fact)
    return missing
