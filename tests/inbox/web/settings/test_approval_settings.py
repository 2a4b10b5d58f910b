"""A business admin turns supervised replies on for a channel (and its time limit); operators do
the same from the shell, on a new channel or an existing one."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from inbox.conversations.models import Approval, Channel
from tests import factories
from tests.inbox.tenants import tenant

pytestmark = pytest.mark.django_db

FORM = {
    "name": "Try it", "is_active": "on", "language": "en",
    "debounce_seconds": "4", "idle_release_hours": "4", "late_answer_cutoff_minutes": "30",
    "voice_confidence_threshold": "0.6", "silent_alert_minutes": "120",
}  # fmt: skip


def test_the_channel_page_sets_approval_and_its_time_limit() -> None:
    side = tenant("A")
    client = Client()
    client.force_login(side.admin)
    url = f"/inbox/settings/channels/{side.channel.pk}/"
    page = client.get(url).content.decode()
    assert 'name="approval"' in page
    assert 'name="approval_timeout_minutes"' in page

    posted = client.post(url, {**FORM, "approval": "amounts", "approval_timeout_minutes": "15"})

    assert posted.status_code == 302
    side.channel.refresh_from_db()
    assert (side.channel.approval, side.channel.approval_timeout_minutes) == ("amounts", 15)
    # A form without the fields keeps what was set.
    assert client.post(url, FORM).status_code == 302
    side.channel.refresh_from_db()
    assert side.channel.approval == Approval.AMOUNTS
    # A manager of another business cannot change it.
    other = tenant("B")
    client.force_login(other.admin)
    client.post(url, {**FORM, "approval": "off"})
    side.channel.refresh_from_db()
    assert side.channel.approval == Approval.AMOUNTS


def test_create_channel_and_set_approval_from_the_shell() -> None:
    out = io.StringIO()
    call_command(
        "create_channel", "--business", "Shop", "--kind", "sandbox", "--approval", "all",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    channel = Channel.objects.get(pk=int(out.getvalue()))
    assert (channel.approval, channel.approval_timeout_minutes) == (Approval.ALL, 10)

    call_command("set_approval", str(channel.pk), "amounts", "--timeout-minutes", "5",
                 stdout=io.StringIO())  # fmt: skip
    channel.refresh_from_db()
    assert (channel.approval, channel.approval_timeout_minutes) == (Approval.AMOUNTS, 5)
    with pytest.raises(CommandError, match="no channel"):
        call_command("set_approval", "999999", "off", stdout=io.StringIO())
    assert factories.channel().approval == Approval.OFF
