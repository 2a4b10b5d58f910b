"""Terms other than money the reply may state only where they are written down: percentages,
delivery and readiness deadlines ("in 3-5 days", "tomorrow", "by Friday"), calendar dates and
clock times. Each is read into a canonical form ("day:3-5", "date:8.3", "time:10:00") and must
be one the rules, item notes or names, or a manager wrote; `deadlines`, `dates` and `times` are
also what the promise check reads a customer's asked-for deadline with."""

from __future__ import annotations

import functools
import re

from django.utils.translation import gettext

from assistant.decision.guardrails.finding import Finding
from assistant.decision.guardrails.sentences import find_amounts_free, sentence_text
from assistant.knowledge.money import find_percentages

DISCOUNT_WORDS = re.compile(r"скидк|discount|\boff\b|дешевле|cheaper|жеңілдік", re.IGNORECASE)


def unbacked_percentages(reply: str, reference: str) -> list[Finding]:
    allowed = {p.value for p in find_percentages(reference)}
    result = []
    for found in find_percentages(reply):
        if found.value in allowed:
            continue
        window = reply[max(0, found.start - 40) : found.start + len(found.text) + 40]
        discount = DISCOUNT_WORDS.search(window) is not None
        shown = found.text.split("%")[0].strip()
        number = re.match(r"[\d.,]+", shown)
        result.append(
            Finding(
                "percentage",
                (
                    gettext("discount %(percent)s%% not in the price list")
                    if discount
                    else gettext("percentage %(percent)s%% not in the price list")
                )
                % {"percent": number.group(0) if number else shown},
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
        window = sentence_text(text, match.start())
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


def unbacked_deadlines(reply: str, reference: str) -> list[Finding]:
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
        result.append(
            Finding("deadline", gettext("delivery deadline '%(written)s'") % {"written": written})
        )
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


def unbacked_dates_and_times(reply: str, reference: str) -> list[Finding]:
    allowed = {c for c, _ in [*dates(reference), *times(reference)]}
    masked = find_amounts_free(reply)
    result = []
    for canonical, written in dates(masked):
        if canonical not in allowed:
            result.append(
                Finding(
                    "deadline",
                    gettext("date '%(written)s' not in the business rules") % {"written": written},
                )
            )
    for canonical, written in times(masked):
        if canonical not in allowed:
            result.append(
                Finding(
                    "deadline",
                    gettext("time '%(written)s' not in the business rules") % {"written": written},
                )
            )
    return result
