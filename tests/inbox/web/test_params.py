"""The one reading of ids and dates: ASCII digits of bounded length, dates of bounded years."""

from __future__ import annotations

from datetime import date

import pytest
from django.core.exceptions import BadRequest
from django.http import QueryDict

from inbox.web.params import MAX_ID_DIGITS, day_param, id_param, parse_day, parse_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("12", 12), (" 7 ", 7), (12, 12), ("0", 0), ("9" * MAX_ID_DIGITS, int("9" * MAX_ID_DIGITS))],
)
def test_ids_are_ascii_digits(raw: object, expected: int) -> None:
    assert parse_id(raw) == expected


@pytest.mark.parametrize(
    "raw",
    ["²", "١٢", "１２", "9" * 5000, "9" * (MAX_ID_DIGITS + 1), "-1", "+1", "1.0", "1e3", "0x1",
     "", " ", "1 2", "1\n2", "１", -1, 10**MAX_ID_DIGITS, True, 1.0, None, [1], {"id": 1}],
)  # fmt: skip
def test_anything_else_is_no_id(raw: object) -> None:
    assert parse_id(raw) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("2026-11-02", date(2026, 11, 2)), ("2000-01-01", date(2000, 1, 1)),
     ("2100-12-31", date(2100, 12, 31))],
)  # fmt: skip
def test_days_are_iso_dates_of_the_supported_years(raw: str, expected: date) -> None:
    assert parse_day(raw) == expected


@pytest.mark.parametrize(
    "raw",
    ["9999-12-31", "0001-01-01", "1999-12-31", "2101-01-01", "2026-02-30", "2026-1-2",
     "２０２６-11-02", "20261102", "2026-11-02T00:00", "", None, 20261102],
)  # fmt: skip
def test_other_days_are_none(raw: object) -> None:
    assert parse_day(raw) is None


def test_params_absent_are_none_and_bad_ones_a_400() -> None:
    query = QueryDict("chat=12&empty=&bad=%C2%B2&from=2026-11-02&to=9999-12-31")
    assert id_param(query, "chat") == 12
    assert id_param(query, "missing") is None
    assert id_param(query, "empty") is None
    assert day_param(query, "from") == date(2026, 11, 2)
    with pytest.raises(BadRequest):
        id_param(query, "bad")
    with pytest.raises(BadRequest):
        day_param(query, "to")
