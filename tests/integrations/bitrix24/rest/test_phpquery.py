"""PHP bracket encoding: batch commands and event bodies survive Cyrillic, `&`, `=` and nesting."""

from __future__ import annotations

from urllib.parse import parse_qsl

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
