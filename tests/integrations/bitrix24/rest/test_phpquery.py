"""PHP bracket encoding: batch commands and event bodies survive Cyrillic, `&`, `=` and nesting."""

from __future__ import annotations

import time
from urllib.parse import parse_qsl, quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from integrations.bitrix24.rest import phpquery
from tests.emulators.bitrix24 import parse_php


def test_nested_params_with_cyrillic_and_separators_round_trip_through_php_parsing() -> None:
    params = {
        "entityTypeId": 2,
        "fields": {"title": "Заказ №5 & доставка = завтра?", "opened": True, "closed": False},
        "fm": {"n0": {"typeId": "PHONE", "value": "+7 700 123-45-67"}},
        "select": ["id", "ufCrm_CITY"],
        "filter": {">ID": 10, "@id": [1, 2]},
    }

    encoded = phpquery.encode(params)

    assert all(pair.count("=") == 1 for pair in encoded.split("&"))
    decoded = parse_php(encoded)
    assert decoded["fields"]["title"] == "Заказ №5 & доставка = завтра?"
    assert decoded["fields"]["opened"] == "Y"
    assert decoded["fields"]["closed"] == "N"
    assert decoded["fm"] == {"n0": {"typeId": "PHONE", "value": "+7 700 123-45-67"}}
    assert decoded["select"] == ["id", "ufCrm_CITY"]
    assert decoded["filter"] == {">ID": "10", "@id": ["1", "2"]}
    assert phpquery.decode(encoded) == decoded


def test_lists_get_indexes_so_php_reads_them_as_arrays_and_maps_stay_maps() -> None:
    as_list = parse_qsl(phpquery.encode({"fm": [{"value": "a"}, {"value": "b"}]}))
    as_map = parse_qsl(phpquery.encode({"fm": {"8553": {"value": "a"}}}))

    assert as_list == [("fm[0][value]", "a"), ("fm[1][value]", "b")]
    assert as_map == [("fm[8553][value]", "a")]


def test_result_references_stay_raw_for_batch_substitution() -> None:
    encoded = phpquery.encode(
        {"fields": {"ENTITY_ID": phpquery.result_ref("deal", "item", "id"), "COMMENT": "$x"}}
    )

    assert "fields[ENTITY_ID]=$result[deal][item][id]" in encoded
    assert "fields[COMMENT]=%24x" in encoded


def test_decodes_the_documented_event_body() -> None:
    body = (
        "event=ONCRMDEALUPDATE&event_handler_id=975&data%5BFIELDS%5D%5BID%5D=7405&ts=1766047124"
        "&auth%5Bdomain%5D=some-domain.bitrix24.com&auth%5Bclient_endpoint%5D=https%3A%2F%2F"
        "some-domain.bitrix24.com%2Frest%2F&auth%5Bmember_id%5D=d897063e1ce7c5eb9f04b9751eef5915"
        "&auth%5Bapplication_token%5D=jvh9y1ulvt2m6k5or90v9mg8nn32ozas"
    )

    form = phpquery.decode(body)

    assert form["event"] == "ONCRMDEALUPDATE"
    assert form["data"] == {"FIELDS": {"ID": "7405"}}
    assert form["auth"]["application_token"] == "jvh9y1ulvt2m6k5or90v9mg8nn32ozas"
    assert form["auth"]["client_endpoint"] == "https://some-domain.bitrix24.com/rest/"


def test_decoding_odd_bodies_never_raises() -> None:
    for body in ["", "&&", "=x", "a[", "a[b]c=1", "a[]=1&a[]=2", "%ZZ=%", "a=1&a[b]=2"]:
        assert isinstance(phpquery.decode(body), dict)
    assert phpquery.decode("a[]=1&a[]=2") == {"a": ["1", "2"]}


def test_variables_nested_deeper_than_php_allows_are_dropped_not_a_crash() -> None:
    deep = "a" + "[]" * 2000 + "=1"
    assert phpquery.decode(deep + "&event=ONCRMDEALUPDATE") == {"event": "ONCRMDEALUPDATE"}
    at_limit = "b" + "[x]" * phpquery.MAX_NESTING + "=1"
    node = phpquery.decode(at_limit)["b"]
    for _ in range(phpquery.MAX_NESTING - 1):
        node = node["x"]
    assert node == {"x": "1"}


def test_empty_brackets_take_the_next_index_after_the_largest_integer_key_as_in_php() -> None:
    """PHP's nNextFreeElement: `a[5]` then `a[]` is `a[6]`. Only canonical ASCII decimals are
    integer keys: `²` (a Unicode digit: `isdigit()` is true, `int()` fails), `07` and a 20-digit
    number stay string keys and never crash the parser."""
    body = "a[5]=x&a[]=y&a[²]=z&a[]=w&a[07]=s&a[-3]=q&a[]=r&a[99999999999999999999]=b&a[]=t"

    assert phpquery.decode(body) == {
        "a": {"5": "x", "6": "y", "²": "z", "7": "w", "07": "s", "-3": "q", "8": "r",
              "99999999999999999999": "b", "9": "t"}
    }  # fmt: skip
    assert phpquery.decode("a[x]=1&a[]=2&a[]=3") == {"a": {"x": "1", "0": "2", "1": "3"}}
    assert phpquery.decode("a[]=1&a[]=2&b[][c]=3&b[][c]=4") == {
        "a": ["1", "2"],
        "b": [{"c": "3"}, {"c": "4"}],
    }


def test_a_body_over_the_field_cap_is_refused_before_it_is_parsed() -> None:
    """`a[]=&` × 20,000 (100 KB) took 31 s of CPU when each `a[]` counted its siblings."""
    body = "a[]=&" * 20_000

    assert phpquery.field_count(body) == 20_001
    assert phpquery.field_count(body.encode()) == 20_001
    started = time.process_time()
    with pytest.raises(phpquery.TooManyFields):
        phpquery.decode(body, max_fields=1000)
    assert phpquery.decode("a=1&b=2", max_fields=2) == {"a": "1", "b": "2"}
    assert len(phpquery.decode(body)["a"]) == 20_000  # and without a cap, linear: about 0.1 s
    assert time.process_time() - started < 3


def _parse_seconds(body: str) -> float:
    """The least CPU time of three parses (the least is the one other processes disturbed least)."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        phpquery.decode(body)
        best = min(best, time.process_time() - started)
    return best


# A repeated pair with at least one `[]`: every copy lands in the same array (`a[]`, `a[x][]`) or
# opens a new element of it (`a[][x]`), the shapes that were quadratic.
repeated_keys = st.builds(
    lambda head, before, after: head + "".join(f"[{p}]" for p in before) + "[]"
    + "".join(f"[{p}]" for p in after),
    st.text(st.characters(codec="ascii", exclude_characters="[]&=%+"), min_size=1, max_size=4),
    st.lists(st.sampled_from(["x", "7", "²", "07"]), max_size=2),
    st.lists(st.sampled_from(["", "y", "3"]), max_size=2),
)  # fmt: skip


@given(key=repeated_keys)
@settings(max_examples=8, deadline=None, database=None)
def test_parse_time_grows_linearly_with_the_number_of_fields(key: str) -> None:
    """Four times the fields cost about four times the time (under 8×; quadratic is 16×)."""
    pair = quote(key, safe="[]") + "=v&"
    small, large = 2_000, 8_000

    ratio = _parse_seconds(pair * large) / max(_parse_seconds(pair * small), 1e-4)

    assert ratio < 8, (key, ratio)
