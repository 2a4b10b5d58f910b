"""The Bitrix24 settings page: a stored secret can be cleared explicitly; "Test connection"
shows its result live (htmx polls the connection card until the worker's report is there);
the checking sync of every chat shows its progress; all scoped to the admin's business."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.conversations.models import Job
from integrations.bitrix24.models import Bitrix24Settings, CrmLink
from integrations.bitrix24.setup import check, config
from integrations.bitrix24.sync import full_sync, outbox
from tests import factories
from tests.integrations.bitrix24.test_settings_page import WEBHOOK, _form

pytestmark = pytest.mark.django_db


def test_a_stored_secret_can_be_cleared_and_only_when_asked(client: Any) -> None:
    business = factories.business()
    client.force_login(factories.manager(business, role="admin"))
    client.post("/inbox/settings/bitrix24/", _form(webhook_url=WEBHOOK, application_token="t-1"))
    page = client.get("/inbox/settings/bitrix24/").content.decode()
    assert 'name="clear_application_token"' in page

    client.post("/inbox/settings/bitrix24/", _form())  # left empty: kept
    assert Bitrix24Settings.objects.get(business=business).application_token == "t-1"
    client.post("/inbox/settings/bitrix24/", _form(clear_application_token="on"))

    cfg = Bitrix24Settings.objects.get(business=business)
    assert (cfg.application_token, cfg.webhook_url) == ("", WEBHOOK)
    assert (
        'name="clear_application_token"'
        not in client.get("/inbox/settings/bitrix24/").content.decode()
    )


def test_test_connection_answers_with_a_card_that_polls_until_the_report(client: Any) -> None:
    business = factories.business()
    client.force_login(factories.manager(business, role="admin"))
    client.post("/inbox/settings/bitrix24/", _form(webhook_url=WEBHOOK))

    card = client.post(f"/inbox/settings/bitrix24/?business={business.pk}", {"action": "test"},
                       HTTP_HX_REQUEST="true").content.decode()  # fmt: skip
    assert 'data-test-state="testing"' in card
    assert 'hx-trigger="every 1s"' in card
    poll = card.split('hx-get="')[1].split('"')[0].replace("&amp;", "&")
    assert 'data-test-state="testing"' in client.get(poll).content.decode()

    check.store_report(business.pk, check.ConnectionReport(ok=True, portal="shop.bitrix24.kz",
                                                           user="Admin"))  # fmt: skip
    answered = client.get(poll).content.decode()
    assert 'data-test-state="ok"' in answered
    assert "shop.bitrix24.kz" in answered
    assert "hx-trigger" not in answered


def test_the_checking_sync_of_every_chat_shows_its_progress(client: Any) -> None:
    business, other = factories.business(), factories.business()
    channel = factories.channel(business)
    chats = [factories.chat(channel) for _ in range(3)]
    client.force_login(factories.manager(business, role="admin"))
    client.post("/inbox/settings/bitrix24/", _form(webhook_url=WEBHOOK))

    assert config.request_full_sync(business.pk) == 3
    link = CrmLink.objects.get(chat=chats[0])
    outbox.finish_link(link.pk, link.sync_seq, link.created_at)
    full_sync.measure(business.pk)

    job = Job.objects.get(business=business, kind=Job.Kind.CRM_FULL_SYNC)
    assert (job.done, job.total, job.state) == (1, 3, "running")
    page = client.get("/inbox/settings/bitrix24/").content.decode()
    assert f'id="job-{job.pk}"' in page
    theirs = factories.manager(other, role="admin")
    client.force_login(theirs)
    assert client.get(f"/inbox/progress/{job.pk}/").status_code == 404
