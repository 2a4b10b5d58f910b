"""A data purge shows its progress on the Channels settings page, for the admin's business."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from inbox.conversations.models import Job, Message
from inbox.upkeep import retention
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_purge_records_done_and_total_and_the_page_shows_it() -> None:
    business = factories.business(retention_days=30)
    other = factories.business(retention_days=30)
    chat = factories.chat(factories.channel(business))
    for text in ("one", "two", "three"):
        factories.customer_message(chat, text)
    Message.objects.filter(chat=chat).update(created_at=timezone.now() - timedelta(days=40))

    retention.purge()

    job = Job.objects.get(business=business, kind=Job.Kind.PURGE)
    assert (job.state, job.done, job.total, job.errors) == ("done", 3, 3, 0)
    assert not Job.objects.filter(business=other).exists()  # nothing to purge, no row
    client = Client()
    client.force_login(factories.manager(business, role="admin"))
    page = client.get("/inbox/settings/channels/").content.decode()
    assert f'id="job-{job.pk}"' in page
    assert "<span data-job-done>3</span>" in page
    theirs = Client()
    theirs.force_login(factories.manager(other, role="admin"))
    assert f'id="job-{job.pk}"' not in theirs.get("/inbox/settings/channels/").content.decode()
