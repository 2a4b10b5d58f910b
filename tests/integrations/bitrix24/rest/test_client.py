"""The REST client against the emulated portal over real HTTP: envelope, batch semantics,
pagination, and every failure mode (503 bucket, 429 operating time, HTML 5xx, expired tokens)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from integrations.bitrix24.rest.client import AppAuth, Bitrix24Client, Command, WebhookAuth
from integrations.bitrix24.rest.errors import (
    AuthError,
    NotFound,
    OperationTimeLimited,
    RateLimited,
    TransientError,
)
from integrations.bitrix24.rest.limiter import LeakyBucket
from integrations.bitrix24.rest.phpquery import result_ref
from tests.emulators.bitrix24 import Bitrix24Emulator


@pytest.fixture
def client(portal: Bitrix24Emulator) -> Iterator[Bitrix24Client]:
    with Bitrix24Client(
        WebhookAuth(portal.webhook_url), bucket=LeakyBucket("b24:test", 18.0, 32)
    ) as c:
        yield c


def _contact(client: Bitrix24Client, name: str, phone: str = "") -> int:
    fields: dict[str, object] = {"name": name}
    if phone:
        fields["fm"] = [{"typeId": "PHONE", "valueType": "MOBILE", "value": phone}]
    return int(
        client.call("crm.item.add", {"entityTypeId": 3, "fields": fields}).result["item"]["id"]
    )


def test_call_reads_the_envelope_and_logs_the_time_block(
    client: Bitrix24Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="integrations.bitrix24.rest.client")

    response = client.call("user.current")

    assert response.result["ID"] == "1"
    assert response.time["operating_reset_at"] > 0
    (record,) = [r for r in caplog.records if r.getMessage() == "bitrix24.call"]
    assert record.method == "user.current"  # type: ignore[attr-defined]
    assert record.operating == 0.0  # type: ignore[attr-defined]
    assert record.b24_duration is not None  # type: ignore[attr-defined]
    assert record.portal == client.portal  # type: ignore[attr-defined]


def test_cyrillic_and_separators_arrive_intact_through_json_and_batch(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    title = "Заказ & доставка = завтра? 100%"
    outcome = client.batch(
        [
            Command("c", "crm.item.add", {"entityTypeId": 3, "fields": {"name": "Айгерим"}}),
            Command(
                "d",
                "crm.item.add",
                {
                    "entityTypeId": 2,
                    "fields": {"title": title, "contactId": result_ref("c", "item", "id")},
                },
            ),
        ]
    )

    assert not outcome.errors
    (deal,) = portal.deals()
    assert deal["title"] == title
    assert deal["contactId"] == outcome.results["c"]["item"]["id"]
    assert portal.contacts()[0]["name"] == "Айгерим"


@pytest.mark.parametrize("as_list", [False, True], ids=["map", "list-without-keys"])
def test_batch_reports_exactly_the_failed_commands_whatever_shape_result_error_has(
    client: Bitrix24Client, portal: Bitrix24Emulator, as_list: bool
) -> None:
    portal.result_error_as_list = as_list
    ids = [_contact(client, f"c{i}") for i in range(10)]
    missing = [999001, 999002]
    commands = [
        Command(f"g{i}", "crm.item.get", {"entityTypeId": 3, "id": cid})
        for i, cid in enumerate(ids[:3] + missing + ids[3:])
    ]

    outcome = client.batch(commands)

    assert set(outcome.errors) == {"g3", "g4"}
    assert all(isinstance(e, NotFound) for e in outcome.errors.values())
    assert len(outcome.results) == 10


def test_batch_empty_maps_come_back_as_php_lists_and_parse_as_empty(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    outcome = client.batch(
        [
            Command(
                "dup",
                "crm.duplicate.findbycomm",
                {"entity_type": "CONTACT", "type": "PHONE", "values": ["+70000000000"]},
            )
        ]
    )

    assert outcome.errors == {}
    assert outcome.results == {"dup": []}


def test_halt_stops_at_the_first_failure_and_marks_the_rest_not_executed(
    client: Bitrix24Client,
) -> None:
    outcome = client.batch(
        [
            Command("a", "crm.item.get", {"entityTypeId": 3, "id": 424242}),
            Command("b", "user.current"),
        ],
        halt=True,
    )

    assert isinstance(outcome.errors["a"], NotFound)
    assert outcome.errors["b"].code == "NOT_EXECUTED"


def test_numeric_batch_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="numeric"):
        Command("0", "user.current")


def test_iterate_pages_with_id_filter_and_no_count(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    created: set[int] = set()
    for start in range(0, 120, 40):
        outcome = client.batch(
            [
                Command(f"c{i}", "crm.item.add", {"entityTypeId": 3, "fields": {"name": f"n{i}"}})
                for i in range(start, start + 40)
            ]
        )
        created |= {int(r["item"]["id"]) for r in outcome.results.values()}

    rows = list(
        client.iterate(
            "crm.item.list",
            {"entityTypeId": 3, "select": ["id", "name"]},
            id_field="id",
            items_key="items",
        )
    )

    assert {r["id"] for r in rows} == created
    pages = portal.calls("crm.item.list")
    assert len(pages) == 3
    assert all(str(p.params["start"]) == "-1" for p in pages)
    assert all(p.params["order"] == {"id": "ASC"} for p in pages)
    assert [str(p.params["filter"][">id"]) for p in pages] == [
        "0",
        str(sorted(created)[49]),
        str(sorted(created)[99]),
    ]
    with pytest.raises(ValueError, match="select"):
        list(client.iterate("crm.item.list", {"entityTypeId": 3}, id_field="id"))


def test_503_query_limit_backs_off_and_the_call_succeeds_when_the_storm_passes(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    # Each retry waits at least one slot of the saturated bucket (1/18 s), whatever the jitter
    # (full: anywhere from 0 to the step): the fifth try comes after 0.2 s.
    portal.storm(0.2)

    response = client.call("user.current")

    assert response.result["ID"] == "1"
    assert portal.storm_rejections >= 1


def test_503_for_longer_than_the_attempts_allow_is_a_transient_error(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    portal.storm(30)
    client.max_attempts = 3

    with pytest.raises(RateLimited):
        client.call("user.current")
    assert portal.storm_rejections == 3
    assert client.bucket.level() >= client.bucket.capacity - 1  # every worker now slows down


def test_the_shared_bucket_keeps_a_burst_below_the_portal_limit(portal: Bitrix24Emulator) -> None:
    portal.rate, portal.burst = 5.0, 10
    with Bitrix24Client(
        WebhookAuth(portal.webhook_url), bucket=LeakyBucket("b24:test2", 4.5, 8)
    ) as c:
        for _ in range(20):
            c.call("user.current")

    assert portal.bucket_rejections == 0
    assert portal.max_level <= 10


def test_html_error_page_is_retried_for_reads(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    portal.inject_html(2, status=502)

    assert client.call("user.current").result["ID"] == "1"
    assert portal.html_served == 2


def test_html_error_page_on_a_write_is_not_repeated_blindly(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    portal.inject_html(1, status=504)

    with pytest.raises(TransientError) as caught:
        client.call("crm.item.add", {"entityTypeId": 3, "fields": {"name": "x"}})

    assert caught.value.in_doubt
    assert caught.value.code == "NON_JSON_RESPONSE"
    assert len([r for r in portal.requests if r["method"] == "crm.item.add"]) == 1


def test_operation_time_limit_waits_until_the_reset_then_succeeds(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    portal.operating_budget("crm.status.list", cost=1.0, limit=2.0, window=2.0)
    client.call("crm.status.list", {"filter": {"ENTITY_ID": "STATUS"}})
    client.call("crm.status.list", {"filter": {"ENTITY_ID": "STATUS"}})

    response = client.call("crm.status.list", {"filter": {"ENTITY_ID": "STATUS"}})

    assert response.result
    assert portal.op_rejections == 1
    blocked = [
        r for r in portal.requests if r.get("error") is None and r["method"] == "crm.status.list"
    ]
    rejected_at = next(e.at for e in portal.executed if e.error == "OPERATION_TIME_LIMIT")
    assert blocked[-1]["t"] >= rejected_at


def test_operation_time_limit_longer_than_we_wait_goes_back_to_the_caller(
    client: Bitrix24Client, portal: Bitrix24Emulator
) -> None:
    portal.operating_budget("crm.status.list", cost=1.0, limit=1.0, window=120.0)
    client.call("crm.status.list", {})

    with pytest.raises(OperationTimeLimited) as caught:
        client.call("crm.status.list", {})
    assert caught.value.retry_after is not None
    assert caught.value.retry_after > 60
    with pytest.raises(OperationTimeLimited):  # other workers do not even try until the reset
        client.call("crm.status.list", {})
    assert portal.op_rejections == 1


def test_wrong_webhook_code_is_a_permanent_auth_error(portal: Bitrix24Emulator) -> None:
    wrong = portal.webhook_url.replace(portal.webhook_code, "0" * 16)
    with Bitrix24Client(WebhookAuth(wrong), bucket=LeakyBucket("b24:test3", 10, 10)) as c:
        with pytest.raises(AuthError) as caught:
            c.call("user.current")
    assert caught.value.code == "NO_AUTH_FOUND"
    assert portal.webhook_code not in str(caught.value)
    assert len(portal.requests) == 1


class _Tokens:
    """Token source for the app test: keeps tokens in memory, refreshes at the emulator."""

    def __init__(self, portal: Bitrix24Emulator, access: str, refresh: str) -> None:
        self.portal, self.access, self.refresh_token, self.refreshed = portal, access, refresh, 0

    def access_token(self) -> str:
        return self.access

    def refresh(self, stale: str) -> str:
        from integrations.bitrix24.rest.client import refresh_oauth

        body = refresh_oauth(
            self.portal.base_url,
            client_id=self.portal.app_client_id,
            client_secret=self.portal.app_client_secret,
            refresh_token=self.refresh_token,
        )
        self.access, self.refresh_token = body["access_token"], body["refresh_token"]
        self.refreshed += 1
        return self.access


def test_app_mode_refreshes_an_expired_token_once_and_repeats_the_call(
    portal: Bitrix24Emulator,
) -> None:
    tokens = _Tokens(portal, *portal.issue_app_tokens())
    with Bitrix24Client(
        AppAuth(portal.base_url, tokens), bucket=LeakyBucket("b24:t4", 10, 10)
    ) as c:
        assert c.call("app.info").result["INSTALLED"] is True
        portal.expire_access_tokens()

        assert c.call("user.current").result["ID"] == "1"
    assert tokens.refreshed == 1
