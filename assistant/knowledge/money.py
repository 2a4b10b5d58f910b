"""Reading and writing amounts of money the way price lists and customers write them.

`120 000`, `120,000.50`, `120 000,50`, `1.200,50`, `₸ 45 000`, `45 000 тг`, `$1,200` all parse;
`format_money` writes the one form the assistant uses in replies (`45 000 KZT`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# Currency markers as written in price lists and chats, mapped to ISO codes.
CURRENCY_ALIASES: dict[str, str] = {
    "₸": "KZT", "kzt": "KZT", "тг": "KZT", "тг.": "KZT", "тенге": "KZT", "tg": "KZT",
    "teңге": "KZT", "теңге": "KZT", "tenge": "KZT",
    "$": "USD", "usd": "USD", "dollars": "USD", "dollar": "USD", "долл": "USD",
    "долларов": "USD", "доллар": "USD",
    "₽": "RUB", "rub": "RUB", "руб": "RUB", "руб.": "RUB", "рублей": "RUB", "рубля": "RUB",
    "рубль": "RUB", "р.": "RUB", "rur": "RUB",
    "€": "EUR", "eur": "EUR", "euro": "EUR", "евро": "EUR",
    "£": "GBP", "gbp": "GBP",
    "сом": "KGS", "kgs": "KGS",
    "сум": "UZS", "uzs": "UZS",
    "₴": "UAH", "uah": "UAH", "грн": "UAH",
}  # fmt: skip

# Longest first so "тенге" wins over "тг" and "руб." over "р.".
_CURRENCY_PATTERN = "|".join(
    re.escape(alias) for alias in sorted(CURRENCY_ALIASES, key=len, reverse=True)
)
CURRENCY_RE = re.compile(rf"(?<![\w])({_CURRENCY_PATTERN})(?![\w])", re.IGNORECASE)
_SPACES = "\u00a0\u202f\u2009\u2007 '’_"


def normalise_currency(text: str) -> str:
    """ISO code for a currency marker ("тг" → "KZT"); an unknown 3-letter code is kept."""
    raw = text.strip().lower()
    if not raw:
        return ""
    if raw in CURRENCY_ALIASES:
        return CURRENCY_ALIASES[raw]
    if re.fullmatch(r"[a-z]{3}", raw):
        return raw.upper()
    return ""


def find_currency(text: str) -> str:
    match = CURRENCY_RE.search(text)
    return CURRENCY_ALIASES[match.group(1).lower()] if match else ""


def parse_amount(text: str) -> Decimal | None:
    """The number in a price cell, or None. Currency markers and grouping spaces are ignored.

    A lone separator followed by exactly three digits is a thousands separator ("1,200" and
    "1.200" are 1200); with both separators the last one is the decimal point."""
    cleaned = CURRENCY_RE.sub("", text)
    cleaned = re.sub(r"[^\d.,\-" + _SPACES + "]", "", cleaned)
    for ch in _SPACES:
        cleaned = cleaned.replace(ch, "")
    cleaned = cleaned.strip(".,")
    if not cleaned or not re.search(r"\d", cleaned):
        return None
    negative = cleaned.startswith("-")
    cleaned = cleaned.lstrip("-")
    if "-" in cleaned:
        return None
    commas, dots = cleaned.count(","), cleaned.count(".")
    if commas and dots:
        decimal_sep = "," if cleaned.rfind(",") > cleaned.rfind(".") else "."
        thousands = "." if decimal_sep == "," else ","
        cleaned = cleaned.replace(thousands, "").replace(decimal_sep, ".")
    elif commas or dots:
        sep = "," if commas else "."
        parts = cleaned.split(sep)
        if len(parts) > 2 or (len(parts[-1]) == 3 and parts[0] not in ("", "0")):
            if not all(len(p) == 3 for p in parts[1:]):
                return None
            cleaned = "".join(parts)
        else:
            cleaned = cleaned.replace(sep, ".")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    return -value if negative else value


def format_amount(value: Decimal) -> str:
    """`45000` → `45 000`, `1200.5` → `1 200.50`: grouped by spaces, cents only when present."""
    quantised = value.quantize(Decimal("0.01"))
    whole, _, cents = f"{quantised:f}".partition(".")
    sign = "-" if whole.startswith("-") else ""
    whole = whole.lstrip("-")
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    text = sign + " ".join(groups)
    return text if cents == "00" else f"{text}.{cents}"


def format_money(value: Decimal, currency: str) -> str:
    return f"{format_amount(value)} {currency}".strip()


@dataclass(frozen=True)
class _Convention:
    symbol: str
    before: bool  # "$1,200" rather than "1 200 ₸"
    group: str
    decimal: str


# How people who pay in the currency write it; a currency not here shows as "1 200.50 CODE".
_NBSP = "\u00a0"
DISPLAY_CONVENTIONS: dict[str, _Convention] = {
    "KZT": _Convention("₸", False, _NBSP, ","),
    "RUB": _Convention("₽", False, _NBSP, ","),
    "USD": _Convention("$", True, ",", "."),
    "EUR": _Convention("€", False, _NBSP, ","),
    "GBP": _Convention("£", True, ",", "."),
    "UAH": _Convention("₴", False, _NBSP, ","),
    "KGS": _Convention("сом", False, _NBSP, ","),
    "UZS": _Convention("сум", False, _NBSP, ","),
}


def display_money(value: Decimal, currency: str) -> str:
    """An amount as an admin reads it on a page: `32 000 ₸`, `1 200,50 ₽`, `$1,200.50`
    (cents only when present). Replies to customers keep `format_money`'s one form."""
    convention = DISPLAY_CONVENTIONS.get(currency.upper())
    if convention is None:
        return format_money(value, currency).replace(" ", _NBSP)
    plain = format_amount(abs(value))
    whole, _, cents = plain.partition(".")
    text = whole.replace(" ", convention.group) + (convention.decimal + cents if cents else "")
    sign = "-" if value < 0 else ""
    if convention.before:
        return f"{sign}{convention.symbol}{text}"
    return f"{sign}{text}{_NBSP}{convention.symbol}"


