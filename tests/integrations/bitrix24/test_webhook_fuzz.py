"""The Bitrix24 outbound-event webhook under hypothesis: form bodies of PHP-style nested keys,
any values, the right token or not. Never a 500; without the right token nothing is queued."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.emulators.bitrix24 import Bitrix24Emulator, encode_php
from tests.integrations.bitrix24.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/webhooks/bitrix24/"
SECRET = "fuzzapplicationtoken0123456789ab"

key_part = st.text(min_size=0, max_size=8)
php_key = st.builds(
    lambda head, parts: head + "".join(f"[{part}]" for part in parts),
    st.text(min_size=1, max_size=10),
    st.lists(key_part, max_size=70),  # past PHP's 64 levels too
)
events = st.sampled_from(["ONCRMDEALUPDATE", "ONCRMCONTACTADD", "ONCRMDEALDELETE",
                          "ONIMCONNECTORMESSAGEADD", "ONAPPINSTALL", "", "x"])  # fmt: skip


@st.composite
def bodies(draw: st.DrawFn) -> tuple[str, bool]:
    """A form body and whether it carries the right application token."""
    fields = draw(st.lists(st.tuples(php_key, st.text(max_size=20)), max_size=8))
    pairs = [f"{quote(k)}={quote(v)}" for k, v in fields]
    with_token = draw(st.booleans())
    if draw(st.booleans()):
        entity: Any = draw(st.one_of(st.integers(), st.text(max_size=10)))
        pairs.insert(0, encode_php({
            "event": draw(events), "data": {"FIELDS": {"ID": entity}},
            "auth": {"application_token": SECRET if with_token else draw(st.text(max_size=32))},
        }))  # fmt: skip
    else:
        with_token = False
    if draw(st.integers(0, 5)) == 0:
        return draw(st.text(max_size=300)), False  # not a form at all
    return "&".join(pairs), with_token


def _queued_anything(redis_client: Any) -> bool:
    return any(
        json.loads(raw)["headers"]["task"] for raw in redis_client.lrange("integrations", 0, -1)
    )


@pytest.mark.timeout(240)
def test_fuzzed_form_bodies_are_200_or_4xx_and_queue_nothing_without_the_token(
    portal: Bitrix24Emulator, redis_client: Any
) -> None:
    connect(portal, application_token=SECRET)
    statuses: list[int] = []

    @given(case=bodies())
    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    def post(case: tuple[str, bool]) -> None:
        body, with_token = case
        redis_client.delete("integrations")
        answer = Client().post(URL, data=body, content_type="application/x-www-form-urlencoded")
        statuses.append(answer.status_code)
        assert answer.status_code < 500, body[:300]
        if not with_token:
            assert answer.status_code == 403 or not _queued_anything(redis_client), body[:300]

    post()
    assert 200 in statuses
    assert 403 in statuses
