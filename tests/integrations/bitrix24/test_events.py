"""The outbound event handler: token checked, only ids enqueued, never a failure."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import httpx
import pytest
from django.test import Client

from inbox.site.embedded_redis import free_port
from integrations.bitrix24.models import Bitrix24Settings, ConnectorMessage, PendingPull
from integrations.bitrix24.setup import config, install
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator, encode_php
from tests.integrations.bitrix24.conftest import connect
from tests.processes import ProcessGroup, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/webhooks/bitrix24/"


def _body(event: str, token: str, entity_id: Any = 7405, **extra: Any) -> str:
    return encode_php(
        {
            "event": event,
            "event_handler_id": "975",
            "data": {"FIELDS": {"ID": entity_id}},
            "ts": "1766047124",
            "auth": {
                "domain": "example.bitrix24.kz",
                "member_id": "d897063e",
                "application_token": token,
            },
            **extra,
        }
    )


def _queued(redis_client: Any) -> list[dict[str, Any]]:
    messages = [json.loads(raw) for raw in redis_client.lrange("integrations", 0, -1)]
    return [{"task": m["headers"]["task"], "args": m["headers"]["argsrepr"]} for m in messages]


def _post(body: str) -> Any:
    return Client().post(URL, data=body, content_type="application/x-www-form-urlencoded")


@pytest.fixture
def token(portal: Bitrix24Emulator) -> tuple[int, str]:
    cfg = connect(portal, application_token="jvh9y1ulvt2m6k5or90v9mg8nn32ozas")
    return cfg.business_id, "jvh9y1ulvt2m6k5or90v9mg8nn32ozas"


def test_a_valid_event_enqueues_only_its_name_and_id_and_answers_200(
    token: tuple[int, str], redis_client: Any, portal: Bitrix24Emulator
) -> None:
    business_id, secret = token

    response = _post(_body("ONCRMDEALUPDATE", secret))

    assert response.status_code == 200
    assert _queued(redis_client) == [
        {"task": "bitrix24.event_received", "args": f"({business_id}, 'ONCRMDEALUPDATE', 7405)"}
    ]
    assert portal.requests == []  # the worker reads the deal, not the handler


def test_a_bad_application_token_is_rejected_and_nothing_is_enqueued(
    token: tuple[int, str], redis_client: Any
) -> None:
    _business_id, secret = token

    for wrong in ["", "x", secret[:-1], secret + "x", secret.upper()]:
        assert _post(_body("ONCRMDEALUPDATE", wrong)).status_code == 403

    assert _queued(redis_client) == []
    assert not PendingPull.objects.exists()


def test_an_inactive_business_does_not_accept_events(
    token: tuple[int, str], redis_client: Any
) -> None:
    business_id, secret = token
    Bitrix24Settings.objects.filter(business_id=business_id).update(is_active=False)

    assert _post(_body("ONCRMDEALUPDATE", secret)).status_code == 403
    assert _queued(redis_client) == []


def test_odd_bodies_never_crash_the_handler(token: tuple[int, str], redis_client: Any) -> None:
    _business_id, secret = token
    bodies = [
        "",
        "%%%",
        "event=ONCRMDEALUPDATE",
        _body("ONCRMDEALUPDATE", secret, entity_id="abc"),
        _body("ONCRMDEALUPDATE", secret, entity_id=""),
        _body("ONSOMETHINGELSE", secret),
        _body("ONCRMDEALUPDATE", secret, data="scalar"),
        "auth[application_token]=" + secret + "&data[FIELDS]=1&event[]=x",
    ]

    statuses = [_post(body).status_code for body in bodies]

    assert all(status in (200, 403) for status in statuses)
    assert _queued(redis_client) == []
    assert Client().get(URL).status_code == 405
    assert _post("x=" + "a" * 300_000).status_code == 413


def test_deeply_nested_keys_are_refused_quickly_without_a_token(redis_client: Any) -> None:
    """~3 KB of `a[][][]…` once raised RecursionError before the token check: a 500 with a
    3.9 MB debug page for anyone."""
    response = _post("a" + "[]" * 1500 + "=1")
    assert response.status_code == 403
    assert len(response.content) < 1000
    assert _queued(redis_client) == []


def test_a_body_of_more_fields_than_the_cap_is_400_and_stores_nothing(
    token: tuple[int, str], redis_client: Any, settings: Any
) -> None:
    """Each `a[]` once counted its siblings: `a[]=&` × 20,000 (100 KB, anonymous) took 31 s of
    the web process's CPU before the token was read. Over the cap (PHP's max_input_vars) the
    body is refused before parsing, even with the right token; at the cap it is handled."""
    business_id, secret = token
    padding = "&".join(f"x[]={i}" for i in range(settings.FORM_MAX_FIELDS))
    within = "&".join(["x[]=1"] * (settings.FORM_MAX_FIELDS - 20))

    started = time.process_time()
    assert _post("a[]=&" * 20_000).status_code == 400
    assert time.process_time() - started < 2
    assert _post(_body("ONCRMDEALUPDATE", secret) + "&" + padding).status_code == 400
    assert _queued(redis_client) == []
    assert not PendingPull.objects.exists()

    assert _post(_body("ONCRMDEALUPDATE", secret) + "&" + within).status_code == 200
    assert [m["args"] for m in _queued(redis_client)] == [
        f"({business_id}, 'ONCRMDEALUPDATE', 7405)"
    ]


def test_an_install_event_over_the_field_cap_records_nothing(
    portal: Bitrix24Emulator, settings: Any
) -> None:
    cfg = config.configure(
        factories.business(), mode="app", portal_url=portal.base_url,
        client_id=portal.app_client_id, client_secret=portal.app_client_secret,
    )  # fmt: skip
    install_event = encode_php(
        {"event": "ONAPPINSTALL",
         "auth": {"domain": portal.domain, "member_id": portal.member_id, "access_token": "a",
                  "refresh_token": "r", "application_token": "t", "expires_in": "3600"}}
    )  # fmt: skip

    assert _post(install_event + "&a[]=" * settings.FORM_MAX_FIELDS).status_code == 400

    cfg.refresh_from_db()
    assert (cfg.pending_install, cfg.application_token) == ("", "")


def test_a_declared_length_over_the_limit_is_413_before_the_body_is_read(
    token: tuple[int, str], redis_client: Any, settings: Any
) -> None:
    _business_id, secret = token
    settings.BITRIX24_EVENT_MAX_BODY_BYTES = 1024
    body = _body("ONCRMDEALUPDATE", secret) + "&pad=" + "x" * 2000

    assert _post(body).status_code == 413
    assert Client().post(URL, data=body, content_type="application/x-www-form-urlencoded",
                         CONTENT_LENGTH="99999999999999999999999").status_code == 413  # fmt: skip
    assert _queued(redis_client) == []


def test_with_the_broker_down_an_entity_event_is_kept_in_the_database(
    token: tuple[int, str], processes: ProcessGroup
) -> None:
    business_id, secret = token
    port = free_port()
    processes.start(
        "web-no-broker",
        [
            sys.executable,
            "-m",
            "inbox.site.web_server",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "inbox.site.asgi:application",
        ],
        env={"CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0"},  # nothing listens
    )

    def answered() -> int:
        try:
            return httpx.post(
                f"http://127.0.0.1:{port}{URL}",
                content=_body("ONCRMCONTACTUPDATE", secret, 42),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                timeout=30,
            ).status_code
        except httpx.TransportError:
            return 0

    assert wait_for(answered, timeout=60, interval=0.3, message="daphne") == 200
    (row,) = PendingPull.objects.all()
    assert (row.business_id, row.entity_type, row.entity_id) == (business_id, "contact", 42)


def test_an_operator_reply_event_enqueues_the_reply(
    portal: Bitrix24Emulator, redis_client: Any
) -> None:
    cfg = connect(portal, application_token="t0k3n", connector_id="wa_inbox", line_id="107")
    body = encode_php(
        {
            "event": "ONIMCONNECTORMESSAGEADD",
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
            "auth": {"application_token": "t0k3n"},
        }
    )

    assert _post(body).status_code == 200

    (queued,) = _queued(redis_client)
    assert queued["task"] == "bitrix24.operator_replies"
    assert "86497" in queued["args"]
    assert str(cfg.business_id) in queued["args"]
    assert not ConnectorMessage.objects.exists()  # recorded by the worker


def test_two_businesses_are_told_apart_by_their_tokens(
    portal: Bitrix24Emulator, redis_client: Any
) -> None:
    first = connect(portal, application_token="token-one")
    second = connect(portal, factories.business(), application_token="token-two")

    _post(_body("ONCRMDEALUPDATE", "token-two", entity_id=5))

    (queued,) = _queued(redis_client)
    assert queued["args"] == f"({second.business_id}, 'ONCRMDEALUPDATE', 5)"
    assert str(first.business_id) != str(second.business_id)


def test_a_forged_install_event_cannot_replace_the_working_tokens(
    portal: Bitrix24Emulator,
) -> None:
    access, refresh = portal.issue_app_tokens()
    cfg = config.configure(
        factories.business(), mode="app", portal_url=portal.base_url,
        client_id=portal.app_client_id, client_secret=portal.app_client_secret,
    )  # fmt: skip
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(
        access_token=access, refresh_token=refresh, application_token="real-app-token",
        member_id=portal.member_id,
    )  # fmt: skip
    forged = encode_php(
        {
            "event": "ONAPPINSTALL",
            "auth": {
                "domain": portal.domain,
                "member_id": portal.member_id,
                "access_token": "forged",
                "refresh_token": "forged",
                "application_token": "forged-token",
                "expires_in": "3600",
            },
        }
    )

    assert _post(forged).status_code == 200  # kept aside until a worker proves it
    assert install.complete_install(cfg.business_id) is False

    cfg.refresh_from_db()
    assert (cfg.access_token, cfg.refresh_token) == (access, refresh)
    assert (cfg.application_token, cfg.pending_install) == ("real-app-token", "")
    assert _post(_body("ONCRMDEALUPDATE", "forged-token")).status_code == 403
