"""The reports' follow-ups: nudges sent after unanswered quotes, and the leads that wrote after
one (inbox/web/reports/figures.py `followups`)."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from inbox.conversations.models import Channel, Chat, Followup, Membership, Message
from inbox.web.reports import figures
from tests import factories

pytestmark = pytest.mark.django_db

ZONE = ZoneInfo("Asia/Almaty")
DAY = datetime(2026, 11, 3, 10, 0, tzinfo=ZONE)


def _nudged(chat: Chat, *, step: int = 1, outcome: str = "sent", answered: bool = False) -> None:
    quote = Message.objects.create(
        chat=chat, channel=chat.channel, direction=Message.Direction.OUTBOUND,
        author=Message.Author.BOT, sent_by_bot=True, text="2 x Oak table: 900 USD",
    )  # fmt: skip
    row = Followup.objects.create(chat=chat, quote_message=quote, step=step, outcome=outcome)
    Followup.objects.filter(pk=row.pk).update(created_at=DAY)
    if answered:
        reply = factories.customer_message(chat, "Yes, I'll take them")
        Message.objects.filter(pk=reply.pk).update(created_at=DAY + timedelta(minutes=30))


def test_nudges_sent_and_the_leads_that_answered_after_one() -> None:
    business = factories.business(timezone="Asia/Almaty")
    channel = factories.channel(business, kind=Channel.Kind.CLOUD_API)
    quiet, keen, closed = (factories.chat(channel) for _ in range(3))
    early = factories.customer_message(quiet, "how much?")  # before the nudge: no answer
    Message.objects.filter(pk=early.pk).update(created_at=DAY - timedelta(hours=3))
    _nudged(quiet)
    _nudged(quiet, step=2)
    _nudged(keen, answered=True)
    _nudged(closed, outcome="skipped")
    other = factories.chat(factories.channel(factories.business(), kind=Channel.Kind.CLOUD_API))
    _nudged(other, answered=True)  # another business: not counted

    found = figures.followups(figures.period_for(business, DAY.date(), DAY.date()))

    assert (found.sent, found.skipped, found.leads, found.answered) == (3, 1, 2, 1)
    assert found.answered_share == 0.5

    admin = factories.manager(business, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    query = {"from": "2026-11-03", "to": "2026-11-03"}
    page = client.get("/inbox/reports/", query).content.decode()
    assert 'data-figure="followups_sent">3<' in page
    assert 'data-figure="followup_leads_answered">1<' in page
    body = client.get("/inbox/reports/export.csv", {**query, "table": "summary"})
    rows = dict(csv.reader(io.StringIO(body.content.decode())))
    assert (rows["followups_sent"], rows["followup_leads_answered"]) == ("3", "1")
    assert rows["followup_answered_share"] == "0.5000"


def test_no_followups_no_section() -> None:
    business = factories.business()
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    assert 'id="followups"' not in client.get("/inbox/reports/").content.decode()