# --- amounts in running text -----------------------------------------------------------------
#
# Money is read where it is marked as money: a currency (`₸40 000`, `40 000 тг`), a price word
# (`costs 45 000`, `цена 45 000`), a multiplier (`40k`, `40 тыс`, `1,5 млн`), thousands grouping
# (`40 000`, `40,000`, `40.000`) or a bare number of four digits or more (`45000`). What is not
# money is left alone: phone numbers, sizes (`160x200`, `180 cm`, `2x3 m`), times (`10:00`),
# dates (`12.05`), years (`2025`), codes (`TB-201`, `0W-20`), quantities (`10 chairs`).

_GROUPED = r"\d{1,3}(?:[ \u00a0\u202f.,’']\d{3})+(?:[.,]\d{1,2})?"
_NUM = rf"{_GROUPED}|\d+(?:[.,]\d{{1,2}})?"
_CUR = "|".join(re.escape(a) for a in sorted(CURRENCY_ALIASES, key=len, reverse=True))
# Not glued to a word, a code, a date or another number ("x200", "TB-201", "12.05", "201 450").
_FREE = r"(?<![^\W\d_xXхХ×])(?<![\d.,/\-:#№+])(?!(?<=\d[ \u00a0])\d{3}(?!\d))"
_UNIT_AFTER = (
    r"(?!\s?(?:cm|mm|m|km|kg|g|l|ml|ah|w|v|см|мм|м|км|кг|г|л|мл|шт|pcs|%|x|×|х)(?![^\W\d_]))"
)
_MULT = r"тыс\.?|тысяч\w*|мың\w*|thousand|млн\.?|миллион\w*|million|mln|mn"


def _mult(name: str) -> str:
    return rf"(?:\s?(?P<{name}>(?:{_MULT})(?!\w)|[kк](?![^\W\d_])))?"


