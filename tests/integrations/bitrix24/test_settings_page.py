"""The business admin's Bitrix24 settings page: write-only secrets, test connection, scoping."""

from __future__ import annotations

from typing import Any

import pytest

from integrations.bitrix24.models import Bitrix24Settings
from tests import factories

pytestmark = pytest.mark.django_db

WEBHOOK = "https://shop.bitrix24.kz/rest/7/s3cr3tc0de1234/"


def _form(**overrides: Any) -> dict[str, Any]:
    data = {
        "is_active": "on", "mode": "webhook", "entity": "deal", "pipeline_id": "0", "handoff_stage": "PREPARATION",
        "rate_limit": "2", "burst": "50", "sync_chats": "on", "sync_handoffs": "on", "sync_responsible": "on",
        "sync_back": "on", "action": "save",
    }  # fmt: skip
    data.update(overrides)
    return data


def test_admin_configures_the_sync_and_the_webhook_url_is_never_shown_back(client: Any) -> None:
    business = factories.business()
    client.force_login(factories.manager(business, role="admin"))

    answer = client.post(
        "/inbox/settings/bitrix24/", _form(webhook_url=WEBHOOK, application_token="app-token-1")
    )

    assert answer.status_code == 302
    cfg = Bitrix24Settings.objects.get(business=business)
    assert (cfg.webhook_url, cfg.application_token, cfg.handoff_stage) == (
        WEBHOOK,
        "app-token-1",
        "PREPARATION",
    )
    assert cfg.technical_user_id == 7
    page = client.get("/inbox/settings/bitrix24/").content.decode()
    assert "s3cr3tc0de1234" not in page
    assert "app-token-1" not in page
    assert "shop.bitrix24.kz" in page  # the portal host is not a secret

    # Saving again without typing the secrets keeps them.
    client.post("/inbox/settings/bitrix24/", _form(entity="lead"))
    cfg.refresh_from_db()
    assert (cfg.webhook_url, cfg.entity) == (WEBHOOK, "lead")


def test_a_webhook_url_that_is_not_one_is_refused_with_a_reason(client: Any) -> None:
    business = factories.business()
    client.force_login(factories.manager(business, role="admin"))

    answer = client.post("/inbox/settings/bitrix24/", _form(webhook_url="http://example.com/x"))

    assert answer.status_code == 200
    assert "https" in answer.content.decode()
    assert not Bitrix24Settings.objects.exists()


def test_managers_who_are_not_admins_cannot_open_it(client: Any) -> None:
    client.force_login(factories.manager(factories.business()))

    assert client.get("/inbox/settings/bitrix24/").status_code == 403


def test_an_admin_sees_only_their_business_settings(client: Any) -> None:
    other = factories.business()
    Bitrix24Settings.objects.create(
        business=other, webhook_url="https://other.bitrix24.kz/rest/1/abc/"
    )
    mine = factories.business()
    client.force_login(factories.manager(mine, role="admin"))

    page = client.get(f"/inbox/settings/bitrix24/?business={other.pk}")

    assert page.status_code == 404
    assert "other.bitrix24.kz" not in page.content.decode()
    assert "other.bitrix24.kz" not in client.get("/inbox/settings/bitrix24/").content.decode()


def test_the_mode_is_asked_first_and_then_only_its_fields_are_shown(client: Any) -> None:
    business = factories.business()
    client.force_login(factories.manager(business, role="admin"))

    first = client.get("/inbox/settings/bitrix24/")
    assert "form" not in first.context
    page = first.content.decode()
    assert 'data-mode="webhook"' in page
    assert 'data-mode="app"' in page

    webhook = client.get("/inbox/settings/bitrix24/", {"mode": "webhook"}).context["form"]
    assert {"webhook_url", "application_token"} <= set(webhook.fields)
    assert not {"client_id", "client_secret", "portal_url", "sync_open_channels"} & set(
        webhook.fields
    )
    assert webhook.fields["webhook_url"].label == "Inbound webhook URL"
    assert "Developer resources" in webhook.fields["webhook_url"].help_text

    app = client.get("/inbox/settings/bitrix24/", {"mode": "app"}).context["form"]
    assert {"portal_url", "client_id", "client_secret", "sync_open_channels"} <= set(app.fields)
    assert "webhook_url" not in app.fields

    saved = client.post(
        "/inbox/settings/bitrix24/?mode=app",
        _form(
            mode="app",
            portal_url="https://shop.bitrix24.kz",
            client_id="local.abc",
            client_secret="app-key-1",
        ),
    )
    assert saved.status_code == 302
    cfg = Bitrix24Settings.objects.get(business=business)
    assert (cfg.mode, cfg.client_id, cfg.client_secret) == ("app", "local.abc", "app-key-1")
    # Once stored, the page opens on the stored mode's fields.
    again = client.get("/inbox/settings/bitrix24/").context["form"]
    assert "client_id" in again.fields
    assert "webhook_url" not in again.fields
