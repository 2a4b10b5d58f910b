"""The one reading of ids and dates that arrive as text: query strings, form fields, websocket
frames, headers.

An id is 1 to `MAX_ID_DIGITS` ASCII digits, nothing else. `str.isdigit` is not that test: it is
true for "²" (which `int` refuses: a 500) and for "١٢" or "１２" (which `int` reads as 12, so
one record has many spellings), and a digit string of any length reaches `int` (over 4,300
digits it raises; over 19 it overflows the database's bigint). Dates are ISO `YYYY-MM-DD` with a
year in `MIN_YEAR`..`MAX_YEAR`: `9999-12-31` parses, and then the day after it does not exist.

    chat_id = parse_id(frame.get("chat"))            # None when it is no id
    before = id_param(request.GET, "before")         # None when absent; BadRequest (400) when bad
    day = day_param(request.GET, "from")             # the same for dates
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from typing import Any

from django.core.exceptions import BadRequest

MAX_ID_DIGITS = 18  # every 18-digit number fits a signed 64-bit column
MIN_YEAR = 2000
MAX_YEAR = 2100

_ID = re.compile(rf"[0-9]{{1,{MAX_ID_DIGITS}}}")
_DAY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")


def parse_id(raw: object) -> int | None:
    """The id `raw` spells (an int, or ASCII digits with blanks around them), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw if 0 <= raw < 10**MAX_ID_DIGITS else None
    if not isinstance(raw, str):
        return None
    text = raw.strip(" \t\r\n")
    return int(text) if _ID.fullmatch(text) else None


def parse_day(raw: object) -> date | None:
    """The date `raw` spells as `YYYY-MM-DD` within MIN_YEAR..MAX_YEAR, else None."""
    match = _DAY.fullmatch(raw.strip(" \t\r\n")) if isinstance(raw, str) else None
    if match is None:
        return None
    year, month, day = (int(part) for part in match.groups())
    if not MIN_YEAR <= year <= MAX_YEAR:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None


def id_param(params: Mapping[str, Any], name: str) -> int | None:
    """`params[name]` as an id: None when absent or empty, BadRequest (400) when not an id."""
    raw = params.get(name, "")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    parsed = parse_id(raw)
    if parsed is None:
        raise BadRequest(f"{name} is not an id")
    return parsed


def day_param(params: Mapping[str, Any], name: str) -> date | None:
    """`params[name]` as a date: None when absent or empty, BadRequest (400) when not a date
    of the supported years."""
    raw = params.get(name, "")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    parsed = parse_day(raw)
    if parsed is None:
        raise BadRequest(f"{name} is not a date (YYYY-MM-DD, {MIN_YEAR} to {MAX_YEAR})")
    return parsed
