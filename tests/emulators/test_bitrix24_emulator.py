"""The Bitrix24 emulator itself, over raw HTTP: the quirks our tests rely on are really there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.emulators.bitrix24 import Bitrix24Emulator


@pytest.fixture
def portal() -> Iterator[Bitrix24Emulator]:
    with Bitrix24Emulator(rate=50, burst=100) as emulator:
        yield emulator


def call(portal: Bitrix24Emulator, method: str, params: dict[str, Any] | None = None) -> Any:
    return httpx.post(f"{portal.webhook_url}{method}.json", json=params or {}, timeout=10)


def test_success_has_a_time_block_and_errors_have_none(portal: Bitrix24Emulator) -> None:
    ok = call(portal, "user.current").json()
    missing = call(portal, "crm.item.get", {"entityTypeId": 2, "id": 1})

    assert set(ok["time"]) >= {"start", "finish", "duration", "operating", "operating_reset_at"}
    assert missing.status_code == 400
    assert missing.json() == {"error": "NOT_FOUND", "error_description": "Element not found"}


def test_the_bucket_answers_503_above_the_burst() -> None:
    with Bitrix24Emulator(rate=2, burst=5) as portal:
        statuses = [call(portal, "scope").status_code for _ in range(8)]
        rejected = call(portal, "scope").json()

    assert statuses[:5] == [200] * 5
    assert 503 in statuses[5:]
    assert rejected == {
        "error": "QUERY_LIMIT_EXCEEDED", "error_description": "Too many requests"}  # fmt: skip


def test_multifield_rules_of_crm_item(portal: Bitrix24Emulator) -> None:
    def fm(**fields: Any) -> list[tuple[str, str]]:
        body = call(portal, "crm.item.update", {"entityTypeId": 3, "id": cid, "fields": fields})
        return [(str(e["id"]), e["value"]) for e in body.json()["result"]["item"]["fm"]]

    added = call(
        portal,
        "crm.item.add",
        {
            "entityTypeId": 3,
            "fields": {
                "name": "A",
                "fm": [{"typeId": "PHONE", "valueType": "WORK", "value": "+7 1"}],
            },
        },
    ).json()["result"]["item"]
    cid, first = added["id"], str(added["fm"][0]["id"])

    assert fm(fm=[{"typeId": "PHONE", "value": "+7 1"}]) == [
        (first, "+7 1"),
        (str(int(first) + 1), "+7 1"),
    ]
    second = str(int(first) + 1)
    assert fm(fm={second: {"typeId": "PHONE", "value": ""}}) == [(first, "+7 1")]  # delete
    assert fm(fm={first: {"value": "+7 9"}}) == [(first, "+7 1")]  # no typeId: silent no-op
    assert fm(fm={first: {"typeId": "PHONE", "value": "+7 9"}}) == [(first, "+7 9")]  # by ID
    assert len(fm(fm={"n0": {"typeId": "PHONE", "value": "+7 2"}})) == 2  # n0 adds
    assert len(fm(fm="+7 3")) == 2  # a string is ignored without an error


def test_batch_keeps_http_200_substitutes_results_and_serialises_empty_maps_as_lists(
    portal: Bitrix24Emulator,
) -> None:
    body = call(portal, "batch", {"halt": 0, "cmd": {
        "c": "crm.item.add?entityTypeId=3&fields[name]=%D0%90",
        "d": "crm.item.add?entityTypeId=2&fields[contactId]=$result[c][item][id]",
        "bad": "crm.item.get?entityTypeId=2&id=999",
    }})  # fmt: skip
    empty = call(
        portal, "batch", {"cmd": {"dup": "crm.duplicate.findbycomm?type=PHONE&values[]=1"}}
    )

    result = body.json()["result"]
    assert body.status_code == 200
    assert result["result"]["d"]["item"]["contactId"] == result["result"]["c"]["item"]["id"]
    assert result["result_error"] == {"bad": {"error": "NOT_FOUND",
                                              "error_description": "Element not found"}}  # fmt: skip
    assert empty.json()["result"] == {"result": {"dup": []}, "result_error": [],
                                      "result_total": [], "result_next": [],
                                      "result_time": empty.json()["result"]["result_time"]}  # fmt: skip


def test_stages_are_per_pipeline(portal: Bitrix24Emulator) -> None:
    added = call(portal, "crm.item.add", {"entityTypeId": 2, "fields": {"categoryId": 3}}).json()
    wrong = call(
        portal,
        "crm.item.update",
        {"entityTypeId": 2, "id": added["result"]["item"]["id"], "fields": {"stageId": "WON"}},
    )

    assert added["result"]["item"]["stageId"] == "C3:NEW"
    assert wrong.status_code == 400
