"""Configuring and testing the connection, and keeping the webhook URL secret everywhere."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from integrations.bitrix24 import hooks, tasks
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.setup import check, config
from integrations.bitrix24.sync import push
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.integrations.bitrix24.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)


def test_test_connection_reports_portal_user_and_scopes(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal, pipeline_id=3, handoff_stage="Manager needed")

    report = check.test_connection(cfg.business_id)

    assert report.ok, report.error
    assert report.portal == portal.host
    assert report.user == "Integration Robot (ID 1)"
    assert report.scopes == sorted(portal.scopes)
    assert report.warnings == []


def test_test_connection_explains_what_is_wrong(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal, pipeline_id=7, handoff_stage="NOPE", entity="lead")
    portal.scopes = ["crm"]
    portal.leads_enabled = False

    report = check.test_connection(cfg.business_id)

    assert report.ok
    assert report.warnings == [
        "Missing scopes: user.",
        "Leads are disabled on this portal (simple CRM mode): chats will create deals.",
        "Handoff stage: stage 'NOPE' is not in this pipeline (NEW, IN_PROCESS, PROCESSED, "
        "CONVERTED, JUNK).",
    ]


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("code", "Bitrix24 rejected the credentials (NO_AUTH_FOUND: Wrong authorization data)"),
        ("host", "Could not reach 127.0.0.1:9"),
        ("path", "did not answer like a Bitrix24 REST API (HTTP 404 with a text/html body)"),
    ],
)
def test_a_broken_connection_gives_a_clear_error_without_the_secret(
    portal: Bitrix24Emulator, breakage: str, expected: str
) -> None:
    cfg = connect(portal)
    url = {
        "code": portal.webhook_url.replace(portal.webhook_code, "wrongcode123"),
        "host": f"http://127.0.0.1:9/rest/1/{portal.webhook_code}/",
        "path": portal.webhook_url.replace("/rest/", "/rest/").replace(
            f"/1/{portal.webhook_code}/", f"/1/{portal.webhook_code}/x/"),
    }[breakage]  # fmt: skip
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(webhook_url=url)

    report = check.test_connection(cfg.business_id)

    assert not report.ok
    assert expected in report.error
    assert portal.webhook_code not in report.error


def test_check_command_prints_the_report_and_fails_with_the_error(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal)
    out = io.StringIO()

    call_command("bitrix24_check", business=cfg.business.name, stdout=out)

    assert f"Connected to {portal.host}" in out.getvalue()
    assert "user: Integration Robot (ID 1)" in out.getvalue()
    assert "scopes: crm, im, imconnector, imopenlines, user" in out.getvalue()
    assert Bitrix24Settings.objects.get(pk=cfg.pk).last_check["ok"] is True

    Bitrix24Settings.objects.filter(pk=cfg.pk).update(webhook_url=portal.webhook_url + "x/")
    with pytest.raises(CommandError, match="Connection failed"):
        call_command("bitrix24_check", business=cfg.business.name, stdout=io.StringIO())


def test_configure_command_stores_the_url_encrypted_and_never_prints_it(
    portal: Bitrix24Emulator, django_db_blocker: Any
) -> None:
    biz = factories.business("Mebel Almaty")
    out = io.StringIO()

    call_command(
        "bitrix24_configure", "--business", "Mebel Almaty", "--webhook-url", portal.webhook_url,
        "--application-token", "app-token-1", "--entity", "deal", "--pipeline", "3",
        "--handoff-stage", "C3:HANDOFF", "--rate", "5", "--burst", "250",
        "--field", "city=UF_CRM_CITY", stdout=out,
    )  # fmt: skip

    cfg = Bitrix24Settings.objects.get(business=biz)
    assert cfg.webhook_url == portal.webhook_url
    assert (cfg.pipeline_id, cfg.handoff_stage, cfg.rate_limit, cfg.burst) == (
        3,
        "C3:HANDOFF",
        5,
        250,
    )
    assert cfg.technical_user_id == 1  # the webhook's user
    assert cfg.field_map == {"city": "UF_CRM_CITY"}
    assert portal.webhook_code not in out.getvalue()
    assert "webhook URL: set" in out.getvalue()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT webhook_url, application_token FROM bitrix24_bitrix24settings")
        stored = cursor.fetchone()
    assert portal.webhook_code not in stored[0]
    assert "app-token-1" not in stored[1]


@pytest.mark.parametrize(
    "url",
    ["http://portal.bitrix24.kz/rest/1/abc/", "https://portal.bitrix24.kz/crm/deal/",
     "https://portal.bitrix24.kz/rest/x/abc/", "not a url"],
)  # fmt: skip
def test_configure_refuses_a_bad_webhook_url_without_echoing_it(url: str) -> None:
    factories.business("Shop")

    with pytest.raises(CommandError) as caught:
        call_command("bitrix24_configure", business="Shop", webhook_url=url, stdout=io.StringIO())

    assert "abc" not in str(caught.value)
    assert not Bitrix24Settings.objects.exists() or not Bitrix24Settings.objects.get().webhook_url


def test_the_webhook_url_never_appears_in_logs(
    portal: Bitrix24Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cfg = connect(portal)
    chats = [factories.chat(factories.channel(cfg.business, kind="bridge")) for _ in range(3)]
    for chat in chats:
        hooks.chat_created(chat.pk)
    portal.inject_html(1)
    portal.fail_commands("crm.item.add", 1, code="INTERNAL_SERVER_ERROR", status=500)
    push.drain(cfg.business_id)  # HTML 5xx, a failing command, retries
    portal.storm(0.2)
    check.test_connection(cfg.business_id)
    tasks.test_connection_task(cfg.business_id)
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(
        webhook_url=portal.webhook_url.replace(portal.webhook_code, "x" + portal.webhook_code)
    )
    check.test_connection(cfg.business_id)  # rejected credentials
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(
        webhook_url=f"http://127.0.0.1:9/rest/1/{portal.webhook_code}/"
    )
    check.test_connection(cfg.business_id)  # unreachable
    config.configure(cfg.business, webhook_url="https://evil/rest/1/" + portal.webhook_code + "/")

    assert len(caplog.records) > 10
    for record in caplog.records:
        rendered = " ".join(
            [record.getMessage(), str(record.__dict__), caplog.text, str(record.exc_text or "")]
        )
        assert portal.webhook_code not in rendered, record.getMessage()
