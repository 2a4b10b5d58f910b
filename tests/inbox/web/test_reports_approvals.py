"""The reports' supervised replies: drafts approved as is, edited, rejected, and how long a
person took to approve."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from inbox.conversations.models import Channel, Draft, Membership
from inbox.web.reports import figures
from tests import factories

pytestmark = pytest.mark.django_db

ZONE = ZoneInfo("Asia/Almaty")
DAY = datetime(2026, 11, 3, 10, 0, tzinfo=ZONE)


def _draft(chat, state: str, waited_minutes: float | None) -> None:
    draft = Draft.objects.create(
        chat=chat, text="120 000 KZT", generated_at_version=1, answered_up_to=1, state=state
    )
    decided = DAY + timedelta(minutes=waited_minutes) if waited_minutes is not None else None
    Draft.objects.filter(pk=draft.pk).update(created_at=DAY, decided_at=decided)


def test_drafts_by_what_a_person_did_and_the_median_time_to_approve() -> None:
    business = factories.business(timezone="Asia/Almaty")
    channel = factories.channel(business, kind=Channel.Kind.CLOUD_API)
    chat = factories.chat(channel)
    _draft(chat, Draft.State.APPROVED, 2)
    _draft(chat, Draft.State.APPROVED, 4)
    _draft(chat, Draft.State.EDITED, 10)
    _draft(chat, Draft.State.REJECTED, 1)
    _draft(chat, Draft.State.EXPIRED, 11)
    _draft(chat, Draft.State.SUPERSEDED, None)
    other = factories.chat(factories.channel(factories.business(), kind=Channel.Kind.CLOUD_API))
    _draft(other, Draft.State.APPROVED, 30)  # another business: not counted

    found = figures.approvals(figures.period_for(business, DAY.date(), DAY.date()))

    assert (found.approved, found.edited, found.rejected, found.expired) == (2, 1, 1, 1)
    assert found.time_to_approve.p50 == 240.0  # 2, 4 and 10 minutes

    admin = factories.manager(business, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    query = {"from": "2026-11-03", "to": "2026-11-03"}
    page = client.get("/inbox/reports/", query).content.decode()
    assert 'data-figure="drafts_edited">1<' in page
    assert 'data-figure="time_to_approve">4' in page
    body = client.get("/inbox/reports/export.csv", {**query, "table": "summary"})
    rows = dict(csv.reader(io.StringIO(body.content.decode())))
    assert (rows["drafts_approved"], rows["drafts_rejected"]) == ("2", "1")
    assert rows["time_to_approve_p50_s"] == "240"