AMOUNT_RE = re.compile(
    rf"(?<!\w)(?P<pre>{_CUR})\s*(?P<n1>{_NUM}){_mult('m1')}"
    rf"|{_FREE}(?P<n2>{_NUM}){_mult('m2')}\s*(?P<post>{_CUR})(?!\w)"
    r"|(?P<kw>costs?|price[sd]?(?: is)?|priced at|total(?: is)?|стоит|стоят|стоимость|цена|"
    rf"итого|всего|будет|бағасы|тұрады)\s*[:—-]?\s*(?P<n3>{_NUM}){_mult('m3')}{_UNIT_AFTER}"
    rf"(?:\s*(?P<post3>{_CUR})(?!\w))?"
    rf"|{_FREE}(?P<n6>\d+(?:[.,]\d+)?)(?:\s?(?P<m6>(?:{_MULT})(?!\w))|(?P<k6>[kKк])(?![^\W\d_]))"
    rf"|{_FREE}(?P<n4>\d{{1,3}}(?:[ \u00a0\u202f,’']\d{{3}})+|\d{{1,3}}(?:\.\d{{3}})+)"
    rf"(?!\d|[.,]\d){_UNIT_AFTER}"
    rf"|{_FREE}(?P<n5>\d{{4,9}})(?![^\W\d_]|\d|[.,:/\-]\d){_UNIT_AFTER}",
    re.IGNORECASE,
)
PHONE_RE = re.compile(
    r"\+\d[\d\s()\-]{8,}\d"
    r"|(?<![\d.,])8[\s(\-]*\d{3}[\s)\-]*\d{3}[\s\-]*\d{2}[\s\-]*\d{2}(?!\d)"
    r"|(?<![\w.,])\d{10,12}(?!\d)"
)
# Sizes written without spaces ("160x200", "2x3"), masked before money is read.
SIZE_RE = re.compile(
    r"(?<![\w.,])(?:\d{2,4}[xх×*]\d{2,4}(?:[xх×*]\d{1,4})?(?!\d)"
    r"|\d{1,4}(?:[.,]\d)?[xх×*]\d{1,4}(?:[.,]\d)?(?=\s?(?:m|cm|mm|м|см|мм)\b))",
    re.IGNORECASE,
)
MULTIPLIERS = {"т": 1000, "k": 1000, "к": 1000, "м": 1_000_000, "m": 1_000_000}
_SMALL = Decimal(100)  # a price word followed by a smaller bare number is rarely money


@dataclass(frozen=True)
class Amount:
    value: Decimal
    currency: str
    text: str
    start: int = 0  # where it stands in the text
    end: int = 0


def mask_non_money(text: str) -> str:
    """The text with phone numbers and compact sizes blanked (same length, same offsets)."""
    text = PHONE_RE.sub(
        lambda m: " " * len(m.group(0)) if 10 <= _digits(m.group(0)) <= 13 else m.group(0), text
    )
    return SIZE_RE.sub(lambda m: " " * len(m.group(0)), text)


def find_amounts(text: str) -> list[Amount]:
    """Money amounts in a text, with their currency when it is written."""
    cleaned = mask_non_money(text)
    amounts = []
    for match in AMOUNT_RE.finditer(cleaned):
        groups = match.groupdict()
        number = next(groups[n] for n in ("n1", "n2", "n3", "n4", "n5", "n6") if groups[n])
        mult = next((groups[m] for m in ("m1", "m2", "m3", "m6", "k6") if groups.get(m)), "")
        value = parse_amount(number)
        if value is None:
            continue
        if groups["n5"] and 1900 <= value <= 2100:
            continue  # a year
        currency = find_currency(groups["pre"] or groups["post"] or groups["post3"] or "")
        if groups["n3"] and not (mult or currency) and value < _SMALL:
            continue  # "будет 2 дня", "total is 3 items"
        if mult:
            value *= (
                1000 if mult.lower().startswith("мың") else MULTIPLIERS.get(mult.lower()[0], 1000)
            )
        raw = match.group(0)
        start = match.start() + (len(raw) - len(raw.lstrip()))
        amounts.append(
            Amount(
                value.quantize(Decimal("0.01")),
                currency,
                raw.strip(),
                start,
                start + len(raw.strip()),
            )
        )
    return amounts


PERCENT_RE = re.compile(
    r"(?<![\d.,])(\d+(?:[.,]\d+)?)\s*(?:%|процент\w*|percent|pct|пайыз\w*)", re.IGNORECASE
)


@dataclass(frozen=True)
class Percentage:
    value: Decimal
    text: str
    start: int = 0


def find_percentages(text: str) -> list[Percentage]:
    """Percentages as written: `15%`, `15 %`, `15 процентов`, `15 percent`, `15 пайыз`."""
    return [
        Percentage(Decimal(m.group(1).replace(",", ".")), m.group(0), m.start())
        for m in PERCENT_RE.finditer(text)
    ]


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)
