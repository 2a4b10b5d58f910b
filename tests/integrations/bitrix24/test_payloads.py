"""The typed Bitrix24 event (`integrations.bitrix24.payloads`), read from real-shaped form bodies
after PHP bracket-key parsing. A field of the wrong shape reads as missing: the event is
acknowledged (200) and does nothing, it never fails the request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from integrations.bitrix24 import payloads
from integrations.bitrix24.models import CrmEntity
from integrations.bitrix24.rest import phpquery
from tests.emulators.bitrix24 import Bitrix24Emulator, encode_php
from tests.integrations.bitrix24.conftest import connect

URL = "/webhooks/bitrix24/"
TOKEN = "jvh9y1ulvt2m6k5or90v9mg8nn32ozas"

DEAL_UPDATE = {
    "event": "ONCRMDEALUPDATE",
    "event_handler_id": "975",
    "data": {"FIELDS": {"ID": 7405}},
    "ts": "1766047124",
    "auth": {"domain": "example.bitrix24.kz", "member_id": "d897063e", "application_token": TOKEN},
}
OPERATOR_REPLY = {
    "event": "onImConnectorMessageAdd",
    "data": {
        "CONNECTOR": "wa_inbox",
        "LINE": "107",
        "MESSAGES": [
            {
                "im": {"chat_id": 1807, "message_id": 86497},
                "message": {"user_id": 27, "text": "[b]Klaus Weber:[/b] [br]Guten Tag!"},
                "chat": {"id": "wa-12"},
            }
        ],
    },
    "auth": {"application_token": TOKEN},
}


def _parse(form: dict[str, Any]) -> payloads.Event:
    return payloads.parse(phpquery.decode(encode_php(form)))


def test_a_crm_event_form_parses_to_its_name_portal_token_and_entity() -> None:
    event = _parse(DEAL_UPDATE)

    assert (event.event, event.auth.domain, event.auth.application_token) == (
        "ONCRMDEALUPDATE",
        "example.bitrix24.kz",
        TOKEN,
    )
    assert event.entity_id == 7405


def test_an_operator_reply_form_parses_to_the_task_arguments() -> None:
    event = _parse(OPERATOR_REPLY)

    assert event.event == "ONIMCONNECTORMESSAGEADD"
    assert event.data.CONNECTOR == "wa_inbox"
    assert [m.as_task_args() for m in event.data.MESSAGES] == [
        {"im_chat_id": "1807", "im_message_id": "86497", "user_id": "27",
         "text": "[b]Klaus Weber:[/b] [br]Guten Tag!", "chat_id": "wa-12"}
    ]  # fmt: skip


@pytest.mark.parametrize("entity", ["", "abc", "-1", "7.5", "²", "٣", "9" * 19, {"x": "1"}, ["1"]])
def test_an_entity_id_that_is_not_a_plain_bigint_reads_as_none(entity: Any) -> None:
    form = {**DEAL_UPDATE, "data": {"FIELDS": {"ID": entity}}}

    assert _parse(form).entity_id is None


def test_sub_objects_of_the_wrong_shape_read_as_empty() -> None:
    form = phpquery.decode("event=ONCRMDEALUPDATE&auth=flat&data=flat&data2[x]=1")
    event = payloads.parse(form)

    assert (event.auth.application_token, event.entity_id, event.data.MESSAGES) == ("", None, [])
    reply = payloads.parse(
        {"event": "x", "data": {"MESSAGES": {"a": "flat", "b": {"im": "flat", "chat": {"id": 5}}}}}
    )
    assert [m.as_task_args() for m in reply.data.MESSAGES] == [
        {"im_chat_id": "", "im_message_id": "", "user_id": "", "text": "", "chat_id": "5"}
    ]


def test_long_fields_are_cut_to_what_is_stored() -> None:
    form = {**OPERATOR_REPLY, "data": {**OPERATOR_REPLY["data"], "MESSAGES": [
        {"im": {"chat_id": "1" * 50}, "message": {"text": "x" * 10_000}}]}}  # fmt: skip

    (message,) = _parse(form).data.MESSAGES

    assert len(message.im.chat_id) == 32
    assert len(message.message.text) == payloads.MAX_REPLY_CHARS


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("entity", ["²", "abc", ""])
def test_a_valid_token_with_an_unusable_entity_id_is_acknowledged_and_queues_nothing(
    portal: Bitrix24Emulator, redis_client: Any, entity: str
) -> None:
    """`"²".isdigit()` is true and `int("²")` raises: the dispatch failed and the event was
    answered 503, as if the broker were down."""
    connect(portal, application_token=TOKEN)
    body = encode_php({**DEAL_UPDATE, "data": {"FIELDS": {"ID": entity}}})

    response = Client().post(URL, data=body, content_type="application/x-www-form-urlencoded")

    assert response.status_code == 200
    assert [json.loads(raw) for raw in redis_client.lrange("integrations", 0, -1)] == []


@pytest.mark.parametrize(
    ("event", "entity"),
    [
        ("ONCRMDEALUPDATE", CrmEntity.DEAL),
        ("onCrmLeadAdd", CrmEntity.LEAD),
        ("ONCRMCONTACTDELETE", CrmEntity.CONTACT),
        ("ONCRMDEALMOVETOCATEGORY", CrmEntity.DEAL),
        ("ONCRMDEALUSERFIELDADD", None),  # not about an entity we sync
        ("ONCRMCOMPANYUPDATE", None),
        (payloads.EventName.OFFLINE_EVENT, None),
        ("", None),
    ],
)
def test_the_entity_an_event_is_about(event: str, entity: CrmEntity | None) -> None:
    assert payloads.entity_of_event(event) == entity


def test_crm_event_names_round_trip() -> None:
    for entity in CrmEntity:
        for action in payloads.CrmAction:
            name = payloads.crm_event(entity, action)
            assert name == f"ONCRM{entity.value.upper()}{action.value}"
            assert payloads.entity_of_event(name) is entity
