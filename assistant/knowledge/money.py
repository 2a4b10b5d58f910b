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


# --- amounts in running text -----------------------------------------------------------------

_NUM = r"\d{1,3}(?:[ \u00a0\u202f.,’']\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
_CUR = "|".join(re.escape(a) for a in sorted(CURRENCY_ALIASES, key=len, reverse=True))


def _mult(name: str) -> str:
    return rf"(?:\s*(?P<{name}>тыс\.?|тысяч\w*|thousand|k|млн\.?|миллион\w*|million|mln)(?!\w))?"


AMOUNT_RE = re.compile(
    rf"(?<!\w)(?P<pre>{_CUR})\s*(?P<n1>{_NUM}){_mult('m1')}"
    rf"|(?P<n2>{_NUM}){_mult('m2')}\s*(?P<post>{_CUR})(?!\w)"
    r"|(?P<kw>costs?|price[sd]?(?: is)?|priced at|total(?: is)?|стоит|стоят|стоимость|цена|"
    rf"итого|всего|будет)\s*[:—-]?\s*(?P<n3>{_NUM}){_mult('m3')}(?:\s*(?P<post3>{_CUR})(?!\w))?"
    r"|(?<![\d.,])(?P<n4>\d{1,3}(?:[ \u00a0\u202f,’']\d{3})+)(?!\d)",
    re.IGNORECASE,
)
PHONE_RE = re.compile(r"\+?\d[\d\s()\-]{8,}\d")
MULTIPLIERS = {"т": 1000, "k": 1000, "м": 1_000_000}


@dataclass(frozen=True)
class Amount:
    value: Decimal
    currency: str
    text: str
    start: int = 0  # where it stands in the text


def find_amounts(text: str) -> list[Amount]:
    """Money amounts in a text, with their currency when it is written."""
    cleaned = PHONE_RE.sub(
        lambda m: " " * len(m.group(0)) if _digits(m.group(0)) >= 10 else m.group(0), text
    )
    amounts = []
    for match in AMOUNT_RE.finditer(cleaned):
        groups = match.groupdict()
        number = groups["n1"] or groups["n2"] or groups["n3"] or groups["n4"]
        mult = groups.get("m1") or groups.get("m2") or groups.get("m3") or ""
        value = parse_amount(number)
        if value is None:
            continue
        if mult:
            value *= MULTIPLIERS.get(mult.lower()[0], 1000)
        currency = find_currency(groups["pre"] or groups["post"] or groups["post3"] or "")
        amounts.append(
            Amount(value.quantize(Decimal("0.01")), currency, match.group(0).strip(), match.start())
        )
    return amounts


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)
