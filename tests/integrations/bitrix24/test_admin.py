"""The Django admin for the Bitrix24 sync: the settings form never shows a secret back."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.integrations.bitrix24.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)


def test_admin_never_renders_the_webhook_url_and_keeps_it_when_left_empty(
    portal: Bitrix24Emulator,
) -> None:
    cfg = connect(portal, application_token="tok-secret-123")
    admin = get_user_model().objects.create_superuser("root", "root@ex.kz", "pw-for-tests-1")
    client = Client()
    client.force_login(admin)
    url = f"/admin/bitrix24/bitrix24settings/{cfg.pk}/change/"

    page = client.get(url).content.decode()

    assert portal.webhook_code not in page
    assert "tok-secret-123" not in page
    assert f"Set (portal {portal.host})" in page
    form = {
        "business": cfg.business_id, "is_active": "on", "mode": "webhook", "webhook_url": "",
        "portal_url": cfg.portal_url, "application_token": "", "client_id": "",
        "client_secret": "", "access_token": "", "refresh_token": "",
        "oauth_server_url": "https://oauth.bitrix.info", "member_id": "", "entity": "deal",
        "pipeline_id": "3", "handoff_stage": "", "rate_limit": "2", "burst": "50",
        "technical_user_id": "1", "default_responsible_id": "", "originator_id": "wa-inbox",
        "auth_connector": "", "connector_id": "", "line_id": "", "field_map": "{}",
        "sync_chats": "on", "sync_handoffs": "on", "sync_responsible": "on", "sync_back": "on",
    }  # fmt: skip
    assert client.post(url, form).status_code == 302
    cfg.refresh_from_db()
    assert cfg.webhook_url == portal.webhook_url
    assert cfg.application_token == "tok-secret-123"
    assert cfg.pipeline_id == 3
