"""A reconciliation pass (and the first check of every chat, against the emulated portal)
writes its progress; the settings page shows it to that business's admins only."""

from __future__ import annotations

import pytest
from django.test import Client

from inbox.conversations.models import Job
from integrations.bitrix24.inbound import reconcile
from integrations.bitrix24.setup import config
from integrations.bitrix24.sync import push
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.integrations.bitrix24.inbound.test_pull import _synced_chat

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reconciliation_pass_and_a_full_check_show_their_progress(
    portal: Bitrix24Emulator,
) -> None:
    cfg, chat = _synced_chat(portal)
    factories.chat(chat.channel, customer_phone="77007654321", customer_key="77007654321")

    report = reconcile.reconcile(cfg.business_id)
    assert config.request_full_sync(cfg.business_id) == 2
    push.drain(cfg.business_id)

    passed = Job.objects.get(business_id=cfg.business_id, kind=Job.Kind.CRM_RECONCILE)
    assert (passed.state, passed.done, passed.errors) == ("done", report.seen, 0)
    checked = Job.objects.get(business_id=cfg.business_id, kind=Job.Kind.CRM_FULL_SYNC)
    assert (checked.state, checked.done, checked.total, checked.errors) == ("done", 2, 2, 0)
    admin = Client()
    admin.force_login(factories.manager(cfg.business, role="admin"))
    page = admin.get("/inbox/settings/bitrix24/").content.decode()
    assert f'id="job-{passed.pk}"' in page
    assert f'id="job-{checked.pk}"' in page
    outsider = Client()
    outsider.force_login(factories.manager(factories.business(), role="admin"))
    assert outsider.get(f"/inbox/progress/{checked.pk}/").status_code == 404
